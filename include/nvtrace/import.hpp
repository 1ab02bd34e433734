// nvtrace/import.hpp: readers that turn the traces people already have into the EventStream a live capture
// produces (DESIGN.md section 3, analyze/import). Formats: docs/formats.md; their kernel and trace-cmd
// sources: ../shared/reference/ftrace-formats.md sections 1-3.
//
// Every text reader:
//  - works on one in-memory text (import_file maps the file) and walks it line by line without copying
//    lines; CRLF, tab-indented copies, a missing final newline and NUL/invalid UTF-8 bytes are accepted
//    (invalid UTF-8 in kept strings is replaced by U+FFFD, so the report's JSON stays valid);
//  - never throws on bad data: malformed lines become counted Diagnostics in EventStream::diagnostics
//    ("malformed_line", severity "error", first example "file:line: expected X, found 'Y'"), loss marks
//    become LostEvents events (and "lost_events" data_loss diagnostics);
//  - fails (Error::usage) only when nothing usable is in the text, naming file:line and what was expected;
//  - sets Event::line (1-based), Event::ts_known (false when the text has no timestamps: events then keep
//    the file order, all at ts_ns 0), Event::cpu / pid when the text says them, Event::irq from irq markers
//    or latency flags.
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/kernel_log.hpp"

namespace nvtrace {

enum class TraceFormat {
    fgraph_text,       // function_graph `trace` / `trace_pipe` / perf ftrace text
    function_text,     // `trace` of the function tracer (or nop with events): "comm-pid [cpu] flags ts: ..."
    trace_cmd_report,  // `trace-cmd report` text
    trace_dat,         // trace-cmd's binary trace.dat (v6, v7), read through libtracecmd
    kernel_log,        // dmesg / journalctl -k / syslog / /dev/kmsg text, read by read_kernel_log
    strace,            // strace output: its ioctl calls become IoctlEnter / IoctlExit (parse_strace)
};

// "fgraph-text", "function-text", "trace-cmd-report", "trace-dat", "kernel-log", "strace".
std::string_view format_name(TraceFormat f);
std::optional<TraceFormat> parse_format_name(std::string_view name);

// Guesses the format from the first bytes of a file (64 KiB are plenty). nullopt when nothing fits, or when
// fewer than 30% of the first 400 non-empty, non-comment lines look like the best-scoring format (random
// bytes, a text that only happens to hold a few trace-like lines). A "# tracer:" header or the trace.dat
// magic decides alone.
std::optional<TraceFormat> detect_format(std::string_view head);

// function_graph text (section 1 of ftrace-formats.md): every optional prefix column (abstime, CPU,
// TASK/PID, latency flags, duration with overhead marks), entry / leaf / return lines, tails, both retval
// generations, retaddr, args, "(Overruns: N)", irq markers, context-switch banners (pid of the lines that
// follow on that CPU, and of the lines before it on that CPU when they had none), comments as events
// ("console: ..." -> ConsoleLine, "event: fields" -> OtherEvent with system "", other text -> Marker),
// "CPU:N [LOST M EVENTS]" -> LostEvents. FuncEntry/FuncExit depth = (indentation after the prefix - the
// separator's own spaces) / 2, i.e. the depth the kernel printed. A leaf "f();" is a FuncEntry plus a
// FuncExit (same ts) with duration_ns. A context switch is also kept as
// OtherEvent{system "nvtrace", name "task_switch", fields "prev_comm=C prev_pid=P next_comm=C next_pid=P"}.
// An entry that jumps deeper than the open frames allow (an interrupt with no marker) is flagged irq, with
// its subtree.
Result<EventStream> read_fgraph_text(std::string_view text, std::string_view file_name);

// The function tracer's text (and any other non-graph `trace` text with events). A function hit
// "f <-parent" becomes FuncEntry + FuncExit at depth 0 with no duration (the function tracer records no
// returns), preceded by OtherEvent{"ftrace", "function", "ip=f parent_ip=parent"}. A "<stack trace>" block
// becomes OtherEvent{"ftrace", "kernel_stack", frames joined by '\n', innermost first}. Events
// ("name: fields") become IoctlEnter/IoctlExit (syscalls ioctl), Marker (print, tracing_mark_write, bprint),
// ConsoleLine (console) or OtherEvent{system "", name, fields}.
Result<EventStream> read_function_text(std::string_view text, std::string_view file_name);

// `trace-cmd report` text (section 2): the event prefix "comm-pid [cpu] flags ts: event:", funcgraph
// bodies as in read_fgraph_text (leaves on entry lines), " (ret=V)", "(N)" depth suffixes, the v6 preamble,
// "CPU:N [M EVENTS DROPPED]"; function / kernel_stack / other events as in read_function_text.
Result<EventStream> read_trace_cmd_report(std::string_view text, std::string_view file_name);

// trace.dat through libtracecmd: the top buffer and every instance buffer, decoded from the event formats,
// function names from the file's kallsyms (tep_find_function). Module names: libtraceevent keeps them
// (tep_find_function_module) and they are filled when the file's kallsyms had them. Missed events ->
// LostEvents. Error::environment when nvtrace was built without libtracecmd (the static build).
Result<EventStream> read_trace_dat(const std::string& path, std::vector<std::string> other_events = {});
bool trace_dat_supported();
// The same for a trace.dat already in memory (standard input, a pipe): libtracecmd needs a file it can seek in,
// so the bytes are written to an unlinked temporary file in $TMPDIR first. `name` names the input in messages
// ("<stdin>"). Errors: read_trace_dat's, and Error::environment when the temporary file cannot be made or written.
Result<EventStream> read_trace_dat_bytes(std::string_view bytes, const std::string& name,
                                         std::vector<std::string> other_events = {});

// read_trace_dat one event at a time, for a report that does not hold them (nvtrace/report_stream.hpp, `nvtrace
// report FILE.dat`). `each` gets every event in the order read_trace_dat's stream holds them (it may move from
// it) and returns false to stop the reading. `side` gets what read_trace_dat puts beside the events: comms (a pid's
// comm is in side.comms before that pid's first event is handed over) and the diagnostics unreadable_instance and
// undecodable_record (the latter after the last event). Every buffer of the file (top and instances, trace-cmd
// record -B) is read at once, by time (tracecmd_iterate_events_multi): read_trace_dat's order whenever each
// buffer's times never go back; a CPU whose stamps step back is handed over as read, for the receiver to sort
// (ReportStream's sorter). The result:
//  - done: every event was handed over and `side` is complete;
//  - stopped: `each` returned false;
//  - cannot_stream: no longer returned (kept for callers that still test for it).
// Errors: those of read_trace_dat (Error::environment without libtracecmd). Memory: one record's events. Thread-safety:
// pure function.
enum class TraceDatStreamed { done, stopped, cannot_stream };
using TraceDatEach = std::function<bool(Event&)>;
Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& side, const TraceDatEach& each,
                                          std::vector<std::string> other_events = {});

// A ring-buffer record a reader checked and left undecoded, for a receiver that decodes it later or on another
// thread (ReportFold::add): its bytes alone decode it (funcgraph entries and exits, which need the file's
// kallsyms, are never one). Opaque outside analyze/ (analyze/raw_event_decoder.hpp).
struct RawRecord;

// The same with the decoding left to the receiver where it can be: a RawRecord is given to record()
// undecoded, every other event to event(), all in one order. A record's pid has its comm in side.comms
// before the call. What a RawRecord refers to stays valid until handle_done() (called once, after the last
// record of every buffer), except its bytes: during the call only. false from event() or record() stops the
// reading (`stopped`).
class TraceDatSink {
public:
    virtual ~TraceDatSink() = default;
    virtual bool event(Event& ev) = 0;          // may move from ev
    virtual bool record(const RawRecord& rec);  // by default decoded here and given to event()
    virtual void handle_done() {}
};
Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& side, TraceDatSink& sink,
                                          std::vector<std::string> other_events = {});

// Reads one file of any supported format (`forced` skips detection). Kernel logs are parsed by
// read_kernel_log: their messages land in `kernel_log`, the stream is empty; a text no trace format fits is
// read as a kernel log when read_kernel_log finds messages in it (test-harness output with CUDA errors).
// strace output: its complete ioctl calls become IoctlEnter/IoctlExit events in file order (ts_known
// false), fd paths from -y or open lines in `fd_paths`; the truncated last call is a data_loss diagnostic.
// A text where fewer than one line in four gives events (malformed_line > 3 x lines read) fails with
// Error::usage ("not usable as FORMAT"). The input is opened by open_input (nvtrace/input.hpp: "-", a FIFO or a
// socket is read whole once, a device refused); import_input reads an input already opened.
struct ImportResult {
    TraceFormat format = TraceFormat::fgraph_text;
    EventStream stream;
    std::vector<KernelLogMessage> kernel_log;
};
Result<ImportResult> import_file(const std::string& path, std::optional<TraceFormat> forced = std::nullopt);

// Same for text already in memory (standard input, tests). A trace.dat is read with read_trace_dat_bytes.
Result<ImportResult> import_text(std::string_view text, std::string_view file_name,
                                 std::optional<TraceFormat> forced = std::nullopt);

}  // namespace nvtrace
