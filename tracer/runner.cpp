#include "runner.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

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
        ::close(gate[1]);
        ::close(err[0]);
        char c;
        while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::close(gate[0]);
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
      reaped_(std::exchange(o.reaped_, true)) {}

GatedChild::~GatedChild() {
    if (gate_fd_ >= 0) ::close(gate_fd_);
    if (error_fd_ >= 0) ::close(error_fd_);
    if (pid_ > 0 && !reaped_) {
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
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r != pid_) return std::nullopt;
    reaped_ = true;
    ExitStatus s;
    if (WIFEXITED(st)) s.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
    return s;
}

void GatedChild::kill(int sig) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

}  // namespace nvtrace::tracer
