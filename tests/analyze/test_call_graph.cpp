#include "nvtrace/call_graph.hpp"

#include <gtest/gtest.h>

#include "event_builders.hpp"

using namespace nvtrace;
using namespace nvtrace::test;

namespace {

// The null_blk path measured in the 6.1 guest (ci-environment.md 8.3): null_queue_rq > null_handle_cmd >
// null_process_cmd, plus a leaf end_cmd at depth 1.
EventStream null_blk_stream() {
    EventStream s;
    s.comms[42] = "odirect_read";
    s.events = {
        entry(1000, 42, "null_queue_rq", 0),
        entry(1100, 42, "null_handle_cmd", 1),
        entry(1200, 42, "null_process_cmd", 2),
        exit_(1300, 42, "null_process_cmd", 2, 1200, 1290),
        exit_(1400, 42, "null_handle_cmd", 1, 1100, 1390),
        entry(1500, 42, "end_cmd", 1),
        exit_(1600, 42, "end_cmd", 1, 1500, 1550),
        exit_(1700, 42, "null_queue_rq", 0, 1000, 1690),
    };
    return s;
}

}  // namespace

TEST(CallGraph, NestedCallsGetParentsDepthsAndDurations) {
    CallGraph g = build_call_graph(null_blk_stream());
    ASSERT_EQ(g.calls.size(), 4u);
    const Call& root = g.calls[0];
    EXPECT_EQ(root.function, "null_queue_rq");
    EXPECT_FALSE(root.parent.has_value());
    EXPECT_EQ(root.duration_ns, 690u);
    EXPECT_EQ(root.comm, "odirect_read");
    EXPECT_EQ(g.calls[1].parent, root.id);
    EXPECT_EQ(g.calls[2].parent, g.calls[1].id);
    EXPECT_EQ(g.calls[2].depth, 2);
    EXPECT_EQ(g.calls[2].duration_ns, 90u);
    EXPECT_EQ(g.calls[3].function, "end_cmd");
    EXPECT_EQ(g.calls[3].parent, root.id);
    EXPECT_EQ(g.orphan_returns, 0u);
    EXPECT_EQ(g.unclosed_calls, 0u);
}

TEST(CallGraph, ExitWithoutEntryIsAnOrphanWithItsDuration) {
    EventStream s;
    s.events = {exit_(500, 7, "schedule", 0, 100, 450), entry(600, 7, "f", 0), exit_(700, 7, "f", 0, 600, 650)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 2u);
    EXPECT_FALSE(g.calls[0].entry_seen);
    EXPECT_TRUE(g.calls[0].exit_seen);
    EXPECT_EQ(g.calls[0].duration_ns, 350u);
    EXPECT_EQ(g.calls[0].entry_ns, 100u);
    EXPECT_EQ(g.orphan_returns, 1u);
    EXPECT_TRUE(g.calls[1].entry_seen && g.calls[1].exit_seen);
}

// fgraph-abstime-orphan-close: a trace that starts inside __schedule returns up a chain whose entries are
// all missing; each return one level up is the parent of the returns before it.
TEST(CallGraph, OrphanReturnsOneLevelUpAdoptTheEarlierOnes) {
    EventStream s;
    s.events = {exit_(500, 7, "__schedule", 3, 100, 500),
                exit_(510, 7, "schedule", 2, 90, 510),
                entry(520, 7, "down_read", 2),
                exit_(530, 7, "down_read", 2, 520, 530),
                exit_(540, 7, "yield", 2, 535, 540),
                exit_(600, 7, "tty_read", 1, 80, 600),
                exit_(700, 7, "vfs_read", 0, 50, 700),
                entry(800, 7, "vfs_read", 0),
                exit_(900, 7, "vfs_read", 0, 800, 900)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 7u);
    EXPECT_EQ(g.orphan_returns, 5u);
    auto by_name = [&](const std::string& f, bool entry_seen) -> const Call& {
        for (const auto& c : g.calls)
            if (c.function == f && c.entry_seen == entry_seen) return c;
        throw std::runtime_error("no " + f);
    };
    const Call& vfs = by_name("vfs_read", false);
    const Call& tty = by_name("tty_read", false);
    const Call& sched = by_name("schedule", false);
    const Call& inner = by_name("__schedule", false);
    const Call& yield = by_name("yield", false);
    EXPECT_FALSE(vfs.parent);
    EXPECT_EQ(vfs.depth, 0);
    EXPECT_EQ(tty.parent, vfs.id);
    EXPECT_EQ(sched.parent, tty.id);
    EXPECT_EQ(yield.parent, tty.id);  // a sibling orphan at the same level
    EXPECT_EQ(inner.parent, sched.id);
    EXPECT_EQ(inner.depth, 3);
    // Ids stay in entry order: a parent before its children, calls[id - 1] is the call.
    for (std::size_t i = 0; i < g.calls.size(); ++i) {
        EXPECT_EQ(g.calls[i].id, i + 1);
        if (g.calls[i].parent) {
            EXPECT_LT(*g.calls[i].parent, g.calls[i].id);
        }
    }
    EXPECT_LT(sched.id, yield.id);
    // down_read's entry is in the data, so it is a complete call; it stays a root (its parent's entry is
    // missing and its entry came before the parent's return was seen).
    EXPECT_FALSE(by_name("down_read", true).parent);
    EXPECT_FALSE(by_name("vfs_read", true).parent);
}

// fgraph-task-switch-mid-schedule: the excerpt starts with returns at depth 4 and 3.
TEST(CallGraph, OrphanAtDepthFourNestsUnderTheDepthThreeOne) {
    EventStream s;
    s.events = {exit_(100, -1, "", 4, 0, 0), exit_(200, -1, "", 3, 0, 0)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 2u);
    EXPECT_FALSE(g.calls[0].parent);
    EXPECT_EQ(g.calls[1].parent, g.calls[0].id);
    EXPECT_EQ(g.calls[1].depth, 1);
}

// An orphan under an open frame one level up is that frame's child at once (the ldsem_down_read return
// inside tty_ldisc_ref_wait in fgraph-abstime-orphan-close).
TEST(CallGraph, OrphanDirectlyUnderAnOpenFrameStaysItsChild) {
    EventStream s;
    s.events = {entry(100, 7, "tty_ldisc_ref_wait", 2), exit_(150, 7, "ldsem_down_read", 3, 140, 150),
                exit_(200, 7, "tty_ldisc_ref_wait", 2, 100, 200)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 2u);
    EXPECT_EQ(g.calls[1].function, "ldsem_down_read");
    EXPECT_EQ(g.calls[1].parent, g.calls[0].id);
    EXPECT_EQ(g.orphan_returns, 1u);
}

TEST(CallGraph, EntryLeftOpenAtTheEndIsUnclosed) {
    EventStream s;
    s.events = {entry(1, 7, "outer", 0), entry(2, 7, "inner", 1), exit_(3, 7, "inner", 1, 2, 3)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 2u);
    EXPECT_FALSE(g.calls[0].exit_seen);
    EXPECT_FALSE(g.calls[0].duration_ns.has_value());
    EXPECT_EQ(g.unclosed_calls, 1u);
}

TEST(CallGraph, LostExitIsDetectedWhenASiblingStartsAtTheSameDepth) {
    // a's exit was lost: b enters at depth 0 while a is still open.
    EventStream s;
    s.events = {entry(1, 7, "a", 0), entry(5, 7, "b", 0), exit_(6, 7, "b", 0, 5, 6)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 2u);
    EXPECT_FALSE(g.calls[1].parent.has_value());
    EXPECT_FALSE(g.calls[0].exit_seen);
    EXPECT_EQ(g.unclosed_calls, 1u);
}

TEST(CallGraph, TasksKeepSeparateStacksWhenInterleaved) {
    EventStream s;
    s.events = {entry(1, 1, "a", 0),       entry(2, 2, "x", 0),       entry(3, 1, "b", 1),
                exit_(4, 2, "x", 0, 2, 4), exit_(5, 1, "b", 1, 3, 5), exit_(6, 1, "a", 0, 1, 6)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 3u);
    EXPECT_EQ(g.calls[2].function, "b");
    EXPECT_EQ(g.calls[2].parent, g.calls[0].id);
    EXPECT_FALSE(g.calls[1].parent.has_value());
    EXPECT_EQ(g.orphan_returns + g.unclosed_calls, 0u);
}

TEST(CallGraph, ExitMatchesByAddressWhenNamesAreUnresolved) {
    EventStream s;
    s.events = {entry(1, 1, "", 0, 0xffffffffa0001000), exit_(2, 1, "", 0, 1, 2, 0xffffffffa0001000)};
    CallGraph g = build_call_graph(s);
    ASSERT_EQ(g.calls.size(), 1u);
    EXPECT_TRUE(g.calls[0].exit_seen);
    EXPECT_EQ(g.orphan_returns, 0u);
}

TEST(AggregateGraph, PathsCountsTotalsAndSelfTime) {
    CallGraph g = build_call_graph(null_blk_stream());
    auto nodes = aggregate_graph(g.calls);
    ASSERT_EQ(nodes.size(), 4u);
    // sorted by path
    EXPECT_EQ(nodes[0].path, "null_queue_rq");
    EXPECT_EQ(nodes[0].count, 1u);
    EXPECT_EQ(nodes[0].total_ns, 690u);
    EXPECT_EQ(nodes[0].self_ns, 690u - 290u - 50u);
    EXPECT_EQ(nodes[1].path, "null_queue_rq > end_cmd");
    EXPECT_EQ(nodes[2].path, "null_queue_rq > null_handle_cmd");
    EXPECT_EQ(nodes[2].self_ns, 200u);
    EXPECT_EQ(nodes[3].path, "null_queue_rq > null_handle_cmd > null_process_cmd");
    EXPECT_EQ(nodes[3].min_ns, 90u);
    EXPECT_EQ(nodes[3].max_ns, 90u);
}
