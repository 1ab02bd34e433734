// The streamed report (`nvtrace report --calls-jsonl`, stream_report.hpp) against the whole-file report on
// every function_graph text of tests/data/cases, once as it is and once repeated until the reader drains
// its events many times; and the direct call writer against nlohmann's dump.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "json_write.hpp"
#include "nvtrace/call_stream.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/stream_report.hpp"

using namespace nvtrace;
using nlohmann::json;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string temp_file(const std::string& name, const std::string& text) {
    auto p = std::filesystem::temp_directory_path() / ("nvtrace-stream-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
}

bool has_diag(const Report& r, const std::string& name) {
    for (const auto& d : r.completeness.diagnostics)
        if (d.name == name) return true;
    return false;
}

// Streams `path` and compares every section with build_report's.
void expect_same_report(const std::string& path, std::uint64_t min_calls = 0) {
    SCOPED_TRACE(path);
    auto in = import_file(path);
    ASSERT_TRUE(in) << in.error().message;
    ASSERT_EQ(in->format, TraceFormat::fgraph_text);
    Report whole = build_report(in->stream);
    ASSERT_GE(whole.calls.size(), min_calls);

    std::ostringstream lines;
    auto st = report_streaming(path, std::nullopt, lines);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_TRUE(st->streamed);
    EXPECT_TRUE(st->report.calls.empty());
    EXPECT_EQ(st->calls, whole.calls.size());

    // The lines are the calls, by id once sorted; every call arrives before its parent.
    std::vector<json> got;
    std::istringstream ls(lines.str());
    std::string line;
    std::vector<bool> seen(whole.calls.size() + 1, false);
    while (std::getline(ls, line)) {
        json j = json::parse(line);
        auto id = j["id"].get<std::uint64_t>();
        ASSERT_TRUE(id >= 1 && id <= whole.calls.size());
        ASSERT_FALSE(seen[id]) << "call " << id << " written twice";
        if (!j["parent"].is_null()) {
            EXPECT_FALSE(seen[j["parent"].get<std::uint64_t>()]) << "parent before child";
        }
        seen[id] = true;
        got.push_back(std::move(j));
    }
    std::sort(got.begin(), got.end(), [](const json& a, const json& b) { return a["id"] < b["id"]; });
    json want = to_json(whole);
    ASSERT_EQ(got.size(), want["calls"].size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want["calls"][i]) << "call " << i + 1;

    json have = to_json(st->report);
    EXPECT_EQ(have["graph"], want["graph"]);
    EXPECT_EQ(have["completeness"], want["completeness"]);
    EXPECT_EQ(have["kernel_log"], want["kernel_log"]);
    EXPECT_EQ(have["markers"], want["markers"]);
    EXPECT_EQ(have["ioctls"].size(), want["ioctls"].size());
}

std::vector<std::string> fgraph_cases() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(kData + "/cases")) {
        std::string text = slurp(e.path().string());
        auto f = detect_format(std::string_view(text).substr(0, 256 * 1024));
        if (f && *f == TraceFormat::fgraph_text) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(StreamReport, SameReportAsWholeFileOnEveryFgraphCase) {
    auto cases = fgraph_cases();
    ASSERT_GE(cases.size(), 5u);
    for (const auto& c : cases) {
        auto in = import_file(c);
        ASSERT_TRUE(in);
        if (has_diag(build_report(in->stream), "unsorted_timestamps")) continue;  // sorted only when whole
        expect_same_report(c);
    }
}

// Repeated until the reader drains (64 Ki events a chunk) several times: frames, paths and pids that
// banners give to earlier lines must survive the drains.
TEST(StreamReport, SameReportAcrossDrains) {
    for (const char* name : {"fgraph-task-switch-mid-schedule.txt", "fgraph-irq-nested-module-suffix.txt",
                             "fgraph-overhead-markers-cpu-interleave.txt"}) {
        std::string one = slurp(kData + "/cases/" + name);
        std::string many;
        while (many.size() < 6u * 1024 * 1024)
            many += one;
        std::string path = temp_file(name, many);
        auto in = import_file(path);
        ASSERT_TRUE(in);
        if (!has_diag(build_report(in->stream), "unsorted_timestamps")) expect_same_report(path, 70000);
        std::filesystem::remove(path);
    }
}

TEST(StreamReport, UnsortedTextIsCountedNotSorted) {
    std::string text =
        "# tracer: function_graph\n"
        "  100.000002 |   0)   1.000 us    |  b();\n"
        "  100.000001 |   0)   1.000 us    |  a();\n";
    std::string path = temp_file("unsorted.txt", text);
    std::ostringstream lines;
    auto st = report_streaming(path, std::nullopt, lines);
    std::filesystem::remove(path);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->calls, 2u);
    ASSERT_TRUE(has_diag(st->report, "unsorted_timestamps"));
    EXPECT_NE(lines.str().find("\"function\":\"b\""), std::string::npos);
}

TEST(StreamReport, OtherFormatsAreReadWholeAndStillWritten) {
    std::ostringstream lines;
    auto st = report_streaming(kData + "/cases/trace-cmd-report-fgraph-v6.txt", std::nullopt, lines);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_FALSE(st->streamed);
    EXPECT_GT(st->calls, 0u);
    std::string text = lines.str();
    EXPECT_EQ(static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n')), st->calls);
}

TEST(StreamReport, MissingFileIsAnError) {
    std::ostringstream lines;
    auto st = report_streaming("/nonexistent/trace.txt", std::nullopt, lines);
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("/nonexistent/trace.txt"), std::string::npos);
}

// The direct writer must print what nlohmann prints, escapes included.
TEST(CallJson, SameBytesAsNlohmannDump) {
    Report r;
    Call a;
    a.id = 1;
    a.function = "f\"q\\u\x01\x1f\t\n\r\b\f\x7f";
    a.comm = "k/0:1";
    a.module = "nvidia";
    a.entry_ns = 123;
    a.duration_ns = 0;
    a.retval = -22;
    a.phase = "p h";
    Call b;
    b.id = 2;
    b.parent = 1;
    b.function = "caf\xc3\xa9";
    b.cpu = 3;
    b.pid = 4242;
    b.depth = 1;
    b.irq = true;
    b.entry_seen = false;
    b.retval = INT64_MIN;
    b.duration_ns = UINT64_MAX;
    r.calls = {a, b};
    json want = to_json(r)["calls"];
    for (std::size_t i = 0; i < r.calls.size(); ++i) {
        std::string got;
        import::append_call_json(got, r.calls[i]);
        EXPECT_EQ(got, want[i].dump());
    }
    std::ostringstream streamed;
    write_json(r, streamed);
    EXPECT_EQ(json::parse(streamed.str()), to_json(r));
}

// CallStream hands every call over exactly once, with build_call_graph's ids.
TEST(CallStream, SameCallsAsBuildCallGraph) {
    auto in = import_file(kData + "/cases/fgraph-irq-nested-module-suffix.txt");
    ASSERT_TRUE(in);
    CallGraph g = build_call_graph(in->stream);
    std::vector<Call> got(g.calls.size());
    CallStream cs([&](Call&& c) { got.at(c.id - 1) = std::move(c); });
    for (std::size_t i = 0; i < in->stream.events.size(); ++i)
        cs.add(in->stream.events[i], i, in->stream.comms);
    cs.finish();
    EXPECT_EQ(cs.calls(), g.calls.size());
    EXPECT_EQ(cs.summary().orphan_returns, g.orphan_returns);
    EXPECT_EQ(cs.summary().unclosed_calls, g.unclosed_calls);
    Report a, b;
    a.calls = g.calls;
    b.calls = got;
    EXPECT_EQ(to_json(a)["calls"], to_json(b)["calls"]);
    a.graph = aggregate_graph(g.calls);
    b.graph = cs.graph();
    EXPECT_EQ(to_json(a)["graph"], to_json(b)["graph"]);
}
