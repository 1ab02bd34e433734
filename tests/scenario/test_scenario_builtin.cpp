// Module presence and the graph plan of tracer/scenario.hpp on stand-ins for /sys and /proc. A built-in driver has
// /sys/module/M without initstate (kernel/params.c makes it for built-in modules with parameters or a version) and,
// for nvidia, /proc/driver/nvidia (nv.c makes it at init, built in or loaded); available_tracers is the kernel's
// list of tracers (Documentation/trace/ftrace.rst).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "scenario.hpp"

namespace fs = std::filesystem;
using namespace nvtrace::tracer;

namespace {

struct StandIn {
    fs::path root;
    StandIn() {
        root = fs::temp_directory_path() / ("nvtrace-standin-" + std::to_string(::getpid()));
        fs::remove_all(root);
        fs::create_directories(root / "sys" / "module");
        fs::create_directories(root / "proc");
        ::setenv("NVTRACE_TEST_SYSFS_ROOT", (root / "sys").c_str(), 1);
        ::setenv("NVTRACE_TEST_PROCFS_ROOT", (root / "proc").c_str(), 1);
    }
    ~StandIn() {
        ::unsetenv("NVTRACE_TEST_SYSFS_ROOT");
        ::unsetenv("NVTRACE_TEST_PROCFS_ROOT");
        fs::remove_all(root);
    }
    void write(const fs::path& rel, const std::string& text) const {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << text;
    }
    void dir(const fs::path& rel) const { fs::create_directories(root / rel); }
};

Scenario needs(std::initializer_list<const char*> modules) {
    Scenario s;
    s.name = "standin";
    s.program = "scenario-standin";
    for (const char* m : modules)
        s.requires_.push_back(std::string("module ") + m);
    return s;
}

}  // namespace

TEST(ScenarioModules, LoadedBuiltInAndAbsentAreTold) {
    StandIn t;
    t.write("sys/module/nvidia_uvm/initstate", "live\n");
    t.dir("sys/module/nvidia/parameters");  // built in: no initstate
    t.write("sys/module/vgem/initstate", "going\n");
    EXPECT_EQ(module_state("nvidia_uvm"), ModuleState::live);
    EXPECT_EQ(module_state("nvidia-uvm"), ModuleState::live);
    EXPECT_EQ(module_state("nvidia"), ModuleState::builtin);
    EXPECT_EQ(module_state("vgem"), ModuleState::absent);  // being unloaded
    EXPECT_EQ(module_state("null_blk"), ModuleState::absent);
}

TEST(ScenarioModules, ProcDriverNvidiaAloneMeansABuiltInDriver) {
    StandIn t;
    EXPECT_EQ(module_state("nvidia"), ModuleState::absent);
    t.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04\n");
    EXPECT_EQ(module_state("nvidia"), ModuleState::builtin);
    EXPECT_EQ(module_state("nvidia_uvm"), ModuleState::absent);  // no /proc entry of its own
}

// Regression: `requires module nvidia` accepted only /sys/module/nvidia/initstate, so a kernel with the driver built
// in refused every CUDA scenario before anything ran.
TEST(ScenarioModules, ABuiltInDriverMeetsRequiresModule) {
    StandIn t;
    t.dir("sys/module/nvidia");
    t.dir("sys/module/nvidia_uvm");
    EXPECT_EQ(unmet_requirement(needs({"nvidia", "nvidia_uvm"})), std::nullopt);
    auto why = unmet_requirement(needs({"nvidia", "vgem"}));
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("module vgem is not loaded nor built in"), std::string::npos) << *why;
}

TEST(ScenarioGraph, NoFunctionGraphInAvailableTracersMeansNoGraphWithTheReason) {
    StandIn t;
    t.write("sys/module/nvidia/initstate", "live\n");
    t.write("sys/kernel/tracing/available_tracers", "function nop\n");  // the CI kernel's list
    GraphPlan p = plan_graph({"nvidia", "nvidia_uvm"}, false);
    ASSERT_TRUE(p.no_graph_reason.has_value());
    EXPECT_EQ(p.no_graph_reason->rfind("function_graph not available: ", 0), 0u) << *p.no_graph_reason;
    EXPECT_NE(p.no_graph_reason->find("available_tracers: function nop"), std::string::npos) << *p.no_graph_reason;
    EXPECT_TRUE(p.modules.empty());
}

TEST(ScenarioGraph, ABuiltInModuleIsDroppedFromModAndTheRestIsTraced) {
    StandIn t;
    t.write("sys/kernel/tracing/available_tracers", "function_graph function nop\n");
    t.dir("sys/module/nvidia");
    t.write("sys/module/nvidia_uvm/initstate", "live\n");
    GraphPlan p = plan_graph({"nvidia", "nvidia_uvm"}, false);
    EXPECT_FALSE(p.no_graph_reason.has_value());
    EXPECT_EQ(p.modules, std::vector<std::string>{"nvidia_uvm"});
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_NE(p.notes[0].find("nvidia is built into the kernel"), std::string::npos) << p.notes[0];
    // Both built in: nothing :mod: can select, so no graph, and the reason says so.
    fs::remove(t.root / "sys/module/nvidia_uvm/initstate");
    p = plan_graph({"nvidia", "nvidia_uvm"}, false);
    ASSERT_TRUE(p.no_graph_reason.has_value());
    EXPECT_NE(p.no_graph_reason->find("nvidia and nvidia_uvm are built into the kernel"), std::string::npos)
        << *p.no_graph_reason;
    // A --filter keeps the graph: those functions can still be selected by name.
    EXPECT_FALSE(plan_graph({"nvidia"}, true).no_graph_reason.has_value());
}

TEST(ScenarioGraph, NoGraphAskedNoReason) {
    StandIn t;
    t.write("sys/kernel/tracing/available_tracers", "nop\n");
    EXPECT_FALSE(plan_graph({}, false).no_graph_reason.has_value());
}
