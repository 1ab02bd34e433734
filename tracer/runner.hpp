// runner.hpp: the traced program, forked and held at a gate until tracing is scoped to its pid.
//
// The child blocks on a pipe after fork(); the parent writes its pid into set_event_pid /
// set_ftrace_pid, then release() lets it execvp() (same pid). No shell is involved: argv is passed as is.
// Thread-safety: one thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

struct ExitStatus {
    std::optional<int> exit_code;  // set when the program exited
    std::optional<int> signal;     // set when a signal killed it
};

class GatedChild {
public:
    // The identity the program runs as (under sudo: the invoking user, from SUDO_UID/SUDO_GID/SUDO_USER).
    struct Identity {
        uid_t uid;
        gid_t gid;
        std::string user;  // for the supplementary groups (initgroups); may be empty
    };

    // Forks. The child restores `child_mask` as its signal mask, sets `env`, waits at the gate, drops to
    // `run_as` when given, then execs. File descriptors without FD_CLOEXEC (e.g. the marker fd) are inherited.
    static Result<GatedChild> spawn(const std::vector<std::string>& argv,
                                    const std::vector<std::pair<std::string, std::string>>& env,
                                    const sigset_t& child_mask, const std::optional<Identity>& run_as = std::nullopt);

    // The invoking user when nvtrace runs under sudo (SUDO_UID and SUDO_GID set, not 0), else nullopt.
    static std::optional<Identity> sudo_invoker();
    GatedChild(GatedChild&& o) noexcept;
    GatedChild& operator=(GatedChild&&) = delete;
    GatedChild(const GatedChild&) = delete;
    ~GatedChild();  // a child still running is killed and reaped

    pid_t pid() const { return pid_; }
    // Opens the gate; fails when execvp failed (e.g. no such program), with its errno text.
    Result<void> release();
    // Non-blocking: the exit status once the child has ended.
    std::optional<ExitStatus> poll_exit();
    void kill(int sig);

private:
    GatedChild() = default;
    pid_t pid_ = -1;
    int gate_fd_ = -1;   // write end: closing it releases the child
    int error_fd_ = -1;  // read end: errno of a failed execvp, EOF on success
    bool reaped_ = false;
};

}  // namespace nvtrace::tracer
