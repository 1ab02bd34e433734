// Fault injection on the live tier: nvtrace killed at many moments with SIGINT, SIGTERM or SIGKILL
// (then `nvtrace cleanup`), programs that crash or hang. After each, the top-level tracefs files and the
// instance list must equal the snapshot from before. The moments come from a fixed-seed generator, so the
// sequence of kills is the same on every run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "live_util.hpp"

using namespace nvtrace::live;

TEST(LiveFaults, FiftyRunsKilledAtRandomMomentsLeaveNoTraceAfterCleanup) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::mt19937 rng(20261129);
    std::uniform_int_distribution<int> delay_ms(0, 250);
    const int signals[] = {SIGINT, SIGTERM, SIGKILL};
    int killed_hard = 0;
    for (int i = 0; i < 50; ++i) {
        int sig = signals[i % 3];
        int ms = delay_ms(rng);
        std::string out = temp_dir();
        Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", FIONREAD_LOOP_BIN, "0"}, nullptr, ms, sig);
        if (sig == SIGKILL) {
            ++killed_hard;
            EXPECT_EQ(r.rc, 128 + SIGKILL) << "run " << i;
            Ran c = run({NVTRACE_BIN, "cleanup"});
            EXPECT_EQ(c.rc, 0) << "run " << i << ": " << c.out << c.err;
        } else {
            // Killed before the capture started, nvtrace dies of the signal; after, it exits 128+sig.
            EXPECT_EQ(r.rc, 128 + sig) << "run " << i << " after " << ms << " ms: " << r.err;
        }
        auto after = tracefs_snapshot();
        EXPECT_EQ(after, before) << "run " << i << ": signal " << sig << " after " << ms << " ms";
        if (after != before) break;
    }
    EXPECT_GT(killed_hard, 10);
}

TEST(LiveFaults, CrashingProgramIsRecordedAndStateRestored) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    // sh is only the program under test here: it kills itself with SIGSEGV.
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c", "kill -SEGV $$"});
    EXPECT_EQ(r.rc, 0) << r.err;
    auto meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["signal"], SIGSEGV);
    EXPECT_TRUE(meta["exit_code"].is_null());
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveFaults, CleanupKeepsTheInstanceOfARunningNvtrace) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    pid_t pid = -1;
    std::string out = temp_dir();
    // Start a long run in the background, clean up while it runs, then stop it.
    pid = ::fork();
    if (pid == 0) {
        ::execl(NVTRACE_BIN, NVTRACE_BIN, "run", "-q", "--out", out.c_str(), "--", "sleep", "60", nullptr);
        ::_exit(127);
    }
    // Wait for the run's instance rather than a fixed time: under load a fixed 500 ms was too short.
    const std::string inst = kTracing + "/instances/nvtrace-" + std::to_string(pid);
    for (int i = 0; i < 1200 && ::access(inst.c_str(), F_OK) != 0; ++i)
        ::usleep(50 * 1000);
    if (::access(inst.c_str(), F_OK) != 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        FAIL() << "the run never created " << inst;
    }
    Ran c = run({NVTRACE_BIN, "cleanup"});
    EXPECT_EQ(c.rc, 0) << c.err;
    EXPECT_NE(c.out.find("kept (owner still running): instance nvtrace-" + std::to_string(pid)), std::string::npos)
        << c.out;
    EXPECT_NE(tracefs_snapshot()["instances/"].find("nvtrace-" + std::to_string(pid)), std::string::npos);
    ::kill(pid, SIGTERM);
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_EQ(tracefs_snapshot(), before);
}
