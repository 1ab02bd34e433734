// Exporters (include/nvtrace/export.hpp) on every fixture and golden report: the JSON equals to_json, the Chrome
// trace nests (every B has its E, timestamps monotonic per track), folded stacks re-sum to the report's totals.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/import.hpp"
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
    std::size_t open_api = 0;      // B events of API calls whose return was not seen: no E, by design
    std::size_t api_instants = 0;  // API calls whose caller's return closed them (their own return lost)
    std::size_t api_slices = 0;    // X slices of API calls
};

// Every B has its E on the same track, in stack order (except an API call's B whose args say its return was not
// seen: it stays open to the end of the track); timestamps never go back on a track; the slices of a track (B/E
// pairs and X slices) nest: each lies inside the one it starts in, or starts after it ends.
ChromeCheck check_chrome(const std::string& text) {
    ChromeCheck out;
    nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_EQ(j["displayTimeUnit"], "ns");
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::string>> stacks;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<bool>> may_stay_open;
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
            const bool open = e["cat"] == "api" && e["args"].value("return_seen", true) == false;
            stacks[key].push_back(e["name"]);
            may_stay_open[key].push_back(open);
            begins[key].push_back(ts);
            if (open)
                ++out.open_api;
            else
                ++out.slices;
        } else if (ph == "E") {
            auto& st = stacks[key];
            EXPECT_FALSE(st.empty()) << "E without B: " << e.dump();
            if (st.empty()) continue;
            EXPECT_EQ(st.back(), e["name"]) << e.dump();
            EXPECT_FALSE(may_stay_open[key].back()) << "an E for an API call whose return was not seen";
            st.pop_back();
            may_stay_open[key].pop_back();
            spans[key].emplace_back(begins[key].back(), ts);
            begins[key].pop_back();
        } else if (ph == "X") {
            spans[key].emplace_back(ts, ts + ts_ns(e["dur"]));
            ++(e["cat"] == "api" ? out.api_slices : out.complete_slices);
        } else {
            EXPECT_EQ(ph, "i") << e.dump();
            EXPECT_EQ(e["s"], "t");
            ++(e["cat"] == "api" ? out.api_instants : out.instants);
        }
    }
    for (auto& [key, st] : stacks) {
        // What is left open must be unreturned API calls, each open to the end of the track.
        auto& open = may_stay_open[key];
        for (std::size_t n = 0; n < st.size(); ++n) {
            EXPECT_TRUE(open[n]) << "B without E on track " << key.first << "/" << key.second << ": " << st[n];
            spans[key].emplace_back(begins[key][n], std::numeric_limits<std::uint64_t>::max());
        }
    }
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
        EXPECT_EQ(c.api_slices, stats.api_slices);
        EXPECT_EQ(c.api_instants + c.open_api, stats.api_unreturned);
        EXPECT_EQ(stats.api_slices + stats.api_unreturned, r.api_calls.size());
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

// An NVRM line's text starts with "NVRM: ": its instant was named "NVRM: NVRM: Xid ..." (fresh user). The source
// leads the name once; a line whose text does not start with it still gets it.
TEST(ExportChrome, KernelLogInstantNamesTheSourceOnce) {
    Report r;
    KernelLogMessage xid;
    xid.ts_ns = 1000;
    xid.source = "NVRM";
    xid.kind = "xid";
    xid.text = "NVRM: Xid (PCI:0000:01:00): 79, pid=1";
    KernelLogMessage usb;
    usb.ts_ns = 2000;
    usb.source = "kernel";
    usb.kind = "other";
    usb.text = "usb 1-1: new device";
    r.kernel_log = {xid, usb};
    std::ostringstream out;
    write_chrome_trace(r, out);
    const nlohmann::json j = nlohmann::json::parse(out.str());
    std::vector<std::string> names;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "i" && e["cat"] == "kernel_log") names.push_back(e["name"]);
    EXPECT_EQ(names,
              (std::vector<std::string>{"NVRM: Xid (PCI:0000:01:00): 79, pid=1", "kernel: usb 1-1: new device"}));
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

// An ioctl whose exit's time is before its entry's (strace -t across midnight) was an instant without a word: it is
// an instant that says why it has no duration.
TEST(ExportChrome, IoctlWhoseExitIsBeforeItsEntryIsAnInstantThatSaysWhy) {
    Report r;
    IoctlRecord io;
    io.pid = 100;
    io.comm = "app";
    io.fd = 3;
    io.cmd = 0x541b;
    io.name = "FIONREAD";
    io.enter_ns = 86'399'000'000'000;
    io.exit_ns = 1'000'000;
    r.ioctls.push_back(io);
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    EXPECT_EQ(stats.ioctl_slices, 0u);
    EXPECT_EQ(stats.instants, 1u);
    nlohmann::json j = nlohmann::json::parse(out.str());
    bool seen = false;
    for (const auto& e : j["traceEvents"])
        if (e.value("cat", "") == "ioctl") {
            seen = true;
            EXPECT_EQ(e["ph"], "i");
            EXPECT_EQ(e["args"].value("duration_unknown", ""),
                      "the exit's time (1000000 ns) is before the entry's (86399000000000 ns)")
                << e.dump();
        }
    EXPECT_TRUE(seen);
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

// The API-call inputs (tests/data/api/cuda_uprobes.trace, its README.md): cuInit, cudaMalloc around
// cuMemAlloc_v2 with two ioctls inside the inner call, a second thread whose cuCtxSynchronize never returns,
// cudaHostRegister = cudaErrorInvalidValue, cuModuleLoad entered and not returned.
Report api_report() {
    auto imported = import_file(std::string(NVTRACE_TEST_DATA) + "/api/cuda_uprobes.trace");
    if (!imported) throw std::runtime_error(imported.error().message);
    return build_report(imported->stream);
}

const nlohmann::json* event_named(const nlohmann::json& j, const std::string& ph, const std::string& name) {
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == ph && e["name"] == name) return &e;
    return nullptr;
}

// Where in traceEvents an event is (the order a viewer reads them in).
std::size_t position(const nlohmann::json& j, const nlohmann::json* e) {
    for (std::size_t i = 0; i < j["traceEvents"].size(); ++i)
        if (&j["traceEvents"][i] == e) return i;
    return j["traceEvents"].size();
}

TEST(ExportChrome, ApiCallsAreSlicesAboveTheirIoctls) {
    Report r = api_report();
    ASSERT_EQ(r.api_calls.size(), 6u);
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    ChromeCheck c = check_chrome(out.str());
    EXPECT_EQ(stats.api_slices, 4u);  // cuInit, cudaMalloc, cuMemAlloc_v2, cudaHostRegister
    EXPECT_EQ(stats.api_unreturned, 2u);
    EXPECT_EQ(c.api_slices, 4u);
    EXPECT_EQ(c.open_api, 2u);  // cuCtxSynchronize, cuModuleLoad: the trace ended inside them
    EXPECT_EQ(c.api_instants, 0u);
    EXPECT_EQ(stats.adjusted_slices, 0u);
    nlohmann::json j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["otherData"]["nvtrace"]["api_slices"], 4);
    EXPECT_EQ(j["otherData"]["nvtrace"]["api_unreturned"], 2);

    const nlohmann::json* rt = event_named(j, "X", "cudaMalloc");
    const nlohmann::json* drv = event_named(j, "X", "cuMemAlloc_v2");
    ASSERT_TRUE(rt && drv);
    EXPECT_EQ((*drv)["cat"], "api");
    EXPECT_EQ((*drv)["pid"], 4242);
    EXPECT_EQ((*drv)["tid"], 4242);
    EXPECT_EQ(ts_ns((*drv)["ts"]), 100000030000u);
    EXPECT_EQ(ts_ns((*drv)["dur"]), 70000u);  // 100.000030 .. 100.000100
    EXPECT_EQ((*drv)["args"]["library"], "libcuda.so.1");
    EXPECT_EQ((*drv)["args"]["api"], "cuda_driver");
    EXPECT_EQ((*drv)["args"]["arguments"]["bytesize"], "16 MiB");  // decoded
    EXPECT_EQ((*drv)["args"]["result"], 0);
    EXPECT_EQ((*drv)["args"]["result_name"], "CUDA_SUCCESS");
    EXPECT_EQ((*drv)["args"]["ioctls"], 2);
    EXPECT_EQ((*drv)["args"]["duration_ns"], 70000);
    EXPECT_EQ((*drv)["args"]["parent"], (*rt)["args"]["id"]);
    EXPECT_EQ((*rt)["args"]["result_name"], "cudaSuccess");
    EXPECT_EQ((*rt)["args"]["library"], r.api_calls[1].library.value_or("?"));
    // Caller before callee, callee before the ioctls made inside it, which lie within its span.
    EXPECT_LT(position(j, rt), position(j, drv));
    const std::uint64_t drv_start = ts_ns((*drv)["ts"]), drv_end = drv_start + ts_ns((*drv)["dur"]);
    std::size_t inside = 0;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X" && e["cat"] == "ioctl" && e["pid"] == 4242) {
            const std::uint64_t t = ts_ns(e["ts"]);
            if (t >= drv_start && t < drv_end) {
                ++inside;
                EXPECT_LE(t + ts_ns(e["dur"]), drv_end);
                EXPECT_GT(position(j, &e), position(j, drv));
            }
        }
    EXPECT_EQ(inside, 2u);

    const nlohmann::json* reg = event_named(j, "X", "cudaHostRegister");
    ASSERT_TRUE(reg);
    EXPECT_EQ((*reg)["args"]["result"], 1);
    EXPECT_EQ((*reg)["args"]["result_name"], "cudaErrorInvalidValue");
    EXPECT_EQ((*reg)["args"]["arguments"]["size"], "4 KiB");

    // No return: a B with no E (no made-up duration), saying why.
    const nlohmann::json* sync = event_named(j, "B", "cuCtxSynchronize");
    ASSERT_TRUE(sync);
    EXPECT_EQ((*sync)["pid"], 4243);
    EXPECT_FALSE(sync->contains("dur"));
    EXPECT_EQ((*sync)["args"]["return_seen"], false);
    EXPECT_NE((*sync)["args"]["exit_unknown"].get<std::string>().find("trace ended"), std::string::npos);
    EXPECT_EQ((*sync)["args"]["result_name"], "unknown");
    EXPECT_FALSE((*sync)["args"].contains("duration_ns"));
    EXPECT_FALSE(event_named(j, "E", "cuCtxSynchronize"));
    // Its ioctl (which failed, exit seen) is a slice after it on its track: inside it for the viewer.
    bool after = false;
    for (const auto& e : j["traceEvents"])
        if (e["cat"] == "ioctl" && e["pid"] == 4243) after = position(j, &e) > position(j, sync);
    EXPECT_TRUE(after);
    const nlohmann::json* load = event_named(j, "B", "cuModuleLoad");
    ASSERT_TRUE(load);
    EXPECT_EQ((*load)["args"]["arguments"]["fname"], "/tmp/k.cubin");
}

TEST(ExportChrome, ApiCallClosedByItsCallersReturnIsAnInstant) {
    // cudaMemcpy returned, the cuMemcpyHtoD_v2 it called did not (its return was lost): no duration is made
    // up for the inner call, and nothing stays open. A kernel call and an API call that start at the same ns:
    // the API call comes first (the call is inside it). A kernel call laid out past its API call's exit (the
    // root shifted after an overlapping earlier root) stretches the API slice, counted.
    Report r;
    auto api = [&](std::uint64_t id, std::optional<std::uint64_t> parent, const char* f, std::uint64_t entry,
                   std::optional<std::uint64_t> exit) {
        ApiCall a;
        a.id = id;
        a.parent = parent;
        a.depth = parent ? 1 : 0;
        a.pid = 50;
        a.comm = "app";
        a.function = f;
        a.api = "cuda_driver";
        a.entry_ns = entry;
        a.exit_ns = exit;
        if (!exit) {
            a.exit_unknown = "its return was not seen before the return of cudaMemcpy (id 1) that called it";
            a.result_unknown = "no return seen";
        }
        r.api_calls.push_back(a);
        return &r.api_calls.back();
    };
    api(1, std::nullopt, "cudaMemcpy", 1000, 9000)->api = "cuda_runtime";
    api(2, 1, "cuMemcpyHtoD_v2", 2000, std::nullopt);
    api(3, std::nullopt, "cuCtxSynchronize", 10000, 12000);
    Call k;
    k.id = 1;
    k.pid = 50;
    k.comm = "app";
    k.function = "nvidia_unlocked_ioctl";
    k.entry_ns = 2000;  // the same ns as cuMemcpyHtoD_v2's entry
    k.duration_ns = 500;
    r.calls.push_back(k);
    r.api_calls[1].calls = {1};
    Call late = k;  // claims to start inside the previous root: shifted, ends after cuCtxSynchronize's exit
    late.id = 2;
    late.entry_ns = 11900;
    late.duration_ns = 1000;
    Call before = k;
    before.id = 3;
    before.entry_ns = 11000;
    before.duration_ns = 1500;
    r.calls.push_back(before);
    r.calls.push_back(late);
    r.api_calls[2].calls = {2, 3};

    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    ChromeCheck c = check_chrome(out.str());
    EXPECT_EQ(c.open_api, 0u);
    EXPECT_EQ(c.api_instants, 1u);
    EXPECT_EQ(c.api_slices, 2u);
    EXPECT_EQ(stats.api_unreturned, 1u);
    nlohmann::json j = nlohmann::json::parse(out.str());
    const nlohmann::json* inner = event_named(j, "i", "cuMemcpyHtoD_v2");
    ASSERT_TRUE(inner);
    EXPECT_EQ((*inner)["cat"], "api");
    EXPECT_EQ((*inner)["args"]["return_seen"], false);
    EXPECT_NE((*inner)["args"]["exit_unknown"].get<std::string>().find("cudaMemcpy"), std::string::npos);
    EXPECT_EQ((*inner)["args"]["library"], "unknown");
    EXPECT_EQ(ts_ns((*inner)["ts"]), 2000u);
    const nlohmann::json* call = nullptr;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "B" && e["args"]["id"] == 1) call = &e;
    ASSERT_TRUE(call);
    EXPECT_LT(position(j, inner), position(j, call));
    EXPECT_LT(position(j, event_named(j, "X", "cudaMemcpy")), position(j, inner));

    const nlohmann::json* sync = event_named(j, "X", "cuCtxSynchronize");
    ASSERT_TRUE(sync);
    EXPECT_EQ(ts_ns((*sync)["ts"]) + ts_ns((*sync)["dur"]), 13500u);  // the shifted call ends at 12500 + 1000
    EXPECT_EQ((*sync)["args"]["duration_ns"], 2000);                  // as recorded
    EXPECT_EQ((*sync)["args"]["stretched"], true);
    EXPECT_GE(stats.adjusted_slices, 2u);  // the shifted call and the stretched API slice
}

TEST(ExportChrome, GoldenWithoutApiCallsIsUnchanged) {
    // Reports without API calls export byte for byte as before API calls were drawn (the goldens were written
    // by that exporter; NVTRACE_UPDATE_GOLDEN=1 rewrites them: review the diff).
    const std::string dir = std::string(NVTRACE_TEST_DATA) + "/golden/chrome/";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/reports/baseline.json", "baseline"},
        {"/golden/fgraph-overhead-markers-cpu-interleave.json", "fgraph-overhead-markers-cpu-interleave"},
        {"/golden/strace-gvisor-nvproxy-ex-pairs.json", "strace-gvisor-nvproxy-ex-pairs"},
        {"/golden/fgraph-irq-nested-module-suffix.json", "fgraph-irq-nested-module-suffix"}};
    for (const auto& [input, name] : cases) {
        SCOPED_TRACE(name);
        Report r = load(std::string(NVTRACE_TEST_DATA) + input);
        ASSERT_TRUE(r.api_calls.empty());
        std::ostringstream out;
        write_chrome_trace(r, out);
        const std::string path = dir + name + ".chrome.json";
        if (std::getenv("NVTRACE_UPDATE_GOLDEN")) {
            std::ofstream(path, std::ios::binary) << out.str();
            continue;
        }
        std::ifstream in(path, std::ios::binary);
        ASSERT_TRUE(in) << path << " missing: run NVTRACE_UPDATE_GOLDEN=1 ctest -R golden";
        std::stringstream golden;
        golden << in.rdbuf();
        EXPECT_EQ(out.str(), golden.str()) << "regenerate with NVTRACE_UPDATE_GOLDEN=1 and review the diff";
    }
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

// A call shorter than its children (function_graph's overhead on them) adds 0 self time to the stacks: the export
// said nothing (fresh user); `nvtrace export --format folded` now notes how many, from this function.
TEST(ExportFolded, CallsShorterThanTheirChildrenAreNoted) {
    Report r;
    auto call = [&](std::uint64_t id, std::optional<std::uint64_t> parent, const char* fn,
                    std::optional<std::uint64_t> dur) {
        Call c;
        c.id = id;
        c.parent = parent;
        c.function = fn;
        c.entry_ns = 1000 * id;
        c.duration_ns = dur;
        r.calls.push_back(c);
    };
    call(1, std::nullopt, "outer", 100);
    call(2, 1, "a", 80);
    call(3, 1, "b", 40);  // 120 ns of children in a 100 ns call
    call(4, std::nullopt, "fine", 100);
    call(5, 4, "c", 60);
    call(6, 4, "open", std::nullopt);  // no duration: not counted in the children's time
    EXPECT_EQ(folded_self_clamped_note(r),
              "1 call shorter than its children (first: call 1): its self time is taken "
              "as 0 in the stacks");
    r.calls[2].duration_ns = 20;
    EXPECT_EQ(folded_self_clamped_note(r), std::nullopt);
    EXPECT_EQ(folded_self_clamped_note(fixture("baseline")), std::nullopt);
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

// A saved report whose calls nest 100,000 deep (each the parent of the next; another producer's, or made to
// crash a reader): the Chrome trace's layout walked the tree recursively and overflowed the stack (SIGSEGV). Each
// call i spans [i, 2N + 1 - i], so every slice nests exactly in its parent and none is adjusted.
TEST(ExportChrome, CallChain100000DeepIsLaidOutWithoutRecursion) {
    constexpr std::uint64_t kDepth = 100000;
    Report r;
    r.calls.reserve(kDepth);
    for (std::uint64_t i = 1; i <= kDepth; ++i) {
        Call c;
        c.id = i;
        if (i > 1) c.parent = i - 1;
        c.pid = 7;
        c.comm = "deep";
        c.function = i % 2 ? "f_odd" : "f_even";
        c.entry_ns = i;
        c.duration_ns = 2 * (kDepth - i) + 1;
        r.calls.push_back(std::move(c));
    }
    std::ostringstream out;
    ChromeTraceStats stats = write_chrome_trace(r, out);
    EXPECT_EQ(stats.slices, kDepth);
    EXPECT_EQ(stats.adjusted_slices, 0u);
    EXPECT_EQ(stats.tracks, 1u);
    ChromeCheck c = check_chrome(out.str());
    EXPECT_EQ(c.slices, kDepth);
    // The innermost call begins at 100,000 ns and ends 1 ns later; the outermost ends last.
    const std::string text = out.str();
    EXPECT_NE(text.find("\"ph\":\"B\",\"ts\":100.000,\"pid\":7,\"tid\":7,\"name\":\"f_even\""), std::string::npos);
    EXPECT_NE(text.find("\"ph\":\"E\",\"ts\":200.000,\"pid\":7,\"tid\":7,\"name\":\"f_odd\""), std::string::npos);
}

// Names from a saved report (function, comm, module) holding a newline, ESC, DEL or a leading '=': in the calls CSV a
// newline started a forged row and ESC reached the terminal; a cell starting with = + - @ is run by spreadsheets as a
// formula. Control bytes are \xNN (one record per line), such a cell is quoted behind a '.
TEST(ExportCsv, ControlBytesAndFormulaStartsCannotForgeRowsOrFormulas) {
    Report r = fixture("baseline");
    r.calls[0].function = "evil\n1,,0,1,x,0,forged_row,,1,1,,false,true,true,";
    r.calls[1].comm = "\x1b]0;title\x07\x7f";
    r.calls[2].function = "=HYPERLINK(\"http://x\")";
    r.calls[3].comm = "-bash";  // a login shell's comm: kept, as text
    r.calls[4].function = "@SUM(A1)";
    std::ostringstream out;
    write_calls_csv(r, out);
    const std::string s = out.str();
    EXPECT_EQ(static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')), r.calls.size() + 1);
    EXPECT_EQ(s.find("\nforged_row"), std::string::npos);
    EXPECT_EQ(s.find('\x1b'), std::string::npos);
    EXPECT_EQ(s.find('\x7f'), std::string::npos);
    EXPECT_NE(s.find(",\"evil\\x0a1,,0,1,x,0,forged_row,,1,1,,false,true,true,\","), std::string::npos)
        << s.substr(0, 400);
    EXPECT_NE(s.find(",\\x1b]0;title\\x07\\x7f,"), std::string::npos);
    EXPECT_NE(s.find(",\"'=HYPERLINK(\"\"http://x\"\")\","), std::string::npos);
    EXPECT_NE(s.find(",\"'-bash\","), std::string::npos);
    EXPECT_NE(s.find(",\"'@SUM(A1)\","), std::string::npos);
    // The ioctls table goes through the same cells: a device path with a newline stays in its row.
    Report io = fixture("baseline");
    ASSERT_FALSE(io.ioctls.empty());
    io.ioctls[0].fd_path = "/dev/nvidia0\nforged";
    std::ostringstream ios;
    write_csv(io, CsvTable::ioctls, ios);
    const std::string t = ios.str();
    EXPECT_EQ(static_cast<std::size_t>(std::count(t.begin(), t.end(), '\n')), io.ioctls.size() + 1);
    EXPECT_NE(t.find(",/dev/nvidia0\\x0aforged,"), std::string::npos) << t.substr(0, 400);
}

// A newline in a function name started a stack of its own in the folded output (a forged line with its own count).
TEST(ExportFolded, ControlBytesInFramesCannotForgeStacks) {
    Report r = fixture("baseline");
    r.graph.clear();
    for (Call& c : r.calls)
        c.function = "f\n" + c.function + " 999\x1b[2J";
    std::ostringstream out;
    write_folded_stacks(r, out);
    const std::string s = out.str();
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(s.find('\x1b'), std::string::npos);
    std::istringstream lines(s);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_EQ(line.rfind("f\\x0a", 0), 0u) << line;
        // One space: the one before the count.
        EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 1) << line;
    }
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

// The HTML timeline read a marker from its first line only: one write "nvtrace-phase: one\nnvtrace-phase: two\n"
// drew one phase named "one\nnvtrace-phase: two\n" and never phase two.
TEST(ExportHtml, AMarkerOfSeveralLinesDrawsEachPhaseItBegins) {
    Report r;
    r.markers = {{100, 1, "nvtrace-phase: one\nnvtrace-phase: two\n"}, {300, 1, "nvtrace-phase-end"}};
    std::ostringstream out;
    HtmlStats st = write_html_report(r, out);
    const std::string html = out.str();
    EXPECT_EQ(st.timeline_items, 2u);
    EXPECT_NE(html.find(R"(["phase",0,100,100,"one",)"), std::string::npos);
    EXPECT_NE(html.find(R"(["phase",0,100,300,"two",)"), std::string::npos);
    EXPECT_EQ(html.find(R"(one\nnvtrace-phase)"), std::string::npos);
}

// A fresh user's finding: `--table ioctls` wrote cmd in hex (0xc020462a) and `--table ioctl-stats` in decimal
// (3223340586), so the two tables of one report could not be joined on it.
TEST(ExportCsv, BothIoctlTablesWriteTheRequestInHex) {
    Report r = fixture("baseline");
    ASSERT_FALSE(r.ioctl_stats.empty());
    std::ostringstream ios, sts;
    write_csv(r, CsvTable::ioctls, ios);
    write_csv(r, CsvTable::ioctl_stats, sts);
    const std::string want = fmt::format(",0x{:x},", r.ioctl_stats[0].cmd);
    EXPECT_NE(ios.str().find(want), std::string::npos) << ios.str().substr(0, 400);
    EXPECT_NE(sts.str().find(want), std::string::npos) << sts.str().substr(0, 400);
    EXPECT_EQ(sts.str().find(fmt::format(",{},", r.ioctl_stats[0].cmd)), std::string::npos);
}
