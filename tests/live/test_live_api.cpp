// `nvtrace run` with uprobes on real libraries (docs/api.md): the CUDA runtime (the toolkit's libcudart.so.13 with no
// driver, then with the toolkit's driver-API stub as libcuda.so.1) and the generic --uprobe on libc. Oracles: what
// the programs themselves print (the results they got, the pid getpid returned, the address and size they passed),
// and uprobe_events before the run. Where the CUDA toolkit is missing the CUDA tests say so; with CI=true that is a
// failure.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "live_util.hpp"
#include "uprobe_util.hpp"

using namespace nvtrace::live;

namespace {

#define REQUIRE_CUDA_CALLS()                                                                                      \
    do {                                                                                                          \
        if (std::string(CUDA_CALLS_BIN).empty()) {                                                                \
            const std::string why = std::string("no CUDA toolkit at ") + CUDA_ROOT +                              \
                                    " (include/cuda_runtime_api.h, lib64/libcudart.so.13): cuda_calls not built"; \
            const char* ci = std::getenv("CI");                                                                   \
            if (ci && std::string(ci) == "true") FAIL() << why;                                                   \
            GTEST_SKIP() << why;                                                                                  \
        }                                                                                                         \
    } while (0)

#define REQUIRE_UPROBES()                                                                             \
    do {                                                                                              \
        if (::access((kTracing + "/uprobe_events").c_str(), F_OK) != 0) {                             \
            const char* ci = std::getenv("CI");                                                       \
            if (ci && std::string(ci) == "true") FAIL() << "no uprobe_events (CONFIG_UPROBE_EVENTS)"; \
            GTEST_SKIP() << "no uprobe_events (CONFIG_UPROBE_EVENTS)";                                \
        }                                                                                             \
    } while (0)

// "a=1 b=2" (a program's own line) -> {a: "1", b: "2"}.
std::map<std::string, std::string> words(const std::string& line) {
    std::map<std::string, std::string> out;
    static const std::regex kv(R"(([A-Za-z_]+)=(\S+))");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kv); it != std::sregex_iterator(); ++it)
        out[(*it)[1]] = (*it)[2];
    return out;
}

// The report's events named GROUP:EVENT, in order.
std::vector<nlohmann::json> named(const nlohmann::json& rep, const std::string& name) {
    std::vector<nlohmann::json> out;
    for (const auto& e : rep["events"])
        if (e["name"] == name) out.push_back(e);
    return out;
}

std::string field(const nlohmann::json& e, const std::string& key) {
    if (!e.contains("fields") || !e["fields"].is_object() || !e["fields"].contains(key)) return "<none>";
    return e["fields"][key].get<std::string>();
}

// The probe of meta.json "uprobes" for `symbol` on the file whose name starts with `file_prefix`.
nlohmann::json probe_of(const nlohmann::json& meta, const std::string& symbol, const std::string& file_prefix = "") {
    for (const auto& u : meta["uprobes"])
        if (u["symbol"] == symbol &&
            std::filesystem::path(u["library"].get<std::string>()).filename().string().rfind(file_prefix, 0) == 0)
            return u;
    return nullptr;
}

// A field's value: decimal, or hex as libtraceevent prints a 64-bit word ("0xfffffffffffffffe" is -2).
long long as_number(const std::string& s) {
    if (s.rfind("0x", 0) == 0) return static_cast<long long>(std::stoull(s, nullptr, 16));
    return std::stoll(s);
}

struct ApiRun {
    Ran ran;
    nlohmann::json meta, report;
    std::map<std::string, std::string> printed;  // the program's own line
    std::string out;                             // the capture directory
};

ApiRun run_api(std::vector<std::string> args) {
    ApiRun a;
    const std::string out = a.out = temp_dir() + "/cap";
    std::vector<std::string> argv{NVTRACE_BIN, "run", "-q", "--out", out};
    argv.insert(argv.end(), args.begin(), args.end());
    a.ran = run(argv);
    if (std::filesystem::exists(out + "/meta.json")) a.meta = load_json(out + "/meta.json");
    if (std::filesystem::exists(out + "/report.json")) a.report = load_json(out + "/report.json");
    a.printed = words(a.ran.out);
    return a;
}

}  // namespace

// The runtime with no driver: libcudart finds no libcuda.so.1 and every call fails. Each call's entry holds its
// arguments (cudaMalloc's size, cudaMemcpy's count and kind, cudaHostRegister's address, size and flags) and its
// return the cudaError_t the program got; the dlopen of libcuda.so.1 under the first call is a run of failed openat.
TEST(LiveApi, CudaRuntimeWithoutDriverCallsHaveArgumentsAndRealResults) {
    REQUIRE_LIVE();
    REQUIRE_UPROBES();
    REQUIRE_CUDA_CALLS();
    const std::string before = uprobe_events_snapshot();
    ApiRun a = run_api({"-e", "syscalls:sys_exit_openat", "--", CUDA_CALLS_BIN});
    ASSERT_EQ(a.ran.rc, 0) << a.ran.err;
    EXPECT_EQ(uprobe_events_snapshot(), before);
    ASSERT_TRUE(a.report.is_object()) << a.ran.err;
    ASSERT_EQ(a.printed.count("cudaMalloc"), 1u) << a.ran.out;
    // No driver on the test machines: a failure, whatever its value.
    EXPECT_NE(a.printed["cudaMalloc"], "0") << "a CUDA driver is installed here; this test expects none";
    const nlohmann::json malloc_probe = probe_of(a.meta, "cudaMalloc", "libcudart.so");
    ASSERT_TRUE(malloc_probe.is_object()) << a.meta["uprobes"].dump(1);
    EXPECT_EQ(malloc_probe["api"], "cuda_runtime");
    EXPECT_EQ(malloc_probe["library"],
              std::filesystem::canonical(std::string(CUDA_ROOT) + "/lib64/libcudart.so.13").string());
    const std::string group = malloc_probe["group"];
    EXPECT_TRUE(std::regex_match(group, std::regex("nvtrace_[1-9][0-9]*"))) << group;
    struct Call {
        std::string symbol;
        std::map<std::string, std::string> args;  // field -> the value the program passed
    };
    const std::string host = std::to_string(std::stoull(a.printed["host"], nullptr, 16));
    const std::vector<Call> calls{
        {"cudaMalloc", {{"size", "1048576"}}},
        {"cudaMemcpy", {{"count", "4096"}, {"kind", "1"}, {"src", host}}},
        {"cudaHostRegister", {{"ptr", host}, {"size", "4096"}, {"flags", "1"}}},
    };
    for (const auto& c : calls) {
        const nlohmann::json p = probe_of(a.meta, c.symbol, "libcudart.so");
        ASSERT_TRUE(p.is_object()) << c.symbol;
        auto entries = named(a.report, group + ":" + p["event"].get<std::string>());
        auto returns = named(a.report, group + ":" + p["return_event"].get<std::string>());
        ASSERT_EQ(entries.size(), 1u) << c.symbol;
        ASSERT_EQ(returns.size(), 1u) << c.symbol;
        EXPECT_EQ(entries[0]["pid"], returns[0]["pid"]);
        EXPECT_EQ(entries[0]["pid"], a.meta["pid"]);
        EXPECT_LE(entries[0]["ts"].get<std::uint64_t>(), returns[0]["ts"].get<std::uint64_t>());
        for (const auto& [k, v] : c.args)
            EXPECT_EQ(std::to_string(as_number(field(entries[0], k))), v)
                << c.symbol << " " << k << ": " << entries[0].dump();
        EXPECT_EQ(field(returns[0], "ret"), a.printed[c.symbol]) << c.symbol << ": " << returns[0].dump();
    }
    // The dlopen("libcuda.so.1") under cudaMalloc: its search fails with ENOENT in every folder.
    const nlohmann::json m = probe_of(a.meta, "cudaMalloc", "libcudart.so");
    auto entry = named(a.report, group + ":" + m["event"].get<std::string>())[0];
    auto exit = named(a.report, group + ":" + m["return_event"].get<std::string>())[0];
    int enoent = 0;
    for (const auto& e : a.report["events"])
        if (e["name"] == "syscalls:sys_exit_openat" && e["pid"] == entry["pid"] && e["ts"] > entry["ts"] &&
            e["ts"] < exit["ts"] && as_number(field(e, "ret")) == -2)
            ++enoent;
    EXPECT_GE(enoent, 1) << "no failed openat inside cudaMalloc";
}

// The toolkit's driver-API stub as libcuda.so.1 (stubs/ holds it as libcuda.so only, so a folder with the soname
// links to it; LD_LIBRARY_PATH names that folder): nvtrace arms the driver table on the stub before the program
// starts, libcudart's dlopen finds it, and the driver calls libcudart makes under cudaMalloc are recorded with their
// CUresult: CUDA_ERROR_STUB_LIBRARY (34, cuda.h), the value cudaMalloc passes on as cudaErrorStubLibrary (34).
TEST(LiveApi, DriverStubThroughLdLibraryPathRecordsDriverCallsUnderTheRuntimeCall) {
    REQUIRE_LIVE();
    REQUIRE_UPROBES();
    REQUIRE_CUDA_CALLS();
    const std::string stub = std::string(CUDA_ROOT) + "/lib64/stubs/libcuda.so";
    ASSERT_TRUE(std::filesystem::exists(stub)) << stub;
    const std::string dir = temp_dir();
    std::filesystem::create_symlink(stub, dir + "/libcuda.so.1");
    const std::string before = uprobe_events_snapshot();
    // nvtrace passes its environment on: the program and nvtrace's library search both see LD_LIBRARY_PATH.
    ::setenv("LD_LIBRARY_PATH", dir.c_str(), 1);
    ApiRun a = run_api({"--", CUDA_CALLS_BIN});
    ::unsetenv("LD_LIBRARY_PATH");
    ASSERT_EQ(a.ran.rc, 0) << a.ran.err;
    EXPECT_EQ(uprobe_events_snapshot(), before);
    ASSERT_TRUE(a.report.is_object()) << a.ran.err;
    EXPECT_EQ(a.printed["cudaMalloc"], "34") << a.ran.out;
    // The driver table is on the stub's file.
    std::size_t driver = 0;
    for (const auto& u : a.meta["uprobes"])
        if (u["api"] == "cuda_driver") {
            ++driver;
            EXPECT_EQ(u["library"], std::filesystem::canonical(stub).string());
        }
    EXPECT_GE(driver, 50u);
    const nlohmann::json m = probe_of(a.meta, "cudaMalloc", "libcudart.so");
    ASSERT_TRUE(m.is_object());
    const std::string group = m["group"];
    auto entry = named(a.report, group + ":" + m["event"].get<std::string>());
    auto exit = named(a.report, group + ":" + m["return_event"].get<std::string>());
    ASSERT_EQ(entry.size(), 1u);
    ASSERT_EQ(exit.size(), 1u);
    EXPECT_EQ(field(exit[0], "ret"), "34");
    // Driver calls inside cudaMalloc's span, each returning CUDA_ERROR_STUB_LIBRARY.
    std::map<std::string, std::string> returns;  // "cuX__return" -> ret
    for (const auto& u : a.meta["uprobes"]) {
        if (u["api"] != "cuda_driver") continue;
        for (const auto& e : named(a.report, group + ":" + u["return_event"].get<std::string>()))
            if (e["ts"] > entry[0]["ts"] && e["ts"] < exit[0]["ts"] && e["pid"] == entry[0]["pid"])
                returns[u["symbol"]] = field(e, "ret");
    }
    ASSERT_FALSE(returns.empty()) << "no driver call recorded inside cudaMalloc";
    for (const auto& [symbol, ret] : returns)
        EXPECT_EQ(ret, "34") << symbol;
}

// The generic --uprobe on libc's getpid: one entry and one return per call of the program (and none of nvtrace's
// own getpid calls: the instance's pid filter), each return's ret the pid the program printed; meta.json names the
// probe with its file and readelf's offset, and uprobe_events is as before.
TEST(LiveApi, GenericUprobeOnLibcGetpidRecordsEachCallOfTheProgram) {
    REQUIRE_LIVE();
    REQUIRE_UPROBES();
    const std::string before = uprobe_events_snapshot();
    ApiRun a = run_api({"--uprobe", "libc:getpid", "--", GETPID_CALLS_BIN, "5"});
    ASSERT_EQ(a.ran.rc, 0) << a.ran.err;
    EXPECT_EQ(uprobe_events_snapshot(), before);
    ASSERT_TRUE(a.report.is_object()) << a.ran.err;
    ASSERT_EQ(a.meta["uprobes"].size(), 1u) << a.meta["uprobes"].dump(1);
    const nlohmann::json u = a.meta["uprobes"][0];
    EXPECT_EQ(u["api"], "user");
    EXPECT_EQ(u["symbol"], "getpid");
    EXPECT_EQ(u["event"], "getpid");
    EXPECT_EQ(u["return_event"], "getpid__return");
    // readelf's value of getpid, mapped through libc's LOAD segment that holds it (here p_vaddr - p_offset = 0 for
    // the text segment; the offset must equal what readelf gives either way).
    Ran re = run({"/bin/sh", "-c",
                  "readelf -W --dyn-syms " + u["library"].get<std::string>() +
                      " | awk '$8 == \"getpid@@GLIBC_2.2.5\" {print $2}'"});
    ASSERT_EQ(re.rc, 0);
    EXPECT_EQ(u["offset"].get<std::uint64_t>(), std::stoull(re.out, nullptr, 16)) << re.out;
    const std::string group = u["group"];
    auto entries = named(a.report, group + ":getpid");
    auto returns = named(a.report, group + ":getpid__return");
    EXPECT_EQ(entries.size(), 5u);
    ASSERT_EQ(returns.size(), 5u);
    for (const auto& r : returns) {
        EXPECT_EQ(r["pid"], a.meta["pid"]);
        EXPECT_EQ(field(r, "ret"), a.printed["pid"]) << r.dump();
    }
    // The formats are in the capture directory: `nvtrace report DIR` decodes the same events again.
    EXPECT_TRUE(std::filesystem::exists(a.out + "/events/" + group + "/getpid__return/format"));
    Ran again = run({NVTRACE_BIN, "report", a.out, "--json"});
    ASSERT_EQ(again.rc, 0) << again.err;
    nlohmann::json rep = nlohmann::json::parse(again.out);
    EXPECT_EQ(named(rep, group + ":getpid__return").size(), 5u);
    for (const auto& r : named(rep, group + ":getpid__return"))
        EXPECT_EQ(field(r, "ret"), a.printed["pid"]);
}

// A libcudart.so.13 the program dlopen()s from a folder nvtrace cannot know about (a copy in a temporary folder,
// named by path; the program links no CUDA library): nvtrace finds nothing to probe before the start, sees the file
// mapped in /proc/PID/maps while the program runs and arms the runtime table on it then. The program waits for the
// probe on cudaMalloc's return to be enabled in nvtrace's instance (tests/live/cuda_dlopen_late.c) before it calls,
// so the call is seen: one api_call with the cudaError_t the program printed (no driver here: cudaMalloc fails).
// meta.json names the probes as armed late (the process that mapped the file, when), and the report is incomplete
// with `uprobes_armed_late`: calls made before the arming could not have been seen.
TEST(LiveApi, LibcudartDlopenedFromAnUnknownFolderGetsItsProbesArmedLate) {
    REQUIRE_LIVE();
    REQUIRE_UPROBES();
    const std::string cudart = std::string(CUDA_ROOT) + "/lib64/libcudart.so.13";
    if (!std::filesystem::exists(cudart)) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << "no " << cudart;
        GTEST_SKIP() << "no " << cudart;
    }
    const std::string copy = temp_dir() + "/libcudart.so.13";
    std::filesystem::copy_file(std::filesystem::canonical(cudart), copy);
    const std::string before = uprobe_events_snapshot();
    ApiRun a = run_api({"--", CUDA_DLOPEN_LATE_BIN, copy, "60"});
    ASSERT_EQ(a.ran.rc, 0) << a.ran.err;
    EXPECT_EQ(uprobe_events_snapshot(), before);
    ASSERT_TRUE(a.report.is_object()) << a.ran.err;
    ASSERT_EQ(a.printed["armed"], "1") << "the program gave up waiting for the probes: " << a.ran.out << a.ran.err;
    EXPECT_NE(a.printed["cudaMalloc"], "0") << "a CUDA driver is installed here; this test expects none";
    const nlohmann::json m = probe_of(a.meta, "cudaMalloc", "libcudart.so");
    ASSERT_TRUE(m.is_object()) << a.meta["uprobes"].dump(1);
    EXPECT_EQ(m["library"], std::filesystem::canonical(copy).string());
    EXPECT_EQ(m["api"], "cuda_runtime");
    ASSERT_TRUE(m.contains("late_pid")) << m.dump();
    EXPECT_EQ(m["late_pid"], a.meta["pid"]);
    ASSERT_TRUE(m.contains("armed_after_ns") && m["armed_after_ns"].is_number_unsigned()) << m.dump();
    ASSERT_TRUE(m.contains("armed_ns") && m["armed_ns"].is_number_unsigned()) << m.dump();
    // Every probe is on the copy and armed late: nothing was armed before the start.
    for (const auto& u : a.meta["uprobes"]) {
        EXPECT_EQ(u["library"], m["library"]) << u.dump();
        EXPECT_TRUE(u.contains("late_pid")) << u.dump();
    }
    std::vector<nlohmann::json> mallocs;
    for (const auto& c : a.report["api_calls"])
        if (c["function"] == "cudaMalloc") mallocs.push_back(c);
    ASSERT_EQ(mallocs.size(), 1u) << a.report["api_calls"].dump(1);
    const nlohmann::json& c = mallocs[0];
    EXPECT_EQ(c["pid"], a.meta["pid"]);
    EXPECT_EQ(std::to_string(c["result"].get<long long>()), a.printed["cudaMalloc"]) << c.dump();
    if (a.printed["cudaMalloc"] == "35") {
        EXPECT_EQ(c["result_name"], "cudaErrorInsufficientDriver");
    }
    // armed_ns is the marker nvtrace writes once every probe of the file is enabled: between its start and end marks.
    // (The program may call before it: it waits for cudaMalloc's own probes, which are enabled before the last.)
    std::map<std::string, std::uint64_t> marks;
    for (const auto& mk : a.report["markers"])
        marks[mk["text"].get<std::string>().substr(0, mk["text"].get<std::string>().find(' '))] = mk["ts"];
    EXPECT_EQ(marks["nvtrace-uprobes-armed-late"], m["armed_ns"].get<std::uint64_t>());
    EXPECT_LT(marks["nvtrace-start"], m["armed_ns"].get<std::uint64_t>());
    EXPECT_GT(marks["nvtrace-end"], c["entry_ns"].get<std::uint64_t>());
    EXPECT_EQ(c["args"]["size"], "1048576") << c.dump();
    // The report says calls may be missing, and why.
    EXPECT_EQ(a.report["completeness"]["complete"], false);
    bool said = false;
    for (const auto& d : a.report["completeness"]["diagnostics"])
        if (d["name"] == "uprobes_armed_late") {
            said = true;
            EXPECT_EQ(d["count"], 1);
            EXPECT_EQ(d["severity"], "data_loss");
            EXPECT_NE(d["first_example"].get<std::string>().find(m["library"].get<std::string>()), std::string::npos)
                << d.dump();
        }
    EXPECT_TRUE(said) << a.report["completeness"].dump(1);
    // `nvtrace report DIR` reads the same from the capture directory (the late probes' formats are saved).
    Ran again = run({NVTRACE_BIN, "report", a.out, "--json"});
    ASSERT_EQ(again.rc, 0) << again.err;
    nlohmann::json rep = nlohmann::json::parse(again.out);
    std::size_t again_mallocs = 0;
    for (const auto& x : rep["api_calls"])
        if (x["function"] == "cudaMalloc") {
            ++again_mallocs;
            EXPECT_EQ(x["result"], c["result"]);
        }
    EXPECT_EQ(again_mallocs, 1u);
}

// --no-api on a program linked against libcudart: no probe, no uprobe event, meta.json "uprobes" empty.
TEST(LiveApi, NoApiLeavesTheCudaLibrariesUnprobed) {
    REQUIRE_LIVE();
    REQUIRE_CUDA_CALLS();
    ApiRun a = run_api({"--no-api", "--", CUDA_CALLS_BIN});
    ASSERT_EQ(a.ran.rc, 0) << a.ran.err;
    EXPECT_TRUE(a.meta["uprobes"].empty());
    for (const auto& e : a.report["events"])
        EXPECT_NE(e["name"].get<std::string>().rfind("nvtrace_", 0), 0u) << e.dump();
}

// A bad --uprobe is a usage error (exit 2) naming the option, before anything is made (no capture directory).
TEST(LiveApi, BadUprobeSpecIsAUsageErrorBeforeAnythingIsMade) {
    REQUIRE_LIVE();
    const std::string out = temp_dir() + "/cap";
    const std::string before = uprobe_events_snapshot();
    Ran r = run({NVTRACE_BIN, "run", "-q", "--uprobe", "libc:write%di:u65", "--out", out, "--", "/bin/true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("--uprobe 'libc:write%di:u65'"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    Ran missing =
        run({NVTRACE_BIN, "run", "-q", "--uprobe", "libc:nvtrace_no_such_function", "--out", out, "--", "/bin/true"});
    EXPECT_EQ(missing.rc, 2) << missing.err;
    EXPECT_NE(missing.err.find("no function 'nvtrace_no_such_function'"), std::string::npos) << missing.err;
    EXPECT_EQ(uprobe_events_snapshot(), before);
}
