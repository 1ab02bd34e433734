// nvtrace/diagnostics.hpp: the table of every diagnostic nvtrace counts, and the Diagnostic counter itself.
//
// A diagnostic is a named counter of something wrong with the data, with a severity and a first example
// (Perfetto's trace_processor keeps such a stats table: src/trace_processor/storage/stats.h, each entry a name,
// a severity info / data_loss / error and a description). Every reader and analysis names an entry of this table
// (Diag::malformed_line), never a string: a misspelt name or a wrong severity does not compile. The table is listed
// in docs/report-format.md ("Diagnostics"); a unit test (tests/analyze/test_diagnostics.cpp) compares the two.
//
// In report.json (completeness.diagnostics) a diagnostic is written as its name and severity strings, count and
// first example; a saved report read back (export/report_from_json.cpp) may name diagnostics this table does not
// know (a report from another version), which is why Diagnostic keeps the strings.
// Thread-safety: constant data and plain value types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvtrace {

// info: worth knowing, nothing is missing. data_loss: data the source had is not in the result. error: input
// nvtrace could not read (a malformed line); what it held is missing too when `unreadable` is set.
enum class Severity : std::uint8_t { info, data_loss, error };

constexpr std::string_view severity_name(Severity s) {
    switch (s) {
        case Severity::info:
            return "info";
        case Severity::data_loss:
            return "data_loss";
        case Severity::error:
            return "error";
    }
    return "?";
}

// One entry per diagnostic, in the order of kDiagnostics below.
enum class Diag : std::uint8_t {
    // Loss marks and call-tree damage, counted when the report is built (analyze/report.cpp, path_tree.cpp).
    lost_event_marks,
    buffer_started,
    elided_span,
    orphan_return,
    unclosed_call,
    depth_gap,
    starts_mid_tree,
    graph_paths_capped,
    // API call spans from uprobe pairs (analyze/api_calls.cpp).
    api_return_without_entry,
    api_call_unclosed,
    uprobes_armed_late,
    // Text trace readers (analyze/import/stream_builder.cpp, fgraph_text.cpp).
    malformed_line,
    graph_unknown_tail,
    truncated_last_line,
    unsorted_timestamps,
    pid_backfill_limit,
    // Binary sources: trace.dat (analyze/import/trace_dat.cpp), capture directories and the live drain.
    unreadable_instance,
    undecodable_record,
    damaged_page,
    pages_not_saved,
    pages_not_read,
    // The report's sorter (analyze/sorter.hpp, ReportStream).
    late_event,
    late_ioctl_or_marker,
    // ioctl pairing (analyze/ioctl.cpp, IoctlCollector::loss).
    ioctl_outcome_after_loss,
    // fd paths of a live capture (nvtrace/event.hpp, note_reused_fds).
    fd_reused,
    // strace / gVisor logs (analyze/knowledge/strace.cpp).
    strace_truncated_line,
    strace_malformed_ioctl,
    strace_unknown_request,
    strace_program_output,
    strace_exit_without_entry,
    strace_unfinished_call,
    strace_other_line,
    // Kernel logs (analyze/kernel_log.cpp) and /dev/kmsg records.
    non_log_line,
    elided_lines,
    journal_marker,
    message_too_long,
    long_line,
    quoted_line,
    unknown_prefix,
    invalid_utf8,
    malformed_kmsg_record,
    kmsg_seq_gap,
    kmsg_unknown_flags,
    kmsg_record_repeated,
    log_line_repeated,
};

struct DiagnosticInfo {
    Diag id;
    std::string_view name;  // as written in report.json
    Severity severity;
    // The lines (or records) it counts are unreadable: counted in completeness.unreadable_lines, with their own
    // reason ("K lines could not be read"), so the report is incomplete although the severity is error: what they
    // held is missing.
    bool unreadable;
    std::string_view meaning;  // one line, what a count of it means
};

// The report is incomplete when one of these is counted (analyze/report.cpp gives each a reason).
constexpr bool makes_incomplete(const DiagnosticInfo& d) {
    return d.severity == Severity::data_loss || d.unreadable;
}

// clang-format off
inline constexpr std::array kDiagnostics{
    DiagnosticInfo{Diag::lost_event_marks, "lost_event_marks", Severity::data_loss, false,
        "marks where the kernel says events were lost (`CPU:N [LOST M EVENTS]`, a ring-buffer page's missed events)"},
    DiagnosticInfo{Diag::buffer_started, "buffer_started", Severity::data_loss, false,
        "`##### CPU N buffer started ####` marks: that CPU's older events were overwritten"},
    DiagnosticInfo{Diag::elided_span, "elided_span", Severity::data_loss, false,
        "` [..]` / `...` rows of an excerpt: lines left out by whoever copied the trace"},
    DiagnosticInfo{Diag::orphan_return, "orphan_return", Severity::data_loss, false,
        "returns whose entry is not in the data"},
    DiagnosticInfo{Diag::unclosed_call, "unclosed_call", Severity::data_loss, false,
        "entries whose return is not in the data"},
    DiagnosticInfo{Diag::depth_gap, "depth_gap", Severity::data_loss, false,
        "calls deeper than the open calls allow: their parent entries are missing"},
    DiagnosticInfo{Diag::starts_mid_tree, "starts_mid_tree", Severity::info, false,
        "an excerpt that starts inside a call tree: the calls it opens with were entered before it"},
    DiagnosticInfo{Diag::graph_paths_capped, "graph_paths_capped", Severity::info, false,
        "calls past the graph's cap on distinct paths, aggregated by function in `[beyond N paths] > F` rows"},
    DiagnosticInfo{Diag::api_return_without_entry, "api_return_without_entry", Severity::data_loss, false,
        "uprobe return events (`F__return`) with no open entry of F on their thread"},
    DiagnosticInfo{Diag::api_call_unclosed, "api_call_unclosed", Severity::data_loss, false,
        "uprobe entries of API calls whose return is not in the data: `exit_ns` null, `exit_unknown` says why"},
    DiagnosticInfo{Diag::uprobes_armed_late, "uprobes_armed_late", Severity::data_loss, false,
        "libraries the program mapped after the start, probed only then: their calls before the arming are not seen"},
    DiagnosticInfo{Diag::malformed_line, "malformed_line", Severity::error, true,
        "lines of a text trace that could not be read"},
    DiagnosticInfo{Diag::graph_unknown_tail, "graph_unknown_tail", Severity::data_loss, false,
        "function_graph lines with text after `{`, `;` or `}` that is no `/* */` comment or ` (ret=V)`: the call is read, the text (another line fused to it?) is not"},
    DiagnosticInfo{Diag::truncated_last_line, "truncated_last_line", Severity::data_loss, false,
        "a last line cut off (no newline, not readable)"},
    DiagnosticInfo{Diag::unsorted_timestamps, "unsorted_timestamps", Severity::info, false,
        "timestamps of a text trace go back; events were sorted by time (or streamed in file order)"},
    DiagnosticInfo{Diag::pid_backfill_limit, "pid_backfill_limit", Severity::info, false,
        "a CPU of function_graph text without a context-switch banner for 262,144 events: they keep pid -1"},
    DiagnosticInfo{Diag::unreadable_instance, "unreadable_instance", Severity::data_loss, false,
        "a buffer instance of a trace.dat that could not be opened: its events are missing"},
    DiagnosticInfo{Diag::undecodable_record, "undecodable_record", Severity::error, true,
        "trace.dat funcgraph/ioctl records whose format nvtrace does not understand"},
    DiagnosticInfo{Diag::damaged_page, "damaged_page", Severity::data_loss, false,
        "ring-buffer pages of a capture whose event chain cannot be decoded: their events are lost"},
    DiagnosticInfo{Diag::pages_not_saved, "pages_not_saved", Severity::data_loss, false,
        "the capture's drain could not read or write ring-buffer pages (meta.json `raw.write_error`)"},
    DiagnosticInfo{Diag::pages_not_read, "pages_not_read", Severity::data_loss, false,
        "a saved page file could not be read back after the run (meta.json `raw.decode_error`)"},
    DiagnosticInfo{Diag::late_event, "late_event", Severity::info, false,
        "events older than the sorting window: listed in arrival order there, not by time (nothing missing)"},
    DiagnosticInfo{Diag::late_ioctl_or_marker, "late_ioctl_or_marker", Severity::data_loss, false,
        "ioctl entries/exits or markers older than the sorting window: their pairing or phase may be wrong"},
    DiagnosticInfo{Diag::ioctl_outcome_after_loss, "ioctl_outcome_after_loss", Severity::data_loss, false,
        "ioctls open when events were lost: their exit may be a later ioctl's, so ret and latency are unknown"},
    DiagnosticInfo{Diag::fd_reused, "fd_reused", Severity::info, false,
        "fds that named several files during the run: their ioctls are not named by path"},
    DiagnosticInfo{Diag::strace_truncated_line, "strace_truncated_line", Severity::data_loss, false,
        "strace lines that end mid-call"},
    DiagnosticInfo{Diag::strace_malformed_ioctl, "strace_malformed_ioctl", Severity::error, true,
        "strace ioctl lines that could not be read (no fd, no request, an _IOC field or return that does not fit, -1 without errno)"},
    DiagnosticInfo{Diag::strace_unknown_request, "strace_unknown_request", Severity::data_loss, false,
        "ioctl requests strace printed by a name nvtrace cannot turn into a number: those calls are not in `ioctls`"},
    DiagnosticInfo{Diag::strace_program_output, "strace_program_output", Severity::info, false,
        "the traced program's output written into strace's call lines (not a cut-off line)"},
    DiagnosticInfo{Diag::strace_exit_without_entry, "strace_exit_without_entry", Severity::data_loss, false,
        "returns whose call line is not in the log: gVisor exit (X) lines without their entry (E), strace `<... ioctl resumed>` lines without their `<unfinished ...>`"},
    DiagnosticInfo{Diag::strace_unfinished_call, "strace_unfinished_call", Severity::data_loss, false,
        "calls whose return is not in the log"},
    DiagnosticInfo{Diag::strace_other_line, "strace_other_line", Severity::info, false,
        "lines of a strace log that are no call, exit or signal line (the program's output when it shared strace's "
        "stderr, text around a pasted log): not read"},
    DiagnosticInfo{Diag::non_log_line, "non_log_line", Severity::data_loss, false,
        "lines of a kernel-log input that are not a kernel log line: not read"},
    DiagnosticInfo{Diag::elided_lines, "elided_lines", Severity::data_loss, false,
        "`...` / `[...]` rows of a kernel-log excerpt: lines left out"},
    DiagnosticInfo{Diag::journal_marker, "journal_marker", Severity::info, false,
        "journalctl's own lines (`-- Boot ID --`, `-- Reboot --`, `-- No entries --`, `-- Logs begin at ... --`, "
        "`journalctl -x` catalog text): not kernel messages, nothing is missing"},
    DiagnosticInfo{Diag::message_too_long, "message_too_long", Severity::data_loss, false,
        "a kernel-log message continued past the cap on its joined text: the rest is dropped"},
    DiagnosticInfo{Diag::long_line, "long_line", Severity::data_loss, false,
        "physical kernel-log lines cut at 64 KiB: the rest of the line is dropped"},
    DiagnosticInfo{Diag::quoted_line, "quoted_line", Severity::info, false,
        "kernel-log lines quoted inside other output (an issue, a mail)"},
    DiagnosticInfo{Diag::unknown_prefix, "unknown_prefix", Severity::info, false,
        "text before a kernel message's start, kept as the field `line_prefix`"},
    DiagnosticInfo{Diag::invalid_utf8, "invalid_utf8", Severity::info, false,
        "bytes that are not UTF-8 (kept; replaced by U+FFFD in JSON)"},
    DiagnosticInfo{Diag::malformed_kmsg_record, "malformed_kmsg_record", Severity::error, true,
        "/dev/kmsg records that are not `<prio>,<seq>,<ts_usec>,<flags>;<msg>`"},
    DiagnosticInfo{Diag::kmsg_seq_gap, "kmsg_seq_gap", Severity::data_loss, false,
        "/dev/kmsg records missing by their sequence numbers (overwritten in the kernel's buffer before they were "
        "read, or left out of the file), one count per missing record"},
    DiagnosticInfo{Diag::kmsg_unknown_flags, "kmsg_unknown_flags", Severity::info, false,
        "/dev/kmsg records whose flags are not `-`, `c` or `+`: read as records of their own, not as continuations"},
    DiagnosticInfo{Diag::kmsg_record_repeated, "kmsg_record_repeated", Severity::info, false,
        "/dev/kmsg records read a second time (the same seq, ts_usec and text: two dumps of the buffer in one file): "
        "left out, so a message is not counted twice"},
    DiagnosticInfo{Diag::log_line_repeated, "log_line_repeated", Severity::info, false,
        "kernel-log lines with a kernel timestamp read a second time, byte for byte (a dmesg pasted twice): left "
        "out, so a message is not counted twice"},
};
// clang-format on

namespace detail {
constexpr bool table_in_enum_order() {
    for (std::size_t i = 0; i < kDiagnostics.size(); ++i)
        if (static_cast<std::size_t>(kDiagnostics[i].id) != i) return false;
    return true;
}
}  // namespace detail
static_assert(detail::table_in_enum_order(), "kDiagnostics must list every Diag once, in enum order");
static_assert(kDiagnostics.size() == static_cast<std::size_t>(Diag::log_line_repeated) + 1,
              "kDiagnostics must list every Diag");

constexpr const DiagnosticInfo& diagnostic_info(Diag d) {
    return kDiagnostics[static_cast<std::size_t>(d)];
}

// The entry named `name`, or nullptr (a saved report from another version may name others).
constexpr const DiagnosticInfo* find_diagnostic(std::string_view name) {
    for (const auto& d : kDiagnostics)
        if (d.name == name) return &d;
    return nullptr;
}

// One diagnostic as counted: the table's name and severity (strings, as report.json carries them), how many,
// and where the first one is.
struct Diagnostic {
    std::string name;      // DiagnosticInfo::name, e.g. "orphan_return", "lost_event_marks", "malformed_line"
    std::string severity;  // severity_name(): "info", "data_loss", "error"
    std::uint64_t count = 0;
    std::string first_example;  // "file:line: what" where a file is involved
};

// A Diagnostic of `d` with `count` and `example`.
inline Diagnostic make_diagnostic(Diag d, std::uint64_t count, std::string example) {
    const DiagnosticInfo& i = diagnostic_info(d);
    return {std::string(i.name), std::string(severity_name(i.severity)), count, std::move(example)};
}

// Adds `count` to the diagnostic `name` (created with `severity` and `example` on first use).
inline void count_diagnostic(std::vector<Diagnostic>& ds, Diag d, const std::string& example, std::uint64_t count = 1) {
    const std::string_view name = diagnostic_info(d).name;
    for (auto& x : ds)
        if (x.name == name) {
            x.count += count;
            return;
        }
    ds.push_back(make_diagnostic(d, count, example));
}

// The same, by name and severity strings: only for tracer/capture.cpp until its rewrite names table entries. The
// name must be one of the table's (checked at run time: an unknown name or a severity other than the table's
// throws std::logic_error, a programming error).
void count_diagnostic(std::vector<Diagnostic>& ds, std::string_view name, std::string_view severity,
                      const std::string& example, std::uint64_t count = 1);

// The table as the markdown table of docs/report-format.md ("Diagnostics"): a header, then one row per entry,
// "| `name` | severity | makes the report incomplete | what a count means |".
std::string diagnostics_markdown_table();

}  // namespace nvtrace
