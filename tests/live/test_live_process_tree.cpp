// Tier 2: the traced program is a process tree (docs/run.md "Processes"). What it leaves running is ended
// before the instance is removed, whatever ends the run (exit, --timeout, a signal to nvtrace), and
// `nvtrace cleanup` ends what a SIGKILLed nvtrace left. Also the capture directory and --expect rules of
// `nvtrace run` (docs/run.md "Output"). Each test uses its own `sleep N` (N unique) to find its processes.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;
namespace fs = std::filesystem;

namespace {

// Pids whose command line is exactly `cmdline` (arguments joined by spaces). Zombies have none.
std::vector<pid_t> pids_running(const std::string& cmdline) {
    std::vector<pid_t> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 0) continue;
        std::string c = slurp(std::string("/proc/") + e->d_name + "/cmdline");
        while (!c.empty() && c.back() == '\0')
            c.pop_back();
        for (char& ch : c)
            if (ch == '\0') ch = ' ';
        if (c == cmdline) out.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
    return out;
}

// Waits (up to 20 s) until a process runs `cmdline`; false when none came.
bool wait_for_process(const std::string& cmdline) {
    for (int i = 0; i < 2000; ++i) {
        if (!pids_running(cmdline).empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// Starts `argv` with stdout/stderr to /dev/null, waits until `cmdline` runs, sends `sig`, returns the exit
// status (128 + signal when killed).
int run_and_signal_when_running(const std::vector<std::string>& argv, const std::string& cmdline, int sig,
                                bool* was_running) {
    pid_t pid = ::fork();
    if (pid == 0) {
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        std::vector<char*> a;
        for (const auto& s : argv)
            a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execv(a[0], a.data());
        ::_exit(127);
    }
    *was_running = wait_for_process(cmdline);
    ::kill(pid, sig);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool ended_contains(const nlohmann::json& meta, const std::string& comm, const std::string& signal) {
    for (const auto& p : meta["descendants_ended"])
        if (p["comm"] == comm && p["signal"] == signal) return true;
    return false;
}

// Shell: waits until the last background job ($!) has exec'ed sleep (its comm says so), so that the test does
// not depend on how fast the job starts.
const std::string kUntilExeced = "until [ \"$(cat /proc/$!/comm)\" = sleep ]; do :; done";

// The checkout root, from the schema path the build passes in (ROOT/docs/report.schema.json).
std::string source_root() {
    return fs::path(REPORT_SCHEMA).parent_path().parent_path().string();
}

}  // namespace

TEST(LiveProcessTree, BackgroundJobOutlivingTheProgramIsEndedAndTheInstanceRemoved) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    // sh is the program under test: it starts a background job and exits once the job runs sleep.
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/bin/sh", "-c", "sleep 3301 & " + kUntilExeced});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(pids_running("sleep 3301").empty()) << "the background job survived the run";
    EXPECT_EQ(tracefs_snapshot(), before) << r.err;
    auto meta = load_json(out + "/meta.json");
    EXPECT_TRUE(ended_contains(meta, "sleep", "SIGTERM")) << meta["descendants_ended"].dump();
    EXPECT_TRUE(meta["descendants_left"].empty());
    EXPECT_TRUE(meta["instance_left"].is_null());
    EXPECT_NE(r.err.find("ended what the program left running"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("process(es) it left running ended"), std::string::npos) << r.out;
}

TEST(LiveProcessTree, TimeoutEndsTheGrandchildNotOnlyTheProgram) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    // "; echo" keeps sh waiting for its child sleep (no exec of the last command).
    Ran r = run({NVTRACE_BIN, "run", "--timeout", "0.5", "--out", out, "--", "/bin/sh", "-c", "sleep 3302; echo"});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(pids_running("sleep 3302").empty()) << "the grandchild survived --timeout";
    EXPECT_EQ(tracefs_snapshot(), before) << r.err;
    auto meta = load_json(out + "/meta.json");
    EXPECT_EQ(meta["timed_out"], true);
    EXPECT_NE(r.out.find("timed out"), std::string::npos) << r.out;
}

TEST(LiveProcessTree, SigintOfNvtraceEndsTheProgramsBackgroundJobToo) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    bool running = false;
    // A non-interactive sh starts background jobs with SIGINT ignored: the forwarded SIGINT cannot end them.
    int rc = run_and_signal_when_running({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c",
                                          "sleep 3303 & " + kUntilExeced + "; sleep 3304"},
                                         "sleep 3304", SIGINT, &running);
    ASSERT_TRUE(running);
    EXPECT_EQ(rc, 128 + SIGINT);
    EXPECT_TRUE(pids_running("sleep 3303").empty()) << "the background job survived SIGINT of nvtrace";
    EXPECT_TRUE(pids_running("sleep 3304").empty());
    EXPECT_EQ(tracefs_snapshot(), before);
    auto meta = load_json(out + "/meta.json");
    EXPECT_TRUE(ended_contains(meta, "sleep", "SIGTERM")) << meta["descendants_ended"].dump();
}

TEST(LiveProcessTree, DescendantThatDaemonizesWithSetsidIsStillEnded) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    // The inner sh runs in a new session and leaves its job orphaned: out of the program's process group and
    // parented to nvtrace (child subreaper) instead of init.
    // The program waits until the daemon's job runs sleep (it says so with a file).
    const std::string flag = out + "/daemon-started";
    Ran r = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c",
                 "setsid -f /bin/sh -c 'sleep 3305 & " + kUntilExeced + "; touch " + flag + "'; until [ -e " + flag +
                     " ]; do sleep 0.01; done"});
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(pids_running("sleep 3305").empty()) << "the daemonized descendant survived";
    EXPECT_EQ(tracefs_snapshot(), before) << r.err;
    auto meta = load_json(out + "/meta.json");
    EXPECT_TRUE(ended_contains(meta, "sleep", "SIGTERM")) << meta["descendants_ended"].dump();
}

TEST(LiveProcessTree, CleanupAfterSigkillOfNvtraceEndsTheOrphanedGrandchildAndRemovesTheInstance) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    bool running = false;
    int rc =
        run_and_signal_when_running({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/sh", "-c", "sleep 3306; echo"},
                                    "sleep 3306", SIGKILL, &running);
    ASSERT_TRUE(running);
    EXPECT_EQ(rc, 128 + SIGKILL);
    // sh dies with nvtrace (PDEATHSIG); its child holds the instance's trace_marker and keeps it busy.
    Ran c = run({NVTRACE_BIN, "cleanup"});
    EXPECT_EQ(c.rc, 0) << c.out << c.err;
    EXPECT_TRUE(pids_running("sleep 3306").empty()) << c.out;
    EXPECT_EQ(tracefs_snapshot(), before) << c.out;
}

TEST(LiveProcessTree, InstanceHeldOpenByAProcessOutsideTheTreeIsNamedAndTheExitIs3) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    std::string out = temp_dir();
    char err_tpl[] = "/tmp/nvtrace-test-errXXXXXX";
    int efd = ::mkstemp(err_tpl);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(efd, 2);
        ::execl(NVTRACE_BIN, NVTRACE_BIN, "run", "-q", "--out", out.c_str(), "--", "/bin/sleep", "1", nullptr);
        ::_exit(127);
    }
    // This test process is outside the program's tree: it opens the instance's trace_marker itself.
    const std::string marker = kTracing + "/instances/nvtrace-" + std::to_string(pid) + "/trace_marker";
    int held = -1;
    for (int i = 0; i < 2000 && held < 0; ++i) {
        held = ::open(marker.c_str(), O_WRONLY | O_CLOEXEC);
        if (held < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    std::string err = slurp(err_tpl);
    ::close(efd);
    ::unlink(err_tpl);
    if (held >= 0) ::close(held);
    ASSERT_GE(held, 0) << "the instance never appeared";
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 3) << err;
    const std::string who = "held open by pid " + std::to_string(::getpid()) + " (";
    EXPECT_NE(err.find("cannot remove instance nvtrace-" + std::to_string(pid) + ": Device or resource busy"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find(who), std::string::npos) << err;
    auto meta = load_json(out + "/meta.json");
    EXPECT_NE(meta["instance_left"].get<std::string>().find(who), std::string::npos);
    // Once the holder is gone, cleanup removes it.
    Ran c = run({NVTRACE_BIN, "cleanup"});
    EXPECT_EQ(c.rc, 0) << c.out << c.err;
    EXPECT_EQ(tracefs_snapshot(), before) << c.out;
}

TEST(LiveRunOutput, ConsecutiveDefaultRunsGetDistinctCaptureDirectoriesAndNamesAreSanitized) {
    REQUIRE_LIVE();
    std::string cwd = temp_dir();
    fs::create_directories(cwd + "/bin");
    fs::create_symlink("/bin/echo", cwd + "/bin/odd\nname");
    // A launcher shell only to run nvtrace in `cwd` (runs/ is relative to it).
    std::string script = "cd '" + cwd + "' && for i in 1 2 3; do '" + std::string(NVTRACE_BIN) +
                         "' run -q -- /bin/echo run$i || exit 1; done && '" + NVTRACE_BIN +
                         "' run -q -- ./bin/odd'\n'name";
    Ran r = run({"/bin/sh", "-c", script});
    ASSERT_EQ(r.rc, 0) << r.err;
    std::set<std::string> seen;
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(cwd + "/runs")) {
        std::string name = e.path().filename().string();
        EXPECT_EQ(name.find('\n'), std::string::npos) << "a newline in " << name;
        dirs.push_back(e.path().string());
        auto meta = load_json(e.path().string() + "/meta.json");
        if (meta["command"][0] == "/bin/echo") seen.insert(meta["command"][1].get<std::string>());
    }
    EXPECT_EQ(dirs.size(), 4u);
    EXPECT_EQ(seen, (std::set<std::string>{"run1", "run2", "run3"})) << "a capture was overwritten";
}

TEST(LiveRunOutput, OutIntoAnExistingCaptureIsRefusedAndTheCaptureKept) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran first = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/echo", "first"});
    ASSERT_EQ(first.rc, 0) << first.err;
    std::string meta = slurp(out + "/meta.json");
    Ran second = run({NVTRACE_BIN, "run", "-q", "--out", out, "--", "/bin/echo", "second"});
    EXPECT_EQ(second.rc, 2) << second.err;
    EXPECT_NE(second.err.find("already holds a capture"), std::string::npos) << second.err;
    EXPECT_EQ(slurp(out + "/meta.json"), meta);
}

TEST(LiveRunOutput, ExpectAcceptsAScenarioDirectoryLikeCheck) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran r = run(
        {NVTRACE_BIN, "run", "-q", "--out", out, "--expect", source_root() + "/scenarios/gem-mmap", "--", "/bin/true"});
    // /bin/true does none of gem-mmap's path: checks fail or are inconclusive, but they ran.
    auto rep = load_json(out + "/report.json");
    EXPECT_FALSE(rep["checks"].empty()) << r.err;
    EXPECT_NE(rep["source"]["expectations"].get<std::string>().find("path.expect"), std::string::npos);
}

TEST(LiveRunOutput, ExpectWithoutAnyCheckIsAnErrorNotASilentPass) {
    REQUIRE_LIVE();
    std::string dir = temp_dir();
    std::ofstream(dir + "/empty.expect") << "# nothing\n";
    Ran r =
        run({NVTRACE_BIN, "run", "-q", "--out", dir + "/out", "--expect", dir + "/empty.expect", "--", "/bin/true"});
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("holds no checks"), std::string::npos) << r.err;
    Ran d = run({NVTRACE_BIN, "run", "-q", "--out", dir + "/out2", "--expect", dir, "--", "/bin/true"});
    EXPECT_EQ(d.rc, 2) << d.err;
    EXPECT_NE(d.err.find("not a scenario"), std::string::npos) << d.err;
}

TEST(LiveRunOutput, ProgressLinesGoToStderrAndTimedOutIsAlwaysRecorded) {
    REQUIRE_LIVE();
    std::string out = temp_dir();
    Ran r = run({NVTRACE_BIN, "run", "--out", out, "--", "/bin/true"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("nvtrace: tracing /bin/true; capture directory " + out), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nvtrace: program ended (exit 0)"), std::string::npos) << r.err;
    EXPECT_EQ(load_json(out + "/meta.json")["timed_out"], false);
    std::string quiet = temp_dir();
    Ran q = run({NVTRACE_BIN, "run", "-q", "--out", quiet, "--", "/bin/true"});
    EXPECT_EQ(q.rc, 0);
    EXPECT_EQ(q.err, "");
}
