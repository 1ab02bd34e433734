// capture.hpp: one live capture of a program (the `nvtrace run` pipeline up to the event stream).
//
// What it sets up (DESIGN.md section 4): a private instance nvtrace-<pid> with syscalls:sys_enter_ioctl /
// sys_exit_ioctl (and the user's --event list) scoped by set_event_pid + event-fork; with modules,
// function_graph filtered by ":mod:M" and scoped by set_ftrace_pid + function-fork, in the instance where
// the kernel allows it and otherwise at the top level under a TopLevelJournal. While the program runs, a
// thread moves the full ring-buffer pages to the capture directory every 5 ms (nothing is decoded meanwhile)
// and the open files of the program's process tree are polled every 10 ms; after the run the rest is read
// and the page files are decoded as `nvtrace report DIR` decodes them. /dev/kmsg is read from the start to
// the end of the run.
// Thread-safety: one capture at a time per process (it blocks SIGINT/SIGTERM/SIGHUP/SIGQUIT while it runs).
#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/capture_meta.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"
#include "runner.hpp"

namespace nvtrace::tracer {

struct CaptureOptions {
    std::vector<std::string> argv;             // the program and its arguments (no shell)
    std::vector<std::string> modules;          // function_graph on ":mod:M" for each
    std::vector<std::string> filters;          // more set_ftrace_filter globs (function_graph)
    std::vector<std::string> notrace;          // set_ftrace_notrace globs
    std::vector<std::string> graph_functions;  // set_graph_function roots
    std::optional<int> max_depth;              // max_graph_depth
    bool future = false;                       // arm :mod:M for a module that is not loaded yet (applied at load)
    std::vector<std::string> events;           // extra "system:event" tracepoints
    std::optional<double> timeout_s;           // SIGTERM (then SIGKILL after 2 s) when the program runs longer
    bool force = false;                        // take the top level even though a journal exists
    bool as_root = false;                      // under sudo, keep root for the program instead of SUDO_UID/SUDO_GID
    // --tty: the program's process group is made the terminal's foreground group (GatedChild::take_terminal on
    // standard input) for the run, so that it may read the terminal. Without it, a program stopped by SIGTTIN or
    // SIGTTOU is said at once on stderr and ended (SIGTERM and SIGCONT to its group, SIGKILL 2 s later), with the
    // capture saved (meta.json "stopped_on_terminal"; docs/run.md "The terminal").
    bool tty = false;
    bool preload = true;   // inject libnvtrace_preload.so (user-space ioctl decoding, docs/preload.md)
    bool progress = true;  // progress lines on stderr
    // Capture directory: the raw pages (raw/<buffer>/cpuN), event formats and the files of docs/formats.md
    // "Capture directory" are written there (it must exist). meta.json and report.json are the caller's.
    std::string out_dir;
    std::optional<int> buffer_size_kb;  // the instance's per-CPU buffer_size_kb (default: the kernel's)
    bool drain_while_running = true;    // false (tests only: NVTRACE_TEST_NO_DRAIN=1): read once, at the end
    // A successful capture() returns with SIGINT/SIGTERM/SIGHUP/SIGQUIT still blocked (CaptureResult::signals_held):
    // the caller writes the report, then takes what arrived (take_held_signal) so that a signal after the program ended
    // neither kills nvtrace before the report is saved nor goes unnoticed.
    bool hold_signals = false;
};

// How many available functions each filter matches (available_filter_functions), resolved before
// anything is changed: "module:nvidia" -> 4123, "filter:drm_gem_*" -> 96, ...
struct FilterCount {
    std::string filter;
    std::size_t functions = 0;
};

struct CaptureResult {
    EventStream stream;                         // everything but the events (fd paths, kmsg, buffer stats, comms)
    CaptureMeta meta;                           // meta.json but the report's source and environment
    ExitStatus status;                          // the program's
    std::optional<int> interrupted_by;          // signal that stopped nvtrace itself (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
    std::vector<std::string> restore_failures;  // top-level files that could not be restored
    std::optional<std::string> instance_left;   // why nvtrace-<pid> could not be removed (who holds it open)
    std::vector<FilterCount> filter_counts;
    // With CaptureOptions::hold_signals: the signals left blocked and the mask to restore.
    std::optional<sigset_t> signals_held;
    sigset_t signal_mask_before{};
};

// With CaptureOptions::hold_signals, once the capture is saved: sets cap.interrupted_by to a signal that arrived
// since (when none came before) and restores the signal mask. Does nothing without held signals.
void take_held_signal(CaptureResult& cap);

Result<CaptureResult> capture(const CaptureOptions& opts);

// Error::environment unless nvtrace runs as root (tracefs is writable by root only); capture() checks it too.
Result<void> require_root();

// The "program-exit" check of a scenario run: pass on exit 0, else fail with the exit status as evidence
// (the scenario program's own TAP verdict). Used by `nvtrace run` and again by `nvtrace report DIR`.
Check scenario_program_check(std::optional<int> exit_code, std::optional<int> signal);

}  // namespace nvtrace::tracer
