// The checker and completeness.gaps: a check is inconclusive only when its evidence could lie in a gap
// (docs/expectations.md, "How a check is decided"). Small synthetic reports: three phases, ioctl-only (the common
// case where function_graph is refused), recorded events on CPUs 1 and 2 that place a gap between its CPU's
// neighbouring events.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "nvtrace/expect.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {
namespace {

constexpr std::uint64_t kFionread = 0x541b;

ExpectFile inline_expect(std::string_view text) {
    auto e = parse_expectations(text, "inline.expect");
    if (!e) ADD_FAILURE() << e.error().message;
    return e ? *e : ExpectFile{};
}

std::map<std::string, Check> checks(const Report& r, std::string_view expect) {
    std::map<std::string, Check> m;
    for (const auto& c : check_report(r, inline_expect(expect)))
        m[c.id] = c;
    return m;
}

// Phases one [1000, 2000) ns, two [2000, 3000), three [3000, ...): one FIONREAD in phase one, nothing else.
// CPU 1 and CPU 2 each record an event (sched_switch) in every phase, at 1500/2500/3500 and 1600/2600/3600.
Report phased_report() {
    Report r;
    r.source.kind = "file";
    int i = 0;
    for (const char* p : {"one", "two", "three"}) {
        std::uint64_t begin = 1000 * static_cast<std::uint64_t>(++i);
        r.markers.push_back({begin, 9, std::string("nvtrace-phase: ") + p});
        for (int cpu : {1, 2}) {
            EventRecord e;
            e.name = "sched:sched_switch";
            e.ts_ns = begin + 400 + 100 * static_cast<std::uint64_t>(cpu);
            e.cpu = cpu;
            r.events.push_back(e);
        }
    }
    IoctlRecord io;
    io.pid = 9;
    io.fd = 4;
    io.cmd = kFionread;
    io.name = "FIONREAD";
    io.ret = 0;
    io.enter_ns = 1200;
    io.exit_ns = 1210;
    io.phase = "one";
    r.ioctls.push_back(io);
    return r;
}

void add_gap(Report& r, std::string kind, int cpu, std::optional<std::uint64_t> ts,
             std::optional<std::uint64_t> count = std::nullopt) {
    Gap g;
    g.kind = std::move(kind);
    g.cpu = cpu;
    g.ts_ns = ts;
    g.count = count;
    r.completeness.gaps.push_back(g);
    r.completeness.complete = false;
    if (g.kind == "lost_events" && count) r.completeness.lost_events += *count;
    r.completeness.reasons.push_back("a gap");
}

constexpr std::string_view kPerPhase =
    "check one-none\n  phase one\n  absent ioctl 0x5401\n"
    "check two-none\n  phase two\n  absent ioctl 0x5401\n"
    "check three-none\n  phase three\n  absent ioctl 0x5401\n"
    "check one-seen\n  phase one\n  ioctl 0x541b\n"
    "check two-seen\n  phase two\n  ioctl 0x541b\n";

// "CPU:1 [LOST 5 EVENTS]" before CPU 1's event at 2500: the events lost lie between 1500 and 2500, in phases one
// and two, not three.
TEST(Check, AbsenceWithGapInWindowIsInconclusive) {
    Report r = phased_report();
    add_gap(r, "lost_events", 1, 2500, 5);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id << ": " << m[id].why;
        EXPECT_NE(m[id].why.find("data was lost (5 events lost on CPU 1 between 1.5 us and 2.5 us)"), std::string::npos)
            << m[id].why;
    }
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

TEST(Check, PresenceFoundOutsideGapPasses) {
    Report r = phased_report();
    add_gap(r, "lost_events", 2, 3600, 5);  // CPU 2 between 2600 and 3600
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["one-seen"].result, "pass") << m["one-seen"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// Not seen in a phase no gap touches is a failure, although data was lost elsewhere in the run (before: any loss
// made every missing thing inconclusive).
TEST(Check, MissingIoctlInPhaseWithoutGapFailsDespiteGapElsewhere) {
    Report r = phased_report();
    add_gap(r, "lost_events", 1, 3500, 5);  // CPU 1 between 2500 and 3500: phases two and three
    auto m = checks(r, std::string(kPerPhase) + std::string("check three-seen\n  phase three\n  ioctl 0x541b\n"));
    EXPECT_EQ(m["two-seen"].result, "inconclusive") << m["two-seen"].why;
    EXPECT_EQ(m["three-seen"].result, "inconclusive") << m["three-seen"].why;
    r.completeness.gaps.front().ts_ns = 1500;  // CPU 1 before its first event: phase one only
    m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-seen"].result, "fail") << m["two-seen"].why;
    EXPECT_EQ(m["one-none"].result, "inconclusive") << m["one-none"].why;
    EXPECT_EQ(m["two-none"].result, "pass") << m["two-none"].why;
}

// The lost events lie between the gap's CPU's own neighbouring events: CPU 2's before 2600 is 1600, so a loss on
// CPU 2 at 2600 does not reach phase three, and the events of CPU 1 do not widen or narrow it.
TEST(Check, GapOnOtherCpuDoesNotReachPastItsCpusNextEvent) {
    Report r = phased_report();
    add_gap(r, "lost_events", 2, 2600, std::nullopt);
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_NE(m["two-none"].why.find("an unknown number of events lost on CPU 2 between 1.6 us and 2.6 us"),
              std::string::npos)
        << m["two-none"].why;
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// A function trace whose header says 12,325 of 70,138 entries were overwritten and that marks
// "##### CPU 2 buffer started ####" before CPU 2's event at 2600 (tests/data/cases/
// function-text-annotate-cpu-buffer-started.txt has this shape): CPU 2 lost its events before 2600.
TEST(Check, BufferStartedGapNamesTheOverwrittenEntriesAndItsCpu) {
    Report r = phased_report();
    r.events.erase(r.events.begin() + 1);  // CPU 2's first event is now the one at 2600
    r.completeness.entries_in_buffer = 57813;
    r.completeness.entries_written = 70138;
    r.completeness.overruns = 12325;
    add_gap(r, "buffer_started", 2, 2600);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("12,325 entries overwritten on CPU 2 before 2.6 us (the buffer wrapped)"),
                  std::string::npos)
            << m[id].why;
    }
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// The same header without any buffer_started mark says nothing of where: every phase is inconclusive.
TEST(Check, OverwrittenEntriesWithoutMarksCoverEveryPhase) {
    Report r = phased_report();
    r.completeness.entries_in_buffer = 57813;
    r.completeness.entries_written = 70138;
    r.completeness.overruns = 12325;
    r.completeness.complete = false;
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none", "three-none"}) {
        EXPECT_EQ(m[id].result, "inconclusive") << id;
        EXPECT_NE(m[id].why.find("12325 ring-buffer overruns"), std::string::npos) << m[id].why;
    }
}

// A gap without a time (a text trace without timestamps) or without a CPU's neighbours covers everything.
TEST(Check, GapWithoutTimeCoversEveryPhase) {
    Report r = phased_report();
    add_gap(r, "elided", -1, std::nullopt);
    auto m = checks(r, kPerPhase);
    for (const char* id : {"one-none", "two-none", "three-none"})
        EXPECT_EQ(m[id].result, "inconclusive") << id;
    EXPECT_NE(m["three-none"].why.find("lines elided"), std::string::npos) << m["three-none"].why;
}

// An elided row names no CPU: its lines lie between the events of any CPU around it (2500 and 2600 here).
TEST(Check, ElidedRowIsBoundedByTheEventsAroundIt) {
    Report r = phased_report();
    add_gap(r, "elided", -1, 2500);
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_EQ(m["three-none"].result, "pass") << m["three-none"].why;
}

// Returns without their entry damage the call tree, not the ioctls: an ioctl check is decided as usual.
TEST(Check, OrphanReturnsDoNotMakeIoctlChecksInconclusive) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::orphan_return, 3, "cpu 1 ts 1500 ns: f"));
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["two-seen"].result, "fail") << m["two-seen"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// /dev/kmsg records overwritten before they were read: kernel-log facts cannot be decided by absence, ioctl facts
// can.
TEST(Check, OverwrittenKernelLogMakesOnlyLogAbsenceInconclusive) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::orphan_return, 1, "cpu 1 ts 1500 ns: f"));
    r.completeness.reasons = {"1 returns without their entry",
                              "kernel log records were overwritten before they were read"};
    KernelLogMessage k;
    k.kind = "nv_status";
    k.text = "NVRM: nvAssertFailed";
    r.kernel_log.push_back(k);
    auto m = checks(r, std::string(kPerPhase) + "check no-xid\n  absent log xid\n");
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
    EXPECT_NE(m["no-xid"].why.find("kernel log records were overwritten"), std::string::npos) << m["no-xid"].why;
    EXPECT_EQ(m["one-none"].result, "pass") << m["one-none"].why;
}

// A capture's /dev/kmsg record that is not `<prio>,<seq>,<ts_usec>,<flags>;<msg>` (kernel/printk/printk.c
// devkmsg_read's layout: a sequence number that is not a number, no ';', a record cut short) may have been any
// message, an Xid included: the report is incomplete and `absent log` cannot pass. It was counted as an error that
// left the report complete, so `absent log xid` passed over the record it could not read.
TEST(Check, KmsgRecordThatCannotBeReadMakesAbsentLogInconclusive) {
    for (const char* bad : {"6,1,notanumber,-;NVRM: Xid (PCI:0000:01:00): 79", "6,2,1000,-", "6,", "4;x"}) {
        SCOPED_TRACE(bad);
        EventStream st;
        st.kmsg = {KmsgRecordText{"6,1,1000,-;nvidia-uvm: Loaded the UVM driver"}, KmsgRecordText{bad}};
        Report r = build_report(st);
        EXPECT_FALSE(r.completeness.complete);
        EXPECT_EQ(r.completeness.diagnostic_count(Diag::malformed_kmsg_record), 1u);
        EXPECT_EQ(r.completeness.unreadable_lines(), 1u);
        ASSERT_FALSE(r.completeness.reasons.empty());
        EXPECT_NE(r.completeness.reasons.back().find("1 record could not be read"), std::string::npos)
            << r.completeness.reasons.back();
        auto m = checks(r, "check no-xid\n  absent log xid\n");
        EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
    }
    // Every record readable: complete, and the absence passes.
    EventStream ok;
    ok.kmsg = {KmsgRecordText{"6,1,1000,-;nvidia-uvm: Loaded the UVM driver"}};
    Report r = build_report(ok);
    EXPECT_TRUE(r.completeness.complete);
    EXPECT_EQ(checks(r, "check no-xid\n  absent log xid\n")["no-xid"].result, "pass");
}

// A live capture that read its kernel log from /dev/kmsg (kmsg_clock recorded, no printk:console line): lost
// ring-buffer events cannot hide a kernel-log line, so `absent log xid` passes; ioctl facts in the lost span stay
// inconclusive. With a line that came through the ring buffer (attached "console"), the loss hides log lines too.
// The same gap text three times is named once, counted.
TEST(Check, RingBufferLossDoesNotHideKernelLogReadFromKmsg) {
    Report r = phased_report();
    r.kmsg_clock = KmsgClockOffset{"local", 0, 0, "same_clock"};
    for (int k = 0; k < 3; ++k)
        add_gap(r, "lost_events", 1, 2500);
    r.completeness.overruns = 556;
    KernelLogMessage k;
    k.kind = "nv_status";
    k.text = "NVRM: nvAssertFailed";
    k.seq = 7;
    k.attached = "time";
    r.kernel_log.push_back(k);
    std::string expect = std::string(kPerPhase) + "check no-xid\n  absent log xid\n";
    auto m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "pass") << m["no-xid"].why;
    EXPECT_EQ(m["two-none"].result, "inconclusive") << m["two-none"].why;
    EXPECT_NE(m["two-none"].why.find("an unknown number of events lost on CPU 1 between 1.5 us and 2.5 us (x3)"),
              std::string::npos)
        << m["two-none"].why;

    r.kernel_log[0].attached = "console";
    m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;

    r.kernel_log[0].attached = "time";
    r.kmsg_clock.reset();  // not a kmsg capture: where the log came from is not known
    m = checks(r, expect);
    EXPECT_EQ(m["no-xid"].result, "inconclusive") << m["no-xid"].why;
}

// A data_loss diagnostic has no place: every phase.
TEST(Check, DataLossDiagnosticCoversEveryPhase) {
    Report r = phased_report();
    r.completeness.complete = false;
    r.completeness.diagnostics.push_back(make_diagnostic(Diag::damaged_page, 1, "raw/instance/cpu1 page 3: bad"));
    auto m = checks(r, kPerPhase);
    EXPECT_EQ(m["three-none"].result, "inconclusive");
    EXPECT_NE(m["three-none"].why.find("damaged_page: 1 (raw/instance/cpu1 page 3: bad)"), std::string::npos)
        << m["three-none"].why;
}

}  // namespace
}  // namespace nvtrace
