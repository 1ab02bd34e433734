// read_function_text and read_trace_cmd_report on synthetic variants (ftrace-formats.md section 2 and the
// kernel's trace_output.c): prefixes with and without latency flags and tgid, function hits, stacks,
// events, drop marks, preambles.
#include <gtest/gtest.h>

#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

EventStream tc(std::string_view text) {
    auto r = read_trace_cmd_report(text, "r.txt");
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : EventStream{};
}
EventStream ft(std::string_view text) {
    auto r = read_function_text(text, "f.txt");
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : EventStream{};
}

}  // namespace

TEST(TraceCmdReport, LeafOnEntryLineAndNestedExit) {
    auto s =
        tc("cpus=4\n"
           "   prog-100   [002] 10.000001: funcgraph_entry:                   |  f() {\n"
           "   prog-100   [002] 10.000002: funcgraph_entry:        0.500 us   |    g();\n"
           "   prog-100   [002] 10.000004: funcgraph_exit:         3.000 us   |  }\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].entry_ns, 10000001000u);
    EXPECT_EQ(r.calls[0].duration_ns, 3000u);
    EXPECT_EQ(r.calls[1].duration_ns, 500u);
    EXPECT_EQ(r.calls[0].pid, 100);
    EXPECT_EQ(r.calls[0].cpu, 2);
    EXPECT_EQ(r.calls[0].comm, "prog");
}

TEST(TraceCmdReport, LatencyFlagsFusedToCpuAndRetvalSuffix) {
    auto s =
        tc("   <idle>-0     [001] d.h1 5.000001: funcgraph_entry:                   |  irq() {\n"
           "   <idle>-0     [001] d.h1 5.000002: funcgraph_exit:       + 12.000 us  |  } (ret=-22)\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].irq);
    EXPECT_EQ(r.calls[0].retval, -22);
    EXPECT_EQ(r.calls[0].comm, "<idle>");
}

TEST(TraceCmdReport, TailprintAndDepthOptions) {
    auto s =
        tc("   a-1 [000] 1.000001: funcgraph_entry:                   |  f() { (0)\n"
           "   a-1 [000] 1.000002: funcgraph_exit:         1.000 us   |  } /* f */ (0)\n");
    auto& x = std::get<FuncExit>(s.events[1].body);
    EXPECT_EQ(x.function, "f");
    EXPECT_EQ(x.depth, 0);
}

TEST(TraceCmdReport, DroppedEventsLines) {
    auto s =
        tc("   a-1 [000] 1.000001: funcgraph_entry:        1.000 us   |  f();\n"
           "CPU:0 [123 EVENTS DROPPED]\n"
           "CPU:1 [EVENTS DROPPED]\n"
           "   a-1 [000] 1.000003: funcgraph_entry:        1.000 us   |  g();\n");
    int lost = 0;
    for (const Event& e : s.events)
        if (auto* l = std::get_if<LostEvents>(&e.body)) {
            ++lost;
            if (e.cpu == 0) {
                EXPECT_EQ(l->count, 123u);
            }
            if (e.cpu == 1) {
                EXPECT_FALSE(l->count);
            }
        }
    EXPECT_EQ(lost, 2);
    EXPECT_FALSE(build_report(s).completeness.complete);
}

// A drop mark that no line of its CPU follows (the last line of the file) has no time of its own: it took time 0,
// which counted as a timestamp going back (unsorted_timestamps, pointing at the mark's line) and sorted the loss to
// the front of the trace (fresh user). It keeps its place, with no time.
TEST(TraceCmdReport, DropMarkAtTheEndIsNoTimestampGoingBack) {
    auto s =
        tc("   a-1 [000] 1.000001: funcgraph_entry:        1.000 us   |  f();\n"
           "   a-1 [000] 1.000003: funcgraph_entry:        1.000 us   |  g();\n"
           "CPU:0 [5 EVENTS DROPPED]\n");
    for (const Diagnostic& d : s.diagnostics)
        EXPECT_NE(d.name, "unsorted_timestamps") << d.first_example;
    ASSERT_FALSE(s.events.empty());
    EXPECT_TRUE(std::holds_alternative<LostEvents>(s.events.back().body));
    Report r = build_report(s);
    EXPECT_FALSE(r.completeness.complete);
    ASSERT_EQ(r.completeness.gaps.size(), 1u);
    EXPECT_EQ(r.completeness.gaps[0].count, 5u);
    EXPECT_FALSE(r.completeness.gaps[0].ts_ns);
}

TEST(TraceCmdReport, EventsIoctlsMarkersConsole) {
    auto s =
        tc("  prog-7  [000] 1.000001: sys_enter_ioctl:      fd: 0x00000003, cmd: 0x0000541b, arg: 0x7ffd5e4b0a2c\n"
           "  prog-7  [000] 1.000002: print:                tracing_mark_write: nvtrace-phase: alloc\n"
           "  prog-7  [000] 1.000003: console:              NVRM: hello\n"
           "  prog-7  [000] 1.000004: sys_exit_ioctl:       0xfffffffffffffff2\n"
           "  prog-7  [000] 1.000005: sched_waking:         comm=x pid=1 prio=120 target_cpu=000\n");
    ASSERT_EQ(s.events.size(), 5u);
    auto& in = std::get<IoctlEnter>(s.events[0].body);
    EXPECT_EQ(in.fd, 3);
    EXPECT_EQ(in.cmd, 0x541bu);
    EXPECT_EQ(in.arg, 0x7ffd5e4b0a2cu);
    EXPECT_EQ(std::get<Marker>(s.events[1].body).text, "nvtrace-phase: alloc");
    EXPECT_EQ(std::get<ConsoleLine>(s.events[2].body).text, "NVRM: hello");
    EXPECT_EQ(std::get<IoctlExit>(s.events[3].body).ret, -14);
    EXPECT_EQ(std::get<OtherEvent>(s.events[4].body).name, "sched_waking");
    Report r = build_report(s);
    ASSERT_EQ(r.ioctls.size(), 1u);
    EXPECT_EQ(r.ioctls[0].name, "FIONREAD");
    EXPECT_EQ(r.ioctls[0].ret, -14);
    EXPECT_EQ(r.ioctls[0].comm, "prog");
}

TEST(TraceCmdReport, FunctionAndKernelStackEvents) {
    auto s =
        tc("  prog-7  [000] 1.000001: function:             f <-- parent\n"
           "  prog-7  [000] 1.000002: kernel_stack:         <stack trace>\n"
           "=> a (ffffffff81000001)\n"
           "=> b (ffffffff81000002)\n");
    ASSERT_EQ(s.events.size(), 4u);
    EXPECT_EQ(std::get<OtherEvent>(s.events[0].body).fields, "ip=f parent_ip=parent");
    EXPECT_EQ(std::get<FuncEntry>(s.events[1].body).function, "f");
    EXPECT_EQ(std::get<OtherEvent>(s.events[3].body).fields, "a\nb");
}

TEST(TraceCmdReport, CommWithSpacesAndBrackets) {
    auto s = tc("  my [x] prog-42  [003] 2.5: funcgraph_entry:        1.000 us   |  f();\n");
    ASSERT_EQ(s.events.size(), 2u);
    EXPECT_EQ(s.events[0].pid, 42);
    EXPECT_EQ(s.events[0].cpu, 3);
    EXPECT_EQ(s.comms.at(42), "my [x] prog");
    EXPECT_EQ(s.events[0].ts_ns, 2500000000u);
}

TEST(TraceCmdReport, NothingUsable) {
    auto r = read_trace_cmd_report("version = 6\nCPU 0 is empty\ncpus=2\n", "v.txt");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("v.txt"), std::string::npos);
}

TEST(FunctionText, KernelPrefixVariants) {
    auto s =
        ft("# tracer: function\n"
           "            bash-1977  [000] .... 17284.993652: sys_close <-system_call_fastpath\n"
           "            bash-1977  [000] 17284.993653: do_close [mymod] <-sys_close [mymod]\n"
           "            bash-1977  (   1977) [001] d... 17284.993654: f+0x0/0x10 <-g+0x4c/0x1b0\n"
           "            bash-1977  [000] ..... 17284.993655: tracing_mark_write: hello world\n");
    std::vector<std::string> fns;
    for (const Event& e : s.events)
        if (auto* x = std::get_if<FuncEntry>(&e.body)) {
            fns.push_back(x->function);
            if (x->function == "do_close") {
                EXPECT_EQ(x->module, "mymod");
            }
        }
    EXPECT_EQ(fns, (std::vector<std::string>{"sys_close", "do_close", "f"}));
    EXPECT_EQ(std::get<Marker>(s.events.back().body).text, "hello world");
    EXPECT_EQ(s.events.back().pid, 1977);
    Report r = build_report(s);
    EXPECT_TRUE(r.completeness.complete);
    EXPECT_EQ(r.calls.size(), 3u);
}

TEST(FunctionText, NoContextInfo) {
    auto s = ft("sys_close <-system_call_fastpath\n");
    ASSERT_EQ(s.events.size(), 3u);
    EXPECT_EQ(s.events[1].pid, -1);
}

TEST(FunctionText, UserStackAndSyscallTracerOutput) {
    auto s =
        ft("  a-1 [000] .... 1.000001: <user stack trace>\n"
           " => <00007f0000001000>\n"
           "  a-1 [000] .... 1.000002: sys_ioctl(fd: 3, cmd: c0104600, arg: 7ffc)\n"
           "  a-1 [000] .... 1.000003: sys_ioctl -> 0x0\n");
    ASSERT_EQ(s.events.size(), 3u);
    EXPECT_EQ(std::get<OtherEvent>(s.events[0].body).name, "user_stack");
    EXPECT_EQ(std::get<IoctlEnter>(s.events[1].body).cmd, 0xc0104600u);
    EXPECT_EQ(std::get<IoctlExit>(s.events[2].body).ret, 0);
}

TEST(FunctionText, FrameWithoutStackIsMalformed) {
    auto s = ft(" => orphan_frame\n  a-1 [000] .... 1.000001: f <-g\n");
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_TRUE(s.diagnostics[0].first_example.starts_with("f.txt:1: expected '<stack trace>'"));
}

TEST(TraceCmdReport, InstanceNamePrefix) {
    auto s =
        tc("nvtrace-1234:          python3-30972 [001]  3049.109567: sys_enter_ioctl:      fd: 0x00000000, cmd: "
           "0x00005401, arg: 0x7fff12e47430\n");
    ASSERT_EQ(s.events.size(), 1u);
    EXPECT_EQ(s.events[0].pid, 30972);
    EXPECT_EQ(s.comms.at(30972), "python3");
}
