// Sorter (analyze/sorter.hpp): the windowed sort of the report pipeline. Items are (ts, id) pairs; each test
// checks what comes out, and that every item pushed comes out exactly once.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sorter.hpp"

using namespace nvtrace;

namespace {

struct Item {
    std::uint64_t ts = 0;
    int cpu = 0;
    std::uint64_t id = 0;  // arrival index
};

// Pushes `in` through a Sorter with `w`, then flushes; returns what came out, in order.
std::vector<Item> sorted(const std::vector<Item>& in, SortWindow w, std::uint64_t* late = nullptr) {
    Sorter<Item> s(w);
    std::vector<Item> out;
    auto emit = [&](Item& it) { out.push_back(it); };
    for (const Item& it : in)
        s.push(
            it.ts, [&](Item& slot) { slot = it; }, emit);
    s.flush(emit);
    EXPECT_EQ(s.order().pushed(), in.size());
    EXPECT_EQ(s.order().emitted(), in.size());
    EXPECT_EQ(s.order().buffered(), 0u);
    if (late) *late = s.order().late();
    return out;
}

std::vector<std::uint64_t> ids(const std::vector<Item>& v) {
    std::vector<std::uint64_t> r;
    for (const Item& it : v)
        r.push_back(it.id);
    return r;
}

// What a stable sort by time of the arrival order gives: the order the whole report holds.
std::vector<Item> stable_by_time(std::vector<Item> v) {
    std::stable_sort(v.begin(), v.end(), [](const Item& a, const Item& b) { return a.ts < b.ts; });
    return v;
}

std::vector<Item> numbered(std::vector<std::pair<std::uint64_t, int>> ts_cpu) {
    std::vector<Item> v;
    for (auto [ts, cpu] : ts_cpu)
        v.push_back({ts, cpu, v.size()});
    return v;
}

}  // namespace

TEST(Sorter, InOrderInputPassesUnchanged) {
    std::vector<Item> in;
    for (std::uint64_t i = 0; i < 50'000; ++i)
        in.push_back({1000 + i * 7 / 3, static_cast<int>(i % 4), i});  // times repeat: 7/3 rounds down
    std::uint64_t late = 99;
    auto out = sorted(in, kSortWindow, &late);
    EXPECT_EQ(ids(out), ids(in));
    EXPECT_EQ(late, 0u);
}

// Two CPUs' streams handed over a run at a time (as a reader that drains one CPU, then the other, would):
// within the window they come out as one stream in time order, each CPU's own order kept.
TEST(Sorter, PerCpuStreamsInterleavedWithinTheWindowComeOutGloballyOrdered) {
    std::vector<Item> in;
    std::uint64_t id = 0;
    for (std::uint64_t run = 0; run < 100; ++run)
        for (int cpu = 0; cpu < 2; ++cpu)
            for (std::uint64_t k = 0; k < 10; ++k)
                in.push_back({run * 1000 + k * 100 + static_cast<std::uint64_t>(cpu) * 50, cpu, id++});
    ASSERT_FALSE(std::is_sorted(in.begin(), in.end(), [](const Item& a, const Item& b) { return a.ts < b.ts; }));
    std::uint64_t late = 99;
    auto out = sorted(in, SortWindow{1'000'000, 64}, &late);
    EXPECT_EQ(late, 0u);
    EXPECT_TRUE(std::is_sorted(out.begin(), out.end(), [](const Item& a, const Item& b) { return a.ts < b.ts; }));
    EXPECT_EQ(ids(out), ids(stable_by_time(in)));
    for (int cpu = 0; cpu < 2; ++cpu) {
        std::vector<std::uint64_t> mine;
        for (const Item& it : out)
            if (it.cpu == cpu) mine.push_back(it.id);
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "cpu " << cpu;
    }
}

TEST(Sorter, EqualTimestampsKeepArrivalOrder) {
    // 30 and the three 20s: the later 20s arrive after a 30, and go before it but after the first 20.
    auto in = numbered({{10, 0}, {20, 1}, {30, 0}, {20, 0}, {20, 2}, {30, 1}, {10, 3}});
    auto out = sorted(in, SortWindow{1'000, 100});
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{0, 6, 1, 3, 4, 2, 5}));
    EXPECT_EQ(ids(out), ids(stable_by_time(in)));
}

// A window of 2 events: the third push hands on the oldest; an item older than that is late. It is handed on at
// once, in arrival order, and counted; nothing is lost.
TEST(Sorter, ItemLaterThanTheWindowIsEmittedAndCountedNeverLost) {
    auto in = numbered({{100, 0}, {200, 0}, {300, 0}, {50, 1}, {400, 0}, {250, 1}});
    std::uint64_t late = 0;
    auto out = sorted(in, SortWindow{1'000'000, 2}, &late);
    ASSERT_EQ(out.size(), in.size());
    // 100 goes when 300 arrives; 50 is older than 100: late, next out. 200 goes when 400 arrives; 250 is not
    // older than 200: sorted in before 300.
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{0, 3, 1, 5, 2, 4}));
    EXPECT_EQ(late, 1u);
}

TEST(Sorter, TimeSpanHandsOnItemsOlderThanTheSpan) {
    Sorter<Item> s(SortWindow{100, 1000});
    std::vector<Item> out;
    auto emit = [&](Item& it) { out.push_back(it); };
    auto push = [&](Item it) {
        return s.push(
            it.ts, [&](Item& slot) { slot = it; }, emit);
    };
    EXPECT_FALSE(push({1000, 0, 0}));
    EXPECT_FALSE(push({1050, 0, 1}));
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(push({1100, 0, 2}));  // 1000 is now 100 ns older than the newest: handed on
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{0}));
    EXPECT_TRUE(push({999, 1, 3}));  // older than what was handed on: late, handed on at once
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{0, 3}));
    EXPECT_EQ(s.order().last_emitted_ns(), 1000u);
    s.flush(emit);
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{0, 3, 1, 2}));
    EXPECT_EQ(s.order().late(), 1u);
}

TEST(Sorter, ItemWithoutATimeKeepsItsPlaceAfterWhatArrivedBefore) {
    Sorter<Item> s(SortWindow{1'000, 100});
    std::vector<Item> out;
    auto emit = [&](Item& it) { out.push_back(it); };
    auto push = [&](std::optional<std::uint64_t> ts, Item it) {
        s.push(
            ts, [&](Item& slot) { slot = it; }, emit);
    };
    push(500, {500, 0, 0});
    push(300, {300, 0, 1});
    push(std::nullopt, {0, 0, 2});  // takes 500: after both
    push(500, {500, 0, 3});
    push(400, {400, 0, 4});
    s.flush(emit);
    EXPECT_EQ(ids(out), (std::vector<std::uint64_t>{1, 4, 0, 2, 3}));
}

// Two million items, locally shuffled (each at most 200 places from where time order puts it) and with a
// step back far past the window every 100,000 items: the output is the stable sort except for the late ones,
// which are counted; at no point are more than max_events held, and the pool never grows past max_events + 1.
TEST(Sorter, MemoryIsBoundedByTheWindowOnALargeStream) {
    constexpr SortWindow w{1'000'000'000, 1024};
    Sorter<Item> s(w);
    std::mt19937_64 rng(42);
    std::uint64_t in = 0, out = 0, expected_late = 0, last_out_ts = 0;
    std::size_t max_held = 0;
    std::uint64_t out_of_order_out = 0;
    auto emit = [&](Item& it) {
        ++out;
        if (it.ts < last_out_ts) ++out_of_order_out;
        last_out_ts = std::max(last_out_ts, it.ts);
    };
    constexpr std::uint64_t kItems = 2'000'000;
    for (std::uint64_t i = 0; i < kItems; ++i) {
        std::uint64_t ts = 1'000'000 + i * 10 + rng() % 2000;  // up to 200 places early or late
        const bool step_back = i % 100'000 == 99'999;
        if (step_back) {
            ts = 1000;  // before everything handed on
            ++expected_late;
        }
        const Item item{ts, 0, i};
        const bool late = s.push(
            ts, [&](Item& slot) { slot = item; }, emit);
        EXPECT_EQ(late, step_back) << "item " << i;
        ++in;
        max_held = std::max(max_held, s.order().buffered());
    }
    s.flush(emit);
    EXPECT_EQ(in, kItems);
    EXPECT_EQ(out, in);
    EXPECT_EQ(s.order().emitted(), in);
    EXPECT_EQ(s.order().late(), expected_late);
    EXPECT_EQ(out_of_order_out, expected_late);  // only the late ones go out of time order
    EXPECT_LE(max_held, w.max_events);
    EXPECT_LE(s.order().max_buffered(), w.max_events);
    EXPECT_LE(s.order().slots(), w.max_events + 1);
    EXPECT_GT(max_held, w.max_events / 2);  // the window was used, not bypassed
}

// The held items live in a ring that grows as more are held. A window bounded by time lets the ring's front move
// on (sparse items leave by the span) before a dense burst, with items out of order, makes it grow: the growth,
// and the out-of-order inserts across the ring's end, keep the stable order by time.
TEST(Sorter, RingGrowingWhileWrappedKeepsTheOrder) {
    std::vector<Item> in;
    std::mt19937_64 rng(7);
    std::uint64_t ts = 1'000'000;
    for (int phase = 0; phase < 6; ++phase) {
        for (int i = 0; i < 37; ++i) {  // sparse: each item 2,000 ns after the last, the span 1,000 ns
            ts += 2000;
            in.push_back({ts, 0, in.size()});
        }
        const std::uint64_t burst = ts + 1;
        for (int i = 0; i < 300 << phase; ++i)  // dense: 300, 600, ... 9,600 items within 1,000 ns, shuffled
            in.push_back({burst + rng() % 999, 1, in.size()});
        ts = burst + 999;
    }
    std::uint64_t late = 99;
    auto out = sorted(in, SortWindow{1'000, 1'000'000}, &late);
    EXPECT_EQ(late, 0u);
    EXPECT_EQ(ids(out), ids(stable_by_time(in)));
}
