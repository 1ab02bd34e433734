// The pure function_graph line tokenizer (analyze/import/graph_line.cpp): one test per column combination
// and body form of ftrace-formats.md sections 1.2-1.6.
#include "graph_line.hpp"
#include "text_util.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

using namespace nvtrace::import;
using K = GraphBody::Kind;
using L = FgraphLine::Kind;

TEST(GraphLine, CpuAndDurationLeaf) {
    auto l = tokenize_fgraph_line(" 0)   0.217 us    |          _raw_spin_lock_irqsave();");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cpu, 0);
    EXPECT_FALSE(l.ts_ns);
    EXPECT_EQ(l.cols.body.kind, K::leaf);
    EXPECT_EQ(l.cols.body.function, "_raw_spin_lock_irqsave");
    EXPECT_EQ(l.cols.body.duration_ns, 217u);
    EXPECT_EQ(l.cols.body.depth, 4);
}

TEST(GraphLine, NestedEntryHasNoDuration) {
    auto l = tokenize_fgraph_line(" 0)               |  do_nanosleep() {");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cols.body.kind, K::entry);
    EXPECT_EQ(l.cols.body.function, "do_nanosleep");
    EXPECT_FALSE(l.cols.body.duration_ns);
    EXPECT_EQ(l.cols.body.depth, 0);
}

TEST(GraphLine, TwoDigitCpuColumn) {
    auto l = tokenize_fgraph_line(" 12)   1.000 us    |    f();");
    EXPECT_EQ(l.cpu, 12);
    EXPECT_EQ(l.cols.body.depth, 1);
}

TEST(GraphLine, OverheadMarksAndDurationShapes) {
    struct {
        const char* line;
        std::uint64_t ns;
    } cases[] = {
        {" 1) + 48.365 us   |                  }", 48365},
        {" 1) ! 114.183 us  |        }", 114183},
        {" 1) # 1984.392 us |      }", 1984392},
        {" 3) * 33998.59 us |  } /* schedule_preempt_disabled */", 33998590},
        {" 1) @ 119760.2 us |  }", 119760200},
        {" 2) $ 3594274 us  |  }", 3594274000},
        {"7238523.638066 |   0)   19354026 us |            } /* __schedule */", 19354026000},
        {" 0)   0.518 us    |  }", 518},
    };
    for (const auto& c : cases) {
        auto l = tokenize_fgraph_line(c.line);
        ASSERT_EQ(l.kind, L::graph) << c.line;
        EXPECT_EQ(l.cols.body.kind, K::exit) << c.line;
        EXPECT_EQ(l.cols.body.duration_ns, c.ns) << c.line;
    }
}

TEST(GraphLine, AbsTimeColumn) {
    auto l = tokenize_fgraph_line("7238523.638156 |   0)               |  vfs_read() {");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.ts_ns, 7238523638156000u);
    EXPECT_EQ(l.cpu, 0);
    EXPECT_EQ(l.cols.body.kind, K::entry);
    EXPECT_EQ(l.cols.body.depth, 0);
}

// Seconds of up to 10 digits take a direct path; longer ones and digits past ns precision as before.
TEST(GraphLine, AbsTimeDigitsAndLimits) {
    EXPECT_EQ(tokenize_fgraph_line("1.1234567891 |   0)               |  f() {").ts_ns, 1123456789u);
    EXPECT_EQ(tokenize_fgraph_line("0.5 |   0)               |  f() {").ts_ns, 500000000u);
    EXPECT_EQ(tokenize_fgraph_line("9999999999.000001 |   0)               |  f() {").ts_ns, 9999999999000001000u);
    EXPECT_EQ(tokenize_fgraph_line("12345678901.5 |   0)               |  f() {").ts_ns, 12345678901500000000u);
    EXPECT_FALSE(tokenize_fgraph_line("18446744074.000000 |   0)               |  f() {").ts_ns);  // over 2^64 ns
    EXPECT_EQ(parse_decimal_ns("82.823", 1000), 82823u);
    EXPECT_EQ(parse_decimal_ns("82.8239", 1000), 82823u);
    EXPECT_EQ(parse_decimal_ns("3594274", 1'000'000'000), 3594274000000000u);
    EXPECT_EQ(parse_decimal_ns("1.5", 250), 375u);  // other units: digit by digit, as before
    EXPECT_FALSE(parse_decimal_ns("1.x", 1000));
    // The integer part is read in one pass: empty, signed, non-digit and overflowing parts are refused.
    EXPECT_FALSE(parse_decimal_ns("", 1000));
    EXPECT_FALSE(parse_decimal_ns(".5", 1000));
    EXPECT_FALSE(parse_decimal_ns("5.", 1000));
    EXPECT_FALSE(parse_decimal_ns("+5", 1000));
    EXPECT_FALSE(parse_decimal_ns("1-2", 1000));
    EXPECT_FALSE(parse_decimal_ns("18446744073709551616", 1));
    EXPECT_EQ(parse_decimal_ns("18446744073709551615", 1), UINT64_MAX);
    EXPECT_FALSE(parse_decimal_ns("18446744073709552", 1000));  // over UINT64_MAX / 1000
    EXPECT_EQ(parse_decimal_ns("18446744073709551", 1000), 18446744073709551000u);
    EXPECT_FALSE(parse_decimal_ns("1.", 1000));
}

TEST(GraphLine, AbsTimeWithoutCpuColumn) {
    auto l = tokenize_fgraph_line("  360.774522 |   1.234 us    |    f();");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.ts_ns, 360774522000u);
    EXPECT_EQ(l.cpu, -1);
    EXPECT_EQ(l.cols.body.duration_ns, 1234u);
    EXPECT_EQ(l.cols.body.depth, 1);
}

TEST(GraphLine, TaskPidColumn) {
    auto l = tokenize_fgraph_line(" 0)    sh-4802     |   0.616 us    |                        rcu_process_gp_end();");
    ASSERT_EQ(l.kind, L::graph);
    ASSERT_TRUE(l.cols.task);
    EXPECT_EQ(l.cols.task->comm, "sh");
    EXPECT_EQ(l.cols.task->pid, 4802);
    EXPECT_EQ(l.cols.body.depth, 11);
    EXPECT_EQ(l.cols.body.duration_ns, 616u);
}

TEST(GraphLine, TaskPidWithDashInCommSplitsAtLastDash) {
    auto l = tokenize_fgraph_line(" 3)  irq/17--33   |   1.000 us    |  f();");
    ASSERT_TRUE(l.cols.task);
    EXPECT_EQ(l.cols.task->comm, "irq/17-");
    EXPECT_EQ(l.cols.task->pid, 33);
}

TEST(GraphLine, LatencyFlagsColumn) {
    auto l = tokenize_fgraph_line(" 0)  d.h1 |   2.000 us    |    f();");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cols.lat_flags, "d.h1");
    EXPECT_TRUE(lat_flags_irq(l.cols.lat_flags));
    EXPECT_EQ(l.cols.body.depth, 1);
}

TEST(GraphLine, AllColumnsTogether) {
    auto l = tokenize_fgraph_line(
        "  123.000456 |   2)   bash-99      |  dN.2 | + 11.000 us   |      g [nvidia](fd=3);  /* ret=0x0 */");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.ts_ns, 123000456000u);
    EXPECT_EQ(l.cpu, 2);
    ASSERT_TRUE(l.cols.task);
    EXPECT_EQ(l.cols.task->pid, 99);
    EXPECT_EQ(l.cols.lat_flags, "dN.2");
    EXPECT_EQ(l.cols.body.duration_ns, 11000u);
    EXPECT_EQ(l.cols.body.kind, K::leaf);
    EXPECT_EQ(l.cols.body.function, "g");
    EXPECT_EQ(l.cols.body.module, "nvidia");
    EXPECT_EQ(l.cols.body.args, "fd=3");
    EXPECT_EQ(l.cols.body.retval, 0);
    EXPECT_EQ(l.cols.body.depth, 2);
}

TEST(GraphLine, NoColumnsAtAll) {
    auto l = tokenize_fgraph_line("    f() {");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cols.body.kind, K::entry);
    EXPECT_EQ(l.cols.body.depth, 2);
}

TEST(GraphLine, CpuWithoutDurationColumn) {
    auto l = tokenize_fgraph_line(" 1)    f();");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cpu, 1);
    EXPECT_EQ(l.cols.body.kind, K::leaf);
    EXPECT_EQ(l.cols.body.depth, 1);
}

TEST(GraphLine, ModuleSuffix) {
    auto l = tokenize_fgraph_line(" 1)               |  test_proc_show [proc]() {");
    EXPECT_EQ(l.cols.body.kind, K::entry);
    EXPECT_EQ(l.cols.body.function, "test_proc_show");
    EXPECT_EQ(l.cols.body.module, "proc");
}

TEST(GraphLine, CompilerSuffixKeptRaw) {
    auto l = tokenize_fgraph_line(" 1)   0.417 us    |          rcu_eqs_enter_common.isra.47();");
    EXPECT_EQ(l.cols.body.function, "rcu_eqs_enter_common.isra.47");
}

TEST(GraphLine, TailComment) {
    auto l = tokenize_fgraph_line(" 0)   1.583 us    |          } /* load_TLS_descriptor */");
    EXPECT_EQ(l.cols.body.kind, K::exit);
    EXPECT_EQ(l.cols.body.function, "load_TLS_descriptor");
    EXPECT_FALSE(l.cols.body.retval);
}

TEST(GraphLine, RetvalFirstGeneration) {
    auto exit = tokenize_fgraph_line(" 1)   2.335 us    |        } /* cpu_cgroup_can_attach = -22 */");
    EXPECT_EQ(exit.cols.body.function, "cpu_cgroup_can_attach");
    EXPECT_EQ(exit.cols.body.retval, -22);
    auto hex = tokenize_fgraph_line(" 1)   2.335 us    |        } /* cpu_cgroup_can_attach = 0xffffffea */");
    EXPECT_EQ(hex.cols.body.retval, 0xffffffea);
    auto leaf = tokenize_fgraph_line(" 1)   0.651 us    |      cgroup_migrate_add_task(); /* = 0xffff93fcfd346c00 */");
    EXPECT_EQ(leaf.cols.body.kind, K::leaf);
    EXPECT_EQ(leaf.cols.body.function, "cgroup_migrate_add_task");
    EXPECT_EQ(static_cast<std::uint64_t>(*leaf.cols.body.retval), 0xffff93fcfd346c00u);
}

TEST(GraphLine, RetvalSecondGenerationAndRetaddr) {
    auto exit = tokenize_fgraph_line(" 1)   7.143 us    |    } /* cgroup_migrate ret=-22 */");
    EXPECT_EQ(exit.cols.body.function, "cgroup_migrate");
    EXPECT_EQ(exit.cols.body.retval, -22);
    auto leaf = tokenize_fgraph_line(" 1)   0.380 us    |      f(); /* <-caller+0x1a/0x40 ret=0x0 */");
    EXPECT_EQ(leaf.cols.body.function, "f");
    EXPECT_EQ(leaf.cols.body.retaddr, "caller+0x1a/0x40");
    EXPECT_EQ(leaf.cols.body.retval, 0);
    auto entry = tokenize_fgraph_line(" 1)               |    f() { /* <-caller+0x1a/0x40 */");
    EXPECT_EQ(entry.cols.body.kind, K::entry);
    EXPECT_EQ(entry.cols.body.retaddr, "caller+0x1a/0x40");
    // With BTF the retval is typed (>= 6.13, trace_functions_graph.c print_graph_retval): a bool prints as
    // true/false, kept as 1/0; text that is no value stays out.
    auto typed = tokenize_fgraph_line(" 1)   0.380 us    |      f(); /* ret=true */");
    EXPECT_EQ(typed.cols.body.kind, K::leaf);
    EXPECT_EQ(typed.cols.body.retval, 1);
    auto no = tokenize_fgraph_line(" 1)   0.376 us    |    } /* g ret=false */");
    EXPECT_EQ(no.cols.body.function, "g");
    EXPECT_EQ(no.cols.body.retval, 0);
    auto dec = tokenize_fgraph_line(
        " 3)   0.196 us    |        ktime_get(); /* <-tick_nohz_start_idle+0x4d/0xc0 ret=93933535693 */");
    EXPECT_EQ(dec.cols.body.retaddr, "tick_nohz_start_idle+0x4d/0xc0");
    EXPECT_EQ(dec.cols.body.retval, 93933535693);
    auto junk = tokenize_fgraph_line(" 1)   0.380 us    |      f(); /* ret=(trunc) */");
    EXPECT_FALSE(junk.cols.body.retval);
}

TEST(GraphLine, Args) {
    auto l = tokenize_fgraph_line(" 1)               |  vfs_read(file=0xffff8881, buf=0x7ffd (x), count=8) {");
    EXPECT_EQ(l.cols.body.kind, K::entry);
    EXPECT_EQ(l.cols.body.function, "vfs_read");
    EXPECT_EQ(l.cols.body.args, "file=0xffff8881, buf=0x7ffd (x), count=8");
}

TEST(GraphLine, IrqMarkers) {
    EXPECT_EQ(tokenize_fgraph_line(" 1)   ==========> |").cols.body.kind, K::irq_enter);
    EXPECT_EQ(tokenize_fgraph_line(" 1)   <========== |").cols.body.kind, K::irq_exit);
    EXPECT_EQ(tokenize_fgraph_line("  360.1 |   1)   ==========> |").cols.body.kind, K::irq_enter);
}

TEST(GraphLine, SwitchBanner) {
    auto l = tokenize_fgraph_line(" 0)  platfor-3210  =>  vmstat-2854  ");
    ASSERT_EQ(l.kind, L::banner);
    EXPECT_EQ(l.cpu, 0);
    EXPECT_EQ(l.prev.comm, "platfor");
    EXPECT_EQ(l.prev.pid, 3210);
    EXPECT_EQ(l.next.comm, "vmstat");
    EXPECT_EQ(l.next.pid, 2854);
    auto irq = tokenize_fgraph_line(" 3)   kworker-32   =>   irq/17--33  ");
    ASSERT_EQ(irq.kind, L::banner);
    EXPECT_EQ(irq.next.comm, "irq/17-");
    EXPECT_EQ(irq.next.pid, 33);
}

TEST(GraphLine, SchedSwitchCommentIsNotABanner) {
    auto l = tokenize_fgraph_line(
        " 3)               |  /* sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b "
        "next_pid=2 next_prio=120 */");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cols.body.kind, K::comment);
    EXPECT_TRUE(l.cols.body.comment.starts_with("sched_switch: prev_comm=a"));
}

TEST(GraphLine, SpecialLines) {
    EXPECT_EQ(tokenize_fgraph_line(" ------------------------------------------").kind, L::dashes);
    EXPECT_EQ(tokenize_fgraph_line("").kind, L::blank);
    EXPECT_EQ(tokenize_fgraph_line("   ").kind, L::blank);
    EXPECT_EQ(tokenize_fgraph_line("# tracer: function_graph").kind, L::header);
    EXPECT_EQ(tokenize_fgraph_line("##### CPU 2 buffer started ####").kind, L::annotation);
    auto lost = tokenize_fgraph_line("CPU:2 [LOST 1234 EVENTS]");
    ASSERT_EQ(lost.kind, L::lost);
    EXPECT_EQ(lost.cpu, 2);
    EXPECT_EQ(lost.count, 1234u);
    auto ov = tokenize_fgraph_line(" (Overruns: 7)");
    ASSERT_EQ(ov.kind, L::overruns);
    EXPECT_EQ(ov.count, 7u);
}

TEST(GraphLine, TabIndentedCopy) {
    auto l = tokenize_fgraph_line("\t 0)   0.217 us    |  f();");
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cpu, 0);
    EXPECT_EQ(l.cols.body.depth, 0);
}

TEST(GraphLine, MalformedSaysWhatWasExpected) {
    auto l = tokenize_fgraph_line(" 0)   0.217 us    |  f(");
    EXPECT_EQ(l.kind, L::malformed);
    EXPECT_FALSE(l.expected.empty());
    EXPECT_EQ(tokenize_fgraph_line(" 0)   0.217 us    |  f() x").kind, L::malformed);
    EXPECT_EQ(tokenize_fgraph_line(" 0)   0.217 us    |  ").kind, L::malformed);
}

TEST(GraphLine, TraceCmdSuffixes) {
    GraphColumns c =
        parse_graph_columns("      + 10.453 us  |                native_apic_mem_write(); (7) (ret=-5)", 0);
    EXPECT_EQ(c.body.kind, K::leaf);
    EXPECT_EQ(c.body.duration_ns, 10453u);
    EXPECT_EQ(c.body.depth, 7);
    EXPECT_EQ(c.body.retval, -5);
    GraphColumns x = parse_graph_columns("       + 11.065 us  |        } (ret=0x0)", 0);
    EXPECT_EQ(x.body.kind, K::exit);
    EXPECT_EQ(x.body.retval, 0);
}

// Space runs are counted 8 bytes at a time: every indentation from 0 to 40 spaces gives its depth, and
// trimming stops at the first other byte, tabs included, wherever it falls in a word.
TEST(GraphLine, DeepIndentationAndSpaceRuns) {
    for (int depth = 0; depth <= 20; ++depth) {
        std::string line = " 3)   0.100 us    |  " + std::string(static_cast<std::size_t>(depth) * 2, ' ') + "f();";
        auto l = tokenize_fgraph_line(line);
        ASSERT_EQ(l.kind, L::graph) << depth;
        EXPECT_EQ(l.cols.body.depth, depth);
        EXPECT_EQ(l.cols.body.function, "f");
    }
    for (std::size_t n = 0; n <= 20; ++n) {
        std::string spaces(n, ' ');
        EXPECT_EQ(space_run(spaces + "x", 0), n);
        EXPECT_EQ(space_run(spaces, 0), n);
        EXPECT_EQ(ltrim(spaces + "\t" + spaces + "x y"), "x y");
        EXPECT_EQ(ltrim("ab" + spaces + "c"), "ab" + spaces + "c");
        EXPECT_EQ(space_run("ab" + spaces + "c", 2), n);
    }
}

// The reader reuses one FgraphLine: what a line sets must not leak into the next one.
TEST(GraphLine, ReusedLineStructHoldsNothingOver) {
    FgraphLine l;
    tokenize_fgraph_line("7238523.140209 |   2)   0.426 us    |    f [mod](a=1); /* = -22 */", l);
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_EQ(l.cols.body.retval, -22);
    EXPECT_EQ(l.cols.body.module, "mod");
    tokenize_fgraph_line(" 1)               |  g() {", l);
    ASSERT_EQ(l.kind, L::graph);
    EXPECT_FALSE(l.ts_ns);
    EXPECT_EQ(l.cpu, 1);
    EXPECT_FALSE(l.cols.body.duration_ns);
    EXPECT_FALSE(l.cols.body.retval);
    EXPECT_EQ(l.cols.body.module, "");
    EXPECT_EQ(l.cols.body.args, "");
    EXPECT_EQ(l.cols.body.kind, K::entry);
    tokenize_fgraph_line("CPU:x [LOST 1 EVENTS]", l);
    EXPECT_EQ(l.kind, L::malformed);
    tokenize_fgraph_line(" 0)   0.1 us    |  f(", l);
    EXPECT_EQ(l.kind, L::malformed);
    EXPECT_EQ(l.cpu, 0);
    EXPECT_EQ(l.expected, "')' closing the argument list");
}

// A reader's TaskColumnCache skips parsing a TASK/PID column with the same bytes as the last one of the line's
// CPU: every line tokenized with the cache, one after the other, gives what it gives alone. The lines: funcgraph-proc's
// column (print_graph_proc: comm cut to 7 characters, "comm-pid" centred) repeated, a pid or a comm that differs in one
// byte at the same width, a wider one, one over the cache's 32 bytes, lines without the column in between
// (plain, latency flags only, a duration where the column was), a banner and a comment.
TEST(GraphLine, TaskColumnCacheGivesWhatEachLineGivesAlone) {
    const std::string long_col(40, 'x');
    const std::vector<std::string> lines = {
        " 0)    sh-4802     |   0.616 us    |    rcu_process_gp_end();",
        " 0)    sh-4802     |               |    f() {",
        " 1)  kworke-10374  |   2.000 us    |  other_cpu();",
        " 9)    sh-4802     |   2.000 us    |  same_slot_as_cpu_1();",
        " 1)  kworke-10374  |   2.000 us    |  other_cpu();",
        " 0)    sh-4802     |   1.000 us    |    }",
        " 0)    sh-4803     |   0.616 us    |    g();",
        " 0)    sz-4803     |   0.616 us    |    g();",
        " 0)  kworke-10374  |   2.000 us    |  h();",
        " 0)  kworke-10374  | d..1 |  2.000 us    |  h();",
        " 0)  " + long_col + "-1  |   2.000 us    |  h();",
        " 0)  " + long_col + "-1  |   2.000 us    |  h();",
        " 0)   0.616 us    |    plain();",
        " 0)  d..1 |   0.616 us    |    flags();",
        " 0)    sh-4803     |   0.616 us    |    g();",
        " 0)   0.61600 us   |    same_width_as_the_column();",
        " 0)    sh-4803     |   0.616 us    |    /* comment */",
        " 0)    sh-4803     =>    sz-4803    ",
        " 0)    sh-4803     |   0.616 us    |    g();",
        "7238523.140231 |   2)  nvidia--1074  |   1.153 us    |        kbase_update_mem319();",
        "7238523.140231 |   2)  nvidia--1074  |               |        sched_init_mem282.isra.0 [nvidia_uvm]() {",
    };
    TaskColumnCache cache;
    FgraphLine cached;
    int hits = 0;
    for (const std::string& s : lines) {
        SCOPED_TRACE(s);
        FgraphLine alone = tokenize_fgraph_line(s);
        const std::size_t before = cache.slot(alone.cpu).size;
        tokenize_fgraph_line(s, cached, &cache);
        ASSERT_EQ(cached.kind, alone.kind);
        EXPECT_EQ(cached.cpu, alone.cpu);
        EXPECT_EQ(cached.ts_ns, alone.ts_ns);
        if (alone.kind != L::graph) continue;  // the columns are set for graph lines only
        ASSERT_EQ(cached.cols.task.has_value(), alone.cols.task.has_value());
        if (alone.cols.task) {
            EXPECT_EQ(cached.cols.task->comm, alone.cols.task->comm);
            EXPECT_EQ(cached.cols.task->comm.data(), alone.cols.task->comm.data());  // a view into this line
            EXPECT_EQ(cached.cols.task->pid, alone.cols.task->pid);
            hits += before != 0 && cache.slot(alone.cpu).size == before;
        }
        EXPECT_EQ(cached.cols.lat_flags, alone.cols.lat_flags);
        EXPECT_EQ(cached.cols.body.kind, alone.cols.body.kind);
        EXPECT_EQ(cached.cols.body.duration_ns, alone.cols.body.duration_ns);
        EXPECT_EQ(cached.cols.body.depth, alone.cols.body.depth);
        EXPECT_EQ(cached.cols.body.function, alone.cols.body.function);
        EXPECT_EQ(cached.cols.body.module, alone.cols.body.module);
    }
    EXPECT_GE(hits, 5);
}

// The funcgraph-abstime column ("%5lu.%06lu", or nanoseconds "%llu.%09llu" on newer kernels) is read 8 digits at a
// time: every length of the integer part from 1 to 12 digits and of the fraction from 1 to 12 (past ns
// precision the rest is cut, as parse_decimal_ns does), each digit position taking each value, after the CPU
// column's place or with leading spaces, gives parse_decimal_ns's nanoseconds.
TEST(GraphLine, AbstimeOfEveryLengthIsReadAsParseDecimalNs) {
    int checked = 0;
    for (int ip = 1; ip <= 12; ++ip)
        for (int fp = 1; fp <= 12; ++fp)
            for (int digit = 0; digit <= 9; ++digit) {
                std::string num;
                for (int k = 0; k < ip + fp; ++k)
                    num += static_cast<char>('0' + (k * 7 + digit * 3 + ip) % 10);
                num.insert(static_cast<std::size_t>(ip), ".");
                auto want = parse_decimal_ns(num, 1'000'000'000);
                for (const std::string& line : {num + " |   0)               |  f() {", "  " + num + " |  f();"}) {
                    SCOPED_TRACE(line);
                    FgraphLine l = tokenize_fgraph_line(line);
                    EXPECT_EQ(l.ts_ns, want);
                    ++checked;
                }
            }
    EXPECT_EQ(checked, 12 * 12 * 10 * 2);
}

namespace {

// Every field of two tokenizations of one line, the views compared by their bytes and by where they point.
void expect_same_line(const FgraphLine& a, const FgraphLine& b) {
    ASSERT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.ts_ns, b.ts_ns);
    EXPECT_EQ(a.cpu, b.cpu);
    EXPECT_EQ(a.expected, b.expected);
    if (a.kind != L::graph) return;  // the columns are set for graph lines only (malformed: `expected`)
    ASSERT_EQ(a.cols.task.has_value(), b.cols.task.has_value());
    if (a.cols.task) {
        EXPECT_EQ(a.cols.task->comm.data(), b.cols.task->comm.data());
        EXPECT_EQ(a.cols.task->comm.size(), b.cols.task->comm.size());
        EXPECT_EQ(a.cols.task->pid, b.cols.task->pid);
    }
    EXPECT_EQ(a.cols.lat_flags.data(), b.cols.lat_flags.data());
    EXPECT_EQ(a.cols.lat_flags.size(), b.cols.lat_flags.size());
    const GraphBody &x = a.cols.body, &y = b.cols.body;
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.duration_ns, y.duration_ns);
    EXPECT_EQ(x.depth, y.depth);
    for (auto [u, v] : {std::pair{x.function, y.function},
                        {x.module, y.module},
                        {x.args, y.args},
                        {x.retaddr, y.retaddr},
                        {x.comment, y.comment},
                        {x.expected, y.expected}}) {
        EXPECT_EQ(u.data(), v.data());
        EXPECT_EQ(u.size(), v.size());
    }
    EXPECT_EQ(x.retval, y.retval);
}

}  // namespace

// The DURATION column in the kernel's layout is read in one pass (kernel_layout on, what the readers use); every
// other column goes through the general reading. Both must give the same line, whatever the layout: each
// DURATION column below, in each place a column may sit, through both, one line after the other (a
// TaskColumnCache per path). The shapes: print_graph_duration (kernel/trace/trace_functions_graph.c: the mark
// of trace_find_mark '+ ! # * @ $' or a space, "%*llu.%s us" padded to the column, all spaces for a nested
// entry), the columns print_graph_prologue puts before it (abstime "%5lu.%06lu |  ", CPU "%*d) ", funcgraph-proc
// "comm-pid |", latency flags "d..1 |"), irq markers in its place (print_graph_irq), and variants no kernel
// prints that the general reading still takes or refuses: tabs, no space before "us", an integer duration,
// a dot with no fraction, 12 fraction digits, 15-20 integer digits (past 64 bits of ns), another unit, a
// carriage return, no closing '|', a second duration, bytes >= 0x80.
TEST(GraphLine, KernelLayoutDurationGivesWhatTheGeneralReadingGives) {
    const std::vector<std::string> durations = {
        "   0.907 us    |  ",
        "               |  ",
        " ! 940.409 us  |  ",
        " + 12.345 us   |  ",
        " # 1234.567 us |  ",
        " * 12345.678 us |  ",
        " @ 123456.789 us |  ",
        " $ 1234567.890 us |  ",
        "!940.409 us|",
        "   0.907us     |  ",
        "   5 us        |  ",
        "   5. us       |  ",
        "   .5 us       |  ",
        "   0.123456789012 us |  ",
        "   123456789012345.1 us |  ",
        "   1234567890123456.1 us |  ",
        "   18446744073709551.615 us |  ",
        "   99999999999999999999.1 us |  ",
        "   0.907 ms    |  ",
        "   0.907 u     |  ",
        "   0.907 us\r  |  ",
        "\t0.907 us\t|  ",
        "   0.907\tus   |  ",
        "   0.907 us    ",
        "   0.907 us  0.1 us  |  ",
        " ! !940.409 us |  ",
        "  \xC3\xA9 0.907 us |  ",
        " ==========> |  ",
        " <========== |  ",
        "  d..1 |   0.907 us    |  ",
        "  sh-4802  |   0.907 us    |  ",
        "  12-34 us  |  ",
        "",
    };
    const std::vector<std::string> prefixes = {
        "",
        " 0) ",
        "  3) ",
        "7238523.140208 |   2) ",
        "7238523.140208 | ",
        " 0)    sh-4802     |",
        "7238523.140208 |   2)  nvidia--1074  |",
        " 1)  d..1 |",
        " 0)    sh-4802     | d.h2 |",
    };
    const std::vector<std::string> bodies = {
        "  drm_insert_va341();", "  f [nvidia]() {", "  } /* f = -22 */", "  /* text */", "  }", "", "  ==========>",
    };
    TaskColumnCache fast_cache, general_cache;
    FgraphLine fast, general;
    int checked = 0, with_duration = 0;
    for (const std::string& pre : prefixes)
        for (const std::string& dur : durations)
            for (const std::string& body : bodies) {
                const std::string line = pre + dur + body;
                SCOPED_TRACE(line);
                tokenize_fgraph_line(line, fast, &fast_cache, true);
                tokenize_fgraph_line(line, general, &general_cache, false);
                expect_same_line(fast, general);
                expect_same_line(fast, tokenize_fgraph_line(line));  // the default is the readers' path
                ++checked;
                with_duration += general.kind == L::graph && general.cols.body.duration_ns.has_value();
            }
    EXPECT_EQ(checked, 9 * 33 * 7);
    EXPECT_GT(with_duration, 9 * 7 * 10);  // most kernel shapes did reach the DURATION column
}

// The same through both paths for every line of every .txt input under tests/data (real traces from bug reports
// and the kernel's documentation, ftrace-formats.md's examples; the other formats' lines too, which must not
// change either).
TEST(GraphLine, KernelLayoutDurationGivesWhatTheGeneralReadingGivesOnTheTestInputs) {
    namespace fs = std::filesystem;
    int files = 0, lines = 0;
    {
        for (const auto& e : fs::recursive_directory_iterator(fs::path(NVTRACE_TEST_DATA))) {
            if (e.path().extension() != ".txt") continue;
            std::ifstream in(e.path(), std::ios::binary);
            std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            ++files;
            TaskColumnCache fast_cache, general_cache;
            FgraphLine fast, general;
            std::size_t pos = 0;
            while (pos < text.size()) {
                std::size_t nl = text.find('\n', pos);
                if (nl == std::string::npos) nl = text.size();
                std::string_view line(text.data() + pos, nl - pos);
                pos = nl + 1;
                SCOPED_TRACE(e.path().string() + ": " + std::string(line));
                tokenize_fgraph_line(line, fast, &fast_cache, true);
                tokenize_fgraph_line(line, general, &general_cache, false);
                expect_same_line(fast, general);
                ++lines;
            }
        }
    }
    EXPECT_GT(files, 15);
    EXPECT_GT(lines, 600);
}

// The function name's end is found 16 bytes at a time where SSE2 is there: every stop byte ('(', ' ', '\t',
// '{', ';', '}') at every position 0-40, in bodies of every length around the 16-byte blocks, gives the name a
// byte-by-byte scan gives.
TEST(GraphLine, FunctionNameEndsAtItsFirstStopByteWhateverItsLength) {
    int checked = 0;
    for (std::size_t name = 0; name <= 40; ++name)
        for (char stop : std::string_view("( \t{;}"))
            for (std::size_t tail = 0; tail <= 20; ++tail) {
                std::string body;
                for (std::size_t i = 0; i < name; ++i)
                    body += static_cast<char>('a' + i % 26);
                body += stop;
                for (std::size_t i = 0; i < tail; ++i)
                    body += i % 3 == 0 ? ')' : 'x';  // bytes after the stop, stops among them
                body += "x";                         // not a space: rtrim keeps the stop byte
                GraphBody b;
                parse_graph_body(body, b);
                SCOPED_TRACE(body);
                if (name == 0) {
                    EXPECT_EQ(b.kind, stop == '}' ? K::exit : K::malformed);  // "}" is a return, not a name
                } else {
                    EXPECT_EQ(b.function, body.substr(0, name));
                }
                ++checked;
            }
    // Names with no stop byte at all, to the end of the body.
    for (std::size_t name = 1; name <= 40; ++name) {
        GraphBody b;
        std::string body(name, 'n');
        parse_graph_body(body, b);
        EXPECT_EQ(b.function, body);
        EXPECT_EQ(b.kind, K::malformed);
        ++checked;
    }
    EXPECT_EQ(checked, 41 * 6 * 21 + 40);
}
