// Variants of the input kinds written from the formats' sources (not from the case files):
// each test says where its lines' shape comes from.
#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

Report report_of(std::string_view text, TraceFormat f, std::string_view name = "v.txt") {
    auto in = import_text(text, name, f);
    if (!in) {
        ADD_FAILURE() << in.error().message;
        return {};
    }
    return build_report(in->stream);
}

const Gap* gap(const Report& r, std::string_view kind, int nth = 0) {
    for (const Gap& g : r.completeness.gaps)
        if (g.kind == kind && nth-- == 0) return &g;
    return nullptr;
}

}  // namespace

// kernel/trace/trace.c: print_trace_line prints "CPU:%d [LOST %lu EVENTS]" before the first event after a
// loss; the CPU must stay with the count.
TEST(ReaderVariants, LostEventsKeepTheirCpu) {
    const char* text =
        "# tracer: function_graph\n"
        " 4)   0.100 us    |  f();\n"
        "CPU:4 [LOST 51128 EVENTS]\n"
        " 4)   0.100 us    |  g();\n"
        "CPU:1 [LOST 72 EVENTS]\n"
        " 1)   0.100 us    |  h();\n";
    Report r = report_of(text, TraceFormat::fgraph_text);
    ASSERT_TRUE(gap(r, "lost_events", 1));
    EXPECT_EQ(gap(r, "lost_events")->cpu, 4);
    EXPECT_EQ(gap(r, "lost_events")->count, 51128u);
    EXPECT_EQ(gap(r, "lost_events")->line, 3u);
    EXPECT_EQ(gap(r, "lost_events", 1)->cpu, 1);
    EXPECT_EQ(r.completeness.lost_events, 51200u);
    EXPECT_EQ(completeness_line(r.completeness), "complete: no: 51,200 events lost (CPU 4: 51,128, CPU 1: 72)");
}

// The annotate option (Documentation/trace/ftrace.rst "annotate"; trace.c test_cpu_buff_start) in a
// function_graph trace, the entries header of print_event_info, and "[...]" / "…" elisions an excerpt's
// author writes.
TEST(ReaderVariants, FgraphAnnotateHeaderAndElisions) {
    const char* text =
        "# tracer: function_graph\n"
        "# entries-in-buffer/entries-written: 100/250   #P:4\n"
        " 0)   0.100 us    |  f();\n"
        "##### CPU 3 buffer started ####\n"
        " 3)   0.100 us    |  g();\n"
        "[...]\n"
        " 3)   0.100 us    |  h();\n"
        "\xE2\x80\xA6\n"
        " 3)   0.100 us    |  k();\n";
    Report r = report_of(text, TraceFormat::fgraph_text);
    EXPECT_EQ(r.completeness.entries_written, 250u);
    EXPECT_EQ(r.completeness.overruns, 150u);
    ASSERT_TRUE(gap(r, "buffer_started"));
    EXPECT_EQ(gap(r, "buffer_started")->cpu, 3);
    EXPECT_EQ(r.completeness.elided_spans(), 2u);
    EXPECT_EQ(r.completeness.unreadable_lines(), 0u);
    EXPECT_EQ(r.calls.size(), 4u);
}

// A trace quoted in an e-mail reply (RFC 3676: "> " per quote level), as patch reviews on lkml quote them.
TEST(ReaderVariants, FgraphQuotedInAMailReply) {
    const char* text =
        "> > # tracer: function_graph\n"
        "> >  2)               |  outer [amdgpu]() {\n"
        "> >  2)   0.120 us    |    inner [amdgpu]();\n"
        "> >  2)   1.000 us    |  }\n";
    Report r = report_of(text, TraceFormat::fgraph_text);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[1].parent, r.calls[0].id);
    EXPECT_EQ(r.calls[0].duration_ns, 1000u);
    EXPECT_EQ(r.calls[0].module, "amdgpu");
    EXPECT_TRUE(r.completeness.complete);
}

// A last line cut off (a copy stopped mid-line): no newline at the end and not readable.
TEST(ReaderVariants, FgraphCutOffLastLine) {
    const char* text =
        "# tracer: function_graph\n"
        " 0)   0.100 us    |  f();\n"
        " 0)   0.100 us    |  g(";
    Report r = report_of(text, TraceFormat::fgraph_text);
    bool cut = false;
    for (const auto& d : r.completeness.diagnostics)
        cut = cut || d.name == "truncated_last_line";
    EXPECT_TRUE(cut);
    EXPECT_EQ(r.completeness.unreadable_lines(), 1u);
    EXPECT_FALSE(r.completeness.complete);
}

// funcgraph-args prints the BTF-typed arguments inside the parentheses (kernel/trace/trace_functions_graph.c,
// print_function_args): nested parentheses and commas stay in `args`; a leaf with funcgraph-retaddr and the
// >= 6.13 "ret=" form after it.
TEST(ReaderVariants, FgraphArgsWithParenthesesAndRetaddrLeaf) {
    const char* text =
        "# tracer: function_graph\n"
        " 1)               |  vfs_read(file=0xffff8881, buf=0x7ffd (x), count=8) { /* <-ksys_read+0x6b/0xf0 */\n"
        " 1)   0.080 us    |    rw_verify_area(read_write=0x0, file=0xffff8881); /* <-vfs_read+0x9c/0x1a0 ret=-14 */\n"
        " 1)   0.500 us    |  } /* vfs_read ret=-14 */\n";
    Report r = report_of(text, TraceFormat::fgraph_text);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].args, "file=0xffff8881, buf=0x7ffd (x), count=8");
    EXPECT_EQ(r.calls[0].retaddr, "ksys_read+0x6b/0xf0");
    EXPECT_EQ(r.calls[0].retval, -14);
    EXPECT_EQ(r.calls[1].retaddr, "vfs_read+0x9c/0x1a0");
    EXPECT_EQ(r.calls[1].retval, -14);
}

// strace(1): a call interrupted by a signal returns "= ? ERESTARTSYS (To be restarted if SA_RESTART is set)";
// -yy prints the path of each call's fd at that call ("<char 195:0>" is -yy's device number, dropped); an fd
// number reused for another file names each call's own file.
TEST(ReaderVariants, StraceKernelInternalErrnoAndPerCallPaths) {
    const char* text =
        "ioctl(5</dev/nvidiactl<char 195:255>>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = ? ERESTARTSYS "
        "(To be restarted if SA_RESTART is set)\n"
        "close(5</dev/nvidiactl<char 195:255>>) = 0\n"
        "openat(AT_FDCWD</home/u>, \"/dev/zero\", O_RDONLY) = 5</dev/zero<char 1:5>>\n"
        "ioctl(5</dev/zero<char 1:5>>, TCGETS, 0x7ffd) = -1 ENOTTY (Inappropriate ioctl for device)\n"
        "openat(AT_FDCWD, \"/dev/dri/renderD128\", O_RDWR|O_CLOEXEC) = -1 EACCES (Permission denied)\n"
        "+++ killed by SIGSEGV (core dumped) +++\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 2u);
    EXPECT_EQ(log.ioctls[0].ret, -512);  // the kernel's -ERESTARTSYS (sys_exit_ioctl's ret)
    EXPECT_EQ(log.ioctls[0].errno_name, "ERESTARTSYS");
    EXPECT_EQ(log.ioctls[0].errno_text, "To be restarted if SA_RESTART is set");
    EXPECT_EQ(log.ioctls[0].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(log.ioctls[1].fd_path, "/dev/zero");
    ASSERT_EQ(log.failed_opens.size(), 1u);
    EXPECT_EQ(log.failed_opens[0].errno_name, "EACCES");
    ASSERT_EQ(log.exits.size(), 1u);
    EXPECT_EQ(log.exits[0].signal, "SIGSEGV");
    EXPECT_TRUE(log.exits[0].core_dumped);
    Report r = report_of(text, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(r.ioctls[1].fd_path, "/dev/zero");
    EXPECT_EQ(r.ioctls[1].name, "TCGETS");
    EXPECT_EQ(r.ioctls[1].ret, -25);              // the kernel's -ENOTTY, not libc's -1
    EXPECT_EQ(r.ioctls[1].errno_name, "ENOTTY");  // as printed
    int opens = 0;
    for (const auto& e : r.events)
        opens += e.name == "strace:openat";
    EXPECT_EQ(opens, 1);
}

// The restarted call of the test above, through the report: no value came back to the program, but strace
// printed the kernel's return (print_erestart, from the return register): ret is -ERESTARTSYS, -ERESTARTNOHAND,
// as sys_exit_ioctl gives it for the same call (it had no ret, so a strace log and a capture disagreed).
TEST(ReaderVariants, StraceRestartedCallKeepsItsErrnoInTheReport) {
    const char* text =
        "ioctl(5</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = ? ERESTARTSYS "
        "(To be restarted if SA_RESTART is set)\n"
        "ioctl(5</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffd <unfinished ...>\n"
        "<... ioctl resumed>) = ? ERESTARTNOHAND (To be restarted if no handler)\n";
    Report r = report_of(text, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].ret, -512);
    EXPECT_EQ(r.ioctls[1].ret, -514);
    EXPECT_EQ(r.ioctls[0].errno_name, "ERESTARTSYS");
    EXPECT_EQ(r.ioctls[0].errno_text, "To be restarted if SA_RESTART is set");
    EXPECT_EQ(r.ioctls[1].errno_name, "ERESTARTNOHAND");
}

// strace(1) without -t/-tt/-ttt/-r prints no time: an ioctl's times and duration are unknown (null), never 0.
TEST(ReaderVariants, StraceWithoutTimestampsHasNoIoctlTimes) {
    Report r = report_of("ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc) = 0\n", TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 1u);
    EXPECT_FALSE(r.ioctls[0].enter_ns);
    EXPECT_FALSE(r.ioctls[0].exit_ns);
    EXPECT_FALSE(r.ioctls[0].duration_ns);
    EXPECT_TRUE(to_json(r)["ioctls"][0]["enter_ns"].is_null());
}

// strace(1) -f -tt -T written to a file: "PID HH:MM:SS.UUUUUU call(...) = R <S.UUUUUU>"; the timestamp is the
// call's start (strace printleader at syscall entry), -T its time in the kernel; a "<... resumed>" line is stamped
// when the call returned. A time of day that goes back more than 12 h is the next day (a run over midnight).
TEST(ReaderVariants, StraceTimestampsAndDurationsGiveIoctlTimes) {
    const char* text =
        "12345 23:59:59.999000 ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0xd2, 0x48), 0x7ffd1) = 0 "
        "<0.000021>\n"
        "12345 23:59:59.999500 ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28), 0x7ffd2 "
        "<unfinished ...>\n"
        "12346 00:00:00.000100 ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd3) = -1 "
        "EINVAL (Invalid argument) <0.000005>\n"
        "12345 00:00:00.000900 <... ioctl resumed>) = 0 <0.001200>\n"
        "12345 00:00:00.000800 ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd3) = 0\n";
    Report r = report_of(text, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 4u);
    constexpr std::uint64_t kT0 = 86'399'999'000'000ull;  // 23:59:59.999 in ns since the first midnight
    EXPECT_EQ(r.ioctls[0].pid, 12345);
    EXPECT_EQ(r.ioctls[0].enter_ns, kT0);
    EXPECT_EQ(r.ioctls[0].duration_ns, 21'000u);
    EXPECT_EQ(r.ioctls[0].exit_ns, kT0 + 21'000);
    const IoctlRecord* resumed = nullptr;
    const IoctlRecord* einval = nullptr;
    for (const IoctlRecord& io : r.ioctls) {
        if (io.enter_ns == kT0 + 500'000) resumed = &io;
        if (io.pid == 12346) einval = &io;
    }
    ASSERT_TRUE(resumed && einval);
    // -T of the resumed line: the whole call (its stamp, 1.4 ms after the start, includes strace's own delay).
    EXPECT_EQ(resumed->duration_ns, 1'200'000u);
    EXPECT_EQ(resumed->exit_ns, kT0 + 1'900'000);
    EXPECT_EQ(resumed->ret, 0);
    EXPECT_EQ(einval->enter_ns, kT0 + 1'100'000);  // the next day's 00:00:00.000100
    EXPECT_EQ(einval->duration_ns, 5'000u);
    EXPECT_EQ(einval->errno_name, "EINVAL");
    // Stamped at its start, no -T: when it returned is not in the line.
    EXPECT_EQ(r.ioctls.back().enter_ns, kT0 + 1'800'000);  // 00:00:00.000800
    EXPECT_FALSE(r.ioctls.back().exit_ns);
    EXPECT_FALSE(r.ioctls.back().duration_ns);
}

// strace(1) -ttt: seconds since the epoch (with --timestamps=unix,ns up to 9 decimals); -r: the time since the
// previous syscall's start, summed here from the first call.
TEST(ReaderVariants, StraceEpochAndRelativeTimestamps) {
    Report epoch = report_of(
        "1644616996.639050123 ioctl(14, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0xce, 0x10), 0x7ffd23823b20) = 0 <0.000010>\n",
        TraceFormat::strace);
    ASSERT_EQ(epoch.ioctls.size(), 1u);
    EXPECT_EQ(epoch.ioctls[0].enter_ns, 1'644'616'996'639'050'123ull);
    EXPECT_EQ(epoch.ioctls[0].duration_ns, 10'000u);
    Report rel = report_of(
        "     0.000000 ioctl(14, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0xce, 0x10), 0x7ffd23823b20) = 0\n"
        "     0.000250 write(12, \"\\1\\0\", 2) = 2\n"
        "     0.000100 ioctl(14, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28), 0x7ffd23823a90) = 0\n",
        TraceFormat::strace);
    ASSERT_EQ(rel.ioctls.size(), 2u);
    EXPECT_EQ(rel.ioctls[0].enter_ns, 0u);
    EXPECT_EQ(rel.ioctls[1].enter_ns, 350'000u);
}

// strace -f (strace(1): "-f Trace child processes"; the "[pid N]" prefix appears once a second task exists): an
// fd number is per process. Two processes each with their own fd 3 named one another's device; a forked child
// starts with a copy of its parent's table, a CLONE_FILES thread shares it, and a later close in the child leaves
// the parent's fd alone.
TEST(ReaderVariants, StraceFdTablesArePerProcessUnderFollowForks) {
    const char* unrelated =
        "[pid   100] openat(AT_FDCWD, \"/dev/nvidiactl\", O_RDWR|O_CLOEXEC) = 3\n"
        "[pid   200] openat(AT_FDCWD, \"/dev/nvidia-uvm\", O_RDWR|O_CLOEXEC) = 3\n"
        "[pid   100] ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc) = 0\n"
        "[pid   200] ioctl(3, _IOC(_IOC_NONE, 0, 0x1, 0x3000), 0x7ffc) = 0\n";
    StraceLog a = parse_strace(unrelated, "v.txt");
    ASSERT_EQ(a.ioctls.size(), 2u);
    EXPECT_EQ(a.ioctls[0].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(a.ioctls[1].fd_path, "/dev/nvidia-uvm");

    const char* forked =
        "openat(AT_FDCWD, \"/dev/nvidiactl\", O_RDWR|O_CLOEXEC) = 3\n"
        "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 301\n"
        "[pid   300] clone(child_stack=0x7f00, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD "
        "<unfinished ...>\n"
        "[pid   301] close(3)                    = 0\n"
        "[pid   301] openat(AT_FDCWD, \"/dev/nvidia0\", O_RDWR|O_CLOEXEC) = 3\n"
        "[pid   300] <... clone resumed>, parent_tid=[302], tls=0x7f, child_tidptr=0x7f) = 302\n"
        "[pid   302] ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc) = 0\n"
        "[pid   301] ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x4e, 0x38), 0x7ffc) = 0\n"
        "[pid   300] ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc) = 0\n";
    StraceLog b = parse_strace(forked, "v.txt");
    ASSERT_EQ(b.ioctls.size(), 3u);
    EXPECT_EQ(b.ioctls[0].fd_path, "/dev/nvidiactl");  // thread 302 shares its process's table
    EXPECT_EQ(b.ioctls[1].fd_path, "/dev/nvidia0");    // the child's own reopened fd 3
    EXPECT_EQ(b.ioctls[2].fd_path, "/dev/nvidiactl");  // the parent's fd 3, untouched by the child's close
    Report r = report_of(forked, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 3u);
    EXPECT_EQ(r.ioctls[2].name, "NV_ESC_RM_ALLOC");
}

// gVisor pkg/sentry/strace/strace.go printExit: "%#x errno=%d (%s) (%v)" on failure; Go's Duration %v prints
// ms and ns units; two task ids interleaved, each pairing its own E and X.
TEST(ReaderVariants, GvisorErrnoDurationsAndInterleavedTasks) {
    const char* text =
        "I0102 10:00:00.000100    7 strace.go:567] [   5:   5] app E ioctl(0x4 /dev/nvidia-uvm, 0x30000001, 0x7f00)\n"
        "I0102 10:00:00.000090    8 strace.go:567] [   6:   5] app E ioctl(0x3 /dev/nvidiactl, 0xc020462a, 0x7f10)\n"
        "I0102 10:00:00.000300    7 strace.go:605] [   5:   5] app X ioctl(0x4 /dev/nvidia-uvm, 0x30000001, 0x7f00) = "
        "0x0 errno=22 (invalid argument) (1.5ms)\n"
        "I0102 10:00:00.000200    8 strace.go:605] [   6:   5] app X ioctl(0x3 /dev/nvidiactl, 0xc020462a, 0x7f10) = 0 "
        "(0x0) (850ns)\n";
    StraceLog log = parse_strace(text, "v.txt");
    ASSERT_EQ(log.ioctls.size(), 2u);
    EXPECT_EQ(log.ioctls[0].pid, 5);
    EXPECT_EQ(log.ioctls[0].ret, -22);
    EXPECT_EQ(log.ioctls[0].errno_name, "EINVAL");
    EXPECT_EQ(log.ioctls[0].errno_text, "invalid argument");
    EXPECT_EQ(log.ioctls[0].duration_ns, 1500000u);
    EXPECT_EQ(log.ioctls[1].pid, 6);
    EXPECT_EQ(log.ioctls[1].ret, 0);
    EXPECT_EQ(log.ioctls[1].duration_ns, 850u);
    EXPECT_EQ(detect_format(text), TraceFormat::strace);
    Report r = report_of(text, TraceFormat::strace);
    ASSERT_EQ(r.ioctls.size(), 2u);
    EXPECT_EQ(r.ioctls[0].fd_path, "/dev/nvidia-uvm");
    EXPECT_EQ(r.ioctls[0].errno_name, "EINVAL");
    // glog's time of the E line, and the duration gVisor printed (not the difference of the lines' times).
    EXPECT_EQ(r.ioctls[0].enter_ns, 36'000'000'100'000ull);
    EXPECT_EQ(r.ioctls[0].duration_ns, 1'500'000u);
    EXPECT_EQ(r.ioctls[1].duration_ns, 850u);
    EXPECT_TRUE(r.completeness.complete);
}

// strace prints a path's and an unknown request's bytes as they are (strace(1) -y; only -x/-xx escape them), and a
// damaged log can hold any byte in the errno text. Invalid UTF-8 there made the report's JSON throw (fuzz_strace
// found it): such bytes become U+FFFD, as in the other readers.
TEST(ReaderVariants, StraceInvalidUtf8InPathsErrnoTextAndRequestsSerialises) {
    const std::string text =
        "ioctl(3</dev/nvidia\xff\xfe>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ffd) = -1 "
        "EBADF (Bad file \xe3scriptor)\n"
        "ioctl(4, WEIRD\xc3_REQ, 0x1) = 0\n"
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffd) = 0\n";
    Report r = report_of(text, TraceFormat::strace);
    ASSERT_FALSE(r.ioctls.empty());
    EXPECT_EQ(r.ioctls[0].errno_name, "EBADF");
    EXPECT_EQ(r.ioctls[0].errno_text, "Bad file \xef\xbf\xbdscriptor");
    EXPECT_NO_THROW((void)to_json(r).dump());
}
