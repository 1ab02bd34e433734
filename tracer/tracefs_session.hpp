// tracefs_session.hpp: a private tracefs instance, and a journal for the top-level files nvtrace must
// change where the kernel refuses function_graph in instances (before ~6.11; 6.1 refuses it:
// ../shared/reference/ftrace-formats.md section 4).
//
// Every change is undone by the destructors, so every exit path (return, error, exception) restores.
// The journal is also written to a state file (kJournalPath) before the first top-level write, so that a
// run killed with SIGKILL can be restored afterwards (`nvtrace cleanup`).
// Thread-safety: one thread.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

struct tracefs_instance;

namespace nvtrace::tracer {

inline constexpr const char* kJournalDir = "/run/nvtrace";
inline constexpr const char* kJournalPath = "/run/nvtrace/journal.json";

// The content of `file` (relative to the instance directory; instance nullptr = top level), or nullopt when it
// cannot be read.
std::optional<std::string> read_instance_file(tracefs_instance* inst, const char* file);

// Reads the kernel's reason for the last rejected write (tracefs error_log), or "".
std::string kernel_error(tracefs_instance* inst);

class Instance {
public:
    // Creates instances/nvtrace-<pid of nvtrace>, tracing off, all events disabled, buffer cleared.
    static Result<Instance> create();
    Instance(Instance&& o) noexcept;
    Instance& operator=(Instance&&) = delete;
    Instance(const Instance&) = delete;
    ~Instance();  // remove() when not done yet; a failure is printed to stderr

    // Disables events, closes the marker fd, removes the instance. Fails (the instance stays) when a process
    // still holds one of its files open (EBUSY): the error names them ("pid (comm)", from /proc/*/fd).
    // Called once: afterwards (success or not) get() is nullptr and the destructor does nothing.
    Result<void> remove();

    tracefs_instance* get() const { return inst_; }
    std::string name() const;
    std::string dir() const;  // absolute path of the instance directory

private:
    explicit Instance(tracefs_instance* i) : inst_(i) {}
    tracefs_instance* inst_ = nullptr;
};

class TopLevelJournal {
public:
    // `journal_path`: where the journal is persisted (its folder is created). Tests point it, and libtracefs's
    // tracing dir (tracefs_set_tracing_dir), at a temporary directory standing in for tracefs.
    explicit TopLevelJournal(std::string journal_path = kJournalPath) : journal_path_(std::move(journal_path)) {}
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
    std::string journal_path_;
    std::vector<std::pair<std::string, std::string>> saved_;  // file, original content, in save order
};

// The order in which journaled files (file, content; in save order) are restored, by the journal and by
// `nvtrace cleanup`: current_tracer first, then the others in reverse save order. Restoring an empty
// set_ftrace_filter while function_graph still runs would make the kernel patch every traceable function.
std::vector<std::pair<std::string, std::string>> restore_order(
    const std::vector<std::pair<std::string, std::string>>& saved);

// How many traceable functions (available_filter_functions) match `filter` (a glob; nullptr = all) in
// `module` (nullptr = any); 0 when none or when the list cannot be read. libtracefs 1.6.4 matches nothing for
// a NULL filter with a module, so "*" is passed instead.
std::size_t count_matches(const char* filter, const char* module);

// Cumulative per-CPU counters of a buffer (per_cpu/cpuN/stats); instance nullptr = top level.
std::vector<CpuBufferStats> read_buffer_stats(tracefs_instance* inst, const std::string& label);

// Restores one journaled file's content (shared by the journal and `nvtrace cleanup`).
Result<void> restore_file(const std::string& file, const std::string& content);

}  // namespace nvtrace::tracer
