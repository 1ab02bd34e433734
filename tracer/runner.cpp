#include "runner.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "procfs.hpp"

namespace nvtrace::tracer {

Result<GatedChild> GatedChild::spawn(const std::vector<std::string>& argv,
                                     const std::vector<std::pair<std::string, std::string>>& env,
                                     const sigset_t& child_mask, const std::optional<Identity>& run_as) {
    if (argv.empty()) return fail(Error::usage("no command to run"));
    int gate[2], err[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
    if (::pipe2(err, O_CLOEXEC) != 0) {
        ::close(gate[0]);
        ::close(gate[1]);
        return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
    }
    std::vector<char*> cargv;
    for (const auto& a : argv)
        cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) return fail(Error::environment(fmt::format("fork: {}", std::strerror(errno))));
    if (pid == 0) {
        // Its own process group, before anything else: the whole tree can be signalled at once, and a
        // terminal's signals reach nvtrace only (nvtrace passes them on). The parent does the same call.
        ::setpgid(0, 0);
        ::close(gate[1]);
        ::close(err[0]);
        char c;
        while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::close(gate[0]);
        // An ignored signal stays ignored across exec: one nvtrace passes on would then not reach the program,
        // which nvtrace kills 2 s later instead. Handlers are reset by exec anyway.
        for (int sig : kPassedOnSignals)
            ::signal(sig, SIG_DFL);
        ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
        for (const auto& [k, v] : env)
            ::setenv(k.c_str(), v.c_str(), 1);
        int e = 0;
        if (run_as) {
            // Groups first, then gid, then uid: after setuid the process may no longer change them.
            int g = run_as->user.empty() ? ::setgroups(0, nullptr) : ::initgroups(run_as->user.c_str(), run_as->gid);
            if (g != 0 || ::setgid(run_as->gid) != 0 || ::setuid(run_as->uid) != 0) e = errno;
        }
        // The program must not outlive a tracer killed with SIGKILL (set after the identity change, which
        // clears it). A parent that already died leaves us orphaned: stop here.
        if (e == 0 && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() == 1)) e = ECHILD;
        if (e == 0) {
            ::execvp(cargv[0], cargv.data());
            e = errno;
        }
        ssize_t w = ::write(err[1], &e, sizeof e);
        (void)w;
        ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before release()
    ::close(gate[0]);
    ::close(err[1]);
    GatedChild c;
    c.pid_ = pid;
    c.gate_fd_ = gate[1];
    c.error_fd_ = err[0];
    return c;
}

GatedChild::GatedChild(GatedChild&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      gate_fd_(std::exchange(o.gate_fd_, -1)),
      error_fd_(std::exchange(o.error_fd_, -1)),
      reaped_(std::exchange(o.reaped_, true)),
      stopped_by_(std::exchange(o.stopped_by_, std::nullopt)),
      tty_fd_(std::exchange(o.tty_fd_, -1)),
      tty_pgrp_(std::exchange(o.tty_pgrp_, -1)) {}

GatedChild::~GatedChild() {
    give_back_terminal();
    if (gate_fd_ >= 0) ::close(gate_fd_);
    if (error_fd_ >= 0) ::close(error_fd_);
    if (pid_ > 0 && !reaped_) {
        ::kill(-pid_, SIGKILL);  // the process group: the program and what it started
        ::kill(pid_, SIGKILL);
        int st;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
    }
}

Result<void> GatedChild::release() {
    if (gate_fd_ >= 0) {
        ssize_t w = ::write(gate_fd_, "g", 1);
        (void)w;
        ::close(gate_fd_);
        gate_fd_ = -1;
    }
    int e = 0;
    ssize_t n;
    while ((n = ::read(error_fd_, &e, sizeof e)) < 0 && errno == EINTR) {
    }
    ::close(error_fd_);
    error_fd_ = -1;
    if (n == static_cast<ssize_t>(sizeof e))
        return fail(Error::usage(fmt::format("cannot execute: {}", std::strerror(e))));
    return {};
}

std::optional<GatedChild::Identity> GatedChild::sudo_invoker() {
    const char* u = std::getenv("SUDO_UID");
    const char* g = std::getenv("SUDO_GID");
    if (!u || !g) return std::nullopt;
    char* end = nullptr;
    unsigned long uid = std::strtoul(u, &end, 10);
    if (!end || *end) return std::nullopt;
    unsigned long gid = std::strtoul(g, &end, 10);
    if (!end || *end || uid == 0) return std::nullopt;
    const char* user = std::getenv("SUDO_USER");
    return Identity{static_cast<uid_t>(uid), static_cast<gid_t>(gid), user ? user : ""};
}

std::optional<ExitStatus> GatedChild::poll_exit() {
    if (reaped_ || pid_ <= 0) return std::nullopt;
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG | WUNTRACED);
    if (r != pid_) return std::nullopt;
    if (WIFSTOPPED(st)) {
        stopped_by_ = WSTOPSIG(st);
        return std::nullopt;
    }
    reaped_ = true;
    ExitStatus s;
    if (WIFEXITED(st)) s.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
    return s;
}

std::optional<int> GatedChild::take_stop() {
    return std::exchange(stopped_by_, std::nullopt);
}

Result<void> GatedChild::take_terminal(int tty_fd) {
    if (!::isatty(tty_fd)) return fail(Error::usage("--tty: standard input is not a terminal"));
    const pid_t fg = ::tcgetpgrp(tty_fd);
    if (fg < 0 || fg != ::getpgrp())
        return fail(Error::usage("--tty: nvtrace is not in the terminal's foreground (started in the background?)"));
    if (::tcsetpgrp(tty_fd, pid_) != 0)
        return fail(Error::environment(fmt::format("--tty: tcsetpgrp: {}", std::strerror(errno))));
    tty_fd_ = tty_fd;
    tty_pgrp_ = fg;
    return {};
}

void GatedChild::give_back_terminal() {
    if (tty_fd_ < 0) return;
    // A background process that calls tcsetpgrp gets SIGTTOU (termios(3)) unless it blocks or ignores it.
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
    (void)::tcsetpgrp(tty_fd_, tty_pgrp_);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    tty_fd_ = -1;
}

void GatedChild::kill_group(int sig) {
    if (pid_ > 0) ::kill(-pid_, sig);  // the group may outlive its leader
}

Result<void> become_subreaper() {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        return fail(Error::environment(fmt::format("prctl(PR_SET_CHILD_SUBREAPER): {}", std::strerror(errno))));
    return {};
}

void stop_being_subreaper() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

namespace {

std::string read_comm(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/comm", pid));
    std::string c;
    std::getline(in, c);
    return c;
}

void reap_children() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
}

}  // namespace

std::vector<ProcessInfo> list_descendants(pid_t pgid) {
    struct ProcStat {
        char state = '?';
        int ppid = 0, pgrp = 0;
    };
    const pid_t self = ::getpid();
    std::map<pid_t, ProcStat> stats;
    for (int p : numeric_entries("/proc"))
        if (ProcStat st; read_proc_stat(p, st.state, st.ppid, st.pgrp)) stats[p] = st;
    std::vector<ProcessInfo> out;
    for (const auto& [pid, st] : stats) {
        if (pid == self || st.state == 'Z' || st.state == 'X') continue;
        bool mine = pgid > 0 && st.pgrp == pgid;
        // Walk the parent chain up to self (or init / a process that vanished); depth-capped against cycles
        // that a pid reused mid-scan could make.
        pid_t up = st.ppid;
        for (int depth = 0; !mine && up > 1 && depth < 4096; ++depth) {
            if (up == self) {
                mine = true;
                break;
            }
            auto it = stats.find(up);
            if (it == stats.end()) break;
            up = it->second.ppid;
        }
        if (mine) out.push_back({pid, read_comm(pid)});
    }
    return out;
}

EndedProcesses end_descendants(pid_t pgid, std::chrono::milliseconds grace, const std::function<void()>& tick) {
    using Clock = std::chrono::steady_clock;
    EndedProcesses res;
    std::map<pid_t, std::string> seen, killed;
    auto wait_a_bit = [&] {
        if (tick) tick();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        reap_children();
    };
    reap_children();
    auto left = list_descendants(pgid);
    auto deadline = Clock::now() + grace;
    while (!left.empty() && Clock::now() < deadline) {
        // New ones (forked since the last look) get their SIGTERM too.
        for (const auto& p : left)
            if (seen.emplace(p.pid, p.comm).second) {
                ::kill(p.pid, SIGTERM);
                ::kill(p.pid, SIGCONT);  // a stopped process (e.g. SIGTTIN) acts on SIGTERM only once continued
            }
        wait_a_bit();
        left = list_descendants(pgid);
    }
    // SIGKILL until the tree is empty: a killed process forks no more, so this ends; capped for processes
    // that a signal cannot end (uninterruptible sleep).
    auto kill_deadline = Clock::now() + std::chrono::seconds(2);
    while (!left.empty() && Clock::now() < kill_deadline) {
        for (const auto& p : left) {
            seen.emplace(p.pid, p.comm);
            killed.emplace(p.pid, p.comm);
            ::kill(p.pid, SIGKILL);
        }
        wait_a_bit();
        left = list_descendants(pgid);
    }
    res.survivors = left;
    std::set<pid_t> surviving;
    for (const auto& p : left)
        surviving.insert(p.pid);
    for (const auto& [pid, comm] : seen) {
        if (surviving.count(pid)) continue;
        (killed.count(pid) ? res.killed : res.terminated).push_back({pid, comm});
    }
    return res;
}

std::vector<ProcessInfo> processes_holding(const std::string& path) {
    std::vector<ProcessInfo> out;
    if (path.empty()) return out;
    std::string exact = path;
    while (exact.size() > 1 && exact.back() == '/')
        exact.pop_back();
    const std::string prefix = exact + "/";
    const pid_t self = ::getpid();
    for (int p : numeric_entries("/proc")) {
        bool holds = false;
        if (p != self)
            for_each_fd(p, [&](int, std::string_view t) {
                holds = t == exact || t.starts_with(prefix);
                return !holds;  // the first such fd is enough
            });
        if (holds) out.push_back({p, read_comm(p)});
    }
    return out;
}

std::vector<std::pair<ProcessInfo, std::string>> end_holders(const std::string& path, std::chrono::milliseconds grace) {
    using Clock = std::chrono::steady_clock;
    std::map<pid_t, std::string> comm, how;
    auto left = processes_holding(path);
    for (const auto& p : left) {
        comm[p.pid] = p.comm;
        how[p.pid] = "SIGTERM";
        ::kill(p.pid, SIGTERM);
    }
    auto wait_until = [&](Clock::time_point deadline) {
        while (!left.empty() && Clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            reap_children();
            left = processes_holding(path);
        }
    };
    wait_until(Clock::now() + grace);
    for (const auto& p : left) {
        comm.emplace(p.pid, p.comm);
        how[p.pid] = "SIGKILL";
        ::kill(p.pid, SIGKILL);
    }
    wait_until(Clock::now() + std::chrono::seconds(2));
    for (const auto& p : left) {
        comm.emplace(p.pid, p.comm);
        how[p.pid] = "still holds it";
    }
    std::vector<std::pair<ProcessInfo, std::string>> out;
    for (const auto& [pid, h] : how)
        out.push_back({ProcessInfo{pid, comm[pid]}, h});
    return out;
}

}  // namespace nvtrace::tracer
