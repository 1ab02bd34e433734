// nvtrace/ioctl.hpp: ioctl request numbers and ioctl records.
//
// Encoding (include/uapi/asm-generic/ioctl.h, x86-64): bits 0-7 nr, 8-15 type, 16-29 size,
// 30-31 direction (0 none, 1 write, 2 read, 3 read|write). Legacy tty/socket requests (0x54xx) predate
// the encoding. Names come from the tables of nvtrace/knowledge.hpp (NVIDIA RM and OS-layer escapes, UVM,
// gdrdrv, DRM core, generic tty requests).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

struct IocFields {
    unsigned dir = 0;  // 0 none, 1 _IOC_WRITE, 2 _IOC_READ, 3 both
    unsigned type = 0;
    unsigned nr = 0;
    unsigned size = 0;
};

// `_IOC(dir, type, nr, size)` taken apart as include/uapi/asm-generic/ioctl.h lays it out.
inline IocFields decode_ioc(std::uint64_t cmd) {
    auto c = static_cast<std::uint32_t>(cmd);
    return {c >> 30, (c >> 8) & 0xffu, c & 0xffu, (c >> 16) & 0x3fffu};
}

// Name of a request number. With the path of the fd it was issued on ("/dev/nvidiactl",
// "/dev/nvidia-uvm", "/dev/dri/renderD128"), the device decides the family; without one, the number is
// named only when exactly one family nvtrace knows claims it (describe_ioctl in knowledge.hpp explains more).
std::optional<std::string> ioctl_name(std::uint64_t cmd, std::optional<std::string_view> device_path = std::nullopt);

// What the tracer knows of a process's fds: `path` was behind (pid, fd) from `since_ns` on (0: from the start),
// until `until_ns` (exclusive; nullopt: to the end). An empty `path` with `unknown` set: nothing names the file in
// that span, and why ("unknown: fd reused since the last sample"). An ioctl takes the entry of its (pid, fd) with
// the latest since_ns at or before its time; at or past that entry's until_ns (the fd was being changed: a call
// of another thread) it has no path ("unknown: the fd changed during this ioctl").
struct FdPath {
    int pid = -1;
    int fd = -1;
    std::uint64_t since_ns = 0;
    std::string path;
    std::optional<std::uint64_t> until_ns{};
    std::string unknown{};
};

// The entries the ioctls of `stream` are named from: its fd_lifetimes when fd_lifetimes_recorded, else fd_paths
// (since 0, open-ended) and fd_paths_reused (no path: "unknown: fd reused during the run (several files seen)").
std::vector<FdPath> fd_paths_of(const EventStream& stream);
// Why an ioctl on an fd without any entry has no path: "unknown: not seen opened or sampled" with recorded
// lifetimes, "unknown: no sample of this fd" with /proc samples only, "unknown: the source records no fd paths"
// without either.
std::string fd_path_unknown_default(const EventStream& stream);

// ---- fd lifetimes of a live capture (EventStream::fd_lifetimes) -------------------------------------------

// A call that changes a process's fd table: syscalls:sys_enter_NAME (its fields by name, as the tracepoint's
// format names them: include/trace/events/syscalls.h, kernel/trace/trace_syscalls.c) and the next
// sys_exit_NAME of the same thread (ret).
struct FdCall {
    int pid = -1;      // thread id
    std::string name;  // "openat", "close", "dup2", "fcntl", "close_range", "execve", ...
    std::uint64_t enter_ns = 0;
    std::uint64_t exit_ns = 0;
    std::map<std::string, std::uint64_t> args;  // "fd", "oldfd", "newfd", "fildes", "cmd", "max_fd", "flags", ...
    std::int64_t ret = 0;
};
// An fd seen naming `path` at one moment within [begin_ns, end_ns]: a /proc/PID/fd poll (bracketed by two
// trace_marker_raw records nvtrace wrote around it), or the preload library's readlink at an ioctl (the
// time of its enter marker).
struct FdSample {
    int pid = -1;  // process id (poll) or thread id (preload)
    int fd = -1;
    std::uint64_t begin_ns = 0;
    std::uint64_t end_ns = 0;
    std::string path;
    std::string source;  // "poll", "preload"
};
struct FdLifetimeInput {
    std::vector<FdCall> calls;
    std::vector<FdSample> samples;
    std::map<int, int> process_of;  // thread id -> process id, as the polls saw them (a process maps to itself)
    // Events were lost (ring-buffer overrun, missed-event marks, pages not saved): a change of an fd may be
    // missing, so no sample names a span ("unknown: events were lost, a change of this fd may be missing").
    bool changes_may_be_missing = false;
};
// The spans of every (process, fd) the calls change or the samples name (FdLifetime in nvtrace/event.hpp),
// one row per thread id of the process, sorted by (pid, fd, from_ns). Calls of a thread the polls never placed
// in a process (it ended between two polls) could have changed that fd number in any process of the tree: they
// split the spans of that number everywhere. A sample whose interval is not entirely inside one span names none;
// samples of one span that disagree leave it unnamed ("unknown: samples of this span name different files").
// A span begun by dup, dup2, dup3 or fcntl(F_DUPFD, F_DUPFD_CLOEXEC) takes the path of the source fd's span at
// that call. A process's first io_uring_setup/io_uring_enter begins a never-named span of its every fd to the end.
std::vector<FdLifetime> build_fd_lifetimes(const FdLifetimeInput& in);

// One line written by libnvtrace_preload.so (docs/preload.md):
//   nvtrace-ioctl enter fd=5 dev=/dev/nvidiactl cmd=0xc020462b name=NV_ESC_RM_ALLOC hclass=0xa06f
//   nvtrace-ioctl exit fd=5 cmd=0xc020462b ret=0 status=0x1e
struct PreloadMarker {
    enum class Half : std::uint8_t { enter, exit };
    Half half = Half::enter;
    int fd = -1;
    std::uint32_t cmd = 0;
    std::optional<std::string> dev;   // enter: the fd's path when the call was made
    std::optional<std::string> name;  // enter: the request as the library named it
    std::optional<std::uint32_t> hclass, ctrl, xfer_nr, xfer_size;
    std::optional<std::int64_t> ret;      // exit: what ioctl() returned (-1 on failure)
    std::optional<int> err;               // exit: errno when ret is -1
    std::optional<std::uint32_t> status;  // exit: RM status / UVM rmStatus read from the parameters
};
// nullopt for any other text (phase markers, "nvtrace-preload start ...") and for malformed lines.
std::optional<PreloadMarker> parse_preload_marker(std::string_view text);

// Pairs sys_enter_ioctl with the next sys_exit_ioctl of the same pid and links the root calls made in
// between. Preload markers of the same pid fill in what the kernel events cannot carry: an enter marker
// just before a sys_enter_ioctl with the same fd and cmd gives the device path (and so the name), the hClass;
// an exit marker just after gives the RM/UVM status (as its NV_STATUS name, "0x..." when unknown; only when
// ioctl() returned 0, since the driver writes no status otherwise); an enter marker's ctrl= gives the RM control
// command (IoctlRecord::ctrl, and ctrl_class from the class table). Markers without a kernel record add no
// record. `stream.events` sorted by ts_ns; `calls` from build_call_graph. Names come from the number alone.
std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls);
// The same, with fd paths: each record gets the path of the entry of its (pid, fd) at its entry (FdPath), or
// fd_path_unknown saying why not, and its name from that device.
std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls,
                                        const std::vector<FdPath>& fd_paths);

// Sets IoctlRecord::call and ::calls: each root call (no parent, entry time known) made by the pid of a record
// between its enter_ns and exit_ns (open-ended without an exit) belongs to the latest such record. `ioctls` in
// enter order. O(records + calls log records).
void link_ioctl_calls(std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls);

// collect_ioctls one event at a time, for a stream too large to hold (nvtrace/report_stream.hpp): fed the events
// in time order, it hands every record to `sink` once nothing later in the stream can change it, in enter order
// (the order of collect_ioctls' result), without `call`/`calls` (link_ioctl_calls does that) or `phase`.
// A record is held until its exit is seen (or its pid enters another ioctl: the exit was lost) and then until
// its preload exit marker is seen or kHeldRecords newer records are held: an exit marker matches only a record
// still held, so the memory is bounded by kHeldRecords plus the records entered while the oldest ioctl still in
// progress runs. collect_ioctls is this collector with a vector as sink, so both give the same records.
// `comms` is read as the events come (it may grow between add() calls; a pid's comm must be in it before the
// pid's first event); `fd_paths` is read at construction and must outlive the collector.
// Thread-safety: one thread.
class IoctlCollector {
public:
    using Sink = std::function<void(IoctlRecord&&)>;
    static constexpr std::size_t kHeldRecords = 4096;
    // `no_entry`: the fd_path_unknown of an ioctl whose (pid, fd) has no entry in `fd_paths`
    // (fd_path_unknown_default).
    IoctlCollector(const std::map<int, std::string>& comms, const std::vector<FdPath>& fd_paths, Sink sink,
                   std::string no_entry = "unknown: no sample of this fd");
    ~IoctlCollector();
    IoctlCollector(const IoctlCollector&) = delete;
    IoctlCollector& operator=(const IoctlCollector&) = delete;
    // Markers (preload lines), IoctlEnter and IoctlExit; any other event is ignored.
    void add(const Event& ev);
    // The source says events were lost (a LostEvents mark: a ring-buffer page's missed events, "CPU:N [LOST M
    // EVENTS]", a buffer_started or elided row) somewhere after `since_ns` (ns on the trace clock: the CPU's last
    // event before the mark; 0 when not known) and before `until_ns` (the mark's time; nullopt when it has none).
    // sys_exit_ioctl carries no request, so a task's exit after the loss may be a later ioctl's whose enter was
    // lost: every ioctl still open, and every held one whose exit lies after since_ns, gets an unknown outcome (ret,
    // errno, status, exit_ns, duration_ns null; counted as unfinished by IoctlStats) instead of another call's.
    // Records already handed out are not changed. Call it in stream order, where the mark comes.
    void loss(std::uint64_t since_ns, std::optional<std::uint64_t> until_ns);
    // Records loss() made unknown, and the first ("pid P fd F cmd 0xC entered at T ns").
    std::uint64_t outcomes_lost() const;
    const std::string& first_outcome_lost() const;
    // Hands out every record still held (call once, after the last event).
    void finish();

private:
    struct State;
    void pop_front();
    std::unique_ptr<State> s_;
};

// ---- ioctl statistics (Report::ioctl_stats, docs/report-format.md) ---------------------------------------

// What one ioctl's outcome was for the statistics: nullopt when it succeeded or its outcome is not known (exit
// not seen, ret null); else the error's name: the errno as the source printed it (strace's "ENOTTY"), else named
// from a ret of -1..-4095 (every reader's ret is the kernel's -errno, strace's too: -1 is EPERM, never libc's -1;
// "ERESTARTSYS"; "ret=-N" when the number has no name), else, for ret >= 0 with an RM/UVM status not NV_OK, that status
// ("NV_ERR_INVALID_ARGUMENT", "0x..." when the status table does not know it).
std::optional<std::string> ioctl_error_name(const IoctlRecord& io);

// Report::ioctl_stats one record at a time: add() every ioctl (in any order), then rows(). Rows are sorted by
// (device, or fd when the device is not known, cmd); each (device, request) row is followed by one row per
// task, by pid, when more than one task (pid, comm) issued it. Memory: one entry per (device, request, task).
// Thread-safety: one thread.
class IoctlStats {
public:
    void add(const IoctlRecord& io);
    std::vector<IoctlStat> rows() const;

private:
    struct Key {
        std::optional<std::string> device;
        int fd = -1;  // -1 when device is set
        std::uint64_t cmd = 0;
        auto operator<=>(const Key&) const = default;
    };
    struct Group {
        IoctlStat all;
        std::map<std::pair<int, std::string>, IoctlStat> tasks;
    };
    std::map<Key, Group> groups_;
    // The rows the last record went to: consecutive records mostly share their (device, request, task), which
    // then costs a comparison instead of two map lookups and their key copies. Map nodes never move, so the
    // pointers stay valid while groups_ lives; a copy or move of the object starts without them.
    struct Last {
        Group* group = nullptr;
        IoctlStat* task = nullptr;
        Last() = default;
        Last(const Last&) {}
        Last& operator=(const Last&) {
            group = nullptr, task = nullptr;
            return *this;
        }
    };
    Last last_;
};
// IoctlStats fed every record of `ioctls`.
std::vector<IoctlStat> ioctl_stats(const std::vector<IoctlRecord>& ioctls);

// The summary's table of requests (docs/report.md), no trailing newlines; empty without rows:
//   ioctl requests: 2 (device, request), latency enter -> exit in us
//        count  errors         total          mean           max  request
//           20       0        84.211         4.210        12.034  pts/0 FIONREAD
//            4       2       130.000        65.000       100.000  nvidiactl NV_ESC_RM_ALLOC  errors: ENOTTY x1, ...
//           3       1       ...                                     python3/4242
// Requests by count (most first), each followed by its tasks' rows (`comm/pid`, indented) when several tasks
// issued it; "unknown" for a latency no call of the row has, and "N without latency (M unfinished)" after the
// request when some calls lack one. Without `verbose` at most `max_requests` requests, then "... N more".
std::vector<std::string> ioctl_stats_table(const std::vector<IoctlStat>& rows, bool verbose,
                                           std::size_t max_requests = 20);

// ---- the text summary's ioctl lines (docs/run.md, "Summary") ----------------------------------------------

// What an ioctl cost in the kernel: every call in the subtrees of IoctlRecord::calls and the summed
// durations of those roots (ns). `unfinished` counts roots whose exit is not in the data (time not summed).
// The line prints the time only when some root finished: "(kernel: 0 calls)", "(kernel: 2 calls, 1 without exit)".
struct IoctlKernelCost {
    std::uint64_t calls = 0;
    std::uint64_t total_ns = 0;
    std::uint64_t unfinished = 0;
    std::uint64_t roots = 0;  // root calls linked to the ioctl
};
// One cost per record, in order. O(calls + records).
std::vector<IoctlKernelCost> ioctl_kernel_costs(const std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls);

// "nvidiactl" for /dev/nvidiactl, "dri/renderD128", "pts/0"; a path outside /dev as it is; "fd5" without one.
std::string ioctl_device_short_name(const IoctlRecord& io);

// One ioctl for people, e.g.
//   nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0 (kernel: 37 calls, 412 us)
// Device short name; request name or its number in hex; hClass (named when the class table knows it);
// cmd=0x... for an RM control (with the class its interface belongs to); status when known; ret (with the
// errno name when negative) or "ret=?" when the exit was not seen; the kernel part only with `cost` (no
// function tracing: nullopt). Durations: "412 us" below 10 ms, "12.3 ms", "1.23 s".
std::string format_ioctl_line(const IoctlRecord& io, const std::optional<IoctlKernelCost>& cost);

struct IoctlSummaryOptions {
    bool kernel_traced = true;   // print the "(kernel: ...)" part
    bool verbose = false;        // every ioctl on its own line, no folding, no limit
    std::size_t max_lines = 40;  // without verbose: lines printed before "... N more"
};
// The summary's lines (no trailing newline). Without `verbose`, consecutive ioctls whose lines are equal
// apart from the kernel part are folded into one "<count>x <line>" with the kernel costs summed, and at most
// `max_lines` lines are printed, then "... <L> more line(s) (<N> ioctls); -v prints every ioctl". With
// `verbose`, one "<line>" per ioctl.
std::vector<std::string> summarize_ioctls(const std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls,
                                          const IoctlSummaryOptions& options);

// summarize_ioctls one record at a time (a streamed report hands its ioctls out as they complete): add() every
// record in order with its cost (nullopt without function tracing), then lines(). Holds the lines printed
// (every line with `verbose`), not the records. When the ioctls come from more than one task (pid as ftrace
// records it, a thread id), each line starts with the task's `comm/pid` (`python3/4242: nvidiactl ...`, `?/pid`
// when the comm is not known: empty, or ftrace's "<...>" for a pid missing from saved_cmdlines) and only ioctls of the
// same task fold together; from one task, lines are as above.
class IoctlSummary {
public:
    explicit IoctlSummary(IoctlSummaryOptions options) : options_(options) {}
    void add(const IoctlRecord& io, const std::optional<IoctlKernelCost>& cost);
    std::uint64_t ioctls() const { return ioctls_; }
    std::vector<std::string> lines();  // the lines so far, as summarize_ioctls gives them

private:
    struct Line {
        int pid;
        std::string comm, text;
        std::uint64_t count = 1;  // ioctls folded into the line (1 with verbose)
    };
    void end_run();
    IoctlSummaryOptions options_;
    std::vector<Line> lines_;
    std::string run_key_;  // the line of the run of equal lines being folded
    int run_pid_ = -1;
    std::string run_comm_;
    int first_pid_ = -1;
    bool several_tasks_ = false;
    std::uint64_t run_count_ = 0;
    std::optional<IoctlKernelCost> run_cost_;
    std::uint64_t folded_lines_ = 0, hidden_ioctls_ = 0, ioctls_ = 0;
};

}  // namespace nvtrace
