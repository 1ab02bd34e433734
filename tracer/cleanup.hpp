// cleanup.hpp: undo what a killed nvtrace run left behind.
//
// Three kinds of leftovers: the top-level state journal (kJournalPath, written before nvtrace changes any
// top-level tracefs file), private instances named nvtrace-<pid>, and uprobes in groups nvtrace_<pid>
// (uprobes.hpp cleanup_uprobes). Only leftovers whose owner is gone are touched; a running nvtrace keeps its own
// (owner_running: the pid is an nvtrace process that started before the leftover was made).
// Thread-safety: one thread; not safe to run concurrently with another cleanup.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

struct JournalOwner {
    int pid = -1;
    bool alive = false;
};

// The owner of an existing journal, or nullopt when there is none. An unreadable journal is an error.
Result<std::optional<JournalOwner>> journal_owner();

struct CleanupAction {
    std::string what;   // "restored set_ftrace_filter", "removed instance nvtrace-123", ...
    bool done = false;  // false with --dry-run, or when it failed (then `error` says why)
    std::string error;
};

struct CleanupResult {
    std::vector<CleanupAction> actions;
    std::vector<std::string> kept;  // leftovers of running nvtrace processes
};

// Restores the journal of a dead run and removes stale nvtrace-<pid> instances and nvtrace_<pid> uprobes.
// `dry_run` only lists.
Result<CleanupResult> cleanup(bool dry_run);

bool pid_alive(int pid);

// What /proc says of a process, for deciding whether it owns a leftover (tests give their own).
struct ProcessIdentity {
    bool exists = false;             // /proc/PID/stat readable and the process not a zombie
    std::string exe;                 // /proc/PID/exe's target without " (deleted)"; "" when unreadable
    std::string comm;                // /proc/PID/comm
    std::int64_t start_boot_ns = 0;  // /proc/PID/stat field 22 (starttime, clock ticks since boot) in ns
};
ProcessIdentity process_identity(int pid);

// Whether the leftover named after `pid` (nvtrace-<pid>, nvtrace_<pid>, a journal's pid) belongs to a running
// nvtrace: the process is an nvtrace (its executable is named nvtrace, or its comm is when the executable cannot be
// read) and, when `made_boot_ns` says when the leftover was made (CLOCK_BOOTTIME ns), it started no later (one
// 10 ms clock tick and the file time's jiffy allowed). A pid reused by another program, or by an nvtrace started
// after the leftover was made, is not its owner: the leftover is a killed run's. `self` is never an owner (the
// caller is not the run that made it: its own instance does not exist yet, or is its own business).
bool owner_running(int pid, const ProcessIdentity& who, std::optional<std::int64_t> made_boot_ns, int self);
// The same with /proc's answer for `pid` and this process's pid.
bool nvtrace_owner_running(int pid, std::optional<std::int64_t> made_boot_ns = std::nullopt);
// When the file or directory `path` was made, as CLOCK_BOOTTIME ns (its inode's earlier of mtime and ctime, moved
// from CLOCK_REALTIME by the clocks' current difference); nullopt when it cannot be stat'ed.
std::optional<std::int64_t> made_boot_ns(const std::string& path);

}  // namespace nvtrace::tracer
