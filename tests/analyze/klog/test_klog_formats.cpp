// Each text format the kernel-log reader accepts (docs/dmesg.md), its prefix fields, continuation rules and
// robustness against what is not a log.
#include <string>

#include <gtest/gtest.h>

#include "klog/klog.hpp"
#include "nvtrace/kernel_log.hpp"

using namespace nvtrace;

namespace {

const std::string kXid = "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.";

KernelLogParse one(const std::string& text, const std::string& format) {
    auto p = read_kernel_log(text, "t.log");
    EXPECT_EQ(p.format, format) << text;
    EXPECT_EQ(p.messages.size(), 1u) << text;
    return p;
}

TEST(KlogFormat, DmesgMonotonic) {
    auto p = one("[ 1843.308145] " + kXid + "\n", "dmesg");
    EXPECT_EQ(p.messages[0].ts_ns, 1843308145000u);
    EXPECT_EQ(p.messages[0].text, kXid);
    EXPECT_FALSE(p.messages[0].level_known);
    EXPECT_EQ(p.messages[0].kind, "xid");
}

TEST(KlogFormat, DmesgWithPrintkCallerId) {
    auto p = one("[   12.500000][  T591] " + kXid, "dmesg");
    EXPECT_EQ(p.messages[0].ts_ns, 12500000000u);
    EXPECT_EQ(p.messages[0].text, kXid);
}

TEST(KlogFormat, DmesgCallerIdAsItsOwnColumn) {
    // util-linux dmesg prints the caller ID (CONFIG_PRINTK_CALLER) as a column after the time, one space between;
    // the Xid was read as "kernel other" text starting "[    T1]". A CPU caller ("C3") and the console's form
    // with no space are read the same way.
    for (std::string prefix : {"[    5.100000] [    T1] ", "[    5.100000] [  C3] ", "[    5.100000][    T1] "}) {
        auto p = one(prefix + kXid + "\n", "dmesg");
        EXPECT_EQ(p.messages[0].ts_ns, 5100000000u) << prefix;
        EXPECT_EQ(p.messages[0].text, kXid) << prefix;
        EXPECT_EQ(p.messages[0].kind, "xid") << prefix;
    }
    // A bracketed word that is not a caller ID stays in the message.
    auto p = one("[    5.100000] [drm] Initialized nvidia-drm 0.0.0\n", "dmesg");
    EXPECT_EQ(p.messages[0].text, "[drm] Initialized nvidia-drm 0.0.0");
}

TEST(KlogFormat, DmesgRawLevel) {
    auto p = one("<3>[    5.000001] " + kXid, "dmesg");
    EXPECT_TRUE(p.messages[0].level_known);
    EXPECT_EQ(p.messages[0].level, 3);
}

TEST(KlogFormat, DmesgDecodedFacilityAndLevel) {
    auto p = one("kern  :err   : [    5.000001] " + kXid, "dmesg");
    EXPECT_EQ(p.messages[0].level, 3);
    EXPECT_EQ(p.messages[0].kind, "xid");
}

TEST(KlogFormat, DmesgCtimeWithSpacePaddedDay) {
    auto p = one("[Tue Sep  8 17:16:02 2026] " + kXid, "dmesg-ctime");
    EXPECT_EQ(p.messages[0].wall_time, "Tue Sep  8 17:16:02 2026");
    EXPECT_FALSE(p.messages[0].ts_ns);
}

TEST(KlogFormat, DmesgIso) {
    auto p = one("2024-08-30T11:43:09,123456+02:00 " + kXid, "dmesg-iso");
    EXPECT_EQ(p.messages[0].wall_time, "2024-08-30T11:43:09,123456+02:00");
    EXPECT_EQ(p.messages[0].kind, "xid");
}

TEST(KlogFormat, JournalShortAndPrecise) {
    auto p = one("Aug 26 14:08:07 host1 kernel: " + kXid, "journal");
    EXPECT_EQ(p.messages[0].host, "host1");
    EXPECT_EQ(p.messages[0].wall_time, "Aug 26 14:08:07");
    auto q = one("Aug 26 14:08:07.123456 host1 kernel: " + kXid, "journal");
    EXPECT_EQ(q.messages[0].wall_time, "Aug 26 14:08:07.123456");
}

TEST(KlogFormat, JournalShortMonotonic) {
    auto p = one("[  885.242168] host1 kernel: " + kXid, "journal-monotonic");
    EXPECT_EQ(p.messages[0].ts_ns, 885242168000u);
    EXPECT_EQ(p.messages[0].host, "host1");
    EXPECT_EQ(p.messages[0].text, kXid);
}

// journalctl writes lines of its own between entries (systemd logs-show.c / journalctl.c): "-- Boot ID --" and
// "-- Reboot --" between boots, "-- No entries --", the "-- Logs begin at ... --" header of older versions, and
// -x's catalog text. They were non_log_line (data_loss): a whole `journalctl -k` of two boots was "complete: no",
// and `absent log` checks on it inconclusive.
TEST(KlogFormat, JournalctlsOwnLinesAreNotLostData) {
    auto p = read_kernel_log(
        "-- Logs begin at Mon 2024-01-01 10:00:00 UTC, end at Tue 2024-01-02 11:00:00 UTC. --\n"
        "Jan 01 10:00:01 host1 kernel: " +
            kXid +
            "\n"
            "-- Subject: A kernel message\n"
            "-- Defined-By: systemd\n"
            "--\n"
            "-- Boot 1a2b3c4d5e6f47889900aabbccddeeff --\n"
            "Jan 02 10:00:01 host1 kernel: nvidia-uvm: Loaded the UVM driver, major device number 509.\n"
            "-- Reboot --\n"
            "-- No entries --\n",
        "t.log");
    EXPECT_EQ(p.format, "journal");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].kind, "xid");
    EXPECT_EQ(p.messages[0].text, kXid);  // the catalog lines after it are not its continuation
    EXPECT_EQ(p.unread_lines, 0u);
    EXPECT_TRUE(p.complete);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "journal_marker");
    EXPECT_EQ(p.diagnostics[0].count, 7u);
    EXPECT_EQ(p.diagnostics[0].severity, "info");
}

TEST(KlogFormat, JournalContinuationAlignedUnderMessage) {
    auto p =
        one("Aug 26 14:08:07 host1 kernel: NVRM: The NVIDIA GPU 0000:01:00.0\n"
            "                              NVRM: (PCI ID: 10de:1b80) installed in this system has\n"
            "                              NVRM: fallen off the bus and is not responding to commands.\n",
            "journal");
    EXPECT_EQ(p.messages[0].kind, "fallen_off_bus");
    EXPECT_EQ(p.messages[0].fields.at("pci_id"), "10de:1b80");
}

TEST(KlogFormat, SyslogOctalEscapesSplitOneLineIntoMessageLines) {
    auto p =
        one("Jun 30 11:07:05 host1 kernel: NVRM: The NVIDIA GPU 0000:01:00.0#012NVRM: (PCI ID: 10de:1b80) "
            "installed in this system has#012NVRM: fallen off the bus and is not responding to commands.",
            "syslog");
    EXPECT_EQ(p.messages[0].text.find("#012"), std::string::npos);
    EXPECT_EQ(p.messages[0].kind, "fallen_off_bus");
}

TEST(KlogFormat, SyslogSpacePaddedDayWithKernelTimestamp) {
    auto p = one("Dec  2 11:49:53 host1 kernel: [  885.242168] " + kXid, "syslog-dmesg");
    EXPECT_EQ(p.messages[0].ts_ns, 885242168000u);
    EXPECT_EQ(p.messages[0].wall_time, "Dec  2 11:49:53");
    auto q = one("Dec  2 11:49:53 host1 kernel: " + kXid, "syslog");
}

TEST(KlogFormat, RemoteSyslogIso8601) {
    auto p = one("2024-08-30T11:43:09.123456+02:00 host1 kernel: " + kXid, "syslog-iso");
    EXPECT_EQ(p.messages[0].host, "host1");
    EXPECT_EQ(p.messages[0].kind, "xid");
    auto q = one("2024-08-30T11:43:09Z gpu-node-7 kernel: [  12.000000] " + kXid, "syslog-iso");
    EXPECT_EQ(q.messages[0].ts_ns, 12000000000u);
}

TEST(KlogFormat, OtherProgramsInASyslogAreKeptAsUserMessages) {
    auto p = read_kernel_log(
        "Jun 30 11:07:05 host1 nvidia-persistenced[1234]: Started\n"
        "Jun 30 11:07:06 host1 kernel: " +
            kXid + "\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].source, "user");
    EXPECT_EQ(p.messages[0].fields.at("ident"), "nvidia-persistenced");
    EXPECT_EQ(p.messages[1].kind, "xid");
}

TEST(KlogFormat, KmsgRecordsWithDictionaryAndEscapedNewlines) {
    auto p =
        one("4,1203,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in "
            "this system has\\x0aNVRM: fallen off the bus and is not responding to commands.\n"
            " SUBSYSTEM=pci\n DEVICE=+pci:0000:b3:00.0\n",
            "kmsg");
    const auto& m = p.messages[0];
    EXPECT_EQ(m.kind, "fallen_off_bus");
    EXPECT_EQ(m.seq, 1203u);
    EXPECT_EQ(m.level, 4);
    EXPECT_EQ(m.ts_ns, 1843308145000u);
    EXPECT_EQ(m.fields.at("kmsg_subsystem"), "pci");
    EXPECT_EQ(m.fields.at("kmsg_device"), "+pci:0000:b3:00.0");
}

// User space cannot write a /dev/kmsg record of facility 0 (Documentation/ABI/testing/dev-kmsg): an Xid line of
// facility 1 was echoed into /dev/kmsg, not printed by nvidia.ko. It is read as an Xid (kind, fields) but its
// source stays user, the driver its text names in text_source (docs/dmesg.md says so; the reader said NVRM).
TEST(KlogFormat, KmsgNvrmXidWrittenFromUserSpaceIsSourceUserNotNvrm) {
    auto p = one("11,343,1703889856,-;" + kXid, "kmsg");
    EXPECT_EQ(p.messages[0].source, "user");
    EXPECT_EQ(p.messages[0].kind, "xid");
    EXPECT_EQ(p.messages[0].fields.at("xid"), "79");
    EXPECT_EQ(p.messages[0].fields.at("text_source"), "NVRM");
    EXPECT_EQ(p.messages[0].fields.at("facility"), "1");
    auto k = one("3,343,1703889856,-;" + kXid, "kmsg");  // facility 0: the kernel's
    EXPECT_EQ(k.messages[0].source, "NVRM");
    EXPECT_EQ(k.messages[0].fields.count("text_source"), 0u);
    EXPECT_EQ(k.messages[0].fields.count("facility"), 0u);
}

// Sequence numbers count every record the kernel logged: 5 then 9 is three records missing (overwritten before
// they were read, or left out of the file). The reader said complete.
TEST(KlogFormat, KmsgSequenceGapIsMissingRecordsNotACompleteLog) {
    auto p = read_kernel_log("6,5,100,-;first\n6,6,101,-;second\n6,9,102,-;after the gap\n6,10,103,-;next\n", "k.log");
    ASSERT_EQ(p.messages.size(), 4u);
    EXPECT_FALSE(p.complete);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "kmsg_seq_gap");
    EXPECT_EQ(p.diagnostics[0].severity, "data_loss");
    EXPECT_EQ(p.diagnostics[0].count, 2u);
    EXPECT_EQ(p.diagnostics[0].first_example, "k.log:3: seq 9 follows seq 6: 2 record(s) missing");
    ASSERT_EQ(p.incomplete.size(), 1u);
    EXPECT_NE(p.incomplete[0].find("kmsg_seq_gap x2"), std::string::npos) << p.incomplete[0];
    // A step back (a second boot's records, the buffer read twice) starts over: nothing is known missing.
    auto q = read_kernel_log("6,5,100,-;a\n6,6,101,-;b\n6,0,1,-;reboot\n6,1,2,-;c\n", "k.log");
    EXPECT_TRUE(q.complete) << (q.incomplete.empty() ? "" : q.incomplete[0]);
    // Continuation fragments of kernels before 4.9 have their own seq: no gap.
    auto c = read_kernel_log("6,5,100,c;NVRM: one\n6,6,100,+; two\n6,7,101,-;three\n", "k.log");
    EXPECT_TRUE(c.complete);
    EXPECT_EQ(c.messages.size(), 2u);
}

// The kernel's lines and user space's never make one message (fresh user): a facility-1 '+' fragment completed a
// facility-0 Xid head into an Xid 79 of source NVRM that passed `log xid xid=79`, and a user-written Xid took in the
// kernel's own "fallen off the bus" line, so `log fallen_off_bus` failed. Each stays its own writer's message.
TEST(KlogFormat, KernelAndUserSpaceRecordsAreNeverJoined) {
    auto p = read_kernel_log(
        "6,1,100,c;NVRM: Xid (PCI:0000:01:00): \n11,2,100,+;79, pid=1, GPU has fallen off the bus.\n", "k.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].source, "NVRM");
    EXPECT_EQ(p.messages[0].fields.count("xid"), 0u) << p.messages[0].text;
    EXPECT_EQ(p.messages[1].source, "user");
    auto q = read_kernel_log(
        "11,1,100,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
        "6,2,100,-;NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n",
        "k.log");
    ASSERT_EQ(q.messages.size(), 2u);
    EXPECT_EQ(q.messages[0].source, "user");
    EXPECT_EQ(q.messages[0].fields.count("duplicate_lines"), 0u);
    EXPECT_EQ(q.messages[1].source, "NVRM");
    EXPECT_EQ(q.messages[1].kind, "fallen_off_bus");
    // Same-timestamp NVRM lines (one printk in several records) still join when both are the kernel's.
    auto k = read_kernel_log(
        "3,1,100,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
        "3,2,100,-;NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n",
        "k.log");
    ASSERT_EQ(k.messages.size(), 1u);
    EXPECT_EQ(k.messages[0].fields.at("device"), "0000:01:00.0");
}

// A /dev/kmsg record escapes its line breaks, and its only indented lines are " KEY=value": an indented line of
// other text after one was joined into its text (and into an Xid's detail) without a word. An empty flags field
// is unknown flags too.
TEST(KlogFormat, IndentedTextAfterAKmsgRecordIsNotPartOfItAndEmptyFlagsAreUnknown) {
    auto p = read_kernel_log(
        "3,1,100,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
        " GPU 0000:01:00.0: something else\n"
        " SUBSYSTEM=pci\n",
        "k.log");
    ASSERT_GE(p.messages.size(), 1u);
    EXPECT_EQ(p.messages[0].text, "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.");
    EXPECT_EQ(p.messages[0].fields.at("detail"), "GPU has fallen off the bus.");
    auto e = read_kernel_log("6,9,100,;msg\n", "k.log");
    ASSERT_EQ(e.diagnostics.size(), 1u);
    EXPECT_EQ(e.diagnostics[0].name, "kmsg_unknown_flags");
}

// Flags other than '-', 'c' and '+' ("+x", "?") were read by their first byte: "+x" joined the record to the one
// before as a continuation. They are records of their own now, counted; a header whose fields are not numbers is a
// malformed record (was non_log_line, as if it were no kmsg record at all).
TEST(KlogFormat, KmsgUnknownFlagsAreARecordOfTheirOwnAndBadNumbersAMalformedRecord) {
    auto p = read_kernel_log("6,5,100,-;NVRM: first\n6,6,101,+x;NVRM: second\n", "k.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[1].text, "NVRM: second");
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "kmsg_unknown_flags");
    EXPECT_EQ(p.diagnostics[0].severity, "info");
    EXPECT_TRUE(p.complete);
    auto m = read_kernel_log("6,5,100,-;ok\n6,x7,101,-;NVRM: bad seq\n", "k.log");
    ASSERT_EQ(m.diagnostics.size(), 1u);
    EXPECT_EQ(m.diagnostics[0].name, "malformed_kmsg_record");
    EXPECT_NE(m.diagnostics[0].first_example.find("k.log:2: kmsg record: expected numeric"), std::string::npos)
        << m.diagnostics[0].first_example;
    EXPECT_FALSE(m.complete);
}

TEST(KlogFormat, QuotedInOtherOutput) {
    auto p = one("> [ 1843.308145] " + kXid, "dmesg");
    EXPECT_EQ(p.messages[0].kind, "xid");
    auto q = one("    [ 1843.308145] " + kXid, "dmesg");  // indented inside a test harness log
    EXPECT_EQ(q.messages[0].kind, "xid");
    auto r = one("> " + kXid, "bare");
    EXPECT_EQ(r.messages[0].kind, "xid");
}

TEST(KlogFormat, SameTimestampNvrmLinesContinueOnlyWhenTheTextDoes) {
    // Older kernels give each line of a multi-line printk its own record with the same timestamp.
    auto p = read_kernel_log(
        "[   12.000001] NVRM: API mismatch: the client has the version 367.44, but\n"
        "[   12.000001] NVRM: this kernel module has the version 367.35.  Please\n"
        "[   12.000001] NVRM: make sure that this kernel module and all NVIDIA driver\n"
        "[   12.000001] NVRM: components have the same version.\n"
        "[   12.000001] NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): X\n"
        "[   12.000001] NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Global Exception on (GPC 1, TPC 0, SM 0): Y\n"
        "[   12.000002] NVRM: RmInitAdapter failed! (0x26:0xffff:1375)\n"
        "[   12.000002] NVRM: rm_init_adapter failed for device bearing minor number 0\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 4u);
    EXPECT_EQ(p.messages[0].kind, "api_mismatch");
    EXPECT_EQ(p.messages[0].fields.at("kernel_version"), "367.35");
    EXPECT_EQ(p.messages[1].kind, "xid");
    EXPECT_EQ(p.messages[2].kind, "xid");
    EXPECT_EQ(p.messages[3].fields.at("minor"), "0");  // joined by the RmInitAdapter pairing, not the text rule
}

TEST(KlogFormat, CrlfAndMissingFinalNewline) {
    auto p = read_kernel_log("[    1.000000] a\r\n[    2.000000] " + kXid, "t.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].text, "a");
    EXPECT_EQ(p.messages[1].kind, "xid");
}

TEST(KlogFormat, GarbageIsCountedWithFileAndLine) {
    auto p = read_kernel_log("hello world\nthis is not a log\n", "notes.txt");
    EXPECT_TRUE(p.messages.empty());
    EXPECT_EQ(p.format, "unknown");
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "non_log_line");
    EXPECT_EQ(p.diagnostics[0].count, 2u);
    EXPECT_EQ(p.diagnostics[0].first_example.rfind("notes.txt:1: expected a kernel log line", 0), 0u);
}

TEST(KlogFormat, EmptyInput) {
    auto p = read_kernel_log("", "empty.log");
    EXPECT_TRUE(p.messages.empty());
    EXPECT_TRUE(p.diagnostics.empty());
    EXPECT_EQ(p.lines, 0u);
}

TEST(KlogFormat, MegabyteLineIsCutAndCounted) {
    std::string big = "[    1.000000] NVRM: " + std::string(2 * 1024 * 1024, 'x') + "\n[    2.000000] " + kXid;
    auto p = read_kernel_log(big, "big.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_LE(p.messages[0].text.size(), 64u * 1024);
    EXPECT_EQ(p.diagnostics.at(0).name, "long_line");
    // The cut drops text, as message_too_long does: the log is not complete.
    EXPECT_EQ(p.diagnostics.at(0).severity, "data_loss");
    EXPECT_FALSE(p.complete);
    EXPECT_EQ(p.messages[1].kind, "xid");
}

TEST(KlogFormat, InvalidUtf8IsKeptCountedAndReplacedInJson) {
    auto p = read_kernel_log("[    1.000000] NVRM: bad \xff\xfe bytes\n", "u.log");
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_EQ(p.diagnostics.at(0).name, "invalid_utf8");
    std::string json = kernel_log_json(p);
    EXPECT_NE(json.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(KlogFormat, ManyContinuationLinesAreCapped) {
    std::string text = "[    1.000000] NVRM: start\n";
    for (int i = 0; i < 20000; ++i)
        text += "               NVRM: more text on a continuation line\n";
    auto p = read_kernel_log(text, "c.log");
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_LE(p.messages[0].text.size(), 64u * 1024);
    EXPECT_EQ(p.diagnostics.at(0).name, "message_too_long");
}

TEST(KlogFormat, TextLineForPeople) {
    KernelLogMessage m;
    m.ts_ns = 1843308145000;
    m.text = kXid;
    m.level_known = false;
    classify_kernel_message(m);
    std::string line = format_kernel_log_message(m);
    EXPECT_EQ(line.rfind("1843.308145 - NVRM xid ", 0), 0u) << line;
    EXPECT_NE(line.find(" pid=123 "), std::string::npos);
    EXPECT_NE(line.find("detail=\"GPU has fallen off the bus.\""), std::string::npos);
    EXPECT_NE(line.find(" | " + kXid), std::string::npos);
}

TEST(KlogPrefix, BracketSecondsAndOctal) {
    auto t = klog::parse_bracket_seconds("[    0.000001] x");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->first, 1000u);
    EXPECT_FALSE(klog::parse_bracket_seconds("[drm] Initialized"));
    EXPECT_FALSE(klog::parse_bracket_seconds("[ 12.]"));
    EXPECT_EQ(klog::unescape_syslog_octal("a#012b#011c [#1] #999"), "a\nb\tc [#1] #999");
}

TEST(KlogPrefix, NotPrefixes) {
    EXPECT_TRUE(klog::parse_line_prefix("[drm] Initialized nvidia-drm").format.empty());
    EXPECT_TRUE(klog::parse_line_prefix("Jun 30 not a time").format.empty());
    EXPECT_TRUE(klog::parse_line_prefix("2024-08-30T11:43:09").format.empty());
    EXPECT_TRUE(klog::parse_line_prefix("[Fri Aug 30 11:43:09 2024").format.empty());
}

}  // namespace

// Lines of one event printed with sub-second wall clocks (journalctl -o short-precise / short-iso-precise, rsyslog
// RFC 3339 with microseconds: journalctl(1) OUTPUT OPTIONS, rsyslog's RSYSLOG_FileFormat template) differ in
// their stamps by microseconds. They were joined only when the printed strings were equal, so one RmInitAdapter
// failure, or an Xid 79 and the line that repeats it, came out as two events. Within a second they are one.
TEST(KlogFormat, SubSecondWallClocksJoinLinesOfOneEvent) {
    const std::string rm =
        "Dec 01 10:00:02.000001 host1 kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
        "Dec 01 10:00:02.000002 host1 kernel: NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor "
        "number 0\n";
    auto p = read_kernel_log(rm, "t.log");
    std::size_t failed = 0;
    for (const auto& m : p.messages)
        failed += m.kind == "rm_init_adapter_failed";
    EXPECT_EQ(failed, 1u);

    const std::string xid =
        "2024-04-05T21:29:39.100001+00:00 host1 kernel: NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n"
        "2024-04-05T21:29:39.100050+00:00 host1 kernel: NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.\n";
    p = read_kernel_log(xid, "t.log");
    std::size_t xids = 0, fob = 0;
    for (const auto& m : p.messages) {
        xids += m.kind == "xid";
        fob += m.kind == "fallen_off_bus";
    }
    EXPECT_EQ(xids, 1u);
    EXPECT_EQ(fob, 0u);

    // Two seconds apart they stay two events.
    const std::string apart =
        "Dec 01 10:00:02.000001 host1 kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
        "Dec 01 10:00:04.000002 host1 kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n";
    p = read_kernel_log(apart, "t.log");
    failed = 0;
    for (const auto& m : p.messages)
        failed += m.kind == "rm_init_adapter_failed";
    EXPECT_EQ(failed, 2u);
}

// Two dumps of /dev/kmsg in one file (`cat /dev/kmsg` run twice, overlapping `dmesg -r`-style saves): the second
// copy of a record is the same record, not a second message. It was read again, so one Xid counted as two and
// `log xid` facts saw it twice. Left out and counted (info); its seq still counts as read, so the record after the
// overlap is no gap. A record with the same seq but another time or text (another boot) is kept.
TEST(KlogFormat, KmsgRecordReadTwiceIsOneMessageNotTwo) {
    const std::string first =
        "4,7,100,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
        "6,8,101,-;second\n";
    auto p = read_kernel_log(first + first + "6,9,102,-;third\n", "k.log");
    ASSERT_EQ(p.messages.size(), 3u);
    EXPECT_EQ(p.messages[0].kind, "xid");
    EXPECT_EQ(p.messages[1].text, "second");
    EXPECT_EQ(p.messages[2].text, "third");
    EXPECT_TRUE(p.complete) << (p.incomplete.empty() ? "" : p.incomplete[0]);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "kmsg_record_repeated");
    EXPECT_EQ(p.diagnostics[0].severity, "info");
    EXPECT_EQ(p.diagnostics[0].count, 2u);
    EXPECT_EQ(p.diagnostics[0].first_example, "k.log:3: seq 7 (ts_usec 100) is the record read at line 1: left out");
    // The same seq with another ts_usec or text is another record (another boot's numbering), not a repeat.
    auto q = read_kernel_log("6,7,100,-;a\n6,7,200,-;a\n6,7,100,-;b\n", "k.log");
    EXPECT_EQ(q.messages.size(), 3u);
    for (const auto& d : q.diagnostics)
        EXPECT_NE(d.name, "kmsg_record_repeated");
}

// `dmesg -r` prints the priority as "<facility * 8 + level>" (util-linux, LOG_MAKEPRI) and `dmesg -x` names the
// facility: a line of facility user is written from user space, as a /dev/kmsg record of facility 1 is. Its Xid was
// counted as the driver's (fresh user): `log xid` passed and `absent log xid` failed on a line `echo` wrote.
TEST(KlogFormat, DmesgRawAndDecodedFacilityOfUserIsWrittenFromUserSpace) {
    auto p = read_kernel_log(
        "<12>[  100.100000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        "<4>[  100.200000] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception\n"
        "user  :warn  : [  100.300000] NVRM: Xid (PCI:0000:3b:00): 79, pid=2, GPU has fallen off the bus.\n"
        "kern  :warn  : [  100.400000] NVRM: Xid (PCI:0000:3b:00): 31, pid=2, Ch 00000010\n",
        "d.log");
    ASSERT_EQ(p.messages.size(), 4u);
    for (std::size_t i : {0u, 2u}) {
        EXPECT_EQ(p.messages[i].source, "user") << i;
        EXPECT_EQ(p.messages[i].fields.at("facility"), "1") << i;
        EXPECT_EQ(p.messages[i].fields.at("text_source"), "NVRM") << i;
    }
    for (std::size_t i : {1u, 3u}) {
        EXPECT_EQ(p.messages[i].source, "NVRM") << i;
        EXPECT_EQ(p.messages[i].kind, "xid") << i;
        EXPECT_EQ(p.messages[i].fields.count("facility"), 0u) << i;
    }
}

// `dmesg` pasted twice into one file (fresh user): every Xid was counted twice. A line with a kernel timestamp that
// matches one read before byte for byte is that line again and is left out, with the indented lines under it; a
// line at another time, or in another boot's syslog prefix, is a message of its own, and lines at time 0 are kept.
TEST(KlogFormat, DmesgPastedTwiceCountsEachXidOnce) {
    const std::string dump =
        "[    0.000000] Linux version 6.1.0-18-amd64\n"
        "[  512.100200] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"
        "[  512.100300] nvidia-uvm: a message of two lines\n"
        "                 its second line\n"
        "[  513.000000] second\n";
    auto p = read_kernel_log(dump + dump +
                                 "[  514.000000] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off "
                                 "the bus.\n",
                             "d.log");
    std::size_t xids = 0, versions = 0;
    for (const auto& m : p.messages) {
        xids += m.kind == "xid";
        versions += m.text.starts_with("Linux version");
    }
    EXPECT_EQ(xids, 2u);      // 512.1002 once, 514 once
    EXPECT_EQ(versions, 2u);  // time 0: the same in every boot, kept
    EXPECT_EQ(p.messages.size(), 6u);
    EXPECT_EQ(p.messages[2].text, "nvidia-uvm: a message of two lines\nits second line");
    EXPECT_TRUE(p.complete) << (p.incomplete.empty() ? "" : p.incomplete[0]);  // its indented line is no stray line
    const Diagnostic* rep = nullptr;
    for (const auto& d : p.diagnostics)
        if (d.name == "log_line_repeated") rep = &d;
    ASSERT_NE(rep, nullptr);
    EXPECT_EQ(rep->severity, "info");
    EXPECT_EQ(rep->count, 3u);
    EXPECT_EQ(rep->first_example, "d.log:7: the line read at line 2: left out");
    // Two boots in a syslog file: the same kernel time and text under another wall-clock time are two messages.
    auto q = read_kernel_log(
        "Jun 30 11:07:05 gpu1 kernel: [  512.100200] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the "
        "bus.\n"
        "Jul  2 09:00:01 gpu1 kernel: [  512.100200] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the "
        "bus.\n",
        "kern.log");
    ASSERT_EQ(q.messages.size(), 2u);
    for (const auto& d : q.diagnostics)
        EXPECT_NE(d.name, "log_line_repeated") << d.first_example;
}

// A second boot numbers its records from 0 again, and its first records, logged before the clock runs (ts_usec 0),
// read exactly as the first boot's (fresh user): they were left out as repeats. They are kept; a repeat needs a
// time.
TEST(KlogFormat, SecondBootsFirstRecordsAreKeptNotTakenForRepeats) {
    const std::string boot = "6,0,0,-;Linux version 6.1.0-18-amd64\n6,1,0,-;Command line: root=/dev/sda1\n";
    auto p =
        read_kernel_log(boot + "4,2,5000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n" +
                            boot + "4,2,7000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n",
                        "k.log");
    ASSERT_EQ(p.messages.size(), 6u);
    EXPECT_EQ(p.messages[3].text, "Linux version 6.1.0-18-amd64");
    EXPECT_EQ(p.messages[5].kind, "xid");
    for (const auto& d : p.diagnostics)
        EXPECT_NE(d.name, "kmsg_record_repeated") << d.first_example;
}

// A continuation fragment after missing records may continue one of them (fresh user): "pid=1, GPU has fallen off
// the bus." was joined to the Xid head before a seq gap, giving an Xid a pid and a fallen-off-the-bus it may not have.
TEST(KlogFormat, ContinuationAfterASeqGapIsNotJoinedToTheRecordBeforeTheGap) {
    auto p = read_kernel_log(
        "4,5,100,c;NVRM: Xid (PCI:0000:01:00): 79, \n4,8,100,+;pid=1, GPU has fallen off the bus.\n", "k.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].fields.count("pid"), 0u) << p.messages[0].text;
    EXPECT_EQ(p.messages[0].fields.count("fallen_off_bus"), 0u);
    EXPECT_FALSE(p.complete);
    // Without the gap the fragment is joined, as before.
    auto q = read_kernel_log(
        "4,5,100,c;NVRM: Xid (PCI:0000:01:00): 79, \n4,6,100,+;pid=1, GPU has fallen off the bus.\n", "k.log");
    ASSERT_EQ(q.messages.size(), 1u);
    EXPECT_EQ(q.messages[0].fields.at("pid"), "1");
}

// A kmsg record with a bad field but a readable seq is in the file, unreadable: it is a malformed_kmsg_record, and
// the next record's seq no longer also counts it as missing (fresh user: two diagnostics for one line).
TEST(KlogFormat, MalformedKmsgRecordIsNotAlsoAMissingRecord) {
    auto p = read_kernel_log("4,6,100,-;usb ok1\n4,7,1e3,-;usb ok2\n4,8,102,-;usb ok3\n", "k.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_FALSE(p.complete);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "malformed_kmsg_record");
    EXPECT_EQ(p.diagnostics[0].count, 1u);
    // With no readable seq, the next record's seq is the only sign of it: a gap, as before.
    auto q = read_kernel_log("4,6,100,-;usb ok1\n4,x7,100,-;usb ok2\n4,8,102,-;usb ok3\n", "k.log");
    bool gap = false;
    for (const auto& d : q.diagnostics)
        gap = gap || d.name == "kmsg_seq_gap";
    EXPECT_TRUE(gap);
}
