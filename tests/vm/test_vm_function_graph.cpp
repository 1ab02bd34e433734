// Live function_graph test in a qemu guest running Debian 12's kernel with the real null_blk module
// (tier 3 of DESIGN.md section 7; harness: tests/vm/vm.sh, how it works: tests/vm/README.md).
//
// One boot serves every test here: the guest (tests/vm/guest/function_graph.sh) runs
//   nvtrace run --module null_blk --out /tmp/r -- /bin/odirect_read /dev/nullb0 4
// and hands back /tmp/r/report.json and snapshots of the top-level tracefs state before and after the run.
// The static binaries come from the vm_static_build CTest fixture (tests/vm/CMakeLists.txt).
//
// Skips when the harness says it cannot run on this host (exit status 77), except where CI=true: there a skip
// would hide a broken CI image, so it fails.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int harness_cannot_run = 77;

struct VmResult {
    int harness_status = -1;  // vm.sh exit status; -1 when it did not run
    std::string harness_stderr;
    std::string setup_error;  // why vm.sh was not run
    fs::path out_dir;
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string shell_quote(const std::string& word) {
    std::string quoted = "'";
    for (const char c : word) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

VmResult boot_vm() {
    VmResult result;
    result.out_dir = NVTRACE_VM_OUT_DIR;
    for (const char* bin : {NVTRACE_VM_NVTRACE_BIN, NVTRACE_VM_ODIRECT_READ_BIN}) {
        if (!fs::exists(bin)) {
            result.setup_error = fmt::format(
                "static binary {} is missing: run this test through ctest (its fixture vm_static_build builds it), "
                "or build it with -DNVTRACE_STATIC=ON -DCMAKE_RUNTIME_OUTPUT_DIRECTORY=<build>/static/bin",
                bin);
            return result;
        }
    }
    std::error_code ec;
    fs::create_directories(result.out_dir, ec);
    const fs::path stderr_path = result.out_dir / "harness.stderr";
    const std::string command =
        fmt::format("{} --out {} --modules null_blk --bin {}:nvtrace --bin {}:odirect_read --script {} 2>{}",
                    shell_quote(NVTRACE_VM_HARNESS), shell_quote(result.out_dir.string()),
                    shell_quote(NVTRACE_VM_NVTRACE_BIN), shell_quote(NVTRACE_VM_ODIRECT_READ_BIN),
                    shell_quote(NVTRACE_VM_GUEST_SCRIPT), shell_quote(stderr_path.string()));
    const int status = std::system(command.c_str());
    result.harness_stderr = read_text(stderr_path);
    if (status == -1 || !WIFEXITED(status)) {
        result.setup_error = fmt::format("could not run {} (system() status {})", command, status);
        return result;
    }
    result.harness_status = WEXITSTATUS(status);
    // The harness's own lines (kernel, boot time, files) belong in the test log.
    std::cerr << result.harness_stderr;
    return result;
}

const VmResult& vm() {
    static const VmResult result = boot_vm();
    return result;
}

bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string(ci) == "true";
}

std::optional<std::string> handed_back(const std::string& name) {
    const fs::path path = vm().out_dir / "files" / name;
    if (!fs::exists(path)) return std::nullopt;
    return read_text(path);
}

std::string console_hint() {
    return fmt::format("guest console: {}", (vm().out_dir / "console.log").string());
}

class VmFunctionGraph : public ::testing::Test {
protected:
    void SetUp() override {
        const VmResult& run = vm();
        if (!run.setup_error.empty()) FAIL() << run.setup_error;
        if (run.harness_status == harness_cannot_run) {
            if (on_ci())
                FAIL() << "the VM cannot run on this CI machine (a skip on CI is a failure):\n" << run.harness_stderr;
            GTEST_SKIP() << "the VM cannot run here:\n" << run.harness_stderr;
        }
    }

    // The report's calls by id; fails the test when the report is missing or malformed.
    static json load_report() {
        const auto text = handed_back("report.json");
        if (!text) {
            ADD_FAILURE() << "the guest handed back no report.json; " << console_hint();
            return json{};
        }
        try {
            return json::parse(*text);
        } catch (const json::exception& e) {
            ADD_FAILURE() << "report.json does not parse: " << e.what();
            return json{};
        }
    }
};

TEST_F(VmFunctionGraph, GuestRunSucceeds) {
    EXPECT_EQ(vm().harness_status, 0) << vm().harness_stderr;
    const auto nvtrace_status = handed_back("nvtrace-exit-status");
    ASSERT_TRUE(nvtrace_status) << "the guest handed back no nvtrace exit status; " << console_hint();
    EXPECT_EQ(*nvtrace_status, "0\n") << "nvtrace run failed in the guest; " << console_hint();
}

TEST_F(VmFunctionGraph, TopLevelTracefsStateIsRestored) {
    const auto before = handed_back("tracefs-before.txt");
    const auto after = handed_back("tracefs-after.txt");
    ASSERT_TRUE(before && after) << "the guest handed back no tracefs snapshots; " << console_hint();
    ASSERT_FALSE(before->empty());
    EXPECT_EQ(*before, *after) << "nvtrace left the top-level tracefs state changed";
}

TEST_F(VmFunctionGraph, ReportShowsNullQueueRqCallChain) {
    const json report = load_report();
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report.value("schema", ""), "nvtrace.report/1");
    ASSERT_TRUE(report.contains("calls") && report["calls"].is_array()) << "report.json has no \"calls\" array";

    std::map<long long, const json*> by_id;
    for (const json& call : report["calls"])
        by_id[call.at("id").get<long long>()] = &call;
    const auto parent_of = [&](const json& call) -> const json* {
        if (!call.contains("parent") || call["parent"].is_null()) return nullptr;
        const auto it = by_id.find(call["parent"].get<long long>());
        return it == by_id.end() ? nullptr : it->second;
    };
    const auto is = [](const json* call, const char* function) {
        return call != nullptr && call->value("function", "") == function;
    };

    int queue_rq_calls = 0;
    for (const json& call : report["calls"])
        queue_rq_calls += is(&call, "null_queue_rq") ? 1 : 0;
    // 4 O_DIRECT preads of 4 KiB are 4 requests, each queued in odirect_read's context.
    EXPECT_EQ(queue_rq_calls, 4) << "null_queue_rq calls in the report";

    int chains = 0;
    for (const json& process : report["calls"]) {
        if (!is(&process, "null_process_cmd")) continue;
        const json* handle = parent_of(process);
        const json* queue = handle != nullptr ? parent_of(*handle) : nullptr;
        if (!is(handle, "null_handle_cmd") || !is(queue, "null_queue_rq")) continue;
        ++chains;
        for (const json* call : {queue, handle, &process}) {
            const std::string where = fmt::format("{} (id {})", call->value("function", ""), (*call)["id"].dump());
            EXPECT_EQ(call->value("module", json()).dump(), "\"null_blk\"") << where;
            ASSERT_TRUE(call->contains("duration_ns") && (*call)["duration_ns"].is_number_integer())
                << where << " has no duration_ns";
            EXPECT_GT((*call)["duration_ns"].get<long long>(), 0) << where;
        }
        EXPECT_GE((*queue)["duration_ns"].get<long long>(), (*handle)["duration_ns"].get<long long>());
        EXPECT_GE((*handle)["duration_ns"].get<long long>(), process["duration_ns"].get<long long>());
    }
    EXPECT_GE(chains, 1) << "no null_queue_rq > null_handle_cmd > null_process_cmd chain (by parent ids) among "
                         << report["calls"].size() << " calls";
}

TEST_F(VmFunctionGraph, ReportGraphHasCallChainPath) {
    const json report = load_report();
    ASSERT_TRUE(report.is_object());
    ASSERT_TRUE(report.contains("graph") && report["graph"].is_array()) << "report.json has no \"graph\" array";
    const std::string chain = "null_queue_rq > null_handle_cmd > null_process_cmd";
    bool found = false;
    std::string paths;
    for (const json& node : report["graph"]) {
        const std::string path = node.value("path", "");
        paths += "\n  " + path;
        if (path.size() >= chain.size() && path.compare(path.size() - chain.size(), chain.size(), chain) == 0) {
            found = true;
            EXPECT_GE(node.value("count", 0), 1) << path;
            EXPECT_GT(node.value("total_ns", 0LL), 0) << path;
        }
    }
    EXPECT_TRUE(found) << "no graph path ends in \"" << chain << "\"; paths:" << paths;
}

TEST_F(VmFunctionGraph, ReportIsComplete) {
    const json report = load_report();
    ASSERT_TRUE(report.is_object());
    ASSERT_TRUE(report.contains("completeness")) << "report.json has no \"completeness\"";
    EXPECT_EQ(report["completeness"].value("complete", false), true) << report["completeness"].dump(2);
}

}  // namespace

// Issue 4 at the top level: SIGKILL leaves the journal, which makes the
// next run refuse, and `nvtrace cleanup` restores from it; a module that is not loaded is an error.
class VmFaults : public VmFunctionGraph {
protected:
    static std::map<std::string, int> faults() {
        std::map<std::string, int> out;
        std::istringstream in(handed_back("faults.txt").value_or(""));
        std::string name;
        int status = 0;
        while (in >> name >> status)
            out[name] = status;
        return out;
    }
};

TEST_F(VmFaults, SigkillLeavesAJournalThatBlocksTheNextRunUntilCleanup) {
    auto f = faults();
    const auto before = handed_back("tracefs-before.txt");
    ASSERT_TRUE(before) << console_hint();
    EXPECT_EQ(f["sigKILL"], 128 + 9);
    EXPECT_NE(handed_back("tracefs-after-kill.txt").value_or(""), *before)
        << "a SIGKILLed run must leave its changes (else this test proves nothing)";
    EXPECT_EQ(f["refused-while-journal"], 3);
    EXPECT_NE(handed_back("refused.txt").value_or("").find("run `nvtrace cleanup` first"), std::string::npos)
        << handed_back("refused.txt").value_or("");
    EXPECT_EQ(f["cleanup"], 0) << handed_back("cleanup.txt").value_or("");
    EXPECT_EQ(handed_back("tracefs-after-cleanup.txt").value_or("<missing>"), *before);
}

TEST_F(VmFaults, ModuleNotLoadedIsAnEnvironmentError) {
    auto f = faults();
    EXPECT_EQ(f["module-not-loaded"], 3);
    EXPECT_NE(handed_back("refused.txt").value_or("").find("module vgem is not loaded"), std::string::npos)
        << handed_back("refused.txt").value_or("");
}

TEST_F(VmFaults, FiltersNotraceAndMaxDepthApplyAndAreRestored) {
    auto f = faults();
    EXPECT_EQ(f["filters"], 0);
    EXPECT_EQ(handed_back("tracefs-after-filters.txt").value_or("<missing>"),
              handed_back("tracefs-before.txt").value_or(""));
    const auto text = handed_back("report-filters.json");
    ASSERT_TRUE(text) << console_hint();
    json rep = json::parse(*text);
    int max_depth = -1;
    bool exit_hctx = false;
    for (const json& c : rep["calls"]) {
        max_depth = std::max(max_depth, c["depth"].get<int>());
        exit_hctx |= c["function"] == "null_exit_hctx";
    }
    EXPECT_GE(rep["calls"].size(), 2u);
    EXPECT_LE(max_depth, 1) << "--max-depth 2 allows depths 0 and 1";
    EXPECT_FALSE(exit_hctx);
}
