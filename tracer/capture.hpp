// capture.hpp: one live capture of a program (the `nvtrace run` pipeline up to the event stream).
//
// What it sets up (DESIGN.md section 4): a private instance nvtrace-<pid> with syscalls:sys_enter_ioctl /
// sys_exit_ioctl (and the user's --event list) scoped by set_event_pid + event-fork; with modules,
// function_graph filtered by ":mod:M" and scoped by set_ftrace_pid + function-fork, in the instance where
// the kernel allows it and otherwise at the top level under a TopLevelJournal. The buffers are drained
// every 10 ms while the program runs; /dev/kmsg is read from the start to the end of the run.
// Thread-safety: one capture at a time per process (it blocks SIGINT/SIGTERM/SIGHUP while it runs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "runner.hpp"

namespace nvtrace::tracer {

struct CaptureOptions {
    std::vector<std::string> argv;     // the program and its arguments (no shell)
    std::vector<std::string> modules;  // function_graph on ":mod:M" for each
    std::vector<std::string> events;   // extra "system:event" tracepoints
    std::optional<double> timeout_s;   // SIGTERM (then SIGKILL after 2 s) when the program runs longer
    bool progress = true;              // progress lines on stderr
};

struct CaptureResult {
    EventStream stream;                         // sorted by ts_ns, symbols resolved
    nlohmann::json meta;                        // command, status, tracer mode, filters, clocks, times
    ExitStatus status;                          // the program's
    std::optional<int> interrupted_by;          // signal that stopped nvtrace itself (SIGINT, SIGTERM, SIGHUP)
    std::vector<std::string> restore_failures;  // top-level files that could not be restored
};

Result<CaptureResult> capture(const CaptureOptions& opts);

}  // namespace nvtrace::tracer
