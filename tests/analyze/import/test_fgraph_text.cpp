// read_fgraph_text on synthetic variants (ftrace-formats.md section 1): line endings, tabs, interleaved
// CPUs, loss marks, overruns, irq markers, comments, banners, bad lines.
#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

EventStream read(std::string_view text) {
    auto r = read_fgraph_text(text, "t.txt");
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : EventStream{};
}

const char* kTree =
    " 0)               |  f() {\n"
    " 0)   0.100 us    |    g();\n"
    " 0)   1.000 us    |  }\n";

void expect_tree(const EventStream& s) {
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].function, "f");
    EXPECT_EQ(r.calls[0].duration_ns, 1000u);
    EXPECT_EQ(r.calls[1].function, "g");
    EXPECT_EQ(r.calls[1].parent, 1u);
    EXPECT_EQ(r.calls[1].duration_ns, 100u);
    EXPECT_TRUE(r.completeness.complete);
}

}  // namespace

TEST(FgraphText, PlainTree) {
    expect_tree(read(kTree));
}

TEST(FgraphText, CrlfLineEndings) {
    expect_tree(read(" 0)               |  f() {\r\n 0)   0.100 us    |    g();\r\n 0)   1.000 us    |  }\r\n"));
}

TEST(FgraphText, NoFinalNewline) {
    expect_tree(read(" 0)               |  f() {\n 0)   0.100 us    |    g();\n 0)   1.000 us    |  }"));
}

TEST(FgraphText, TabIndentedCopy) {
    expect_tree(read("\t 0)               |  f() {\n\t 0)   0.100 us    |    g();\n\t 0)   1.000 us    |  }\n"));
}

TEST(FgraphText, HeaderWithAndWithoutColumnTitles) {
    expect_tree(read(std::string("# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n"
                                 "# |     |   |                     |   |   |   |\n") +
                     kTree));
    expect_tree(read(std::string("# tracer: function_graph\n#\n") + kTree));
}

TEST(FgraphText, LeafIsEntryAndExitWithDuration) {
    auto s = read(" 0)   0.518 us    |  f();\n");
    ASSERT_EQ(s.events.size(), 2u);
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function, "f");
    EXPECT_EQ(std::get<FuncExit>(s.events[1].body).duration_ns, 518u);
    EXPECT_FALSE(s.events[0].ts_known);
    EXPECT_EQ(s.events[0].line, 1u);
}

TEST(FgraphText, InterleavedCpusKeepSeparateStacks) {
    auto s = read(
        " 0)               |  a() {\n"
        " 1)               |  b() {\n"
        " 0)   0.100 us    |    a1();\n"
        " 1)   0.200 us    |    b1();\n"
        " 0)   1.000 us    |  }\n"
        " 1)   2.000 us    |  }\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 4u);
    EXPECT_EQ(r.calls[2].function, "a1");
    EXPECT_EQ(r.calls[2].parent, 1u);
    EXPECT_EQ(r.calls[3].parent, 2u);
    EXPECT_EQ(r.calls[0].duration_ns, 1000u);
    EXPECT_EQ(r.calls[1].duration_ns, 2000u);
    EXPECT_TRUE(r.completeness.complete);
}

TEST(FgraphText, AbstimeGivesTimestampsAndOrphanEntryTime) {
    auto s = read(
        "  100.000010 |   0)   2.000 us    |  } /* f */\n"
        "  100.000020 |   0)   0.500 us    |  g();\n");
    ASSERT_EQ(s.events.size(), 3u);
    EXPECT_TRUE(s.events[0].ts_known);
    EXPECT_EQ(s.events[0].ts_ns, 100000010000u);
    Report r = build_report(s);
    EXPECT_FALSE(r.calls[0].entry_seen);
    EXPECT_EQ(r.calls[0].function, "f");
    EXPECT_EQ(r.calls[0].entry_ns, 100000008000u);
    EXPECT_EQ(r.calls[1].entry_ns, 100000020000u);
}

TEST(FgraphText, UnsortedTimestampsAreSortedAndCounted) {
    auto s = read(
        "  100.000020 |   0)   0.500 us    |  g();\n"
        "  100.000010 |   1)   0.500 us    |  h();\n");
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function, "h");
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].name, "unsorted_timestamps");
    EXPECT_EQ(s.diagnostics[0].severity, "info");
}

TEST(FgraphText, LostEventsLine) {
    auto s = read(" 0)   0.100 us    |  g();\nCPU:0 [LOST 42 EVENTS]\n 0)   0.100 us    |  h();\n");
    ASSERT_EQ(s.events.size(), 5u);
    auto* l = std::get_if<LostEvents>(&s.events[2].body);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->count, 42u);
    EXPECT_EQ(s.events[2].cpu, 0);
    Report r = build_report(s);
    EXPECT_EQ(r.completeness.lost_events, 42u);
    EXPECT_FALSE(r.completeness.complete);
}

TEST(FgraphText, OverrunsLineBelongsToThePreviousReturn) {
    auto s = read(" 0)               |  f() {\n 0)   1.000 us    |  }\n (Overruns: 3)\n");
    EXPECT_EQ(std::get<FuncExit>(s.events[1].body).overrun, 3u);
    EXPECT_EQ(build_report(s).completeness.graph_overruns, 3u);
}

TEST(FgraphText, IrqMarkersFlagTheEventsBetweenThem) {
    auto s = read(
        " 1)               |  f() {\n"
        " 1)   ==========> |\n"
        " 1)   0.100 us    |    irq_handler();\n"
        " 1)   <========== |\n"
        " 1)   0.100 us    |    g();\n"
        " 1)   1.000 us    |  }\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 3u);
    EXPECT_FALSE(r.calls[0].irq);
    EXPECT_TRUE(r.calls[1].irq);
    EXPECT_EQ(r.calls[1].parent, 1u);
    EXPECT_FALSE(r.calls[2].irq);
}

TEST(FgraphText, DeeperIndentWithoutParentIsAnInterrupt) {
    auto s = read(
        " 0)               |  f() {\n"
        " 0)   0.100 us    |    leaf();\n"
        " 0)               |      irq_entry() {\n"
        " 0)   0.100 us    |        inner();\n"
        " 0)   1.000 us    |      }\n"
        " 0)   0.100 us    |    after();\n"
        " 0)   3.000 us    |  }\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 5u);
    EXPECT_EQ(r.calls[2].function, "irq_entry");
    EXPECT_TRUE(r.calls[2].irq);
    EXPECT_EQ(r.calls[2].parent, 1u);
    EXPECT_TRUE(r.calls[3].irq);
    EXPECT_FALSE(r.calls[4].irq);
    EXPECT_FALSE(r.calls[1].irq);
}

TEST(FgraphText, CommentsBecomeEvents) {
    auto s = read(
        " 0)               |  f() {\n"
        " 0)               |    /* console: NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus. */\n"
        " 0)               |    /* irq_handler_entry: irq=17 name=x */\n"
        " 0)               |    /* nvtrace-phase: alloc */\n"
        " 0)               |    /* sys_ioctl(fd: 3, cmd: 541b, arg: 7ffc) */\n"
        " 0)               |    /* sys_ioctl -> 0x0 */\n"
        " 0)   1.000 us    |  }\n");
    ASSERT_EQ(s.events.size(), 7u);
    EXPECT_EQ(std::get<ConsoleLine>(s.events[1].body).text,
              "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.");
    auto& o = std::get<OtherEvent>(s.events[2].body);
    EXPECT_EQ(o.system, "");
    EXPECT_EQ(o.name, "irq_handler_entry");
    EXPECT_EQ(o.fields, "irq=17 name=x");
    EXPECT_EQ(std::get<Marker>(s.events[3].body).text, "nvtrace-phase: alloc");
    EXPECT_EQ(std::get<IoctlEnter>(s.events[4].body).cmd, 0x541bu);
    EXPECT_EQ(std::get<IoctlEnter>(s.events[4].body).fd, 3);
    EXPECT_EQ(std::get<IoctlExit>(s.events[5].body).ret, 0);
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 1u);
    EXPECT_EQ(r.kernel_log[0].text, "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.");
}

// Older kernels trace the console's formatted text, printk time first (fresh user): the Xid behind
// "[ 1843.200010] " was a message of kind other and `log xid xid=79` failed.
TEST(FgraphText, ConsoleTextWithThePrintkTimeIsReadAsTheMessage) {
    auto s = read(
        " 1843.200000 |   0)               |  nv_isr() {\n"
        " 1843.200010 |   0)               |    /* console: [ 1843.200010] NVRM: Xid (PCI:0000:b3:00): 79, "
        "pid='<unknown>', name=<unknown>, GPU has fallen off the bus. */\n"
        " 1843.200020 |   0)               |    /* console: [ 1843.200020] [  T591] nvidia-uvm: a message */\n"
        " 1843.200030 |   0)   40.000 us   |  }\n");
    Report r = build_report(s);
    ASSERT_EQ(r.kernel_log.size(), 2u);
    EXPECT_EQ(r.kernel_log[0].kind, "xid");
    EXPECT_EQ(r.kernel_log[0].fields.at("xid"), "79");
    EXPECT_EQ(r.kernel_log[0].text.rfind("NVRM: Xid (PCI:0000:b3:00): 79", 0), 0u) << r.kernel_log[0].text;
    EXPECT_EQ(r.kernel_log[1].source, "nvidia-uvm");
    EXPECT_EQ(r.kernel_log[1].text, "nvidia-uvm: a message");
}

TEST(FgraphText, BannerGivesPidsBeforeAndAfter) {
    auto s = read(
        " 2)   0.100 us    |  a();\n"
        " ------------------------------------------\n"
        " 2)  bash-10   =>  my prog-20  \n"
        " ------------------------------------------\n"
        "\n"
        " 2)   0.100 us    |  b();\n");
    ASSERT_EQ(s.events.size(), 5u);
    EXPECT_EQ(s.events[0].pid, 10);
    EXPECT_EQ(s.events[3].pid, 20);
    EXPECT_EQ(s.comms.at(20), "my prog");
}

// A CPU whose first lines are mid-tree and whose pid a later banner gives: the parent entries inferred for its first
// line got no pid (the banner's went to the lines only), so they sat on a stack of their own. The inferred parent
// never closed (a second, orphan f was made from its return), g had no parent, and in `report --json` every later
// call waited behind the open call 1 (the dag benchmark's 300 MB of calls went through the spill file).
TEST(FgraphText, ParentInferredBeforeABannerGetsTheBannersPidAndCloses) {
    auto s = read(
        " 2)               |    g() {\n"
        " 2)   0.100 us    |      h();\n"
        " 2)   1.000 us    |    }\n"
        " 2)   5.000 us    |  } /* f */\n"
        " ------------------------------------------\n"
        " 2)  bash-10   =>  prog-20  \n"
        " ------------------------------------------\n"
        "\n"
        " 2)   0.100 us    |  b();\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 4u);
    const Call& f = r.calls[0];
    EXPECT_EQ(f.function, "f");
    EXPECT_EQ(f.pid, 10);
    EXPECT_FALSE(f.entry_seen);
    EXPECT_TRUE(f.exit_seen);
    EXPECT_EQ(f.duration_ns, 5000u);
    EXPECT_EQ(r.calls[1].function, "g");
    EXPECT_EQ(r.calls[1].parent, 1u);
    EXPECT_EQ(r.calls[1].pid, 10);
    EXPECT_EQ(r.calls[3].function, "b");
    EXPECT_EQ(r.calls[3].pid, 20);
    EXPECT_EQ(r.completeness.unclosed_calls(), 0u);
    EXPECT_EQ(r.completeness.orphan_returns(), 1u);  // f's return: its entry is not in the data
}

// A task that sleeps in a call and wakes on another CPU, in text without the task column (funcgraph-proc is off by
// default): the banners say both CPUs' lines are prog-20's. The entries open on CPU 0 stayed under the CPU's key,
// so on CPU 1 nv_leaf found nothing open on its task and the look-ahead inferred a second nv_ioctl (fresh user):
// one call shown as two, one unclosed and one without its entry.
TEST(FgraphText, TaskThatSleepsInACallAndWakesOnAnotherCpuIsOneCall) {
    const char* text =
        " 0)               |  nv_ioctl() {\n"
        " 0)               |    schedule() {\n"
        " ------------------------------------------\n"
        " 0)   prog-20   =>  kworke-5   \n"
        " ------------------------------------------\n"
        " ------------------------------------------\n"
        " 1)   bash-10   =>   prog-20   \n"
        " ------------------------------------------\n"
        " 1) ! 300.000 us  |    } /* schedule */\n"
        " 1)   0.200 us    |    nv_leaf();\n"
        " 1) ! 301.000 us  |  } /* nv_ioctl */\n";
    Report r = build_report(read(text));
    ASSERT_EQ(r.calls.size(), 3u);
    EXPECT_EQ(r.calls[0].function, "nv_ioctl");
    EXPECT_TRUE(r.calls[0].entry_seen);
    EXPECT_TRUE(r.calls[0].exit_seen);
    EXPECT_EQ(r.calls[0].duration_ns, 301000u);
    EXPECT_EQ(r.calls[1].function, "schedule");
    EXPECT_EQ(r.calls[1].parent, 1u);
    EXPECT_EQ(r.calls[2].function, "nv_leaf");
    EXPECT_EQ(r.calls[2].parent, 1u);
    for (const Call& c : r.calls)
        EXPECT_EQ(c.pid, 20) << c.function;
    EXPECT_TRUE(r.completeness.complete);
}

TEST(FgraphText, TaskColumnGivesThePid) {
    auto s = read(" 0)    sh-4802     |   0.616 us    |  f();\n 1)  <idle>-0     |   0.100 us    |  g();\n");
    EXPECT_EQ(s.events[0].pid, 4802);
    EXPECT_EQ(s.events[2].pid, 0);
    EXPECT_EQ(s.comms.at(0), "<idle>");
}

TEST(FgraphText, LatencyFlagsSetIrq) {
    auto s = read(" 0)  d.h1 |   0.100 us    |  f();\n 0)  d..1 |   0.100 us    |  g();\n");
    EXPECT_TRUE(s.events[0].irq);
    EXPECT_FALSE(s.events[2].irq);
}

TEST(FgraphText, MalformedLinesAreCountedWithTheFirstExample) {
    auto s = read(" 0)   0.100 us    |  f();\ngarbage here\n 0)   0.100 us    |  g(\n");
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].name, "malformed_line");
    EXPECT_EQ(s.diagnostics[0].severity, "error");
    EXPECT_EQ(s.diagnostics[0].count, 2u);
    EXPECT_TRUE(s.diagnostics[0].first_example.starts_with("t.txt:2: expected ")) << s.diagnostics[0].first_example;
    EXPECT_NE(s.diagnostics[0].first_example.find("garbage here"), std::string::npos);
}

// Text after "{" or "}" that is no comment or "(ret=V)" was dropped without a word; the calls are still read, the
// text is counted as data not read (it may be another trace line fused to this one: a fresh user's
// "f() {  0)   1.000 us    |    g();" hid g from `absent chain f > g`), so the report is not complete.
TEST(FgraphText, TextAfterTheBraceIsCountedNotDroppedSilently) {
    auto s = read(
        " 0)               |  f() { garbage\n"
        " 0)   0.100 us    |    g(); /* = 0x0 */\n"
        " 0)   1.000 us    |  } more text\n");
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].name, "graph_unknown_tail");
    EXPECT_EQ(s.diagnostics[0].severity, "data_loss");
    EXPECT_EQ(s.diagnostics[0].count, 2u);
    EXPECT_EQ(s.diagnostics[0].first_example,
              "t.txt:1: expected a '/* ... */' comment or ' (ret=V)' after the call, found 'garbage'");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].function, "f");
    EXPECT_EQ(r.calls[0].duration_ns, 1000u);
    EXPECT_EQ(r.calls[1].function, "g");
    EXPECT_FALSE(r.completeness.complete);
}

TEST(FgraphText, NothingUsableIsAnErrorNamingFileAndLine) {
    auto r = read_fgraph_text("hello\nworld\n", "x.txt");
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with("x.txt:1: expected ")) << r.error().message;
    EXPECT_EQ(r.error().code, ExitCode::usage);
    auto e = read_fgraph_text("# tracer: function_graph\n#\n", "y.txt");
    ASSERT_FALSE(e);
    EXPECT_TRUE(e.error().message.starts_with("y.txt: no function_graph lines")) << e.error().message;
}

TEST(FgraphText, InvalidUtf8IsReplacedSoJsonStaysValid) {
    auto s = read(" 0)   0.100 us    |  f\xff\xfe();\n 0)               |  /* caf\xc3\xa9 \x80 */\n");
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function, "f\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(std::get<Marker>(s.events[2].body).text, "caf\xc3\xa9 \xEF\xBF\xBD");
    EXPECT_NO_THROW(to_json(build_report(s)).dump());
}

TEST(FgraphText, MegabyteLineIsOneMalformedLine) {
    std::string big = " 0)   0.100 us    |  f();\n" + std::string(4 << 20, 'x') + "\n 0)   0.100 us    |  g();\n";
    auto s = read(big);
    EXPECT_EQ(s.events.size(), 4u);
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_LT(s.diagnostics[0].first_example.size(), 200u);
}

TEST(FgraphText, RetvalBothGenerationsReachTheCalls) {
    auto s = read(
        " 1)               |  a() {\n"
        " 1)   0.100 us    |    b(); /* = -5 */\n"
        " 1)   1.000 us    |  } /* a = 0xffffffea */\n"
        " 1)               |  c() {\n"
        " 1)   0.100 us    |    d(); /* ret=0x10 */\n"
        " 1)   1.000 us    |  } /* c ret=-22 */\n");
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 4u);
    EXPECT_EQ(r.calls[0].retval, 0xffffffeaLL);
    EXPECT_EQ(r.calls[1].retval, -5);
    EXPECT_EQ(r.calls[2].retval, -22);
    EXPECT_EQ(r.calls[3].retval, 16);
}

// Found by fuzz_fgraph_text: bytes 0xF5-0xFF were taken for the lead byte of a 3-byte sequence.
TEST(FgraphText, HighLeadBytesAreReplaced) {
    auto s = read(" 3)   0.313 us    |    a\xff\xc0\xf5\xed\xa0\x80\xf0\x9f\x98\x80z();\n");
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function,
              "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xf0\x9f\x98\x80z");
    EXPECT_NO_THROW(to_json(build_report(s)).dump());
}

// ftrace prints "<...>" for a pid missing from saved_cmdlines (__trace_find_cmdline). Calls carried it as their comm,
// and, longer than "cat", it replaced the pid's real name seen on an earlier line.
TEST(FgraphText, FtracePlaceholderCommNamesNoTask) {
    auto s = read(
        " 0)    cat-1234      |               |  f() {\n"
        " 0)    <...>-1234    |   1.000 us    |    g();\n"
        " 0)    <...>-1234    |   3.000 us    |  }\n"
        " 1)    <...>-999     |   2.000 us    |  h();\n");
    EXPECT_EQ(s.comms.at(1234), "cat");
    EXPECT_FALSE(s.comms.count(999));
    Report r = build_report(s);
    ASSERT_EQ(r.calls.size(), 3u);
    EXPECT_EQ(r.calls[1].comm, "cat");
    EXPECT_EQ(r.calls[2].comm, "");
}

// funcgraph-proc prints a task's comm cut to fit its column (print_graph_proc in kernel/trace/trace_functions_graph.c:
// TRACE_GRAPH_PROCINFO_LENGTH characters with the pid); the context-switch banner that follows names the same pid in
// full. The longer name replaces the cut one even when it comes right after lines of that very task, and the cut
// one on the lines after it does not replace it back.
TEST(FgraphText, LongerCommOfTheSamePidReplacesTheCutOne) {
    auto s = read(
        " 0)  kworke-30    |   0.100 us    |  f();\n"
        " 0)  kworke-30    |   0.100 us    |  g();\n"
        " ------------------------------------------\n"
        " 0)  kworker/0:1-30   =>  bash-10  \n"
        " ------------------------------------------\n"
        "\n"
        " 0)  bash-10      |   0.100 us    |  h();\n"
        " 1)  kworke-30    |   0.100 us    |  i();\n"
        " 1)  kworke-30    |   0.100 us    |  j();\n");
    EXPECT_EQ(s.comms.at(30), "kworker/0:1");
    EXPECT_EQ(s.comms.at(10), "bash");
}
