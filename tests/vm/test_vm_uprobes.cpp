// The generic `--uprobe LIB:SYMBOL` in a qemu guest running Debian 12's 6.1 kernel (tier 3 of DESIGN.md section 7;
// harness: tests/vm/vm.sh, how it works: tests/vm/README.md): `nvtrace run --uprobe libc:getpid` of
// tests/live/getpid_calls.c, a dynamically linked program, with the host's loader and libc.so.6 copied into the
// guest (it has no other). What the live tier checks on the CI host's kernel, here on the distribution kernel the
// function_graph tests use: every call recorded as an API call with its result, and uprobe_events and the top-level
// tracefs state left as they were.
//
// Skips when the harness says it cannot run on this host (exit status 77), except where CI=true.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "vm_util.hpp"

using nlohmann::json;

namespace nvtrace::vm_test {

const VmResult& vm() {
    static const VmResult result = run_harness(
        NVTRACE_VM_HARNESS, NVTRACE_VM_OUT_DIR, {NVTRACE_VM_NVTRACE_BIN},
        fmt::format("--bin {}:nvtrace --file {}:/data/getpid_calls --file {}:/lib/x86_64-linux-gnu/libc.so.6 "
                    "--file {}:/lib64/ld-linux-x86-64.so.2 --script {}",
                    shell_quote(NVTRACE_VM_NVTRACE_BIN), shell_quote(NVTRACE_VM_GETPID_CALLS),
                    shell_quote(NVTRACE_VM_LIBC), shell_quote(NVTRACE_VM_LOADER),
                    shell_quote(NVTRACE_VM_GUEST_SCRIPT)));
    return result;
}

}  // namespace nvtrace::vm_test

using namespace nvtrace::vm_test;

namespace {

class VmUprobes : public ::testing::Test {
protected:
    void SetUp() override { require_vm(); }
};

TEST_F(VmUprobes, ProgramRunsAloneAndUnderNvtrace) {
    EXPECT_EQ(vm().harness_status, 0) << vm().harness_stderr;
    auto s = handed_back_statuses("statuses.txt");
    ASSERT_TRUE(s.count("direct")) << console_hint();
    EXPECT_EQ(s["direct"], 0) << handed_back("direct.txt").value_or("");
    EXPECT_EQ(s["run"], 0) << handed_back("run.txt").value_or("");
}

// Five calls of getpid by the program: five API calls, each returning the program's pid (getpid_calls prints it).
TEST_F(VmUprobes, EveryGetpidCallIsAnApiCallWithItsResult) {
    const json report = handed_back_json("report.json");
    ASSERT_TRUE(report.is_object());
    const std::string out = handed_back("run.txt").value_or("");
    const auto at = out.find("pid=");
    ASSERT_NE(at, std::string::npos) << out;
    const std::string pid = out.substr(at + 4, out.find(' ', at) - at - 4);
    int calls = 0;
    for (const json& a : report.value("api_calls", json::array())) {
        if (a.value("function", "") != "getpid") continue;
        ++calls;
        EXPECT_EQ(a.value("api", ""), "user") << a.dump();
        EXPECT_NE(a.value("library", "").find("libc.so.6"), std::string::npos) << a.dump();
        EXPECT_EQ(a.value("result", json()).dump(), pid) << a.dump();
        EXPECT_TRUE(a.value("exit_ns", json()).is_number()) << a.dump();
    }
    EXPECT_EQ(calls, 5) << report.value("api_calls", json::array()).dump(1);
    const json meta = handed_back_json("meta.json");
    ASSERT_TRUE(meta.contains("uprobes") && meta["uprobes"].is_array());
    EXPECT_EQ(meta["uprobes"].size(), 1u) << meta["uprobes"].dump(1);
}

// uprobe_events is global: nvtrace removes exactly the probes it created.
TEST_F(VmUprobes, UprobeEventsAndTracefsAreLeftAsFound) {
    const auto before = handed_back("uprobes-before.txt"), after = handed_back("uprobes-after.txt");
    ASSERT_TRUE(before && after) << console_hint();
    EXPECT_EQ(*after, *before);
    EXPECT_EQ(handed_back("tracefs-after.txt").value_or("?"), handed_back("tracefs-before.txt").value_or(""));
}

}  // namespace
