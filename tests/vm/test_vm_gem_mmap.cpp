// The gem-mmap scenario end to end in a qemu guest running Debian 12's kernel with the real drm, drm_shmem_helper
// and vgem modules (tier 3 of DESIGN.md section 7; harness: tests/vm/vm.sh, how it works: tests/vm/README.md).
//
// One boot serves every test here: the guest (tests/vm/guest/gem_mmap.sh) runs `nvtrace run /scenarios/gem-mmap`
// (function_graph on :mod:vgem plus drm_gem_*, the scenario's expectations checked inside nvtrace), the scenario
// program alone, `nvtrace check` on the capture, `nvtrace scenarios`, and a run traced with :mod:vgem alone.
// The static binaries come from the vm_static_build CTest fixture (tests/vm/CMakeLists.txt).
//
// Skips when the harness says it cannot run on this host (exit status 77), except where CI=true.
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
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int harness_cannot_run = 77;

struct VmResult {
    int harness_status = -1;
    std::string harness_stderr;
    std::string setup_error;
    fs::path out_dir;
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string q(const std::string& word) {
    std::string quoted = "'";
    for (const char c : word)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

VmResult boot_vm() {
    VmResult result;
    result.out_dir = NVTRACE_VM_OUT_DIR;
    for (const char* bin : {NVTRACE_VM_NVTRACE_BIN, NVTRACE_VM_SCENARIO_BIN}) {
        if (!fs::exists(bin)) {
            result.setup_error = fmt::format(
                "static binary {} is missing: run this test through ctest (its fixture vm_static_build builds it)",
                bin);
            return result;
        }
    }
    std::error_code ec;
    fs::create_directories(result.out_dir, ec);
    const fs::path stderr_path = result.out_dir / "harness.stderr";
    const std::string scen = NVTRACE_SCENARIO_DIR;
    const std::string command = fmt::format(
        "{} --out {} --modules vgem --bin {}:nvtrace --bin {}:scenario-gem-mmap "
        "--file {}:/scenarios/gem-mmap/scenario.conf --file {}:/scenarios/gem-mmap/path.expect --script {} 2>{}",
        q(NVTRACE_VM_HARNESS), q(result.out_dir.string()), q(NVTRACE_VM_NVTRACE_BIN), q(NVTRACE_VM_SCENARIO_BIN),
        q(scen + "/scenario.conf"), q(scen + "/path.expect"), q(NVTRACE_VM_GUEST_SCRIPT), q(stderr_path.string()));
    const int status = std::system(command.c_str());
    result.harness_stderr = read_text(stderr_path);
    if (status == -1 || !WIFEXITED(status)) {
        result.setup_error = fmt::format("could not run {} (system() status {})", command, status);
        return result;
    }
    result.harness_status = WEXITSTATUS(status);
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

std::map<std::string, int> statuses() {
    std::map<std::string, int> out;
    std::istringstream in(handed_back("statuses.txt").value_or(""));
    std::string name;
    int status = 0;
    while (in >> name >> status)
        out[name] = status;
    return out;
}

json load(const std::string& name) {
    const auto text = handed_back(name);
    if (!text) {
        ADD_FAILURE() << "the guest handed back no " << name << "; " << console_hint();
        return json{};
    }
    try {
        return json::parse(*text);
    } catch (const json::exception& e) {
        ADD_FAILURE() << name << " does not parse: " << e.what();
        return json{};
    }
}

class VmGemMmap : public ::testing::Test {
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
};

TEST_F(VmGemMmap, ScenarioRunSucceeds) {
    EXPECT_EQ(vm().harness_status, 0) << vm().harness_stderr;
    auto s = statuses();
    ASSERT_TRUE(s.count("run")) << console_hint();
    EXPECT_EQ(s["run"], 0) << handed_back("run.txt").value_or("");
}

// The headline: every documented fact of scenarios/gem-mmap/path.expect holds in a real 6.1 kernel.
TEST_F(VmGemMmap, EveryCheckPasses) {
    const json report = load("report.json");
    ASSERT_TRUE(report.is_object());
    ASSERT_TRUE(report.contains("checks") && report["checks"].is_array());
    std::set<std::string> ids;
    for (const json& c : report["checks"]) {
        ids.insert(c.value("id", ""));
        EXPECT_EQ(c.value("result", ""), "pass")
            << c.value("id", "") << "\n  seen: " << c.value("evidence", "") << "\n  why:  " << c.value("why", "");
    }
    // program-exit plus the 16 checks of path.expect: none may go missing silently.
    EXPECT_EQ(report["checks"].size(), 17u);
    for (const char* id : {"program-exit", "mmap-path", "pages-pinned-at-mmap", "over-long-einval", "middle-einval",
                           "private-einval", "offset-0-einval", "other-file-eacces", "closed-bo-einval"})
        EXPECT_TRUE(ids.count(id)) << id;
    EXPECT_EQ(report["source"].value("scenario", ""), "gem-mmap");
    EXPECT_EQ(report["completeness"].value("complete", false), true) << report["completeness"].dump(1);
}

TEST_F(VmGemMmap, ProgramAloneIsValidTapWithEveryTestOk) {
    EXPECT_EQ(statuses()["direct"], 0);
    const std::string tap = handed_back("tap.txt").value_or("");
    EXPECT_NE(tap.find("1..14\n"), std::string::npos) << tap;
    int ok = 0;
    std::istringstream in(tap);
    for (std::string line; std::getline(in, line);) {
        EXPECT_EQ(line.rfind("not ok", 0), std::string::npos) << line;
        ok += line.rfind("ok ", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(ok, 14) << tap;
}

TEST_F(VmGemMmap, OfflineCheckAgreesWithTheRun) {
    EXPECT_EQ(statuses()["check"], 0) << handed_back("check.txt").value_or("");
    // `nvtrace check` has no program-exit check: the 16 of path.expect.
    EXPECT_NE(handed_back("check.txt").value_or("").find("checks: 16 pass, 0 fail, 0 inconclusive"), std::string::npos)
        << handed_back("check.txt").value_or("");
}

TEST_F(VmGemMmap, ScenariosListsGemMmapWithItsRequirements) {
    EXPECT_EQ(statuses()["scenarios"], 0);
    const std::string text = handed_back("scenarios.txt").value_or("");
    EXPECT_NE(text.find("gem-mmap"), std::string::npos) << text;
    EXPECT_NE(text.find("module vgem"), std::string::npos) << text;
    EXPECT_NE(text.find("/bin/scenario-gem-mmap"), std::string::npos) << text;
}

TEST_F(VmGemMmap, TopLevelTracefsStateIsRestored) {
    const auto before = handed_back("tracefs-before.txt");
    ASSERT_TRUE(before) << console_hint();
    EXPECT_EQ(handed_back("tracefs-after.txt").value_or("<missing>"), *before);
    EXPECT_EQ(handed_back("tracefs-after-all.txt").value_or("<missing>"), *before);
}

// What the kernel actually does (ci-environment.md 8.6): with :mod:vgem alone, vgem shows up when the BO is
// created, but nothing of vgem runs under mmap(2) or the page faults.
TEST_F(VmGemMmap, VgemFilterAloneShowsNoMmapActivity) {
    EXPECT_EQ(statuses()["vgem-only"], 0);
    const json report = load("report-vgem-only.json");
    ASSERT_TRUE(report.is_object());
    std::map<std::string, int> by_phase;
    for (const json& c : report["calls"])
        ++by_phase[c["phase"].is_string() ? c["phase"].get<std::string>() : "-"];
    EXPECT_GT(by_phase["create"], 0) << "vgem_gem_create_object should be traced when the BO is created";
    for (const char* p : {"mmap-shared", "mmap-again", "mmap-private", "mmap-over-long"})
        EXPECT_EQ(by_phase[p], 0) << p;
}

}  // namespace
