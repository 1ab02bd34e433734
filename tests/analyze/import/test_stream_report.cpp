// The streamed report (`nvtrace report --calls-jsonl`, stream_report.hpp) against the whole-file report on
// every function_graph text of tests/data/cases, once as it is and once repeated until the reader drains
// its events many times; and the direct call writer against nlohmann's dump.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "calls_jsonl.hpp"
#include "json_write.hpp"
#include "nvtrace/call_stream.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/stream_report.hpp"

using namespace nvtrace;
using nlohmann::json;

namespace {

// The one route (report_input) of a file, its calls to `lines` as JSON Lines when given.
Result<InputReport> stream_file(const std::string& path, std::ostream* lines) {
    ReportRequest req;
    req.temp_dir = std::filesystem::temp_directory_path().string();
    req.calls_jsonl = lines;
    return report_input(path, std::nullopt, std::move(req));
}

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

const std::string kTmp = std::filesystem::temp_directory_path().string();

// The whole report of report_input's result, as written out.
json report_of(ReportStream& st) {
    FILE* f = std::tmpfile();
    auto w = st.write(::fileno(f));
    EXPECT_TRUE(w) << w.error().message;
    std::string text;
    std::rewind(f);
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
        text.append(buf, n);
    std::fclose(f);
    return json::parse(text);
}

// Streams `path` and compares every section with build_report's.
void expect_same_report(const std::string& path, std::uint64_t min_calls = 0) {
    SCOPED_TRACE(path);
    auto in = import_file(path);
    ASSERT_TRUE(in) << in.error().message;
    ASSERT_EQ(in->format, TraceFormat::fgraph_text);
    Report whole = build_report(in->stream);
    whole.source.kind = "file", whole.source.path = path, whole.source.format = "fgraph-text";  // report_input's
    ASSERT_GE(whole.calls.size(), min_calls);

    std::ostringstream lines;
    auto st = stream_file(path, &lines);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_FALSE(st->stream->held());
    EXPECT_TRUE(st->stream->report().calls.empty());
    EXPECT_EQ(st->stream->calls(), whole.calls.size());

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

    ASSERT_TRUE(st->stream);
    json have = report_of(*st->stream);
    EXPECT_TRUE(have["calls"].empty());
    EXPECT_EQ(have["graph"], want["graph"]);
    EXPECT_EQ(have["completeness"], want["completeness"]);
    EXPECT_EQ(have["kernel_log"], want["kernel_log"]);
    EXPECT_EQ(have["markers"], want["markers"]);
    EXPECT_EQ(have["events"], want["events"]);
    EXPECT_EQ(have["ioctls"], want["ioctls"]);

    // Without calls_out (`report FILE --json`): the calls in report.json, by id; the whole report.
    auto in_report = stream_file(path, nullptr);
    ASSERT_TRUE(in_report) << in_report.error().message;
    ASSERT_TRUE(in_report->stream);
    EXPECT_EQ(in_report->stream->calls(), whole.calls.size());
    EXPECT_EQ(report_of(*in_report->stream), want);
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

// The `trace` file's "# entries-in-buffer/entries-written: A/B" header (kernel/trace/trace.c print_event_info)
// says B - A entries were overwritten. The streamed route handed the reader's diagnostics on but not this header:
// a function_graph text whose buffer had wrapped read as complete. On every case, with the header as the kernel
// prints it (after "# tracer:") and with fewer in the buffer than written, the report is the whole file's and says
// the entries were overwritten.
TEST(StreamReport, EntriesOverwrittenHeaderOfFunctionGraphTextMakesTheReportIncomplete) {
    auto cases = fgraph_cases();
    ASSERT_GE(cases.size(), 5u);
    for (const auto& c : cases) {
        std::string text = slurp(c);
        std::string header = "# entries-in-buffer/entries-written: 10/25   #P:4\n#\n";
        std::size_t at = text.rfind("# tracer:", 0) == 0 ? text.find('\n') + 1 : 0;
        std::string path = temp_file("entries.txt", text.substr(0, at) + header + text.substr(at));
        auto in = import_file(path);
        ASSERT_TRUE(in) << in.error().message;
        if (has_diag(build_report(in->stream), "unsorted_timestamps")) continue;  // sorted only when whole
        expect_same_report(path);
        auto st = stream_file(path, nullptr);
        ASSERT_TRUE(st) << st.error().message;
        json r = report_of(*st->stream);
        SCOPED_TRACE(c);
        EXPECT_EQ(r["completeness"]["entries_in_buffer"], 10);
        EXPECT_EQ(r["completeness"]["entries_written"], 25);
        EXPECT_GE(r["completeness"]["overruns"].get<std::uint64_t>(), 15u);
        EXPECT_FALSE(r["completeness"]["complete"].get<bool>());
        std::filesystem::remove(path);
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
    auto st = stream_file(path, &lines);
    std::filesystem::remove(path);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->stream->calls(), 2u);
    ASSERT_TRUE(st->stream);
    ASSERT_TRUE(has_diag(st->stream->report(), "unsorted_timestamps"));
    EXPECT_NE(lines.str().find("\"function\":\"b\""), std::string::npos);
}

// A format read whole (trace-cmd report text) goes through the same ReportStream: its calls reach the JSON Lines
// as they end, and they are build_report's calls.
TEST(StreamReport, OtherFormatsGoThroughTheSameRouteAndWriteTheirCalls) {
    const std::string path = kData + "/cases/trace-cmd-report-fgraph-v6.txt";
    std::ostringstream lines;
    auto st = stream_file(path, &lines);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_FALSE(st->stream->held());
    EXPECT_EQ(st->format, TraceFormat::trace_cmd_report);
    auto in = import_file(path);
    ASSERT_TRUE(in);
    json want = to_json(build_report(in->stream));
    ASSERT_GT(want["calls"].size(), 0u);
    std::vector<json> got;
    std::istringstream ls(lines.str());
    for (std::string line; std::getline(ls, line);)
        got.push_back(json::parse(line));
    std::sort(got.begin(), got.end(), [](const json& a, const json& b) { return a["id"] < b["id"]; });
    ASSERT_EQ(got.size(), want["calls"].size());
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], want["calls"][i]) << "call " << i + 1;
    json have = report_of(*st->stream);
    EXPECT_EQ(have["graph"], want["graph"]);
    EXPECT_EQ(have["ioctls"], want["ioctls"]);
}

TEST(StreamReport, MissingFileIsAnError) {
    std::ostringstream lines;
    auto st = stream_file("/nonexistent/trace.txt", &lines);
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
        cs.add(in->stream.events[i], in->stream.comms);
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

// The --calls-jsonl writer prints append_call_json's bytes, one call a line: escapes, invalid UTF-8, nulls,
// names larger than its buffer and enough calls to flush it many times.
TEST(CallsJsonl, SameBytesAsAppendCallJson) {
    std::vector<Call> calls;
    Call a;
    a.id = 1;
    a.function = "f\"q\\u\x01\x1f\t\n\r\b\f\x7f";
    a.comm = "k/0:1";
    a.module = "nvidia";
    a.entry_ns = 123;
    a.duration_ns = 0;
    a.retval = -22;
    a.phase = "p h";
    calls.push_back(a);
    Call b;
    b.id = 2;
    b.parent = 1;
    b.function = "caf\xc3\xa9 bad \xff\xc3";
    b.comm = "\xe2\x82";
    b.cpu = 3;
    b.pid = 4242;
    b.depth = 1;
    b.irq = true;
    b.entry_seen = false;
    b.exit_seen = false;
    b.retval = INT64_MIN;
    b.duration_ns = UINT64_MAX;
    b.phase = "ph\x01";
    calls.push_back(b);
    Call big;
    big.id = 3;
    big.function = std::string(2u << 20, 'x');  // larger than the buffer
    calls.push_back(big);
    big.function = std::string(300000, '"');   // escaped: twice as long
    big.module = std::string(200000, '\x01');  // escaped: six times as long, over the buffer
    calls.push_back(big);
    for (std::uint64_t i = 0; i < 20000; ++i) {
        Call c;
        c.id = 10 + i;
        c.parent = i;
        c.function = "function_" + std::to_string(i * 7919);
        c.comm = "cuda_app";
        c.entry_ns = 7238523140208000u + i;
        c.duration_ns = i * 3;
        if (i % 3 == 0) c.module = "nvidia_uvm";
        if (i % 5 == 0) c.retval = -static_cast<std::int64_t>(i);
        calls.push_back(c);
    }
    // Numbers at every digit count (the writer converts 8-digit groups itself) and both signs; strings
    // needing escapes past their first 8 bytes (it tests 8 bytes at a time).
    std::uint64_t p10 = 1;
    for (int k = 0; k <= 19; ++k, p10 *= 10)
        for (std::uint64_t v : {p10 - 1, p10, p10 + 1, p10 * 5 + 7}) {
            Call c;
            c.id = v;
            c.entry_ns = v;
            c.duration_ns = v / 3;
            c.retval = k % 2 ? -static_cast<std::int64_t>(v >> 1) : static_cast<std::int64_t>(v >> 1);
            c.cpu = k % 3 ? static_cast<int>(v % 100000) : -1;
            c.pid = static_cast<int>(v & 0x7fffffff);
            c.depth = static_cast<int>(v % 1000);
            c.parent = v * 7;
            c.function = std::string("abcdefgh") + std::string(static_cast<std::size_t>(k % 8), 'i') +
                         "\x01\"\\\x80\x7f"[k % 5] + "tail";
            c.comm = std::string(static_cast<std::size_t>(k), 'c');
            calls.push_back(c);
        }
    Call extremes;
    extremes.id = UINT64_MAX;
    extremes.cpu = INT32_MIN;
    extremes.pid = INT32_MAX;
    extremes.retval = INT64_MAX;
    calls.push_back(extremes);
    std::string want;
    for (const Call& c : calls) {
        import::append_call_json(want, c);
        want += '\n';
    }
    std::ostringstream got;
    {
        import::CallsJsonlWriter w(got);
        for (const Call& c : calls)
            w.write(c);
        EXPECT_EQ(w.count(), calls.size());
    }
    EXPECT_EQ(got.str().size(), want.size());
    EXPECT_TRUE(got.str() == want);
}

// Streaming keeps plain names as views into the text; names that need cleaning (invalid UTF-8, control
// bytes) go the old way. Both must give the whole-file report.
TEST(StreamReport, NamesNeedingCleaningSameAsWholeFile) {
    std::string text =
        "# tracer: function_graph\n"
        "  100.000001 |   0)               |  outer [nvidia]() {\n"
        "  100.000002 |   0)   1.000 us    |    caf\xc3\xa9_leaf [nv\xffidia]();\n"
        "  100.000003 |   0)               |    bad\xfe() {\n"
        "  100.000004 |   0)   0.500 us    |      ok_leaf();\n"
        "  100.000005 |   0)   2.000 us    |    } /* bad\xfe */\n"
        "  100.000006 |   0)   3.000 us    |    } /* \x01ghost */\n"
        "  100.000007 |   0)   9.000 us    |  } /* outer */\n";
    std::string path = temp_file("unclean.txt", text);
    expect_same_report(path, 4);
    std::ostringstream lines;
    auto st = stream_file(path, &lines);
    std::filesystem::remove(path);
    ASSERT_TRUE(st);
    EXPECT_NE(lines.str().find("\"function\":\"caf\xc3\xa9_leaf\",\"id\":2,\"irq\":false,\"kernel_depth\":1,\"module\":"
                               "\"nv\xef\xbf\xbdidia\""),
              std::string::npos)
        << lines.str();
}

// Whether a name needs cleaning is decided by whole words, short names and a long one's last bytes by
// overlapping loads: names (and module names) of every length from 1 to 20 with a control byte or an invalid
// UTF-8 byte at every position stream as the whole-file report has them.
TEST(StreamReport, ByteNeedingCleaningAtEveryPositionOfANameSameAsWholeFile) {
    std::string text = "# tracer: function_graph\n";
    int us = 1, calls = 0;
    for (std::size_t n = 1; n <= 20; ++n)
        for (std::size_t k = 0; k < n; ++k)
            for (char bad : {'\x01', '\x1f', '\xff'}) {
                std::string name(n, 'f');
                name[k] = bad;
                text += fmt::format("  100.{:06} |   0)   1.000 us    |  {}();\n", us++, name);
                text += fmt::format("  100.{:06} |   0)   1.000 us    |  ok{} [{}]();\n", us++, n, name);
                calls += 2;
            }
    std::string path = temp_file("unclean_positions.txt", text);
    expect_same_report(path, static_cast<std::uint64_t>(calls));
    std::filesystem::remove(path);
}

// Names given beside the event (the reader's views) instead of in it: the same calls and graph, and a sink
// that only reads each call (so its frame's strings are reused) sees every call whole.
TEST(CallStream, NamesGivenApartSameAsInTheEvent) {
    auto in = import_file(kData + "/cases/fgraph-irq-nested-module-suffix.txt");
    ASSERT_TRUE(in);
    CallGraph g = build_call_graph(in->stream);
    std::vector<json> got(g.calls.size());
    CallStream cs([&](Call&& c) {
        Report r;
        r.calls = {c};  // a copy: c itself stays in its frame
        got.at(c.id - 1) = to_json(r)["calls"][0];
    });
    for (std::size_t i = 0; i < in->stream.events.size(); ++i) {
        Event ev = in->stream.events[i];
        std::string function;
        std::optional<std::string> module;
        if (auto* e = std::get_if<FuncEntry>(&ev.body)) {
            function = std::exchange(e->function, "");
            module = std::exchange(e->module, std::nullopt);
        } else if (auto* x = std::get_if<FuncExit>(&ev.body)) {
            function = std::exchange(x->function, "");
            module = std::exchange(x->module, std::nullopt);
        }
        std::string_view module_view = module ? std::string_view(*module) : std::string_view();
        cs.add(ev, in->stream.comms, function, module ? &module_view : nullptr);
    }
    cs.finish();
    Report a;
    a.calls = g.calls;
    json want = to_json(a)["calls"];
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], want[i]) << i;
    Report b;
    a.graph = aggregate_graph(g.calls);
    b.graph = cs.graph();
    EXPECT_EQ(to_json(a)["graph"], to_json(b)["graph"]);
}

// Phases (nvtrace-phase markers) found by time for every streamed call: many phases, an end marker, calls
// before the first and between phases, and one marker that goes back in time (then searched one by one).
TEST(StreamReport, ManyPhasesSameAsWholeFile) {
    for (bool back : {false, true}) {
        std::string text = "# tracer: function_graph\n";
        std::uint64_t us = 100000000;
        auto line = [&](const std::string& body) {
            text += fmt::format("{}.{:06} |   0)   0.500 us    |  {}\n", us / 1000000, us % 1000000, body);
            us += 3;
        };
        line("before();");
        for (int p = 0; p < 400; ++p) {
            if (p == 200) line("/* nvtrace-phase-end */");
            if (p == 201) line("between();");
            if (back && p == 300) us -= 20;
            line(fmt::format("/* nvtrace-phase: p{} */", p));
            line(fmt::format("f{}();", p % 7));
            line("g();");
        }
        std::string path = temp_file(back ? "phases-back.txt" : "phases.txt", text);
        auto in = import_file(path);
        ASSERT_TRUE(in);
        if (!has_diag(build_report(in->stream), "unsorted_timestamps")) expect_same_report(path, 800);
        std::ostringstream lines;
        auto st = stream_file(path, &lines);
        ASSERT_TRUE(st);
        EXPECT_NE(lines.str().find("\"function\":\"f3\",\"id\":"), std::string::npos);
        EXPECT_NE(lines.str().find("\"phase\":\"p399\""), std::string::npos);
        std::filesystem::remove(path);
    }
}
