// nvtrace/report.hpp: the report, the contract for every consumer (DESIGN.md section 5;
// JSON schema: docs/report.schema.json, "schema": "nvtrace.report/1").
//
// Units: all timestamps and durations are integer nanoseconds on the trace clock.
// Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report_source.hpp"

namespace nvtrace {

inline constexpr const char* kReportSchema = "nvtrace.report/1";

// One traced function call. Flat, one row per call, parents by id: ready for a DataFrame.
struct Call {
    std::uint64_t id = 0;
    std::optional<std::uint64_t> parent;
    int cpu = -1;  // CPU of the entry (of the exit for an orphan return)
    int pid = -1;
    std::string comm;
    int depth = 0;  // depth in the rebuilt tree (0 = root)
    // The depth the source itself gave: funcgraph_entry/exit.depth of a capture or trace.dat, the indentation
    // of function_graph text (kernel/trace/trace_functions_graph.c prints 2 spaces per level). An excerpt
    // that starts inside a call tree keeps it (depth restarts at 0, kernel_depth does not); null when the
    // source says none (the function tracer's hits).
    std::optional<int> kernel_depth;
    std::string function;
    std::optional<std::string> module;
    std::optional<std::uint64_t> entry_ns;     // null for an orphan return whose entry time is unknown
    std::optional<std::uint64_t> duration_ns;  // null when the exit was not seen
    std::optional<std::int64_t> retval;        // BTF-typed "ret=true"/"ret=false" (>= 6.13) are 1 / 0
    // funcgraph-args: the argument list as printed ("prev=0xffff888007949bc0, next=0x..., sleep=0x1");
    // funcgraph-retaddr: the return address into the caller as printed ("__schedule+0x60b/0x700").
    // Null when the source printed none.
    std::optional<std::string> args;
    std::optional<std::string> retaddr;
    bool irq = false;
    bool entry_seen = true;
    bool exit_seen = true;
    std::optional<std::string> phase;
};

// The aggregated call tree: one row per distinct root path ("a > b > c").
struct GraphNode {
    std::string path;
    std::uint64_t count = 0;
    std::uint64_t total_ns = 0;  // sum of known durations
    std::uint64_t self_ns = 0;   // total minus the known durations of direct children
    std::uint64_t min_ns = 0;
    std::uint64_t max_ns = 0;
};

// One ioctl(2) seen through syscalls:sys_enter_ioctl / sys_exit_ioctl.
struct IoctlRecord {
    int pid = -1;
    std::string comm;
    int fd = -1;
    std::optional<std::string> fd_path;
    // Without fd_path: why the file is not known ("unknown: fd reused since the last sample", "unknown: opened
    // before the run", ...; FdPath in nvtrace/ioctl.hpp). Null when fd_path is set.
    std::optional<std::string> fd_path_unknown;
    std::uint64_t cmd = 0;
    std::optional<std::string> name;      // decoded request name, when known
    std::optional<std::uint32_t> hclass;  // RM class, when the parameters carry one
    std::optional<std::string> status;    // RM/UVM status from the parameter struct
    // NV_ESC_RM_CONTROL: the RM control command (NVOS54 `cmd`, e.g. 0x20800110) from the preload marker, and
    // the RM class whose control interface it belongs to (bits 31..16, named from the class table) when known.
    std::optional<std::uint32_t> ctrl;
    std::optional<std::string> ctrl_class;
    std::optional<std::int64_t> ret;  // the kernel's return (-errno on failure); null when not seen or not known
    // The errno as the source printed it, never derived from ret: strace "= -1 ENOTTY (Inappropriate ioctl for
    // device)" gives errno_name "ENOTTY", errno_text "Inappropriate ioctl for device" and ret -25 (libc's -1 is
    // not kept); "= -1 (errno 530)" gives ret -530, no name; a -1 without an errno gives ret null. gVisor "errno=22
    // (invalid argument)" gives "EINVAL" (named by the C library), ret -22. Null for sys_exit_ioctl (ret: -errno).
    std::optional<std::string> errno_name;
    std::optional<std::string> errno_text;
    // ns on the trace clock; null when the source has no time for it (strace without -t/-tt/-ttt/-r, text
    // traces without timestamps), or for exit_ns when the exit was not seen or its time was not printed.
    std::optional<std::uint64_t> enter_ns;
    std::optional<std::uint64_t> exit_ns;
    // enter -> exit, ns: the source's own duration (strace -T, gVisor) when it printed one, else exit_ns - enter_ns;
    // null when neither is known (never 0 for "unknown").
    std::optional<std::uint64_t> duration_ns;
    // The third argument of ioctl(2) (sys_enter_ioctl's arg); null when the source printed no number (strace's
    // decoded structure "{B38400 opost ...}").
    std::optional<std::uint64_t> arg;
    std::optional<std::uint64_t> call;  // id of the first root call made inside this ioctl
    std::vector<std::uint64_t> calls;   // ids of every root call made inside this ioctl
    std::optional<std::string> phase;
};

// One row of `ioctl_stats` (docs/report-format.md): the ioctls of one (device, request) over every task (`pid`
// null), then, when several tasks issued that request, one row per task. Built from `ioctls` by IoctlStats
// (nvtrace/ioctl.hpp) as the report is built; a saved report without the section gets it the same way when read.
// Latency is IoctlRecord::duration_ns (enter -> exit).
struct IoctlStat {
    std::optional<std::string> device;  // the fd's path (IoctlRecord::fd_path); null when not known
    std::optional<int> fd;              // set only when `device` is null: such calls are grouped by fd number
    std::uint64_t cmd = 0;
    std::optional<std::string> name;  // the decoded request, when known
    std::optional<int> pid;           // null: the row of every task
    std::optional<std::string> comm;  // with `pid`
    std::uint64_t count = 0;
    // Calls that failed, by errno name (as the source printed it, else named from ret = -errno) or, for a call
    // that returned 0 with a non-success RM/UVM status, by that status's NV_STATUS name ("NV_ERR_INVALID_ARGUMENT").
    std::uint64_t errors = 0;
    std::map<std::string, std::uint64_t> errors_by_name;
    std::uint64_t unfinished = 0;       // exit not seen: outcome and latency unknown
    std::uint64_t latency_unknown = 0;  // calls without a duration_ns (the unfinished ones among them)
    // ns over the calls with a known latency; null when there is none (never 0 for "unknown").
    std::optional<std::uint64_t> total_ns, mean_ns, min_ns, max_ns;
};

// One place where the source says data is missing (docs/report-format.md, `completeness.gaps`).
struct Gap {
    // "lost_events": the kernel said events were lost here ("CPU:N [LOST M EVENTS]", a page's missed events);
    // "buffer_started": "##### CPU N buffer started ####": the CPU's events before it were overwritten;
    // "elided": a " [..]" / "..." row: lines left out of the excerpt.
    std::string kind;
    int cpu = -1;                        // -1: the source does not say (an elision row names no CPU)
    std::optional<std::uint64_t> count;  // events, when the source says how many
    // ns. lost_events: the time of the CPU's first record after the loss (the kernel prints the mark with it;
    // a page's missed events precede its first record); null when no record of the CPU follows or the source
    // has no timestamps. buffer_started: at or before the CPU's first event after the mark; elided: the last
    // line's before the row.
    std::optional<std::uint64_t> ts_ns;
    std::optional<std::uint32_t> line;  // 1-based line of a text trace
};

struct Completeness {
    bool complete = true;
    std::uint64_t lost_events = 0;     // events the kernel says it lost (missed-event marks, kmsg EPIPE)
    std::uint64_t overruns = 0;        // ring-buffer overrun (overwritten events), summed over CPUs
    std::uint64_t dropped_events = 0;  // ring-buffer dropped events, summed over CPUs
    std::uint64_t graph_overruns = 0;  // calls lost to a full return stack (funcgraph_exit.overrun)
    // The `trace` file header "# entries-in-buffer/entries-written: A/B"; B - A are overwritten and counted in
    // `overruns`. Null when the source has no such header.
    std::optional<std::uint64_t> entries_in_buffer;
    std::optional<std::uint64_t> entries_written;
    std::vector<Gap> gaps;             // every loss mark, in stream order
    std::vector<std::string> reasons;  // why complete is false, one line each
    std::vector<Diagnostic> diagnostics;

    // Counts kept once, in the diagnostics or the gaps, and read from there (report.json writes them as fields).
    std::uint64_t orphan_returns() const { return diagnostic_count(Diag::orphan_return); }  // exits without entry
    std::uint64_t unclosed_calls() const { return diagnostic_count(Diag::unclosed_call); }  // entries without exit
    // " [..]" / "..." rows of an excerpt: the gaps of kind "elided".
    std::uint64_t elided_spans() const {
        std::uint64_t n = 0;
        for (const Gap& g : gaps)
            n += g.kind == "elided" ? 1 : 0;
        return n;
    }
    // Lines of a text source that could not be read: the diagnostics of unreadable lines (malformed_line, ...).
    std::uint64_t unreadable_lines() const {
        std::uint64_t n = 0;
        for (const Diagnostic& d : diagnostics)
            if (const DiagnosticInfo* i = find_diagnostic(d.name); i && i->unreadable) n += d.count;
        return n;
    }
    std::uint64_t diagnostic_count(Diag id) const {
        for (const Diagnostic& d : diagnostics)
            if (d.name == diagnostic_info(id).name) return d.count;
        return 0;
    }
};

struct Check {
    std::string id;
    std::string result;  // "pass", "fail", "inconclusive"
    std::string evidence;
    std::string why;
};

// A trace_marker line (ftrace:print) in the order it was recorded.
struct MarkerEntry {
    std::optional<std::uint64_t> ts_ns;  // null in text traces without timestamps
    int pid = -1;                        // the writer's pid
    std::string text;
};

// Any other recorded event (docs/report-format.md, `events`): a tracepoint asked for with --event
// (OtherEvent from the raw decoder), an event line or `/* event: ... */` comment of a text trace
// (irq_handler_entry, sched_switch, ...), a function tracer hit ("ftrace:function", fields ip and
// parent_ip), a context-switch banner of function_graph text ("nvtrace:task_switch"). A `<stack trace>`
// recorded right after an event of the same CPU and task (the stacktrace option) lands in that event's
// `stack`; one that follows nothing is its own "ftrace:kernel_stack" / "ftrace:user_stack" record.
struct EventRecord {
    std::string name;                    // "system:event", or "event" when the source does not say the system
    std::optional<std::uint64_t> ts_ns;  // null in text traces without timestamps
    int cpu = -1;                        // -1 when the source does not say
    int pid = -1;
    std::string comm;  // "" when unknown
    // The fields as name -> value when the text is "name=value ..." (libtraceevent's print of every field,
    // or the kernel's print format of most tracepoints); nullopt when it is free text.
    std::optional<std::map<std::string, std::string>> fields;
    std::string text;                     // the fields as printed (stack frames: empty)
    std::vector<std::string> stack;       // kernel stack frames, innermost first; empty when none
    std::vector<std::string> user_stack;  // user stack frames, innermost first; empty when none
    std::optional<std::uint32_t> line;    // 1-based line of a text trace; null otherwise
};

// Splits "a=1 b=two words c=3" into {a: "1", b: "two words", c: "3"}; tokens without letters or digits
// ("==>" of sched_switch) are dropped. nullopt when the text does not start with "name=".
std::optional<std::map<std::string, std::string>> parse_event_fields(std::string_view text);

// One call of a user-space library function seen through a uprobe pair (docs/report-format.md, `api_calls`;
// docs/api.md): the entry probe `F` (`p:`, fetch-args named after the header's parameters) and the return probe
// `F__return` (`r:`, `ret=$retval`), paired per thread (a stack per pid: cudaMalloc's span holds the
// cuMemAlloc_v2 it calls). The print of each probe is the kernel's (kernel/trace/trace_uprobe.c,
// print_uprobe_event: "(0x7f...) bytesize=16777216", "(0x7f... <- 0x7f...) ret=0") or libtraceevent's of the
// event's print fmt (kernel/trace/trace_probe.c, "(7f...) bytesize=16777216").
struct ApiCall {
    std::uint64_t id = 0;                 // 1-based, in entry order
    std::optional<std::uint64_t> parent;  // the enclosing API call of the same thread; null at the top
    int depth = 0;                        // 0 at the top
    int cpu = -1;                         // CPU of the entry
    int pid = -1;                         // the thread (ftrace's pid is the kernel's task id)
    std::string comm;
    std::string function;  // "cuMemAlloc_v2"
    // The probe's group ("nvtrace_1234"); "" when the source does not say (the `trace` file's text names none).
    std::string group;
    // "libcuda.so.1", "libcudart.so.13"; null when not known (a name outside the CUDA table of
    // nvtrace/knowledge.hpp with no capture record of its probe).
    std::optional<std::string> library;
    std::string api;  // "cuda_driver", "cuda_runtime", "user" (a --uprobe), "unknown"
    // The entry probe's fetch-args as recorded (name -> printed value: "16777216", "0x1", "\"file.cubin\"").
    std::map<std::string, std::string> args;
    // What the CUDA table says an argument is (name -> "bytes", "flags", "address", "device_address",
    // "handle", "device", "enum", "count", "value", "string"), for the arguments it names.
    std::map<std::string, std::string> arg_kinds;
    // Arguments decoded by their kind: bytes as "16 MiB" (binary units, exact bytes when not a whole unit),
    // pointers and handles as "NULL" or hex, flags in hex.
    std::map<std::string, std::string> args_decoded;
    std::optional<std::int64_t> result;  // the return probe's `ret` (a uretprobe's default x64 read as signed)
    // The result's name from CUresult (driver API) or cudaError_t (runtime), nvtrace/knowledge.hpp; "unknown"
    // when there is no name, and `result_unknown` says why.
    std::string result_name = "unknown";
    std::optional<std::string> result_unknown;
    std::uint64_t entry_ns = 0;
    std::optional<std::uint64_t> exit_ns;     // null when the return was not seen; `exit_unknown` says why
    std::optional<std::string> exit_unknown;  // "the trace ended inside the call", ...
    // The ioctls (indices into Report::ioctls) and root calls (ids in Report::calls) entered on this thread
    // while this was the innermost open API call.
    std::vector<std::uint64_t> ioctls;
    // The same ioctls as the summary names them, one per index ("NV_ESC_RM_ALLOC hClass NV01_ROOT_CLIENT(0x41)",
    // "0xc030462b ret=-22(EINVAL)": request, RM class, how it failed), so that a report streamed without holding
    // its ioctls can still say what ran inside each call.
    std::vector<std::string> ioctl_names;
    std::vector<std::uint64_t> calls;
    std::optional<std::string> phase;  // the phase marker's phase at entry; without markers the top call's function
};

// Where a function of the report is defined in a driver source tree (`--source DIR`, docs/report-format.md).
struct SourceLocation {
    std::string file;        // relative to the tree's root, '/'-separated
    std::uint32_t line = 0;  // 1-based line of the function's name in its definition
};
struct SourceLink {
    std::string function;                    // as in calls[].function
    std::string lookup;                      // the name searched: function without .isra.N/.constprop.N/.part.N/.cold
    std::vector<SourceLocation> candidates;  // one definition, or every definition found (ambiguous)
};
struct SourceLinks {
    std::string root;                   // the directory given to --source
    std::uint64_t files_scanned = 0;    // .c and .h files read
    std::vector<SourceLink> found;      // exactly one definition
    std::vector<SourceLink> ambiguous;  // several definitions: all listed, none chosen
    std::vector<std::string> missing;   // no definition in the tree (never guessed)
};

struct Report {
    ReportSource source;            // what was read or run (nvtrace/report_source.hpp)
    ReportEnvironment environment;  // kernel, modules, driver version and flavour
    Completeness completeness;
    std::vector<Call> calls;
    std::vector<GraphNode> graph;
    std::vector<KernelLogMessage> kernel_log;
    std::vector<IoctlRecord> ioctls;
    std::vector<IoctlStat> ioctl_stats;  // by (device or fd, cmd); each (device, request) row before its tasks'
    std::vector<Check> checks;
    std::vector<MarkerEntry> markers;
    std::vector<EventRecord> events;            // in stream order (by time)
    std::vector<ApiCall> api_calls;             // by id (entry order)
    std::optional<KmsgClockOffset> kmsg_clock;  // from EventStream::kmsg_clock; null when not recorded
    std::optional<SourceLinks> source_links;    // null without --source
};

// The summary's one completeness line: "complete: yes", or "complete: no: " and the reasons joined by "; "
// ("complete: no: 12,325 of 70,138 entries overwritten (the buffer wrapped); 2 elided spans").
std::string completeness_line(const Completeness& c);
// 70138 -> "70,138" (the counts of completeness reasons).
std::string thousands(std::uint64_t n);

// Builds the report from an event stream whose symbols are already resolved. Never fails: problems in
// the data become diagnostics and make `completeness.complete` false.
Report build_report(const EventStream& stream);

// The report's JSON (docs/report-format.md) written to `out` element by element: memory stays bounded by the
// largest element rather than the report (a DOM of a million calls takes about 1 GB).
void write_json(const Report& report, std::ostream& out);

}  // namespace nvtrace
