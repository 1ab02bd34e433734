// Exporters (include/nvtrace/export.hpp) on every fixture and golden report: the JSON equals to_json, the Chrome
// trace nests (every B has its E, timestamps monotonic per track), folded stacks re-sum to the report's totals.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "nvtrace/export.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> report_files() {
    std::vector<std::string> out;
    for (const char* dir : {"/reports", "/golden"})
        for (const auto& e : fs::directory_iterator(std::string(NVTRACE_TEST_DATA) + dir))
            if (e.path().extension() == ".json") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

Report load(const std::string& path) {
    auto r = read_report_file(path);
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
}

Report fixture(const std::string& name) {
    return load(std::string(NVTRACE_TEST_DATA) + "/reports/" + name + ".json");
}

// Timestamps are microseconds with three decimals (ns precision); doubles hold them exactly up to 2^53 ns.
std::uint64_t ts_ns(const nlohmann::json& ts) {
    EXPECT_TRUE(ts.is_number()) << ts.dump();
    return static_cast<std::uint64_t>(std::llround(ts.get<double>() * 1000.0));
}

struct ChromeCheck {
    std::size_t slices = 0, instants = 0, complete_slices = 0;
};

// Every B has its E on the same track, in stack order; timestamps never go back on a track; the slices of a track
// (B/E pairs and X slices) nest: each lies inside the one it starts in, or starts after it ends.
ChromeCheck check_chrome(const std::string& text) {
    ChromeCheck out;
    nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_EQ(j["displayTimeUnit"], "ns");
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::string>> stacks;
    std::map<std::pair<std::int64_t, std::int64_t>, std::uint64_t> last;
    std::set<std::pair<std::int64_t, std::int64_t>> named;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint64_t>> begins;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
    for (const auto& e : j["traceEvents"]) {
        auto key = std::pair{e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()};
        std::string ph = e["ph"];
        if (ph == "M") {
            if (e["name"] == "thread_name") named.insert(key);
            continue;
        }
        EXPECT_TRUE(named.count(key)) << "track without a thread_name: " << e.dump();
        std::uint64_t ts = ts_ns(e["ts"]);
        if (last.count(key)) {
            EXPECT_GE(ts, last[key]) << e.dump();
        }
        last[key] = ts;
        if (ph == "B") {
            stacks[key].push_back(e["name"]);
            begins[key].push_back(ts);
            ++out.slices;
        } else if (ph == "E") {
            auto& st = stacks[key];
            EXPECT_FALSE(st.empty()) << "E without B: " << e.dump();
            if (st.empty()) continue;
            EXPECT_EQ(st.back(), e["name"]) << e.dump();
            st.pop_back();
            spans[key].emplace_back(begins[key].back(), ts);
            begins[key].pop_back();
        } else if (ph == "X") {
            spans[key].emplace_back(ts, ts + ts_ns(e["dur"]));
            ++out.complete_slices;
        } else {
            EXPECT_EQ(ph, "i") << e.dump();
            EXPECT_EQ(e["s"], "t");
            ++out.instants;
        }
    }
    for (const auto& [key, st] : stacks)
        EXPECT_TRUE(st.empty()) << st.size() << " B without E on track " << key.first << "/" << key.second;
    for (auto& [key, sp] : spans) {
        std::sort(sp.begin(), sp.end(),
                  [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
        std::vector<std::uint64_t> open_ends;
        for (auto [start, end] : sp) {
            while (!open_ends.empty() && open_ends.back() <= start)
                open_ends.pop_back();
            EXPECT_TRUE(open_ends.empty() || end <= open_ends.back())
                << "slice " << start << ".." << end << " overlaps its parent's end on track " << key.first;
            open_ends.push_back(end);
        }
    }
    return out;
}

// Folded lines -> stack -> value.
std::map<std::string, std::uint64_t> parse_folded(const std::string& text) {
    std::map<std::string, std::uint64_t> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto sp = line.rfind(' ');
        EXPECT_NE(sp, std::string::npos) << line;
        EXPECT_EQ(line.find(' '), sp) << "a space inside a frame: " << line;
        out[line.substr(0, sp)] += std::stoull(line.substr(sp + 1));
    }
    return out;
}

// A graph path as a folded stack: frames joined by ';', blanks inside a frame ("f [mod]") made '_'.
std::string folded_path(std::string path) {
    for (auto at = path.find(" > "); at != std::string::npos; at = path.find(" > "))
        path.replace(at, 3, ";");
    std::replace(path.begin(), path.end(), ' ', '_');
    return path;
}

}  // namespace

TEST(ExportJson, StreamedEqualsToJson) {
    for (const auto& f : report_files()) {
        SCOPED_TRACE(f);
        Report r = load(f);
        std::ostringstream out;
        ASSERT_TRUE(export_report(r, ExportFormat::json, out));
        EXPECT_EQ(nlohmann::json::parse(out.str()), to_json(r));
    }
}

TEST(ExportJson, StreamsManyCalls) {
    // More calls than one slice of the writer: the seams between slices must not show.
    Report r = fixture("baseline");
    Report big = r;
    for (int k = 0; k < 60; ++k)
        for (const Call& c : r.calls) {
            Call x = c;
            x.id = big.calls.size() + 1;
            if (c.parent) x.parent = *c.parent + (x.id - c.id);
            big.calls.push_back(x);
        }
    std::ostringstream out;
    ASSERT_TRUE(export_report(big, ExportFormat::json, out));
    auto back = report_from_json(nlohmann::json::parse(out.str()));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->calls.size(), big.calls.size());
    EXPECT_EQ(to_json(*back), to_json(big));
}

TEST(ExportChrome, NestedAndMonotonicOnEveryReport) {
    for (const auto& f : report_files()) {
        SCOPED_TRACE(f);
        Report r = load(f);
        std::ostringstream out;
        ChromeTraceStats stats = write_chrome_trace(r, out);
        ChromeCheck c = check_chrome(out.str());
        EXPECT_EQ(c.slices, r.calls.size());
        EXPECT_EQ(stats.slices, r.calls.size());
        EXPECT_EQ(c.instants, stats.instants);
        EXPECT_EQ(c.complete_slices, stats.ioctl_slices);
        EXPECT_EQ(stats.instants + stats.ioctl_slices + stats.skipped_instants,
                  r.kernel_log.size() + r.ioctls.size() + r.markers.size());
    }
}

TEST(ExportChrome, FixtureTimesAreKeptExactly) {
    Report r = fixture("retval_change");
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    EXPECT_EQ(stats.adjusted_slices, 0u);
    EXPECT_EQ(stats.synthetic_slices, 0u);
    EXPECT_EQ(stats.tracks, 1u);  // one task
    nlohmann::json j = nlohmann::json::parse(out.str());
    const Call& first = r.calls[0];
    bool seen_b = false, seen_log = false, seen_ioctl = false;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "B" && e["args"]["id"] == first.id) {
            EXPECT_EQ(ts_ns(e["ts"]), *first.entry_ns);
            EXPECT_EQ(e["pid"], first.pid);
            EXPECT_EQ(e["cat"], "nvidia");
            seen_b = true;
        }
        if (e["ph"] == "i" && e["cat"] == "kernel_log") {
            EXPECT_EQ(e["args"]["text"], r.kernel_log[0].text);
            seen_log = true;
        }
        if (e["ph"] == "i" && e["cat"] == "ioctl" && e["name"] == "ioctl NV_ESC_RM_ALLOC") {
            EXPECT_EQ(ts_ns(e["ts"]), r.ioctls[0].enter_ns);
            EXPECT_EQ(e["args"]["cmd"], "0xc030462b");
            seen_ioctl = true;
        }
    }
    EXPECT_TRUE(seen_b && seen_log && seen_ioctl);
}

TEST(ExportChrome, IoctlsWithoutCallsAreSlicesOfTheirThread) {
    // A run where function tracing is refused: ioctls only. Each with a known exit is an X slice of its thread,
    // lasting enter..exit; one whose exit was not seen stays an instant; one that overlaps its thread's previous
    // slice (two records claiming the same time) stays an instant and is counted as adjusted.
    Report r;
    auto ioctl = [&](int pid, std::uint64_t enter, std::optional<std::uint64_t> exit, const char* name) {
        IoctlRecord io;
        io.pid = pid;
        io.comm = "app";
        io.fd = 3;
        io.cmd = 0x541b;
        io.name = name;
        io.enter_ns = enter;
        io.exit_ns = exit;
        r.ioctls.push_back(io);
    };
    ioctl(100, 1000, 3500, "FIONREAD");
    ioctl(101, 1200, 1700, "TCGETS");
    ioctl(100, 4000, std::nullopt, "FIONREAD");
    ioctl(100, 5000, 9000, "FIONREAD");
    ioctl(100, 8000, 8500, "FIONREAD");
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    ChromeCheck c = check_chrome(out.str());
    EXPECT_EQ(stats.ioctl_slices, 3u);
    EXPECT_EQ(c.complete_slices, 3u);
    EXPECT_EQ(stats.instants, 2u);
    EXPECT_EQ(stats.adjusted_slices, 1u);
    EXPECT_EQ(stats.tracks, 2u);
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> xs;
    nlohmann::json j = nlohmann::json::parse(out.str());
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X") {
            EXPECT_EQ(e["cat"], "ioctl");
            EXPECT_EQ(e["pid"], e["tid"]);
            xs.emplace_back(e["tid"].get<std::int64_t>(), ts_ns(e["ts"]), ts_ns(e["dur"]));
        }
    std::sort(xs.begin(), xs.end());
    using X = std::tuple<std::int64_t, std::uint64_t, std::uint64_t>;
    EXPECT_EQ(xs, (std::vector<X>{{100, 1000, 2500}, {100, 5000, 4000}, {101, 1200, 500}}));
}

TEST(ExportChrome, UntimedTraceIsLaidOutFromDurations) {
    // A function_graph text without timestamps: every call is synthetic, children inside parents.
    Report r = load(std::string(NVTRACE_TEST_DATA) + "/golden/fgraph-irq-nested-module-suffix.json");
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    EXPECT_EQ(stats.synthetic_slices, r.calls.size());
    check_chrome(out.str());
}

TEST(ExportChrome, OverlapsAreRepairedNotEmitted) {
    Report r = fixture("baseline");
    // The second root claims to start inside the first: it is shifted, and counted.
    for (auto& c : r.calls)
        if (c.id != 1 && !c.parent) {
            c.entry_ns = *r.calls[0].entry_ns + 10;
            break;
        }
    // A child longer than its parent: the parent is stretched.
    r.calls[1].duration_ns = *r.calls[0].duration_ns * 2;
    // An unclosed call: it ends with its last child.
    r.calls[2].duration_ns.reset();
    r.calls[2].exit_seen = false;
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    EXPECT_GE(stats.adjusted_slices, 2u);
    check_chrome(out.str());
}

TEST(ExportFolded, ResumsToTheReportTotals) {
    for (const auto& name : {"baseline", "added_path", "count_change", "time_change", "noise", "driver_upgrade"}) {
        SCOPED_TRACE(name);
        Report r = fixture(name);
        std::ostringstream out;
        write_folded_stacks(r, out);
        auto lines = parse_folded(out.str());
        for (const GraphNode& g : r.graph) {
            std::string p = folded_path(g.path);
            std::uint64_t exact = lines.count(p) ? lines[p] : 0;
            EXPECT_EQ(exact, g.self_ns) << g.path;
            std::uint64_t under = 0;
            for (const auto& [stack, v] : lines)
                if (stack == p || stack.rfind(p + ";", 0) == 0) under += v;
            EXPECT_EQ(under, g.total_ns) << g.path;
        }
    }
}

TEST(ExportFolded, SelfTimesSumOnGoldenReports) {
    for (const auto& f : report_files()) {
        SCOPED_TRACE(f);
        Report r = load(f);
        std::ostringstream out;
        write_folded_stacks(r, out);
        std::uint64_t total = 0, self = 0;
        for (const auto& [stack, v] : parse_folded(out.str()))
            total += v;
        for (const GraphNode& g : r.graph)
            self += g.self_ns;
        EXPECT_EQ(total, self);
    }
}

TEST(ExportFolded, RebuildsAMissingGraph) {
    Report r = fixture("baseline");
    std::ostringstream with, without;
    write_folded_stacks(r, with);
    r.graph.clear();
    write_folded_stacks(r, without);
    EXPECT_EQ(with.str(), without.str());
}

TEST(ExportCsv, OneRowPerCallWithQuoting) {
    Report r = fixture("baseline");
    r.calls[0].comm = "a,b \"c\"";
    std::ostringstream out;
    write_calls_csv(r, out);
    std::string s = out.str();
    EXPECT_EQ(static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')), r.calls.size() + 1);
    EXPECT_EQ(s.rfind("id,parent,cpu,pid,comm,depth,function,module,entry_ns,duration_ns,retval,irq,", 0), 0u);
    EXPECT_NE(s.find("\"a,b \"\"c\"\"\""), std::string::npos);
    // Null parent and module are empty cells.
    EXPECT_NE(s.find("\n1,,2,4242,"), std::string::npos) << s.substr(0, 300);
}

TEST(ExportFormats, Names) {
    EXPECT_EQ(parse_export_format("perfetto"), ExportFormat::chrome);
    EXPECT_EQ(parse_export_format("flamegraph"), ExportFormat::folded);
    EXPECT_EQ(parse_export_format("csv"), ExportFormat::csv);
    EXPECT_EQ(parse_export_format("json"), ExportFormat::json);
    EXPECT_FALSE(parse_export_format("xml"));
    for (auto f : {ExportFormat::json, ExportFormat::chrome, ExportFormat::folded, ExportFormat::csv})
        EXPECT_EQ(parse_export_format(to_string(f)), f);
}
