// Helpers shared by the live tests: requirements, tracefs snapshots, running a command.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace nvtrace::live {

inline const std::string kTracing = "/sys/kernel/tracing";

inline std::string missing_requirement() {
    if (::geteuid() != 0) return "needs root";
    if (::access((kTracing + "/instances").c_str(), W_OK) != 0) return "needs tracefs mounted at " + kTracing;
    if (::access((kTracing + "/events/syscalls/sys_enter_ioctl").c_str(), F_OK) != 0)
        return "needs syscall tracepoints (CONFIG_FTRACE_SYSCALLS)";
    return {};
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "<unreadable>";
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A neutral, tagged line for the tests that write into the host's /dev/kmsg: unique per call (a random UUID from
// /proc/sys/kernel/random/uuid), and nothing a GPU monitor acts on (no "NVRM:", "Xid" or "fallen off the bus":
// tests/live/kmsg_guard.py fails the live suite when one appears). NVRM/Xid lines are classified from files
// (unit tier) and inside the qemu guest (tests/vm), never written here.
inline std::string kmsg_probe_line() {
    std::string uuid = slurp("/proc/sys/kernel/random/uuid");
    while (!uuid.empty() && (uuid.back() == '\n' || uuid.back() == ' '))
        uuid.pop_back();
    return "nvtrace-test: kmsg probe " + uuid;
}

// The parent of `pid` (/proc/PID/stat), -1 when it has ended.
inline pid_t parent_of(pid_t pid) {
    std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    char state = 0;
    int ppid = -1;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
    return ppid;
}

// An instance nvtrace-PID of an nvtrace that is running and was not started by this test process (another
// suite, a user's run): its instance comes and goes on its own, which says nothing about this test's runs. An
// instance whose PID has ended, or that this process started, is kept in the snapshot.
inline bool foreign_live_instance(const std::string& name) {
    const std::string prefix = "nvtrace-";
    if (name.rfind(prefix, 0) != 0) return false;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (!end || *end != '\0' || pid <= 1) return false;
    for (pid_t p = static_cast<pid_t>(pid), hops = 0; p > 1 && hops < 64; p = parent_of(p), ++hops)
        if (p == ::getpid()) return false;
    return parent_of(static_cast<pid_t>(pid)) != -1;
}

// The top-level tracing state a run must leave as it found it (instances of other running nvtrace processes
// left out: foreign_live_instance).
inline std::map<std::string, std::string> tracefs_snapshot() {
    std::map<std::string, std::string> s;
    for (const char* f : {"current_tracer", "tracing_on", "set_event", "set_event_pid", "buffer_size_kb", "trace_clock",
                          "set_ftrace_filter", "set_ftrace_pid", "set_graph_function", "tracing_thresh"})
        s[f] = slurp(kTracing + "/" + f);
    if (DIR* d = ::opendir((kTracing + "/options").c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') s[std::string("options/") + e->d_name] = slurp(kTracing + "/options/" + e->d_name);
        ::closedir(d);
    }
    std::string inst;
    if (DIR* d = ::opendir((kTracing + "/instances").c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.' && !foreign_live_instance(e->d_name)) inst += std::string(e->d_name) + "\n";
        ::closedir(d);
    }
    s["instances/"] = inst;
    return s;
}

// Starts `nvtrace run -q --out OUT -- sleep 60` in the background and waits (up to 60 s, not a fixed time: under
// load 500 ms was too short) until its instance exists. The run's pid, or -1 (the run killed and reaped) when it
// never made its instance.
inline pid_t start_sleeping_run(const char* nvtrace_bin, const std::string& out) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::execl(nvtrace_bin, nvtrace_bin, "run", "-q", "--out", out.c_str(), "--", "sleep", "60", nullptr);
        ::_exit(127);
    }
    const std::string inst = kTracing + "/instances/nvtrace-" + std::to_string(pid);
    for (int i = 0; i < 1200 && ::access(inst.c_str(), F_OK) != 0; ++i)
        ::usleep(50 * 1000);
    if (::access(inst.c_str(), F_OK) == 0) return pid;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
}

struct Ran {
    int rc = -1;
    std::string out, err;
};

// Runs argv with stdout/stderr to files; `while_running(pid)` is called once it started (it may signal it).
inline Ran run_with(const std::vector<std::string>& argv, const std::function<void(pid_t)>& while_running) {
    char out_tpl[] = "/tmp/nvtrace-test-outXXXXXX", err_tpl[] = "/tmp/nvtrace-test-errXXXXXX";
    int ofd = ::mkstemp(out_tpl), efd = ::mkstemp(err_tpl);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(ofd, 1);
        ::dup2(efd, 2);
        std::vector<char*> a;
        for (const auto& s : argv)
            a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execvp(a[0], a.data());
        ::_exit(127);
    }
    if (while_running) while_running(pid);
    int st = 0;
    ::waitpid(pid, &st, 0);
    Ran r;
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(out_tpl);
    r.err = slurp(err_tpl);
    ::close(ofd);
    ::close(efd);
    ::unlink(out_tpl);
    ::unlink(err_tpl);
    return r;
}

inline Ran run(const std::vector<std::string>& argv, pid_t* pid_out = nullptr, int signal_after_ms = 0, int sig = 0) {
    return run_with(argv, [&](pid_t pid) {
        if (pid_out) *pid_out = pid;
        if (signal_after_ms > 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(signal_after_ms));
            ::kill(pid, sig);
        }
    });
}

// The test directories of this process, removed when it ends (NVTRACE_KEEP_TEST_DIRS=1 keeps them to look at):
// every live run used to leave its directories in /tmp, and a day of runs on one machine filled its disk (26 GB).
struct TempDirs {
    std::vector<std::string> made;
    ~TempDirs() {
        if (std::getenv("NVTRACE_KEEP_TEST_DIRS")) return;
        for (const auto& d : made) {
            std::error_code ec;
            std::filesystem::remove_all(d, ec);
        }
    }
};

inline std::string temp_dir() {
    static TempDirs dirs;
    char tpl[] = "/tmp/nvtrace-live-XXXXXX";
    const char* d = ::mkdtemp(tpl);
    if (!d) throw std::runtime_error(std::string("cannot make a test directory in /tmp: ") + std::strerror(errno));
    dirs.made.emplace_back(d);
    return d;
}

inline nlohmann::json load_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

}  // namespace nvtrace::live

// Skips with the reason, or fails when CI=true (a live tier that skips on CI is a failure).
#define REQUIRE_LIVE()                                                                            \
    do {                                                                                          \
        std::string why = ::nvtrace::live::missing_requirement();                                 \
        if (!why.empty()) {                                                                       \
            const char* ci = std::getenv("CI");                                                   \
            if (ci && std::string(ci) == "true") FAIL() << "live tier cannot run on CI: " << why; \
            GTEST_SKIP() << why;                                                                  \
        }                                                                                         \
    } while (0)
