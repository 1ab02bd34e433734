// Tier 2: `nvtrace run` on this machine's real kernel (tracepoints, instances, set_event_pid, /dev/kmsg).
// Needs root and tracefs; skips with the reason elsewhere, and fails instead of skipping when CI=true.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

TEST(LiveRun, CountsExactlyTheTracedProgramsIoctlsAndItsKernelLogLine) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();

    // A second process doing its own ioctls the whole time: none of them may appear.
    pid_t other = ::fork();
    if (other == 0) {
        ::execl(FIONREAD_LOOP_BIN, FIONREAD_LOOP_BIN, "0", nullptr);
        ::_exit(127);
    }
    const std::string xid = "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.";
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", FIONREAD_LOOP_BIN, "1000", xid});
    ::kill(other, SIGKILL);
    ::waitpid(other, nullptr, 0);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;

    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_EQ(rep["schema"], "nvtrace.report/1");
    int pid = rep["source"]["pid"];
    std::size_t fionread = 0, from_child = 0, from_other = 0;
    for (const auto& io : rep["ioctls"]) {
        if (io["pid"] == pid) ++from_child;
        if (io["pid"] == other) ++from_other;
        if (io["pid"] == pid && io["name"] == "FIONREAD") {
            ++fionread;
            EXPECT_EQ(io["ret"], 0);
        }
    }
    EXPECT_EQ(fionread, 1000u);
    EXPECT_EQ(from_other, 0u);
    EXPECT_EQ(from_child, rep["ioctls"].size()) << "every recorded ioctl belongs to the traced program";

    bool found = false;
    for (const auto& m : rep["kernel_log"]) {
        if (m["text"] != xid) continue;
        found = true;
        EXPECT_EQ(m["kind"], "xid");
        EXPECT_EQ(m["fields"]["xid"], "79");
        EXPECT_EQ(m["level"], 3);
    }
    EXPECT_TRUE(found) << rep["kernel_log"].dump(1);
    EXPECT_EQ(rep["completeness"]["complete"], true) << rep["completeness"].dump(1);
    EXPECT_EQ(rep["completeness"]["overruns"], 0);

    Ran v = run({"python3", VALIDATE_REPORT, REPORT_SCHEMA, out + "/report.json"});
    EXPECT_EQ(v.rc, 0) << v.out << v.err;

    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, ProgramThatCannotBeExecutedIsAUsageErrorAndLeavesNothingBehind) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/nonexistent/program"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/program"), std::string::npos) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, NotRootIsAnEnvironmentError) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
    Ran r =
        run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NVTRACE_BIN, "run", "--", "true"});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("needs root"), std::string::npos) << r.err;
}

TEST(LiveRun, SigintStopsTheProgramRestoresStateAndStillWritesTheReport) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", FIONREAD_LOOP_BIN, "0"}, nullptr, 500, SIGINT);
    EXPECT_EQ(r.rc, 128 + SIGINT) << r.err;
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_GT(rep["ioctls"].size(), 0u);
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, TimeoutStopsAHangingProgram) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--timeout", "0.3", "--out", out, "--", "sleep", "30"});
    EXPECT_EQ(r.rc, 0) << r.err;
    nlohmann::json meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["timed_out"], true);
    EXPECT_EQ(meta["signal"], SIGTERM);
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveRun, FunctionGraphRefusedByTheKernelIsAClearEnvironmentError) {
    REQUIRE_LIVE();
    std::string tracers = slurp(kTracing + "/available_tracers");
    if (tracers.find("function_graph") != std::string::npos)
        GTEST_SKIP() << "this kernel has function_graph; the qemu tier tests --module there";
    auto before = tracefs_snapshot();
    // The tracer is checked before the module: this kernel cannot do function_graph for any module.
    Ran r = run({NVTRACE_BIN, "run", "--module", "nvtrace_no_such_module", "--", "true"});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("function_graph tracer is not available"), std::string::npos) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before);
}
