// nvtrace/event.hpp: the event stream, the contract between every reader (live capture, and the file
// readers of later issues) and every analysis.
//
// Units: every timestamp and duration is in nanoseconds of the trace clock the data was recorded with
// (ftrace's default "local" clock for live captures; see Documentation/trace/ftrace.rst, "trace_clock").
// Thread-safety: plain value types; an EventStream is built by one thread and then only read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nvtrace/diagnostics.hpp"

namespace nvtrace {

// ftrace:funcgraph_entry (kernel/trace/trace_entries.h). `function`/`module` are filled in by symbol
// resolution (SymbolTable::resolve); `func_addr` is what the kernel recorded.
struct FuncEntry {
    std::uint64_t func_addr = 0;
    std::string function;               // bare symbol name, e.g. "null_queue_rq"
    std::optional<std::string> module;  // "null_blk" for "[null_blk]" symbols, nullopt for vmlinux
    int depth = 0;                      // nesting index the kernel recorded (0 = outermost traced call)
    // function_graph text with funcgraph-args (>= 6.15, BTF): the argument list as printed inside the
    // parentheses ("rq=0xffff888007949bc0, cpu=3"); empty when none was printed.
    std::string args{};
    // funcgraph-retaddr (>= 6.13): the caller's return address as printed, "__schedule+0x60b/0x700"
    // (without "<-"); empty when none was printed.
    std::string retaddr{};
    // Not in the data: the reader inferred this entry from a return later in the text at this depth (an
    // excerpt of function_graph text that starts inside a call whose "}" closes calls of the excerpt). The
    // call it opens has entry_seen false; its return closes it as usual.
    bool inferred = false;
};

// ftrace:funcgraph_exit. calltime/rettime are ns on the trace clock (0 when unknown, e.g. in text
// traces); rettime - calltime is the duration the kernel itself prints (trace_functions_graph.c).
// Text readers set duration_ns from the DURATION column instead. `function` may be empty for a bare "}"
// in text: it then closes the innermost open call at that depth. overrun: calls lost because the task's
// return stack was full.
struct FuncExit {
    std::uint64_t func_addr = 0;
    std::string function;
    std::optional<std::string> module;
    int depth = 0;
    std::uint64_t calltime_ns = 0;
    std::uint64_t rettime_ns = 0;
    std::optional<std::uint64_t> duration_ns;  // overrides rettime - calltime when set
    std::uint64_t overrun = 0;
    std::optional<std::int64_t> retval;  // funcgraph-retval (>= 6.5) or the text's "/* ret=... */"
};

// syscalls:sys_enter_ioctl / sys_exit_ioctl (fields fd, cmd, arg / ret).
struct IoctlEnter {
    int fd = -1;
    std::uint64_t cmd = 0;
    std::uint64_t arg = 0;
    // The fd's path as the source printed it at this very call (strace -y "3</dev/nvidiactl>", gVisor's
    // "0x3 /dev/nvidiactl"); preferred over any sample of /proc. Empty when the call did not say.
    std::string fd_path{};
    // false when the source printed the argument as no number (strace's decoded "{B38400 opost ...}"): arg is 0.
    bool arg_known = true;
};
struct IoctlExit {
    // The return value; nullopt when the source printed none (strace "= ?" alone: the process ended inside the
    // call; "= ? ERESTARTSYS" gives the kernel's -512).
    std::optional<std::int64_t> ret = 0;
    // The errno as the source printed it (strace "= -1 ENOTTY (Inappropriate ioctl for device)": name
    // "ENOTTY", text "Inappropriate ioctl for device"; gVisor "errno=22 (invalid argument)"). Empty when the
    // source printed none (the kernel's sys_exit_ioctl: ret itself is then -errno).
    std::string errno_name{};
    std::string errno_text{};
    // enter -> exit in ns as the source printed it (strace -T "<0.000021>", gVisor "(21.883µs)"); preferred over
    // the difference of timestamps, which strace prints for a call's start only. nullopt: not printed.
    std::optional<std::uint64_t> duration_ns{};
};

// ftrace:print, written through trace_marker (scenario phase markers, nvtrace's own start/end marks).
struct Marker {
    std::string text;
};

// A kernel log message seen in the trace buffer (printk:console, field msg).
struct ConsoleLine {
    std::string text;
};

// Any other event the user asked for with --event: its system, name and the fields libtraceevent printed.
struct OtherEvent {
    std::string system;
    std::string name;
    std::string fields;
};

// The kernel said events were lost on this CPU before this point (ring-buffer page header,
// tep_record::missed_events). count is nullopt when the kernel did not say how many.
// `kind` says what the source said: `lost` ("CPU:N [LOST M EVENTS]", a ring-buffer page's missed events),
// `buffer_started` ("##### CPU N buffer started ####", kernel/trace/trace.c print_trace_line with the
// annotate option: the CPU's older events were overwritten), `elided` (a " [..]" or "..." row of an excerpt:
// lines left out by whoever copied the trace; cpu -1 when the row names none).
struct LostEvents {
    std::optional<std::uint64_t> count;
    enum class Kind : std::uint8_t { lost, buffer_started, elided };
    Kind kind = Kind::lost;
};

using EventBody = std::variant<FuncEntry, FuncExit, IoctlEnter, IoctlExit, Marker, ConsoleLine, OtherEvent, LostEvents>;

struct Event {
    std::uint64_t ts_ns = 0;  // ring-buffer timestamp (for funcgraph_exit: commit time, not rettime)
    int cpu = -1;             // -1 when the source does not say
    int pid = -1;             // common_pid: the task (in irq context, the interrupted task); -1 = unknown
    bool irq = false;         // in hard or soft interrupt context (common_flags, or text irq markers)
    EventBody body;
    bool ts_known = true;    // false for text traces without timestamps (events are then in file order)
    std::uint32_t line = 0;  // 1-based line in the source file for text readers, 0 otherwise
};

// Per-CPU ring-buffer counters over the capture (deltas of per_cpu/cpuN/stats).
struct CpuBufferStats {
    int cpu = -1;
    std::string buffer;                // "instance" or "top" (the top-level buffer, used for function_graph on <6.11)
    std::uint64_t overrun = 0;         // events overwritten before they were read
    std::uint64_t dropped_events = 0;  // events rejected (overwrite off)
};

// A raw /dev/kmsg record ("<prio>,<seq>,<ts_usec>,<flags>;<msg>"), as read; parsed by kernel_log.hpp.
struct KmsgRecordText {
    std::string text;
};

// How /dev/kmsg timestamps (the kernel's local_clock(), printk) map to the trace clock, recorded at capture
// (tracer/clock_offset.cpp): trace_ns = kmsg_ns + offset_ns, known to within +- uncertainty_ns.
struct KmsgClockOffset {
    std::string trace_clock;                // the instance's trace_clock: "local", "global", "mono", ...
    std::optional<std::int64_t> offset_ns;  // null when it could not be measured or bounded
    std::uint64_t uncertainty_ns = 0;
    std::string basis;  // "same_clock" (local/global/perf read local_clock), "measured", "unknown"
};

// One life of a file descriptor number in a live capture: the span between two recorded changes of (pid, fd)
// (an open-type call that returned it, close, dup2/dup3 onto it, close_range over it, a successful execve of the
// process; syscalls:sys_enter_X / sys_exit_X in the capture's instance), within which the number can name at most
// one file: a file appears in a free slot only, and a slot is freed only by a recorded change. pipe2, socketpair
// and SCM_RIGHTS fill free slots without saying which, which is why a span is not the same as "the open call".
// `path` is the file when a sample of the fd fell inside the span (a /proc/PID/fd reading taken entirely inside
// it, the preload library's readlink at an ioctl inside it, or the path of the fd it was duplicated from); else
// null, with `unknown` saying why. Rows are recorded under every thread id of the process (events carry thread
// ids; threads share the fd table). Built by build_fd_lifetimes (nvtrace/ioctl.hpp) from the capture's events;
// saved in fd_paths.json (docs/formats.md). Times in ns on the trace clock.
struct FdLifetime {
    int pid = -1;  // thread id
    int fd = -1;
    std::optional<std::uint64_t> from_ns;   // exit of the change that began it; null: from before the run
    std::optional<std::uint64_t> until_ns;  // enter of the change that ended it; null: to the end of the run
    std::string opened_by;  // "openat", "dup2", ..., "execve", "io_uring_setup"/"io_uring_enter"; empty: before
    std::optional<std::string> path;
    std::string path_from;  // "poll", "preload", "dup" (from the source fd's span); empty without a path
    std::string unknown;    // without a path: "unknown: opened before the run", "unknown: fd reused since the
                            // last sample", "unknown: no sample while it was open", "unknown: ... uses io_uring, ..."
};

// A value whose key is left out of meta.json when there is none (never written as null; capture_meta.hpp).
template <class T>
struct Omitted : std::optional<T> {
    using std::optional<T>::optional;
};

// One probed function of meta.json "uprobes" (tracer/uprobes.hpp): the entry probe `group`/`event` (p:, the
// arguments) and the return probe `group`/`return_event` (r:, $retval) at `offset` of `library`. Their records are
// the report's EventRecords named "<group>:<event>" and "<group>:<return_event>".
struct CaptureUprobe {
    std::string group;         // nvtrace_<pid of nvtrace>
    std::string event;         // "cudaMalloc"; unique in the group ("cudaMalloc_2" on a second file)
    std::string return_event;  // "cudaMalloc__return"
    std::string library;       // the file probed (its real path: a uprobe attaches to the inode)
    std::string symbol;        // as exported (.dynsym), "cuMemAlloc_v2", "memcpy@GLIBC_2.2.5"
    std::uint64_t offset = 0;  // file offset of the probed instruction, bytes
    std::string api;           // "cuda_driver" (libcuda, CUresult), "cuda_runtime" (libcudart, cudaError_t), "user"
    // Probes armed late (tracer/uprobe_late.hpp): on a file the program mapped after it started, so its calls before
    // the arming are not in the data. `late_pid`: the process whose /proc/PID/maps showed the file (set only for
    // those); `armed_after_ns`: when the probes were enabled, ns after the program was released (CLOCK_MONOTONIC);
    // `armed_ns`: the same moment on the trace clock (nvtrace's marker "nvtrace-uprobes-armed-late"; absent when
    // the marker is not in the data). Keys left out of meta.json for probes armed before the start.
    Omitted<int> late_pid;
    Omitted<std::uint64_t> armed_after_ns;
    Omitted<std::uint64_t> armed_ns;
};

struct EventStream {
    std::vector<Event> events;         // sorted by ts_ns (stable) before analysis
    std::map<int, std::string> comms;  // pid -> comm (saved_cmdlines, /proc)
    std::vector<CpuBufferStats> buffer_stats;
    std::vector<KmsgRecordText> kmsg;     // kernel log records captured beside the trace
    bool kmsg_overwritten = false;        // /dev/kmsg said EPIPE: records were lost
    std::vector<Diagnostic> diagnostics;  // reader diagnostics, carried into report.completeness
    // (pid, fd) -> path, from /proc/PID/fd during a live capture (polled every 10 ms: an fd that lived
    // shorter can be missing; a reused number keeps the newest path).
    std::map<std::pair<int, int>, std::string> fd_paths;
    // (pid, fd) -> every path seen on it, in the order seen, for an fd that named several files during the run
    // (closed and opened again): which of them an ioctl used is not known, so such an fd is not in fd_paths and
    // its ioctls have no fd_path (the info diagnostic "fd_reused" lists them). add_fd_path fills both maps.
    std::map<std::pair<int, int>, std::vector<std::string>> fd_paths_reused;
    // With fd_lifetimes_recorded (a live capture that recorded the fd syscalls), an ioctl's path comes from the
    // lifetime its (pid, fd) was in at its time, and fd_paths / fd_paths_reused are not used: an fd with no
    // lifetime at that time is unknown ("unknown: not seen opened or sampled"). Sorted by (pid, fd, from_ns).
    std::vector<FdLifetime> fd_lifetimes;
    bool fd_lifetimes_recorded = false;
    std::optional<KmsgClockOffset> kmsg_clock;  // set by a live capture; used to attach kmsg lines by time
    // The user-space probes a live capture armed (meta.json "uprobes"): which function of which library each uprobe
    // event is; empty for other sources, whose API calls are named from the event alone.
    std::vector<CaptureUprobe> uprobes;
    // The text file the events were read from, as named to the reader; empty for binary and live sources.
    // With Event::line it says where a diagnostic's first example is ("file:line").
    std::string file_name;
    // The `trace` file header "# entries-in-buffer/entries-written: A/B" (kernel/trace/trace.c,
    // print_event_info): A events in the buffer, B written since the last reset; B > A: B - A overwritten.
    std::optional<std::uint64_t> entries_in_buffer;
    std::optional<std::uint64_t> entries_written;
};

// Records that /proc/PID/fd/FD named `path` (observations in the order they were made). The first path of a
// (pid, fd) goes to fd_paths; a different later one moves the fd to fd_paths_reused with all its paths.
inline void add_fd_path(EventStream& st, int pid, int fd, const std::string& path) {
    const std::pair<int, int> key{pid, fd};
    if (auto r = st.fd_paths_reused.find(key); r != st.fd_paths_reused.end()) {
        if (r->second.back() != path) r->second.push_back(path);
        return;
    }
    auto [it, inserted] = st.fd_paths.emplace(key, path);
    if (inserted || it->second == path) return;
    st.fd_paths_reused[key] = {it->second, path};
    st.fd_paths.erase(it);
}

// The info diagnostic "fd_reused" for st.fd_paths_reused (nothing when it is empty): count = the (pid, fd)
// pairs, first_example "pid P fd F: PATH, PATH, ... (ioctls on it are not named by path)".
inline void note_reused_fds(EventStream& st) {
    if (st.fd_paths_reused.empty()) return;
    const auto& [key, paths] = *st.fd_paths_reused.begin();
    std::string example = "pid " + std::to_string(key.first) + " fd " + std::to_string(key.second) + ":";
    for (std::size_t i = 0; i < paths.size(); ++i)
        example += (i ? ", " : " ") + paths[i];
    example += " (ioctls on it are not named by path)";
    count_diagnostic(st.diagnostics, Diag::fd_reused, example, st.fd_paths_reused.size());
}

}  // namespace nvtrace
