// capture.hpp: one live capture of a program into its capture directory (`nvtrace run` up to `report DIR`).
//
// What it sets up (DESIGN.md section 4): a private instance nvtrace-<pid> with syscalls:sys_enter_ioctl /
// sys_exit_ioctl (and the user's --event list) scoped by set_event_pid + event-fork; with modules,
// function_graph filtered by ":mod:M" and scoped by set_ftrace_pid + function-fork, in the instance where
// the kernel allows it and otherwise at the top level under a TopLevelJournal. While the program runs, a
// thread moves the full ring-buffer pages to the capture directory every 5 ms (nothing is decoded meanwhile)
// and the open files of the program's process tree are polled every 10 ms. /dev/kmsg is read from the start to
// the end of the run.
// capture() goes in four steps (capture.cpp): plan_capture (options + KernelOffer -> CapturePlan, pure), apply (the
// plan made so in tracefs, the journal for the top level, the program spawned at its gate; a Session undoes it all on
// every exit path), run_and_drain (the program released and run to its end; then the rest of the pages read and the
// top level restored), write_capture (the pages decoded once for comms and the kallsyms subset; the other files of
// docs/formats.md "Capture directory", meta.json last).
// Thread-safety: one capture at a time per process (it blocks SIGINT/SIGTERM/SIGHUP/SIGQUIT while it runs).
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
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
#include "uprobe_late.hpp"
#include "uprobe_plan.hpp"

namespace nvtrace::tracer {

struct CaptureOptions {
    // meta.json as asked, each key named once (nvtrace/capture_meta.hpp): command (argv, no shell), modules
    // (function_graph on ":mod:M"), filters (set_ftrace_filter globs), notrace, graph_functions (set_graph_function
    // roots), max_depth, events (extra "system:event" tracepoints), buffer_size_kb (the instance's per-CPU buffer;
    // default the kernel's), raw.drained_while_running (false, tests only, NVTRACE_TEST_NO_DRAIN=1: read once, at the
    // end), report_source and environment (the source gets "pid" and "tracer_mode"), and tty: the program's process
    // group is made the terminal's foreground group (GatedChild::take_terminal on standard input) for the run, so that
    // it may read the terminal. Without it, a program stopped by SIGTTIN or SIGTTOU is said at once on stderr and
    // ended (SIGTERM and SIGCONT to its group, SIGKILL 2 s later), with the capture saved (meta.json
    // "stopped_on_terminal"; docs/run.md "The terminal"). capture() fills the other keys.
    CaptureMeta meta;
    std::optional<double> timeout_s;  // SIGTERM (then SIGKILL after 2 s) when the program runs longer
    bool future = false;              // arm :mod:M for a module that is not loaded yet (applied at load)
    bool force = false;               // take the top level even though a journal exists
    bool as_root = false;             // under sudo, keep root for the program instead of SUDO_UID/SUDO_GID
    bool preload = true;              // inject libnvtrace_preload.so (user-space ioctl decoding, docs/preload.md)
    bool progress = true;             // progress lines on stderr
    bool fd_events = true;            // false (tests only, NVTRACE_TEST_NO_FD_EVENTS=1): no fd syscall events
    bool trace_dat = false;           // also DIR/trace.dat (and trace-top.dat) through `trace-cmd restore`
    // Capture directory (it must exist): the raw pages (raw/<buffer>/cpuN), event formats, meta.json and the other
    // files of docs/formats.md "Capture directory" but report.json, which is the caller's.
    std::string out_dir;
    // A successful capture() returns with SIGINT/SIGTERM/SIGHUP/SIGQUIT still blocked (CaptureResult::signals_held):
    // the caller writes the report, then takes what arrived (take_held_signal) so that a signal after the program ended
    // neither kills nvtrace before the report is saved nor goes unnoticed.
    bool hold_signals = false;
    // User-space probes (docs/api.md): `uprobes` are --uprobe LIB:SYMBOL[%FETCHARGS] texts (parse_uprobe_spec);
    // `api` says whether the CUDA tables are armed: automatic (when the program's DT_NEEDED closure holds
    // libcudart.so.* or libcuda.so.*), forced (--api cuda) or off (--no-api).
    std::vector<std::string> uprobes;
    // The bytes of the expectations file the run checks, written to out_dir / meta.expectations_copy with meta.json.
    std::string expectations_text;
    enum class Api : std::uint8_t { automatic, cuda, none };
    Api api = Api::automatic;
};

// What the kernel offers, read before anything is changed: the plan's only input besides the options.
struct KernelOffer {
    std::string tracing_dir, instance;  // the private instance's name (nvtrace-<pid>)
    bool fgraph_in_instance = false;    // the instance's available_tracers lists function_graph (>= ~6.11)
    std::string top_tracers;            // the top level's available_tracers
    std::function<bool(const std::string& system, const std::string& event)> has_event;  // events/SYSTEM/EVENT
    std::function<bool(const std::string& module)> module_loaded;
    std::function<std::size_t(const char* glob, const char* module)> count_matches;  // tracefs_session.hpp
    // Uprobes: whether uprobe_events exists, the group nvtrace's probes go to (uprobe_group of nvtrace's pid), and
    // where the program's libraries are found (its LD_LIBRARY_PATH and PATH as nvtrace passes them on, ld.so.cache).
    bool has_uprobes = false;
    std::string uprobe_group;
    SearchContext library_search;
    std::optional<std::string> path_env;  // PATH, to find a program named without '/'
};

// What one capture traces, from the options and the offer alone (plan_capture is pure).
struct CapturePlan {
    // The options' meta with what the plan decides: tracer_mode, tracing_dir, instance, filter_counts ("module:M",
    // "filter:GLOB", "notrace:GLOB", "graph-function:GLOB" -> functions matched), kept_events, printk_console.
    CaptureMeta meta;
    bool fgraph = false, top_level = false;  // function_graph, in the instance or at the top level (under the journal)
    struct FilterPart {
        std::string text;  // a glob, or a module as :mod: names it ('_' for '-')
        bool module = false, future = false;
    };
    std::vector<FilterPart> filter;        // set_ftrace_filter: every module, then every glob
    std::vector<std::string> fd_syscalls;  // kFdSyscalls this kernel has both tracepoints of
    std::vector<std::string> task_events;  // "task_newtask", "task_rename" where the kernel has them (comms.json)
    bool xid_event = false;                // nvidia:nvidia_dev_xid
    std::vector<std::string> formats;      // the event formats decoded ("system:event", "system:*")
    // The probes to create (entry and return per function; meta.uprobes lists them), and why any table entry or
    // candidate file was left out (one line each, for the progress lines).
    ProbePlan probes;
    std::string uprobe_group;
    std::vector<std::string> probe_notes;
    // The libraries to probe when the program maps them after the start (uprobe_late.hpp): the CUDA tables unless
    // --no-api, and the --uprobe specs naming a library; nothing where the kernel has no uprobe_events.
    LateWatch late;
};

// Errors: Error::usage for options that contradict each other or match nothing (--notrace without function_graph,
// a glob matching no function), Error::environment for what this kernel lacks (function_graph, a module not loaded
// without `future`, a module without traceable functions). meta.events are taken as "SYSTEM:EVENT" (resolve_run
// checks them); whether the kernel has them is known when they are enabled. Uprobes: Error::usage for a bad --uprobe
// (its text, what was expected), Error::environment when the kernel has no uprobe_events and probes are asked
// (--uprobe, --api cuda; the automatic CUDA tracing is then left out with a note) or --api cuda finds no library.
// The planning reads ELF files (the program, its libraries), nothing else.
Result<CapturePlan> plan_capture(const CaptureOptions& opts, const KernelOffer& offer);

// Whether the capture traces functions (function_graph): a module, a filter or a graph function is asked.
bool wants_function_graph(const CaptureMeta& m);

struct CaptureResult {
    EventStream stream;                         // everything but the events (fd paths, kmsg, buffer stats, comms)
    CaptureMeta meta;                           // as written to meta.json
    std::optional<int> interrupted_by;          // signal that stopped nvtrace itself (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
    std::vector<std::string> restore_failures;  // top-level files that could not be restored
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
