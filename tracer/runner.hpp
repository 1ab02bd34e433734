// runner.hpp: the traced program, forked and held at a gate until tracing is scoped to its pid.
//
// The child blocks on a pipe after fork(); the parent writes its pid into set_event_pid /
// set_ftrace_pid, then release() lets it execvp() (same pid). No shell is involved: argv is passed as is.
//
// The traced program is a process tree: the child leads its own process group (pgid == its pid), and the
// caller makes itself a child subreaper (become_subreaper) so that every orphaned descendant is reparented
// to it instead of init. end_descendants() then finds what is left of the tree (the process group, and every
// process whose parent chain leads back to the caller) and ends it: SIGTERM, then SIGKILL after a grace
// period (docs/run.md "Processes").
// Thread-safety: one thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

// The signals nvtrace passes on to the program's process group when they stop it (tracer/capture.cpp's drain
// loop). The program starts with their default action whatever nvtrace inherited (a shell starts a background
// job with SIGINT and SIGQUIT ignored, nohup SIGHUP), so that each one passed on can end it (docs/run.md).
inline constexpr int kPassedOnSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

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

    // Forks. The child restores `child_mask` as its signal mask, gives kPassedOnSignals their default action,
    // sets `env`, waits at the gate, drops to
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
    pid_t pgid() const { return pid_; }  // the program leads its own process group
    // Opens the gate; fails when execvp failed (e.g. no such program), with its errno text.
    Result<void> release();
    // Non-blocking: the exit status once the child has ended. Also notices the child being stopped (waitpid
    // with WUNTRACED): take_stop() then says by which signal.
    std::optional<ExitStatus> poll_exit();
    // The signal that stopped the child (SIGTTIN: it read the terminal from a background process group;
    // SIGTTOU: it wrote to it, or changed its settings, with `tostop`; SIGTSTP, SIGSTOP) since the last call,
    // once per stop; nullopt when it was not stopped.
    std::optional<int> take_stop();
    // Makes the program's process group the foreground group of the controlling terminal on `tty_fd`
    // (tcsetpgrp), so that it may read it; give_back_terminal() makes nvtrace's own group the foreground again
    // (SIGTTOU blocked meanwhile: nvtrace is then a background process changing the terminal). Fails with the
    // reason when `tty_fd` is not a terminal or nvtrace is not in its foreground group.
    Result<void> take_terminal(int tty_fd);
    void give_back_terminal();
    // Sends `sig` to the program's whole process group (the program and the descendants that stayed in it).
    void kill_group(int sig);

private:
    GatedChild() = default;
    pid_t pid_ = -1;
    int gate_fd_ = -1;   // write end: closing it releases the child
    int error_fd_ = -1;  // read end: errno of a failed execvp, EOF on success
    bool reaped_ = false;
    std::optional<int> stopped_by_;  // set by poll_exit, cleared by take_stop
    int tty_fd_ = -1;                // take_terminal's terminal, until give_back_terminal
    pid_t tty_pgrp_ = -1;            // the foreground group it had
};

// Makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): orphans of its descendants are
// reparented to it. Fails with the errno text.
Result<void> become_subreaper();
void stop_being_subreaper();

struct ProcessInfo {
    pid_t pid = -1;
    std::string comm;  // /proc/PID/comm, without the newline
};

// The live (not zombie) descendants of the calling process, from /proc/*/stat (parent chains), plus the
// members of process group `pgid` when it is > 0. Sorted by pid; the caller itself is never included.
std::vector<ProcessInfo> list_descendants(pid_t pgid);

struct EndedProcesses {
    std::vector<ProcessInfo> terminated;  // ended by SIGTERM within the grace period
    std::vector<ProcessInfo> killed;      // still there after the grace period: SIGKILL
    std::vector<ProcessInfo> survivors;   // still alive after SIGKILL (e.g. stuck in the kernel, D state)
};

// Ends every remaining descendant (list_descendants(pgid)): SIGTERM to each, reaping the orphans reparented
// to the caller, then SIGKILL to what is left after `grace`. `tick` runs about every 10 ms while it waits
// (the capture keeps draining the ring buffer). Call it only after the program itself was reaped: it reaps
// any child of the caller (waitpid(-1)).
EndedProcesses end_descendants(pid_t pgid, std::chrono::milliseconds grace, const std::function<void()>& tick = {});

// The processes (other than the caller) that have `path` open, or a file under it when it is a directory,
// from the /proc/*/fd links. Processes whose fds cannot be read are not listed.
std::vector<ProcessInfo> processes_holding(const std::string& path);

// Ends the processes that hold `path` open (SIGTERM, then SIGKILL to those still holding it after `grace`).
// Returns each with the signal that ended it ("SIGTERM", "SIGKILL"), or "still holds it" when even SIGKILL
// did not within 2 s. For leftovers of a killed run (nvtrace cleanup): they are not our children.
std::vector<std::pair<ProcessInfo, std::string>> end_holders(const std::string& path, std::chrono::milliseconds grace);

}  // namespace nvtrace::tracer
