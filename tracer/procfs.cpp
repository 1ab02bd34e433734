#include "procfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace nvtrace::tracer {

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::environment(fmt::format("cannot open {}: {}", path, std::strerror(errno))));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

namespace {
std::optional<std::string> first_line(const std::string& path) {
    auto t = read_file(path);
    if (!t) return std::nullopt;
    return t->substr(0, t->find('\n'));
}
}  // namespace

std::vector<int> numeric_entries(const char* path) {
    std::vector<int> out;
    DIR* d = ::opendir(path);
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        long v = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && v > 0 && v <= INT_MAX) out.push_back(static_cast<int>(v));
    }
    ::closedir(d);
    return out;
}

// "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses, so the fields start after the last ')'.
namespace {
// The fields of /proc/PID/stat after "PID (COMM)" (COMM may hold spaces and ')': they follow the last ')'), into
// `buf`; nullptr when the process is gone.
const char* proc_stat_fields(int pid, char (&buf)[512]) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return nullptr;
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    return close ? close + 1 : nullptr;
}
}  // namespace

bool read_proc_stat(int pid, char& state, int& ppid, int& pgrp) {
    char buf[512];
    const char* f = proc_stat_fields(pid, buf);
    return f && std::sscanf(f, " %c %d %d", &state, &ppid, &pgrp) == 3;
}

bool read_proc_start(int pid, char& state, unsigned long long& starttime_ticks) {
    char buf[512];
    const char* f = proc_stat_fields(pid, buf);
    // Field 3 (state), then fields 4-21 skipped, then field 22 (starttime; proc(5)).
    return f && std::sscanf(f, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                            &state, &starttime_ticks) == 2;
}

bool for_each_fd(int pid, const std::function<bool(int fd, std::string_view target)>& f) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd", pid);
    DIR* d = ::opendir(path);
    if (!d) return false;
    while (dirent* e = ::readdir(d)) {
        char target[PATH_MAX];
        ssize_t n = e->d_name[0] == '.' ? 0 : ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
        if (n > 0 && !f(std::atoi(e->d_name), std::string_view(target, static_cast<std::size_t>(n)))) break;
    }
    ::closedir(d);
    return true;
}

long last_pid_allocated() {
    int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[128];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    // "0.50 0.40 0.30 2/107 5698\n": the last word.
    const char* last = std::strrchr(buf, ' ');
    char* end = nullptr;
    long v = last ? std::strtol(last + 1, &end, 10) : -1;
    return last && end != last + 1 && v >= 0 ? v : -1;
}

const std::vector<int>& ProcessTree::refresh() {
    const int self = static_cast<int>(::getpid());
    // Read before /proc is listed: a process created after this read changes it, and the next refresh lists /proc.
    const long last = last_pid_allocated();
    if (last >= 0 && last == last_pid_) {
        // No process created since the last scan: only members can have gone. A zombie is still a member, as it
        // still shows in /proc (kill with signal 0 finds it until it is reaped).
        members_.erase(std::remove_if(members_.begin(), members_.end(),
                                      [](int pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }),
                       members_.end());
        return members_;
    }
    last_pid_ = last;
    ++scans_;
    std::vector<int> pids = numeric_entries("/proc");
    std::sort(pids.begin(), pids.end());
    // Pids that left /proc are forgotten (a later process with the same pid is classified anew).
    for (auto it = member_.begin(); it != member_.end();)
        it = std::binary_search(pids.begin(), pids.end(), it->first) ? std::next(it) : member_.erase(it);
    struct Fresh {
        int ppid = 0, pgrp = 0;
        int state = 0;  // 0 unresolved, 1 resolving (a cycle through pid reuse), 2 resolved
    };
    std::unordered_map<int, Fresh> fresh;
    for (int pid : pids)
        if (!member_.count(pid)) {
            Fresh f;
            char state = '?';
            if (read_proc_stat(pid, state, f.ppid, f.pgrp)) fresh.emplace(pid, f);
        }
    // A new process's parent may be new too: resolve parents first (iteratively, no recursion depth limit).
    for (auto& [pid0, f0] : fresh) {
        std::vector<int> chain{pid0};
        while (!chain.empty()) {
            int pid = chain.back();
            Fresh& f = fresh.at(pid);
            if (f.state == 2) {
                chain.pop_back();
                continue;
            }
            auto parent_fresh = fresh.find(f.ppid);
            if (f.state == 0 && parent_fresh != fresh.end() && parent_fresh->second.state == 0 && pid != root_ &&
                f.pgrp != root_ && f.ppid != self) {
                f.state = 1;
                chain.push_back(f.ppid);
                continue;
            }
            bool parent_member = false;
            if (auto k = member_.find(f.ppid); k != member_.end()) parent_member = k->second;
            bool mine = pid != self && (pid == root_ || f.pgrp == root_ || f.ppid == self || parent_member);
            member_[pid] = mine;
            f.state = 2;
            chain.pop_back();
        }
    }
    members_.clear();
    for (int pid : pids)
        if (auto k = member_.find(pid); k != member_.end() && k->second) members_.push_back(pid);
    return members_;
}

void poll_fd_paths(const std::vector<int>& pids, FdPollLog& log) {
    const int self = static_cast<int>(::getpid());
    const std::uint32_t poll = log.polls++;
    char path[64];
    for (int pid : pids) {
        if (pid == self || !for_each_fd(pid, [&](int fd, std::string_view t) {
                if (auto open = log.open_runs.find({pid, fd}); open != log.open_runs.end()) {
                    FdPollLog::Run& r = log.runs[open->second];
                    if (r.last_poll + 1 == poll && r.path == t) {
                        r.last_poll = poll;
                        return true;
                    }
                }
                log.runs.push_back({pid, fd, poll, poll, std::string(t)});
                log.open_runs[{pid, fd}] = log.runs.size() - 1;
                return true;
            }))
            continue;
        log.process_of.emplace(pid, pid);
        std::snprintf(path, sizeof path, "/proc/%d/task", pid);
        for (int tid : numeric_entries(path))
            log.process_of.emplace(tid, pid);
    }
}

bool module_loaded(const std::string& module) {
    std::string name = module;
    for (char& c : name)
        if (c == '-') c = '_';
    std::ifstream f("/sys/module/" + name + "/initstate");
    std::string state;
    if (f >> state) return state == "live";
    // Built-in modules have no initstate; /sys/module/M exists for them only with parameters.
    return false;
}

void add_environment_info(ReportEnvironment& env, const std::vector<std::string>& modules) {
    utsname u{};
    if (uname(&u) == 0) {
        env.kernel = u.release;
        env.kernel_version = u.version;
        env.machine = u.machine;
    }
    auto& mods = env.modules.emplace();
    for (const auto& m : modules) {
        std::string name = m;
        for (char& c : name)
            if (c == '-') c = '_';
        ModuleInfo& mi = mods[name];
        mi.loaded = module_loaded(name);
        mi.version = first_line("/sys/module/" + name + "/version");
        mi.srcversion = first_line("/sys/module/" + name + "/srcversion");
        mi.taint = first_line("/sys/module/" + name + "/taint");
    }
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build ..." (nv.c)
    env.nvidia_driver_banner = first_line("/proc/driver/nvidia/version");
    if (*env.nvidia_driver_banner)
        env.nvidia_driver_flavour =
            (*env.nvidia_driver_banner)->find("Open Kernel Module") != std::string::npos ? "open" : "proprietary";
}

}  // namespace nvtrace::tracer
