// Live function_graph test in a qemu guest running Debian 12's kernel with the real null_blk module
// (tier 3 of DESIGN.md section 7; harness: tests/vm/vm.sh, how it works: tests/vm/README.md).
//
// One boot serves every test here: the guest (tests/vm/guest/function_graph.sh) runs
//   nvtrace run --module null_blk --out /tmp/r -- /bin/odirect_read /dev/nullb0 4
// and hands back /tmp/r/report.json and snapshots of the top-level tracefs state before and after the run; then
// `nvtrace doctor --json` with the facts it must agree with, and the faults at the top level (SIGINT, SIGTERM,
// SIGHUP, SIGKILL + cleanup, a module that is not loaded, a filtered run), each with a snapshot after it.
// The static binaries come from the vm_static_build CTest fixture (tests/vm/CMakeLists.txt).
//
// Skips when the harness says it cannot run on this host (exit status 77), except where CI=true: there a skip
// would hide a broken CI image, so it fails.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "vm_util.hpp"

using nlohmann::json;

namespace nvtrace::vm_test {

const VmResult& vm() {
    static const VmResult result =
        run_harness(NVTRACE_VM_HARNESS, NVTRACE_VM_OUT_DIR, {NVTRACE_VM_NVTRACE_BIN, NVTRACE_VM_ODIRECT_READ_BIN},
                    fmt::format("--modules null_blk --bin {}:nvtrace --bin {}:odirect_read --script {}",
                                shell_quote(NVTRACE_VM_NVTRACE_BIN), shell_quote(NVTRACE_VM_ODIRECT_READ_BIN),
                                shell_quote(NVTRACE_VM_GUEST_SCRIPT)));
    return result;
}

}  // namespace nvtrace::vm_test

using namespace nvtrace::vm_test;

namespace {

class VmFunctionGraph : public ::testing::Test {
protected:
    void SetUp() override { require_vm(); }

    // The report's calls by id; fails the test when the report is missing or malformed.
    static json load_report() { return handed_back_json("report.json"); }
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

// Round trip with function_graph at the top level: `nvtrace report /tmp/r --json` in the guest
// re-analyses the saved top-level pages (kallsyms subset, formats) into the same report; only "source" (where
// the data came from) may differ.
TEST_F(VmFunctionGraph, OfflineReportOfTheRawPagesEqualsTheLiveReport) {
    EXPECT_EQ(handed_back_statuses("report-offline-status.txt")["report"], 0);
    json live = load_report();
    json offline = handed_back_json("report-offline.json");
    ASSERT_TRUE(live.is_object() && offline.is_object());
    json meta = handed_back_json("meta.json");
    bool top = false;
    for (const json& b : meta["raw"]["buffers"])
        if (b["name"] == "top" && b["records"].get<std::uint64_t>() > 0) top = true;
    EXPECT_TRUE(top) << "function_graph ran at the top level: its pages must be saved " << meta["raw"].dump();
    EXPECT_EQ(offline, live) << "run writes the report of `report DIR`: source included";
}

// `nvtrace tree /tmp/r` in the guest (docs/tree.md): the aggregated tree of the capture has the 4 null_queue_rq
// calls as one line with known times, null_handle_cmd under it and null_process_cmd under that, and says the
// data is complete.
TEST_F(VmFunctionGraph, TreeOfTheGuestCaptureHasTheNullBlkChain) {
    EXPECT_EQ(handed_back_statuses("report-offline-status.txt")["tree"], 0);
    const auto tree = handed_back("tree.txt");
    ASSERT_TRUE(tree) << "the guest handed back no tree.txt; " << console_hint();
    const std::string time = R"( +[0-9][0-9,]*\.[0-9]{3})";
    const std::regex queue_rq("\n" + time + time + time + R"( +4x  null_queue_rq \[null_blk\]( |\n))");
    const std::regex handle_cmd(R"(\n[^\n]*x  (\|-|`-) null_handle_cmd \[null_blk\][^\n]*)");
    const std::regex process_cmd(R"(\n[^\n]*x  (\|  |   )(\|-|`-) null_process_cmd \[null_blk\])");
    EXPECT_TRUE(std::regex_search(*tree, queue_rq)) << *tree;
    EXPECT_TRUE(std::regex_search(*tree, handle_cmd)) << *tree;
    EXPECT_TRUE(std::regex_search(*tree, process_cmd)) << *tree;
    EXPECT_EQ(tree->find("unknown"), std::string::npos) << *tree;
    EXPECT_NE(tree->find("\ncomplete: yes\n"), std::string::npos) << *tree;
}

}  // namespace

// At the top level: SIGKILL leaves the journal, which makes the
// next run refuse, and `nvtrace cleanup` restores from it; a module that is not loaded is an error.
class VmFaults : public VmFunctionGraph {
protected:
    static std::map<std::string, int> faults() { return handed_back_statuses("faults.txt"); }
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

// SIGINT/SIGTERM/SIGHUP while function_graph runs at the top level (a light program: one read every 0.2 s): nvtrace
// exits 128 + the signal and restores every top-level file it changed.
TEST_F(VmFaults, SignalledRunsAtTheTopLevelRestoreTheTracefsState) {
    auto f = faults();
    const auto before = handed_back("tracefs-before.txt");
    ASSERT_TRUE(before) << console_hint();
    for (const auto& [sig, number] : std::map<std::string, int>{{"INT", 2}, {"TERM", 15}, {"HUP", 1}}) {
        ASSERT_TRUE(f.count("sig" + sig)) << "no SIG" << sig << " run in faults.txt; " << console_hint();
        EXPECT_EQ(f["sig" + sig], 128 + number) << "SIG" << sig << "; " << console_hint();
        EXPECT_EQ(handed_back("tracefs-after-sig" + sig + ".txt").value_or("<missing>"), *before) << "SIG" << sig;
    }
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

// `nvtrace doctor --json` in the guest (6.1: function_graph at the top level only, null_blk loaded, vgem not),
// each line checked against what the guest script read with other tools (doctor-facts.txt: "KEY VALUE" lines).
class VmDoctor : public VmFunctionGraph {
protected:
    static std::map<std::string, std::string> facts() {
        std::map<std::string, std::string> out;
        std::istringstream in(handed_back("doctor-facts.txt").value_or(""));
        for (std::string line; std::getline(in, line);) {
            const auto space = line.find(' ');
            out[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
        }
        return out;
    }
    static std::map<std::string, json> findings() {
        std::map<std::string, json> by_id;
        const json doc = handed_back_json("doctor.json");
        EXPECT_EQ(doc.value("schema", ""), "nvtrace.doctor/1");
        if (!doc.contains("findings") || !doc["findings"].is_array()) {
            ADD_FAILURE() << "doctor.json has no findings array: " << doc.dump();
            return by_id;
        }
        for (const json& f : doc["findings"]) {
            for (const char* key : {"id", "status", "value", "meaning"})
                EXPECT_TRUE(f.contains(key) && f[key].is_string()) << key << " in " << f.dump();
            EXPECT_FALSE(f.value("meaning", "").empty()) << f.dump();
            by_id[f.value("id", "")] = f;
        }
        return by_id;
    }
};

TEST_F(VmDoctor, FindingsMatchTheGuest) {
    auto fact = facts();
    ASSERT_EQ(fact["doctor"], "0") << "nvtrace doctor failed in the guest; " << console_hint();
    auto f = findings();
    EXPECT_EQ(f["root"].value("status", ""), "ok");
    EXPECT_EQ(f["tracefs"].value("status", ""), "ok");
    EXPECT_EQ(f["tracefs"].value("value", ""), "/sys/kernel/tracing (writable)");
    EXPECT_EQ(f["tracers"].value("value", ""), fact["available_tracers"]);
    EXPECT_NE(fact["available_tracers"].find("function_graph"), std::string::npos) << fact["available_tracers"];
    EXPECT_EQ(f["tracers"].value("status", ""), "ok");
    EXPECT_EQ(f["function_filters"].value("status", ""), "ok");
    // 6.1 refuses function_graph in instances: nvtrace run goes to the top level under the journal.
    const json& inst = f["function_graph_in_instance"];
    EXPECT_EQ(inst.value("status", ""), "info") << inst.dump();
    EXPECT_EQ(inst.value("value", "").find("function_graph"), std::string::npos) << inst.dump();
    EXPECT_NE(inst.value("meaning", "").find("journal"), std::string::npos) << inst.dump();
    EXPECT_EQ(f["syscall_events"].value("status", ""), "ok");
    EXPECT_EQ(f["journal"].value("value", ""), "none") << "the runs before doctor restored everything";
}

TEST_F(VmDoctor, LoadedModuleLineHasItsVersionAndTheDryRunCount) {
    auto fact = facts();
    auto f = findings();
    ASSERT_EQ(fact["null_blk_initstate"], "live");
    const json& m = f["module:null_blk"];
    const std::string version =
        fact["null_blk_version"].empty() ? "of the kernel (" + fact["kernel_release"] + ")" : fact["null_blk_version"];
    const std::string value = m.value("value", "");
    EXPECT_EQ(value.rfind("loaded, version " + version, 0), 0u) << m.dump();
    const std::string count = ", " + fact["null_blk_functions"] + " traceable functions";
    ASSERT_GE(value.size(), count.size()) << m.dump();
    EXPECT_EQ(value.substr(value.size() - count.size()), count) << m.dump();
    EXPECT_NE(fact["null_blk_functions"], "0");
    EXPECT_EQ(m.value("status", ""), "ok") << m.dump();

    ASSERT_EQ(fact["vgem_sysfs"], "absent");
    EXPECT_EQ(f["module:vgem"].value("value", ""), "not loaded");
    EXPECT_EQ(f["module:vgem"].value("status", ""), "info");
    EXPECT_NE(f["module:vgem"].value("meaning", "").find("modprobe vgem"), std::string::npos);
}

// libtracefs 1.6.4: tracefs_filter_functions(NULL, module) matches nothing; nvtrace passes "*". The run's dry-run
// count for --module null_blk is every null_blk line of the guest kernel's available_filter_functions.
TEST_F(VmDoctor, Libtracefs_null_filter_module_count_equals_available_filter_functions) {
    auto fact = facts();
    const json meta = handed_back_json("meta.json");
    ASSERT_FALSE(fact["null_blk_functions"].empty()) << console_hint();
    ASSERT_TRUE(meta.contains("filter_counts")) << meta.dump();
    EXPECT_EQ(meta["filter_counts"].value("module:null_blk", -1LL),
              std::strtoll(fact["null_blk_functions"].c_str(), nullptr, 10));
}

// The kernel-log path end to end with a line a GPU monitor acts on, inside the guest only (guest/function_graph.sh
// writes it into the guest's /dev/kmsg; the host's log never gets one: tests/live/kmsg_guard.py). The live tier on
// the host writes a neutral line instead.
TEST_F(VmFunctionGraph, XidLineWrittenIntoTheGuestsKernelLogIsClassifiedAsXid) {
    const auto status = handed_back("xid-exit-status.txt");
    ASSERT_TRUE(status) << "the guest handed back no status of the Xid run; " << console_hint();
    EXPECT_EQ(*status, "0\n") << console_hint();
    const json report = handed_back_json("report-xid.json");
    ASSERT_TRUE(report.contains("kernel_log") && report["kernel_log"].is_array()) << report.dump();
    const std::string line = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.";
    bool found = false;
    for (const auto& m : report["kernel_log"]) {
        if (m.value("text", "") != line) continue;
        found = true;
        EXPECT_EQ(m.value("kind", ""), "xid") << m.dump();
        // Written from user space (facility 1): read by the NVRM grammar, but not nvidia.ko's (docs/dmesg.md).
        EXPECT_EQ(m.value("source", ""), "user") << m.dump();
        EXPECT_EQ(m.value("level", -1), 3) << m.dump();
        ASSERT_TRUE(m.contains("fields")) << m.dump();
        EXPECT_EQ(m["fields"].value("xid", ""), "79") << m.dump();
        EXPECT_EQ(m["fields"].value("pci", ""), "0000:01:00") << m.dump();
        EXPECT_EQ(m["fields"].value("text_source", ""), "NVRM") << m.dump();
        EXPECT_EQ(m["fields"].value("facility", ""), "1") << m.dump();
    }
    EXPECT_TRUE(found) << report["kernel_log"].dump(1);
}
