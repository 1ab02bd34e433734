// tracefs_session.hpp: a private tracefs instance, and a journal for the top-level files nvtrace must
// change where the kernel refuses function_graph in instances (before ~6.11; 6.1 refuses it:
// ../shared/reference/ftrace-formats.md section 4).
//
// Every change is undone by the destructors, so every exit path (return, error, exception) restores.
// The journal is also written to a state file (kJournalPath) before the first top-level write, so that a
// run killed with SIGKILL can be restored afterwards (`nvtrace cleanup`, issue 4).
// Thread-safety: one thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

struct tracefs_instance;

namespace nvtrace::tracer {

inline constexpr const char* kJournalDir = "/run/nvtrace";
inline constexpr const char* kJournalPath = "/run/nvtrace/journal.json";

// Reads the kernel's reason for the last rejected write (tracefs error_log), or "".
std::string kernel_error(tracefs_instance* inst);

class Instance {
public:
    // Creates instances/nvtrace-<pid of nvtrace>, tracing off, all events disabled, buffer cleared.
    static Result<Instance> create();
    Instance(Instance&& o) noexcept;
    Instance& operator=(Instance&&) = delete;
    Instance(const Instance&) = delete;
    ~Instance();  // disables events, closes the marker fd, removes the instance

    tracefs_instance* get() const { return inst_; }
    std::string name() const;
    std::string dir() const;  // absolute path of the instance directory

private:
    explicit Instance(tracefs_instance* i) : inst_(i) {}
    tracefs_instance* inst_ = nullptr;
};

class TopLevelJournal {
public:
    TopLevelJournal() = default;
    TopLevelJournal(const TopLevelJournal&) = delete;
    TopLevelJournal& operator=(const TopLevelJournal&) = delete;
    ~TopLevelJournal() { restore(); }

    // Saves the current content of `file` (relative to the tracefs root) the first time it is named,
    // persists the journal, then writes `value`. The kernel's reason is in the error when it refuses.
    Result<void> write(const std::string& file, const std::string& value);
    // Only saves (for files changed through libtracefs calls).
    Result<void> remember(const std::string& file);
    // Restores every saved file in reverse order; returns the files that could not be restored.
    std::vector<std::string> restore();

private:
    Result<void> persist() const;
    std::vector<std::pair<std::string, std::string>> saved_;  // file, original content, in save order
};

// Cumulative per-CPU counters of a buffer (per_cpu/cpuN/stats); instance nullptr = top level.
std::vector<CpuBufferStats> read_buffer_stats(tracefs_instance* inst, const std::string& label);

// Restores one journaled file's content (shared by the journal and `nvtrace cleanup`).
Result<void> restore_file(const std::string& file, const std::string& content);

}  // namespace nvtrace::tracer
