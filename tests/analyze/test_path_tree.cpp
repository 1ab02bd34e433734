// The per-path aggregation of analyze/path_tree.hpp: rows, function ids, and the cap on distinct paths.
#include "../../analyze/path_tree.hpp"

#include <gtest/gtest.h>

#include <string>

#include "event_builders.hpp"
#include "nvtrace/call_graph.hpp"
#include "nvtrace/call_stream.hpp"

using namespace nvtrace;
using namespace nvtrace::test;
using detail::FunctionIds;
using detail::PathTree;

TEST(FunctionIds, SameNameSameIdEachStoredOnce) {
    FunctionIds ids;
    std::string a = "nv_alloc_mem";
    std::uint32_t x = ids.intern(a);
    std::uint32_t y = ids.intern("uvm_map_range.isra.0");
    a[0] = 'X';  // the table keeps its own copy
    EXPECT_EQ(ids.intern("nv_alloc_mem"), x);
    EXPECT_NE(x, y);
    EXPECT_EQ(ids.name(x), "nv_alloc_mem");
    EXPECT_EQ(ids.size(), 2u);
    // Past several rehashes every name keeps its id and its bytes (a long one in a block of its own).
    std::string big(40000, 'q');
    std::uint32_t b = ids.intern(big);
    for (int i = 0; i < 5000; ++i)
        ids.intern("f" + std::to_string(i));
    EXPECT_EQ(ids.intern(big), b);
    EXPECT_EQ(ids.name(b), big);
    EXPECT_EQ(ids.intern("f4999"), ids.intern("f4999"));
    EXPECT_EQ(ids.name(ids.intern("f123")), "f123");
    EXPECT_EQ(ids.size(), 5003u);
}

TEST(PathTree, RowsByPathInByteOrderWithSelfTime) {
    PathTree t;
    std::uint32_t a = t.intern(PathTree::kRoot, "a");
    std::uint32_t ab = t.intern(a, "b");
    std::uint32_t aB = t.intern(a, "B");
    EXPECT_EQ(t.intern(a, "b"), ab);
    EXPECT_EQ(t.intern(PathTree::kRoot, "a"), a);
    t.add(ab, 30, 0);
    t.add(ab, 10, 0);
    t.add(aB, std::nullopt, 0);
    t.add(a, 100, 40);
    auto rows = t.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].path, "a");
    EXPECT_EQ(rows[0].self_ns, 60u);
    EXPECT_EQ(rows[1].path, "a > B");  // 'B' < 'b'
    EXPECT_EQ(rows[1].min_ns, 0u);     // no known duration
    EXPECT_EQ(rows[2].path, "a > b");
    EXPECT_EQ(rows[2].count, 2u);
    EXPECT_EQ(rows[2].min_ns, 10u);
    EXPECT_EQ(rows[2].max_ns, 30u);
    EXPECT_EQ(t.beyond_calls(), 0u);
    EXPECT_EQ(t.paths(), 3u);
}

TEST(PathTree, NamesHoldingTheSeparatorMergeIntoOneRow) {
    PathTree t;
    std::uint32_t x = t.intern(t.intern(PathTree::kRoot, "a"), "b");
    std::uint32_t y = t.intern(PathTree::kRoot, "a > b");
    EXPECT_NE(x, y);
    t.add(x, 5, 0);
    t.add(y, 7, 0);
    auto rows = t.rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].path, "a > b");
    EXPECT_EQ(rows[0].count, 2u);
    EXPECT_EQ(rows[0].total_ns, 12u);
}

TEST(PathTree, PathsPastTheCapAggregateByFunction) {
    PathTree t(3);
    std::uint32_t a = t.intern(PathTree::kRoot, "a");
    std::uint32_t ab = t.intern(a, "b");
    std::uint32_t ac = t.intern(a, "c");
    std::uint32_t ad = t.intern(a, "d");      // a 4th path: past the cap
    std::uint32_t ade = t.intern(ad, "e");    // under it: by function too
    std::uint32_t abd = t.intern(ab, "d");    // another route to d: the same row
    std::uint32_t abdb = t.intern(abd, "b");  // b under a beyond row is not the path a > b
    EXPECT_EQ(t.intern(a, "c"), ac);          // kept paths stay found
    EXPECT_EQ(abd, ad);
    EXPECT_NE(abdb, ab);
    t.add(ab, 10, 0);
    t.add(ac, 10, 0);
    t.add(ad, 50, 20);
    t.add(ade, 20, 0);
    t.add(abd, 5, 0);
    t.add(abdb, 1, 0);
    t.add(a, 100, 0);
    EXPECT_EQ(t.paths(), 3u);
    EXPECT_EQ(t.beyond_calls(), 4u);
    auto rows = t.rows();
    ASSERT_EQ(rows.size(), 6u);
    EXPECT_EQ(rows[0].path, "[beyond 3 paths] > b");
    EXPECT_EQ(rows[1].path, "[beyond 3 paths] > d");
    EXPECT_EQ(rows[1].count, 2u);
    EXPECT_EQ(rows[1].total_ns, 55u);
    EXPECT_EQ(rows[1].self_ns, 35u);
    EXPECT_EQ(rows[2].path, "[beyond 3 paths] > e");
    EXPECT_EQ(rows[3].path, "a");
    EXPECT_EQ(rows[4].path, "a > b");
    EXPECT_EQ(rows[4].count, 1u);
    EXPECT_EQ(rows[5].path, "a > c");
}

TEST(PathTree, PathTextIsCappedToo) {
    PathTree t(100, 18);                                    // the rows' path strings together
    std::uint32_t a = t.intern(PathTree::kRoot, "abcdef");  // 6 bytes
    std::uint32_t b = t.intern(a, "xyz");                   // "abcdef > xyz": 12 more, 18 in all: kept
    std::uint32_t c = t.intern(a, "w");                     // "abcdef > w": 10 more, past 18
    t.add(a, 1, 0);
    t.add(b, 1, 0);
    t.add(c, 1, 0);
    EXPECT_EQ(t.paths(), 2u);
    EXPECT_EQ(t.beyond_calls(), 1u);
    auto rows = t.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].path, "[beyond 100 paths] > w");
}

namespace {

// One root calling `n` distinct leaves: n + 1 paths.
EventStream fan_out(int n) {
    EventStream s;
    s.comms[7] = "app";
    std::uint64_t ts = 1000;
    s.events.push_back(entry(ts, 7, "root", 0));
    for (int i = 0; i < n; ++i) {
        std::string f = "leaf_" + std::to_string(i);
        std::uint64_t in = ++ts, out = ++ts;
        s.events.push_back(entry(in, 7, f.c_str(), 1));
        s.events.push_back(exit_(out, 7, f.c_str(), 1, in, out));
    }
    std::uint64_t end = ++ts;
    s.events.push_back(exit_(end, 7, "root", 0, 1000, end));
    return s;
}

}  // namespace

// The default cap, reached by a fan-out of distinct leaves; the streamed builder (CallStream) and
// aggregate_graph over the whole call list keep the same paths and say the same in the diagnostic.
TEST(PathTree, AggregateGraphAndCallStreamCapAlike) {
    const int n = static_cast<int>(PathTree::kMaxPaths) + 9;  // 10 leaves past the cap
    EventStream s = fan_out(n);
    CallGraph g = build_call_graph(s);
    GraphStats whole;
    auto rows = aggregate_graph(g.calls, &whole);
    EXPECT_EQ(whole.paths, PathTree::kMaxPaths);
    EXPECT_EQ(whole.beyond_calls, 10u);
    ASSERT_EQ(rows.size(), PathTree::kMaxPaths + 10);
    // root and leaves 0-131070 are the kept paths; leaves 131071-131080 come first ('[' < 'l').
    EXPECT_EQ(rows[0].path, "[beyond 131072 paths] > leaf_131071");
    EXPECT_EQ(rows[9].path, "[beyond 131072 paths] > leaf_131080");
    EXPECT_EQ(rows[0].count, 1u);
    EXPECT_EQ(rows[10].path, "root");

    CallStream cs([](Call&&) {});
    for (const Event& ev : s.events)
        cs.add(ev, s.comms);
    cs.finish();
    auto streamed = cs.graph();
    ASSERT_EQ(streamed.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        ASSERT_EQ(streamed[i].path, rows[i].path);
        ASSERT_EQ(streamed[i].count, rows[i].count);
        ASSERT_EQ(streamed[i].total_ns, rows[i].total_ns);
    }
    EXPECT_EQ(cs.graph_stats().beyond_calls, 10u);

    Completeness c;
    add_graph_cap_diagnostic(c, whole);
    ASSERT_EQ(c.diagnostics.size(), 1u);
    EXPECT_EQ(c.diagnostics[0].name, "graph_paths_capped");
    EXPECT_EQ(c.diagnostics[0].severity, "info");
    EXPECT_EQ(c.diagnostics[0].count, 10u);
    EXPECT_NE(c.diagnostics[0].first_example.find("[beyond 131072 paths] > FUNCTION"), std::string::npos);
    Completeness none;
    add_graph_cap_diagnostic(none, GraphStats{});
    EXPECT_TRUE(none.diagnostics.empty());
}
