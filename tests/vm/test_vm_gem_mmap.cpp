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

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "vm_util.hpp"

using nlohmann::json;

namespace nvtrace::vm_test {

const VmResult& vm() {
    const std::string scen = NVTRACE_SCENARIO_DIR;
    static const VmResult result = run_harness(
        NVTRACE_VM_HARNESS, NVTRACE_VM_OUT_DIR, {NVTRACE_VM_NVTRACE_BIN, NVTRACE_VM_SCENARIO_BIN},
        fmt::format("--modules vgem --bin {}:nvtrace --bin {}:scenario-gem-mmap "
                    "--file {}:/scenarios/gem-mmap/scenario.conf --file {}:/scenarios/gem-mmap/path.expect --script {}",
                    shell_quote(NVTRACE_VM_NVTRACE_BIN), shell_quote(NVTRACE_VM_SCENARIO_BIN),
                    shell_quote(scen + "/scenario.conf"), shell_quote(scen + "/path.expect"),
                    shell_quote(NVTRACE_VM_GUEST_SCRIPT)));
    return result;
}

}  // namespace nvtrace::vm_test

using namespace nvtrace::vm_test;

namespace {

std::map<std::string, int> statuses() {
    return handed_back_statuses("statuses.txt");
}

json load(const std::string& name) {
    return handed_back_json(name);
}

class VmGemMmap : public ::testing::Test {
protected:
    void SetUp() override { require_vm(); }
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

// The DRM ioctls of the scenario are decoded in the report (names from the DRM core table and the fd's
// /dev/dri path), each with its return code and the kernel calls it caused, and the summary prints one line each.
TEST_F(VmGemMmap, DrmIoctlsAreNamedWithTheirReturnCodes) {
    const json report = load("report.json");
    ASSERT_TRUE(report.is_object());
    std::map<std::string, int> named;  // name -> how many, on /dev/dri fds
    for (const json& io : report["ioctls"]) {
        // fd paths are polled from /proc every 10 ms, so a short program's /dev/dri fd can be missing (the run of
        // 5613e0c's CI had fd_path null on every ioctl): DRM ioctls are the ones on /dev/dri or named DRM_IOCTL_*.
        const bool on_dri = io["fd_path"].is_string() && io["fd_path"].get<std::string>().rfind("/dev/dri/", 0) == 0;
        const bool drm_name = io["name"].is_string() && io["name"].get<std::string>().rfind("DRM_IOCTL_", 0) == 0;
        if (!on_dri && !drm_name) continue;
        ASSERT_TRUE(io["name"].is_string()) << "unnamed DRM ioctl: " << io.dump();
        const std::string name = io["name"].get<std::string>();
        ++named[name];
        EXPECT_EQ(io["ret"], 0) << io.dump();  // every ioctl of the scenario succeeds (the EINVALs are mmap's)
        if (name == "DRM_IOCTL_MODE_CREATE_DUMB" || name == "DRM_IOCTL_MODE_MAP_DUMB") {
            EXPECT_FALSE(io["calls"].empty()) << "no kernel calls linked: " << io.dump();
        }
    }
    // Two BOs (the one mapped, the one destroyed before its offset is mapped again): two of each.
    EXPECT_GE(named["DRM_IOCTL_VERSION"], 1);
    EXPECT_EQ(named["DRM_IOCTL_MODE_CREATE_DUMB"], 2);
    EXPECT_EQ(named["DRM_IOCTL_MODE_MAP_DUMB"], 2);
    EXPECT_EQ(named["DRM_IOCTL_MODE_DESTROY_DUMB"], 2);
    for (const auto& [name, n] : named)
        EXPECT_EQ(name.rfind("DRM_IOCTL_", 0), 0u) << name << " x" << n;
    // The mmap(2) of the BO is there too: drm_gem_mmap in the mmap-shared phase.
    int mmaps = 0;
    for (const json& c : report["calls"])
        if (c["function"] == "drm_gem_mmap" && c["phase"] == "mmap-shared") ++mmaps;
    EXPECT_EQ(mmaps, 1);
    // The summary's line per ioctl: device, name, ret and the kernel part (docs/run.md).
    const std::string run = handed_back("run.txt").value_or("");
    EXPECT_NE(run.find(" DRM_IOCTL_MODE_CREATE_DUMB ret=0 (kernel: "), std::string::npos) << run;
    EXPECT_NE(run.find(" DRM_IOCTL_MODE_MAP_DUMB ret=0 (kernel: "), std::string::npos) << run;
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
