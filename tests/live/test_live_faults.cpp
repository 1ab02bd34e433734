// Fault injection on the live tier: nvtrace killed at many moments with SIGINT, SIGTERM or SIGKILL
// (then `nvtrace cleanup`), programs that crash or hang. After each, the top-level tracefs files and the
// instance list must equal the snapshot from before. The moments come from a fixed-seed generator, so the
// sequence of kills is the same on every run.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "live_util.hpp"
#include "uprobe_util.hpp"

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

// The same with uprobes armed (--uprobe on libc's getpid and getppid, hit in a loop): uprobe_events is global, so
// after SIGINT, SIGTERM, SIGHUP, or SIGKILL and `nvtrace cleanup`, it must be as before, besides the tracefs state.
TEST(LiveFaults, RunsWithUprobesKilledAtRandomMomentsLeaveUprobeEventsAsBefore) {
    REQUIRE_LIVE();
    if (::access((kTracing + "/uprobe_events").c_str(), F_OK) != 0) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << "no uprobe_events (CONFIG_UPROBE_EVENTS)";
        GTEST_SKIP() << "no uprobe_events (CONFIG_UPROBE_EVENTS)";
    }
    auto before = tracefs_snapshot();
    const std::string probes_before = uprobe_events_snapshot();
    std::mt19937 rng(20261201);
    std::uniform_int_distribution<int> delay_ms(0, 400);
    const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGKILL};
    int killed_hard = 0, saw_probes = 0;
    for (int i = 0; i < 24; ++i) {
        int sig = signals[i % 4];
        int ms = delay_ms(rng);
        std::string out = temp_dir();
        pid_t nv = -1;
        Ran r =
            run_with({NVTRACE_BIN, "run", "-q", "--uprobe", "libc:getpid", "--uprobe", "libc:getppid", "--out", out,
                      "--", GETPID_CALLS_BIN, "2000000"},
                     [&](pid_t pid) {
                         nv = pid;
                         std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                         // Whether the probes existed when the signal came (they do from the plan's end on).
                         if (nvtrace_uprobe_lines().find("nvtrace_" + std::to_string(pid) + "/") != std::string::npos)
                             ++saw_probes;
                         ::kill(pid, sig);
                     });
        if (sig == SIGKILL) {
            ++killed_hard;
            EXPECT_EQ(r.rc, 128 + SIGKILL) << "run " << i;
            Ran c = run({NVTRACE_BIN, "cleanup"});
            EXPECT_EQ(c.rc, 0) << "run " << i << ": " << c.out << c.err;
        } else {
            EXPECT_EQ(r.rc, 128 + sig) << "run " << i << " after " << ms << " ms: " << r.err;
        }
        EXPECT_EQ(uprobe_events_snapshot(), probes_before)
            << "run " << i << ": signal " << sig << " after " << ms << " ms (nvtrace pid " << nv << ")";
        auto after = tracefs_snapshot();
        EXPECT_EQ(after, before) << "run " << i << ": signal " << sig << " after " << ms << " ms";
        if (after != before || uprobe_events_snapshot() != probes_before) break;
    }
    EXPECT_EQ(killed_hard, 6);
    EXPECT_GE(saw_probes, 6) << "the signals came before the probes were armed: the test checks nothing about them";
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
    std::string out = temp_dir();
    // Start a long run in the background, clean up while it runs, then stop it.
    pid_t pid = start_sleeping_run(NVTRACE_BIN, out);
    ASSERT_GT(pid, 0) << "the run never created its instance";
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

// A run on a full file system (a 40 MB tmpfs): nvtrace failed while saving the event formats and
// removed the whole directory with the ring-buffer pages it had recorded. They are kept now, and said to be.
TEST(LiveFaults, FullDiskKeepsTheRecordedPagesInsteadOfDeletingThem) {
    REQUIRE_LIVE();
    std::string mnt = temp_dir();
    Ran m = run({"mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt});
    ASSERT_EQ(m.rc, 0) << m.err;
    auto before = tracefs_snapshot();
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", mnt + "/cap", "--", FIONREAD_LOOP_BIN, "100000"});
    EXPECT_EQ(tracefs_snapshot(), before);
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("raw ring-buffer pages"), std::string::npos) << r.err;
    struct stat sb {};
    ASSERT_EQ(::stat((mnt + "/cap/raw/instance/cpu0").c_str(), &sb), 0) << "the pages were deleted";
    std::uint64_t bytes = static_cast<std::uint64_t>(sb.st_size);
    if (::stat((mnt + "/cap/raw/instance/cpu1").c_str(), &sb) == 0) bytes += static_cast<std::uint64_t>(sb.st_size);
    EXPECT_GT(bytes, 0u);
    run({"umount", mnt});
    ::rmdir(mnt.c_str());
}

// The capture directory removed while the program ran: the report said 0 ioctls and complete. The
// page files that cannot be read back are data lost: the data_loss diagnostic pages_not_read says so.
TEST(LiveFaults, PageFilesRemovedDuringTheRunMakeTheReportIncomplete) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c",
                 std::string(FIONREAD_LOOP_BIN) + " 2000 && rm -rf " + out + "/raw"});
    ASSERT_EQ(r.rc, 0) << r.err;
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_EQ(rep["completeness"]["complete"], false) << rep["completeness"].dump(1);
    bool named = false;
    for (const auto& d : rep["completeness"]["diagnostics"])
        named = named || (d["name"] == "pages_not_read" && d["severity"] == "data_loss");
    EXPECT_TRUE(named) << rep["completeness"].dump(1);
    std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

// An --out directory held a dangling report.json symbolic link: the run was accepted and wrote its
// report through the link, wherever it pointed. Such a directory holds a capture's name: refused.
TEST(LiveFaults, OutDirectoryWithADanglingReportLinkIsRefused) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    ASSERT_EQ(::symlink((out + "/elsewhere.json").c_str(), (out + "/report.json").c_str()), 0);
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("already holds a capture (report.json exists)"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out + "/elsewhere.json"));
    EXPECT_FALSE(std::filesystem::exists(out + "/raw"));
    std::filesystem::remove_all(out);
}

// nvtrace's output piped into `head -1`: the next progress line on the closed pipe killed nvtrace
// (SIGPIPE) after the program ended and before meta.json and report.json were written; the capture was lost.
TEST(LiveFaults, ClosedStderrPipeStillWritesTheCapture) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    Ran r = run({"/bin/sh", "-c",
                 std::string(NVTRACE_BIN) + " run --out " + out + " -- " + FIONREAD_LOOP_BIN + " 5000 2>&1 | head -1"});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("nvtrace: tracing"), std::string::npos) << r.out;
    ASSERT_TRUE(std::filesystem::exists(out + "/meta.json"));
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_GE(rep["ioctls"].size(), 5000u);
    EXPECT_EQ(rep["completeness"]["complete"], true);
    std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

// SIGTERM sent to nvtrace 0.1 s after the program ended, while the report was being built: nvtrace
// ignored it and exited 0 (the signals were discarded after the run). It now finishes saving the capture and
// exits 128 + 15, with the whole report.
TEST(LiveFaults, SigtermWhileTheReportIsWrittenSavesItAndExits143) {
    REQUIRE_LIVE();
    std::string dir = temp_dir();
    std::string out = dir + "/cap", done = dir + "/done";
    Ran r = run_with({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c",
                      std::string(FIONREAD_LOOP_BIN) + " 300000 && touch " + done},
                     [&](pid_t pid) {
                         // The program ended (its last act made `done`): nvtrace is decoding or writing now.
                         for (int i = 0; i < 30000 && ::access(done.c_str(), F_OK) != 0; ++i)
                             std::this_thread::sleep_for(std::chrono::milliseconds(1));
                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                         ::kill(pid, SIGTERM);
                     });
    EXPECT_EQ(r.rc, 128 + SIGTERM) << r.err;
    ASSERT_TRUE(std::filesystem::exists(out + "/meta.json")) << r.err;
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_GE(rep["ioctls"].size(), 300000u);
    // The program was not stopped by it: the capture is what it would have been (run.md).
    auto meta = load_json(out + "/meta.json");
    EXPECT_TRUE(meta.contains("interrupted_by"));
    EXPECT_TRUE(meta["interrupted_by"].is_null());
    EXPECT_EQ(meta["exit_code"], 0);
    std::filesystem::remove_all(dir);
}

// Ctrl-\ (SIGQUIT) ended nvtrace at once with its default action (exit 131, "Quit"): the instance stayed and the
// capture directory held only raw/. It is handled as SIGTERM is: passed on, the capture saved, 128 + 3.
TEST(LiveFaults, SigquitSavesTheCaptureAndRemovesTheInstance) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir() + "/cap";
    pid_t pid = start_sleeping_run(NVTRACE_BIN, out);
    ASSERT_GT(pid, 0) << "the run never created its instance";
    ::usleep(200 * 1000);
    ::kill(pid, SIGQUIT);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st)) << "nvtrace died of signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 128 + SIGQUIT);
    auto meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["interrupted_by"], SIGQUIT);
    EXPECT_TRUE(std::filesystem::exists(out + "/report.json"));
    EXPECT_EQ(tracefs_snapshot(), before);
    std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

// meta.json said how the program ended (signal 2) but not that nvtrace had been interrupted and passed the signal
// on (Ctrl-C): `interrupted_by` says it.
TEST(LiveFaults, MetaSaysWhichSignalInterruptedTheRun) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir() + "/cap";
    pid_t pid = start_sleeping_run(NVTRACE_BIN, out);
    ASSERT_GT(pid, 0) << "the run never created its instance";
    ::usleep(200 * 1000);  // the program started after the instance was made
    ::kill(pid, SIGINT);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 128 + SIGINT);
    auto meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["interrupted_by"], SIGINT);
    EXPECT_EQ(meta["signal"], SIGINT);  // sleep died of the SIGINT nvtrace passed on
    EXPECT_EQ(tracefs_snapshot(), before);
    std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}

// `nvtrace run --json > /dev/full` printed "cannot write the report to stdout" and exited 0. The
// capture itself is saved; the exit status says the output was lost.
TEST(LiveFaults, JsonOntoAFullStdoutIsExit3WithTheCaptureSaved) {
    REQUIRE_LIVE();
    std::string out = temp_dir() + "/cap";
    Ran r = run(
        {"/bin/sh", "-c",
         std::string(NVTRACE_BIN) + " run -q --json --out " + out + " -- " + FIONREAD_LOOP_BIN + " 3000 >/dev/full"});
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("cannot write the report to standard output"), std::string::npos) << r.err;
    nlohmann::json rep = load_json(out + "/report.json");
    EXPECT_GE(rep["ioctls"].size(), 3000u);
    std::filesystem::remove_all(std::filesystem::path(out).parent_path());
}
