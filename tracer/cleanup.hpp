// cleanup.hpp: undo what a killed nvtrace run left behind.
//
// Three kinds of leftovers: the top-level state journal (kJournalPath, written before nvtrace changes any
// top-level tracefs file), private instances named nvtrace-<pid>, and uprobes in groups nvtrace_<pid>
// (uprobes.hpp cleanup_uprobes). Only leftovers whose owner pid is
// gone are touched; a running nvtrace keeps its own.
// Thread-safety: one thread; not safe to run concurrently with another cleanup.
#pragma once

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

}  // namespace nvtrace::tracer
