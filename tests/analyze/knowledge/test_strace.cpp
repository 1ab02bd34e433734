// The strace reader on the case file strace-nvidia-ioctl-libva.txt (intel/libva#575) and on variants.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "nvtrace/import.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

Report report_of(std::string_view text) {
    auto in = import_text(text, "v.txt", TraceFormat::strace);
    if (!in) {
        ADD_FAILURE() << in.error().message;
        return {};
    }
    return build_report(in->stream);
}

const Diagnostic* diagnostic(const std::vector<Diagnostic>& ds, std::string_view name) {
    for (const Diagnostic& d : ds)
        if (d.name == name) return &d;
    return nullptr;
}

// The diagnostic `name` of `log` is there, `count` times, with `first_example`.
void expect_diagnostic(const StraceLog& log, std::string_view name, std::uint64_t count,
                       std::string_view first_example) {
    const Diagnostic* d = diagnostic(log.diagnostics, name);
    ASSERT_TRUE(d) << name;
    EXPECT_EQ(d->count, count) << name;
    EXPECT_EQ(d->first_example, first_example) << name;
}

std::string read_case(const char* name) {
    std::ifstream in(std::string(NVTRACE_CASES_DIR) + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST(StraceCase, DecodesEveryIoctlOfTheLibvaCase) {
    std::string text = read_case("strace-nvidia-ioctl-libva.txt");
    ASSERT_FALSE(text.empty());
    StraceLog log = parse_strace(text, "strace-nvidia-ioctl-libva.txt");

    struct Want {
        int fd;
        unsigned nr;
        unsigned size;
        const char* name;
    };
    const Want want[] = {
        {14, 0xce, 0x10, "NV_ESC_ALLOC_OS_EVENT"},     {14, 0x2b, 0x28, "NV_ESC_RM_ALLOC"},
        {5, 0x4a, 0xb8, "NV_ESC_RM_VID_HEAP_CONTROL"}, {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},
        {5, 0x4e, 0x38, "NV_ESC_RM_MAP_MEMORY"},       {5, 0x2b, 0x28, "NV_ESC_RM_ALLOC"},
        {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},          {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},
        {5, 0x4e, 0x38, "NV_ESC_RM_MAP_MEMORY"},
    };
    std::vector<const StraceIoctl*> complete;
    for (const auto& io : log.ioctls)
        if (!io.truncated) complete.push_back(&io);
    ASSERT_EQ(complete.size(), std::size(want));
    for (std::size_t i = 0; i < std::size(want); ++i) {
        const StraceIoctl& io = *complete[i];
        SCOPED_TRACE(io.line);
        EXPECT_EQ(io.fd, want[i].fd);
        ASSERT_TRUE(io.cmd.has_value());
        IocFields f = decode_ioc(*io.cmd);
        EXPECT_EQ(f.dir, 3u);
        EXPECT_EQ(f.type, 0x46u);
        EXPECT_EQ(f.nr, want[i].nr);
        EXPECT_EQ(f.size, want[i].size);
        EXPECT_EQ(io.ret, 0);
        EXPECT_FALSE(io.fd_path.has_value());  // fds 5 and 14 were opened before the excerpt
        EXPECT_EQ(describe_ioctl(*io.cmd).name, want[i].name);
    }
    // The last line stops mid-call: one truncated ioctl on fd 5 with no request and no result.
    ASSERT_EQ(log.ioctls.size(), std::size(want) + 1);
    const StraceIoctl& last = log.ioctls.back();
    EXPECT_TRUE(last.truncated);
    EXPECT_EQ(last.fd, 5);
    EXPECT_FALSE(last.cmd.has_value());
    EXPECT_FALSE(last.ret.has_value());
    EXPECT_TRUE(log.truncated);
    ASSERT_FALSE(log.diagnostics.empty());
    EXPECT_EQ(log.diagnostics.front().name, "strace_truncated_line");
    EXPECT_EQ(log.diagnostics.front().first_example, "strace-nvidia-ioctl-libva.txt:19: line ends mid-call");
    // Two opens of fd 15: /dev/nvidiactl, then (after close) /dev/nvidia0.
    ASSERT_EQ(log.opens.size(), 2u);
    EXPECT_EQ(log.opens[0].path, "/dev/nvidiactl");
    EXPECT_EQ(log.opens[0].fd, 15);
    EXPECT_EQ(log.opens[1].path, "/dev/nvidia0");
    EXPECT_EQ(log.lines, 19u);

    auto records = strace_ioctl_records(log);
    ASSERT_EQ(records.size(), log.ioctls.size());
    EXPECT_EQ(records[1].name, "NV_ESC_RM_ALLOC");
    EXPECT_FALSE(records.back().name.has_value());
}

TEST(StraceReader, FdPathsFromOpenatAndDashY) {
    const char* text =
        "1234  12:00:00.000001 openat(AT_FDCWD, \"/dev/nvidia-uvm\", O_RDWR|O_CLOEXEC) = 7\n"
        "1234  12:00:00.000002 ioctl(7, _IOC(_IOC_NONE, 0, 0x1, 0x3000), 0x7ffc) = 0 <0.000010>\n"
        "1234  12:00:00.000003 ioctl(7, _IOC(_IOC_NONE, 0, 0x21, 0), 0x7ffc) = 0\n"
        "[pid  1235] ioctl(9</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x27, 0x38), 0x7ffd) = 0\n"
        "ioctl(3, TCGETS, 0x7ffd) = -1 ENOTTY (Inappropriate ioctl for device)\n"
        "close(7) = 0\n"
        "ioctl(7, 0x21, 0) = -1 EBADF (Bad file descriptor)\n";
    StraceLog log = parse_strace(text);
    ASSERT_EQ(log.ioctls.size(), 5u);
    EXPECT_EQ(log.ioctls[0].cmd, 0x30000001u);  // UVM_INITIALIZE as strace prints it
    EXPECT_EQ(log.ioctls[0].fd_path, "/dev/nvidia-uvm");
    EXPECT_EQ(log.ioctls[0].pid, 1234);
    EXPECT_EQ(describe_ioctl(*log.ioctls[0].cmd, log.ioctls[0].fd_path).name, "UVM_INITIALIZE");
    EXPECT_EQ(describe_ioctl(*log.ioctls[1].cmd, log.ioctls[1].fd_path).name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(log.ioctls[2].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(log.ioctls[2].pid, 1235);
    EXPECT_EQ(log.ioctls[3].cmd, 0x5401u);
    EXPECT_EQ(log.ioctls[3].ret, -25);  // the kernel's -ENOTTY, not libc's -1
    EXPECT_EQ(log.ioctls[3].error, "ENOTTY (Inappropriate ioctl for device)");
    EXPECT_FALSE(log.ioctls[4].fd_path.has_value());  // closed
    EXPECT_FALSE(log.truncated);
    EXPECT_TRUE(log.diagnostics.empty());
}

TEST(StraceReader, UnfinishedAndResumedCallsPair) {
    const char* text =
        "[pid 10] ioctl(5, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ff <unfinished ...>\n"
        "[pid 11] write(1, \"x, y)\", 5) = 5\n"
        "[pid 10] <... ioctl resumed>) = 0\n";
    StraceLog log = parse_strace(text);
    ASSERT_EQ(log.ioctls.size(), 1u);
    EXPECT_EQ(log.ioctls[0].ret, 0);
    EXPECT_FALSE(log.ioctls[0].truncated);
    EXPECT_EQ(log.ioctls[0].line, 1u);
}

// strace prints an argument it decodes at exit on the resumed line (a read-direction ioctl's): the report's arg was
// null, which report-format.md keeps for "the source printed no number" (fresh user).
TEST(StraceReader, ArgumentPrintedOnTheResumedLineIsTheCallsArgument) {
    const char* text =
        "4242  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20) <unfinished ...>\n"
        "4243  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd00000010 <unfinished "
        "...>\n"
        "4242  <... ioctl resumed>, 0x7ffd00000000) = 0\n"
        "4243  <... ioctl resumed>) = 0\n";
    StraceLog log = parse_strace(text);
    ASSERT_EQ(log.ioctls.size(), 2u);
    EXPECT_EQ(log.ioctls[0].arg, "0x7ffd00000000");
    EXPECT_EQ(log.ioctls[1].arg, "0x7ffd00000010");
    Report r = report_of(text);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].arg, 0x7ffd00000000u);
}

// strace's SYS_FUNC(ioctl) (src/ioctl.c) prints a request it has a name for by that name. A name nvtrace has no
// number for left the call out of the report's ioctls with an info diagnostic, and the report said complete.
// The forms are strace's: a name of its table, every name of the number joined by " or "
// (tprint_alternative_value), a decoder's NAME(size) (evdev_decode_number, hiddev_decode_number), -X verbose
// "0x... /* NAME */".
TEST(StraceReader, UnknownSymbolicRequestMakesTheReportIncompleteWithItsName) {
    const char* text =
        "ioctl(3, SNDRV_CTL_IOCTL_PVERSION, 0x7ffd) = 0\n"
        "ioctl(4</dev/input/event3>, EVIOCGNAME(256), 0x7ffd) = 8\n"
        "ioctl(4</dev/input/event3>, EVIOCGBIT(EV_KEY, 96), 0x7ffd) = 96\n"
        "ioctl(4</dev/input/event3>, EVIOCGBIT(0, 8), 0x7ffd) = 8\n"
        "ioctl(4</dev/input/event3>, EVIOCGABS(ABS_X), 0x7ffd) = 0\n"
        "ioctl(5, SOME_OTHER_NAME or TCGETS, 0x7ffd) = 0\n"
        "ioctl(6, 0xc0045500 /* SNDRV_CTL_IOCTL_PVERSION */, 0x7ffd) = 0\n"
        "ioctl(7, HIDIOCGRAWNAME(64), 0x7ffd) = 5\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 8u);
    EXPECT_FALSE(log.ioctls[0].cmd);
    EXPECT_EQ(log.ioctls[0].cmd_text, "SNDRV_CTL_IOCTL_PVERSION");
    EXPECT_EQ(log.ioctls[1].cmd, 0x81004506u);  // _IOC(_IOC_READ, 'E', 0x06, 256)
    EXPECT_EQ(log.ioctls[2].cmd, 0x80604521u);  // _IOC(_IOC_READ, 'E', 0x20 + EV_KEY, 96)
    EXPECT_EQ(log.ioctls[3].cmd, 0x80084520u);
    EXPECT_FALSE(log.ioctls[4].cmd);  // EVIOCGABS's size is not printed
    EXPECT_EQ(log.ioctls[5].cmd, 0x5401u);
    EXPECT_EQ(log.ioctls[6].cmd, 0xc0045500u);
    EXPECT_EQ(log.ioctls[7].cmd, 0x80404804u);  // _IOC(_IOC_READ, 'H', 0x04, 64)
    const Diagnostic* d = diagnostic(log.diagnostics, "strace_unknown_request");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 2u);
    EXPECT_EQ(d->severity, "data_loss");
    EXPECT_EQ(d->first_example,
              "v.txt:1: request SNDRV_CTL_IOCTL_PVERSION: a name nvtrace has no number for (strace -X raw or -X "
              "verbose prints the number); the call is left out of ioctls");

    Report r = report_of(text);
    EXPECT_EQ(r.ioctls.size(), 6u);
    EXPECT_FALSE(r.completeness.complete);
    bool reason = false;
    for (const std::string& s : r.completeness.reasons)
        reason = reason || s.find("strace_unknown_request: 2 (v.txt:1: request SNDRV_CTL_IOCTL_PVERSION") == 0;
    EXPECT_TRUE(reason);
    // Every request nvtrace could number: the report says complete.
    EXPECT_TRUE(report_of("ioctl(5, SOME_OTHER_NAME or TCGETS, 0x7ffd) = 0\n").completeness.complete);
}

// strace prints a failed call as libc sees it, "-1" and the errno (src/syscall.c print_err_ret); the report's ret
// is the kernel's (sys_exit_ioctl: -errno). A "= -1" without an errno gave errno_name "unknown"; with null
// instead, the statistics would have named -1 EPERM. strace's forms: "-1 ENAME (strerror)", "-1 (errno N)" for a
// number its table has no name for (4.10 and later), "-1 E??? (errno N)" (before), " (INJECTED)" after a fault
// of -e inject, -e raw=ioctl's hex success and its unchanged error form; print_erestart's "? ERESTARTSYS (...)".
TEST(StraceReader, MinusOneWithoutErrnoHasNoRetAndIsNotCountedAsEperm) {
    const char* text =
        "ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1\n"
        "ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1 ENOTTY "
        "(Inappropriate ioctl for device)\n"
        "ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1 (errno 530)\n"
        "ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1 E??? (errno 531)\n"
        "ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1 EPERM (Operation not "
        "permitted) (INJECTED)\n"
        "ioctl(3</dev/nvidiactl>, 0xc020462a, 0x7ffd) = -1 EINVAL (Invalid argument)\n"
        "ioctl(3</dev/nvidiactl>, 0xc020462a, 0x7ffd) = 0x1\n"
        "ioctl(3</dev/nvidiactl>, 0xc020462a, 0x7ffd) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 8u);
    const StraceIoctl* io = log.ioctls.data();
    EXPECT_FALSE(io[0].ret);
    EXPECT_FALSE(io[0].errno_name);
    EXPECT_EQ(io[1].ret, -25);
    EXPECT_EQ(io[1].errno_name, "ENOTTY");
    EXPECT_EQ(io[1].errno_text, "Inappropriate ioctl for device");
    EXPECT_EQ(io[2].ret, -530);
    EXPECT_FALSE(io[2].errno_name);
    EXPECT_EQ(io[3].ret, -531);
    EXPECT_FALSE(io[3].errno_name);
    EXPECT_EQ(io[4].ret, -1);  // -EPERM
    EXPECT_EQ(io[4].errno_name, "EPERM");
    EXPECT_EQ(io[4].errno_text, "Operation not permitted");
    EXPECT_EQ(io[5].ret, -22);
    EXPECT_EQ(io[6].ret, 1);
    // "= ? ERESTARTSYS": the program saw no value, the kernel returned -512 (sys_exit_ioctl's ret); it had no
    // ret, unlike the same call traced by the tracepoint.
    EXPECT_EQ(io[7].ret, -512);
    EXPECT_EQ(io[7].errno_name, "ERESTARTSYS");
    const Diagnostic* d = diagnostic(log.diagnostics, "strace_malformed_ioctl");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 1u);
    EXPECT_EQ(d->first_example,
              "v.txt:1: '-1' without the errno strace prints after it (expected '-1 ENAME (text)' or '-1 (errno N)')");

    Report r = report_of(text);
    ASSERT_EQ(r.ioctls.size(), 8u);
    EXPECT_FALSE(r.ioctls[0].ret);
    EXPECT_FALSE(r.ioctls[0].errno_name);
    EXPECT_EQ(r.ioctls[1].ret, -25);
    EXPECT_FALSE(r.completeness.complete);
    ASSERT_FALSE(r.ioctl_stats.empty());
    const IoctlStat& s = r.ioctl_stats[0];
    EXPECT_EQ(s.count, 8u);
    EXPECT_EQ(s.errors, 6u);  // ENOTTY, -530, -531, EPERM, EINVAL, ERESTARTSYS; the first's outcome is unknown
    EXPECT_EQ(s.errors_by_name.count("EPERM"), 1u);
    EXPECT_EQ(s.errors_by_name.at("EPERM"), 1u);  // the injected one only, never the bare -1
    EXPECT_EQ(s.errors_by_name.count("unknown"), 0u);
    EXPECT_EQ(s.unfinished, 1u);
}

// A return strace cannot print (its kernel_long_t is 64 bits: PRINT_VAL_D, or hex with -e raw=) read as no
// return at all, so the call counted as unfinished without a word. It is a malformed line naming file:line.
TEST(StraceReader, ReturnThatDoesNotFitIsAMalformedLineNamingFileAndLine) {
    const char* text =
        "ioctl(3, TCGETS, 0x7ffd) = 0\n"
        "ioctl(3, TCGETS, 0x7ffd) = 99999999999999999999\n"
        "ioctl(3, TCGETS, 0x7ffd) = 9223372036854775808\n"
        "ioctl(3, TCGETS, 0x7ffd) = 0x10000000000000000\n"
        "ioctl(3, TCGETS, 0x7ffd) = 12abc\n"
        "ioctl(3, TCGETS, 0x7ffd) = 9223372036854775807\n"
        "ioctl(3, TCGETS, 0x7ffd) = 0x8000000000000000\n"
        "ioctl(3, TCGETS, 0x7ffd <unfinished ...>\n"
        "<... ioctl resumed>) = 18446744073709551616\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 8u);
    for (int i : {1, 2, 3, 4, 7})
        EXPECT_FALSE(log.ioctls[static_cast<std::size_t>(i)].ret) << i;
    EXPECT_EQ(log.ioctls[5].ret, INT64_MAX);
    EXPECT_EQ(log.ioctls[6].ret, INT64_MIN);  // 64 bits of hex: the kernel_long_t itself
    const Diagnostic* d = diagnostic(log.diagnostics, "strace_malformed_ioctl");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 5u);
    EXPECT_EQ(d->first_example,
              "v.txt:2: return value '99999999999999999999' is not a number that fits in 64 bits (expected a "
              "decimal or 0x... value, '?', or '-1 ENAME (text)')");
    Report r = report_of(text);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.unreadable_lines(), 5u);
}

// include/uapi/asm-generic/ioctl.h gives the _IOC fields 8 (nr), 8 (type), 14 (size) and 2 (dir) bits, and strace
// prints each already masked (src/ioctl.c, ioctl_print_code). A wider field was masked silently (type 0x146 read
// as 0x46): it is a malformed request now, as are a direction that is not _IOC_NONE/_IOC_READ/_IOC_WRITE and a
// number over ioctl(2)'s 32-bit request.
TEST(StraceReader, IocFieldWiderThanItsBitsIsRefusedNotMasked) {
    const char* text =
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x146, 0x2a, 0x20), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x12a, 0x20), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x4000), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRTIE, 0x46, 0x2a, 0x20), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(4, 0x46, 0x2a, 0x20), 0x7ffd) = 0\n"
        "ioctl(3, 0x1c028462b, 0x7ffd) = 0\n"
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0xff, 0xff, 0x3fff), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(0, 0x54, 0x1, 0), 0x7ffd) = 0\n"
        "ioctl(3, _IOC(_IOC_NONE, 0, 0x1, 0x3000), 0x7ffd) = 0\n"
        "ioctl(3, 0xc028462b /* _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28) */, 0x7ffd) = 0\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 10u);
    for (std::size_t i = 0; i < 6; ++i)
        EXPECT_FALSE(log.ioctls[i].cmd) << i;
    EXPECT_EQ(log.ioctls[6].cmd, 0xffffffffu);
    EXPECT_EQ(log.ioctls[7].cmd, 0x5401u);
    EXPECT_EQ(log.ioctls[8].cmd, 0x30000001u);
    EXPECT_EQ(log.ioctls[9].cmd, 0xc028462bu);
    const Diagnostic* d = diagnostic(log.diagnostics, "strace_malformed_ioctl");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count, 6u);
    EXPECT_EQ(d->first_example,
              "v.txt:1: request _IOC(_IOC_READ|_IOC_WRITE, 0x146, 0x2a, 0x20): _IOC type 0x146 does not fit its 8 "
              "bits (include/uapi/asm-generic/ioctl.h: expected _IOC(dir, type <= 0xff, nr <= 0xff, size <= "
              "0x3fff))");
    EXPECT_FALSE(diagnostic(log.diagnostics, "strace_unknown_request"));
    Report r = report_of(text);
    EXPECT_EQ(r.ioctls.size(), 4u);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.unreadable_lines(), 6u);
}

// strace --decode-pids=comm (strace printleader, print_comm_str) prints the task's comm after its pid:
// "[pid 1234<python3>] " with -f on one output, "1234<python3> " with -ff or -o. The pid was lost and, in the
// second form, the whole call with it.
TEST(StraceReader, DecodePidsCommPrefixKeepsThePidAndTheCall) {
    const char* text =
        "[pid  1234<python3>] ioctl(3, TCGETS, 0x7ffd) = 0\n"
        "1235<cuda-EvtHandlr> 10:00:00.000001 ioctl(4, TCGETS, 0x7ffd) = 0\n"
        "[pid 1236<a]b>] ioctl(5, TCGETS, 0x7ffd) = 0\n"
        "1237 ioctl(6, TCGETS, 0x7ffd) = 0\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 4u);
    EXPECT_EQ(log.ioctls[0].pid, 1234);
    EXPECT_EQ(log.ioctls[1].pid, 1235);
    EXPECT_EQ(log.ioctls[1].enter_ns, 36'000'000'001'000u);
    EXPECT_EQ(log.ioctls[2].pid, 1236);
    EXPECT_EQ(log.ioctls[2].fd, 5);
    EXPECT_EQ(log.ioctls[3].pid, 1237);
    EXPECT_TRUE(log.diagnostics.empty());
}

// The same lines are detected as strace: "1234<python3> ioctl(...)" (-ff, -o) failed detection, so such a file
// was read as a kernel log with nothing in it; "[pid 1236<a]b>]" too (a ']' in the comm).
TEST(StraceReader, DecodePidsCommPrefixIsDetectedAsStrace) {
    for (const char* line : {"1235<cuda-EvtHandlr> ioctl(4, TCGETS, 0x7ffd) = 0\n",
                             "1235<cuda-EvtHandlr> 10:00:00.000001 ioctl(4, TCGETS, 0x7ffd) = 0\n",
                             "[pid 1236<a]b>] ioctl(5, TCGETS, 0x7ffd) = 0\n"}) {
        std::string text;
        for (int i = 0; i < 5; ++i)
            text += line;
        EXPECT_EQ(detect_format(text), TraceFormat::strace) << line;
    }
}

// --decode-pids=comm names each line's task ("1234<python3> ioctl(...)", strace printleader/print_comm_str); the
// reader read the pid and dropped the name, so the report's ioctls had comm "".
TEST(StraceReader, DecodePidsCommNamesTheIoctlsTask) {
    const char* text =
        "1234<python3> openat(AT_FDCWD, \"/dev/nvidiactl\", O_RDWR|O_CLOEXEC) = 3</dev/nvidiactl>\n"
        "1234<python3> ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = 0\n"
        "[pid 1236<a]b>] ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = 0\n"
        "1237 ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = 0\n"
        "1234<nvidia-smi> +++ exited with 0 +++\n";
    StraceLog log = parse_strace(text, "c.txt");
    EXPECT_EQ(log.comms.at(1234), "nvidia-smi");  // the last name printed (after an execve)
    EXPECT_EQ(log.comms.at(1236), "a]b");
    EXPECT_FALSE(log.comms.count(1237));
    Report r = report_of(text);
    ASSERT_EQ(r.ioctls.size(), 3u);
    EXPECT_EQ(r.ioctls[0].comm, "nvidia-smi");
    EXPECT_EQ(r.ioctls[1].comm, "a]b");
    EXPECT_EQ(r.ioctls[2].comm, "");
}

// `ioctl(3</dev/nvidiactl>) = -1 EINVAL (Invalid argument)` has no request, which ioctl(2) and strace always
// have: it was kept as an ioctl of no request without a word, so the report was complete and
// `absent ioctl NV_ESC_RM_ALLOC ret=EINVAL` passed (fresh user). It is a malformed line naming file:line.
TEST(StraceReader, IoctlWithoutRequestIsAMalformedLineNotACompleteReport) {
    const char* text =
        "1234  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffd) = 0\n"
        "1234  ioctl(3</dev/nvidiactl>) = -1 EINVAL (Invalid argument)\n";
    expect_diagnostic(parse_strace(text, "v.txt"), "strace_malformed_ioctl", 1,
                      "v.txt:2: no request in ioctl() (expected 'ioctl(FD, REQUEST, ...)')");
    Report r = report_of(text);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.unreadable_lines(), 1u);
}

// "<... ioctl resumed>" whose "<unfinished ...>" line is not in the log (an excerpt that starts there, a log cut
// before it) was dropped without a word and the report was complete: the call's request was on the missing line,
// so `absent ioctl X` passed over it (fresh user). It is a return without its call, data_loss.
TEST(StraceReader, ResumedIoctlWithoutItsUnfinishedLineIsAReturnWithoutItsCall) {
    const char* text =
        "[pid  1234] ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc5678) = 0\n"
        "[pid  1236] <... ioctl resumed>) = -1 ENOTTY (Inappropriate ioctl for device)\n"
        "[pid  1236] <... ioctl resumed>, [0]) = 0\n";
    expect_diagnostic(parse_strace(text, "v.txt"), "strace_exit_without_entry", 2,
                      "v.txt:2: a '<... ioctl resumed>' line whose '<unfinished ...>' call line is not in the log");
    Report r = report_of(text);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.ioctls.size(), 1u);
}

// A line that is no call was skipped without a word: "ioctl garbage here" may have been any ioctl (malformed,
// unreadable: the report is not complete), other text is counted as strace_other_line (info); strace's own signal,
// "strace:" and -k frame lines are not counted.
TEST(StraceReader, LinesThatAreNoCallAreCountedNotSkipped) {
    const char* text =
        "1234  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffd) = 0\n"
        "hello from the program\n"
        "1234  ioctl garbage here\n"
        "1234  --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=1235} ---\n"
        "strace: Process 1235 attached\n"
        " > /usr/lib/x86_64-linux-gnu/libc.so.6(ioctl+0xb) [0x11c3ab]\n"
        "second stray line\n"
        "1234  +++ exited with 0 +++\n";
    StraceLog log = parse_strace(text, "v.txt");
    expect_diagnostic(log, "strace_malformed_ioctl", 1,
                      "v.txt:3: expected ioctl(fd, request, ...) = result, found \"ioctl garbage here\"");
    expect_diagnostic(
        log, "strace_other_line", 2,
        "v.txt:2: expected a call, exit or signal line, found \"hello from the program\"; the line is not "
        "read");
    const Diagnostic* other = diagnostic(log.diagnostics, "strace_other_line");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->severity, "info");
    EXPECT_EQ(log.diagnostics.size(), 2u);
    Report r = report_of(text);
    EXPECT_FALSE(r.completeness.complete);
    EXPECT_EQ(r.completeness.unreadable_lines(), 1u);
    // Only the stray text: complete (nothing an ioctl could have been in), the lines counted.
    Report ok =
        report_of("1234  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffd) = 0\nhello\n");
    EXPECT_TRUE(ok.completeness.complete);
    EXPECT_EQ(ok.completeness.diagnostic_count(Diag::strace_other_line), 1u);
}
