// nvtrace/export.hpp: views of a report for other tools (docs/export.md). Every writer streams to an
// std::ostream element by element: a large report is never held as one JSON text or DOM (read_report_file in
// report_io.hpp reads it the same way), so `nvtrace export` needs about the memory of the Report itself.
//
//  json    the report itself, schema nvtrace.report/1 (docs/report-format.md, docs/report.schema.json), written
//          by write_json (report.hpp): one array element per line; parses to exactly to_json(report).
//  chrome  Chrome trace event JSON (the "JSON Object Format" of the Trace Event Format document) that Perfetto
//          UI and chrome://tracing open: one track per task (pid; calls with an unknown pid get one track per
//          CPU), each call a B/E pair properly nested, kernel-log lines, ioctls and trace markers as instant
//          events ("ph":"i"). Timestamps ("ts") are microseconds with ns precision, monotonic per track.
//          Calls without an entry time (text traces without timestamps) are laid out one after another from
//          their durations, and a child that would overlap its sibling or outlast its parent is shifted or the
//          parent stretched: such tracks and slices are counted in otherData.nvtrace. API calls
//          (Report::api_calls) are X slices (cat "api") on their thread's track, above the calls and ioctls made
//          inside them; one whose return was not seen has no end: a B without an E when the trace ended inside
//          it, an instant when its caller's return closed it.
//  folded  folded stacks ("a;b;c <self ns>", one line per graph path with self time > 0) for flamegraph.pl,
//          speedscope and inferno; summing the lines under a path gives the report's total_ns for it.
//  csv     the calls table (RFC 4180; the report's call fields, null as an empty cell).
//  html    one self-contained page (no network: inline CSS, SVG drawn by inline JS, the data embedded as JSON
//          in a <script type="application/json"> element): an icicle of the aggregated call tree, a per-thread
//          timeline of phases, root calls, ioctls, kernel-log lines and markers, the checks with their evidence
//          and the completeness line. Aggregated and capped before embedding (HtmlLimits); what was left out is
//          counted in HtmlStats and stated in the page.
// Thread-safety: pure functions of the report; each writes only to its stream.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "nvtrace/error.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

enum class ExportFormat { json, chrome, folded, csv, html };

std::string_view to_string(ExportFormat f);  // "json", "chrome", "folded", "csv", "html"
std::optional<ExportFormat> parse_export_format(
    std::string_view name);  // also "perfetto" = chrome, "flamegraph" = folded

struct ChromeTraceStats {
    std::uint64_t tracks = 0;
    std::uint64_t slices = 0;            // B/E pairs
    std::uint64_t instants = 0;          // kernel-log lines, ioctls, markers (not those written as slices)
    std::uint64_t ioctl_slices = 0;      // X slices: ioctls with a known exit and no call under them
    std::uint64_t synthetic_slices = 0;  // calls without an entry time, placed from durations
    std::uint64_t adjusted_slices = 0;   // shifted or stretched to keep tracks nested and monotonic, or an ioctl
                                         // left an instant because it overlaps its thread's previous ioctl slice
    std::uint64_t skipped_instants = 0;  // always 0: items without a time are laid out (synthetic_instants); the key
                                         // stays in otherData for the readers of older exports
    // Kernel-log lines (with neither a time nor a call), ioctls and markers without a time, laid out in recorded
    // order after the last timed event (args.synthetic_time); in otherData only when not 0
    std::uint64_t synthetic_instants = 0;
    std::uint64_t api_slices = 0;      // X slices: API calls (Report::api_calls) with a known exit
    std::uint64_t api_unreturned = 0;  // API calls whose return was not seen: a B with no E, or an instant
};
ChromeTraceStats write_chrome_trace(const Report& report, std::ostream& out);

// Folded stacks weigh each path by its self ns (duration minus the known durations of its direct children); a call
// shorter than its children (function_graph's own overhead on the children, a clock step) adds 0.
void write_folded_stacks(const Report& report, std::ostream& out);
// How many of `report`'s calls are shorter than their direct children's known durations, the self time
// write_folded_stacks takes as 0 for them, as one line for people ("N calls shorter than ..."), or nullopt when
// there are none. Pure; O(calls).
std::optional<std::string> folded_self_clamped_note(const Report& report);

void write_calls_csv(const Report& report, std::ostream& out);

// The tables of `--format csv` (docs/export.md, `--table`), RFC 4180, null as an empty cell:
//  calls        one row per call (write_calls_csv)
//  ioctls       one row per ioctl: enter_ns, exit_ns, duration_ns, pid, comm, fd, device (the fd's path),
//               fd_path_unknown, request (decoded name), cmd (hex), arg (hex), ret, errno (as printed, else named
//               from ret = -errno), errno_text, status (RM/UVM NV_STATUS), error (ioctl_error_name in
//               nvtrace/ioctl.hpp: what the statistics count it as), hclass, ctrl, ctrl_class, phase, call
//  ioctl-stats  one row per Report::ioctl_stats row; errors_by_name as "NAME=count" joined by ';'
enum class CsvTable { calls, ioctls, ioctl_stats };
std::optional<CsvTable> parse_csv_table(std::string_view name);  // "calls", "ioctls", "ioctl-stats"
std::string_view to_string(CsvTable t);
// What `--format csv` writes without --table: the calls, or the ioctls of a report that has ioctls and no calls
// (a run where function tracing was refused), never a bare header when the report has rows of either.
CsvTable default_csv_table(const Report& report);
void write_csv(const Report& report, CsvTable table, std::ostream& out);

// The caps of the HTML page (docs/export.md, "HTML page"). Frames are call paths of the aggregated tree; the
// widest (by total time, by call count when no duration is known) are kept, parents before children, so a
// left-out path's time stays inside its parent's width. Timeline items are kept per kind in time order.
struct HtmlLimits {
    std::size_t frames = 2000;      // call paths drawn in the icicle
    std::size_t threads = 64;       // timeline rows of tasks (by pid; the rest are left out)
    std::size_t root_calls = 2000;  // root calls on the timeline
    std::size_t ioctls = 5000;      // ioctls on the timeline
    std::size_t kernel_log = 1000;  // kernel-log lines (timeline instants and the list below it)
    std::size_t markers = 500;      // trace markers other than phase markers
    std::size_t phases = 500;       // phase spans
};
struct HtmlStats {
    std::uint64_t frames = 0;             // call paths embedded (without the root "all calls")
    std::uint64_t frames_left_out = 0;    // call paths past HtmlLimits::frames
    std::uint64_t calls_left_out = 0;     // calls on those paths
    std::uint64_t timeline_items = 0;     // phases, root calls, ioctls, kernel-log lines and markers embedded
    std::uint64_t timeline_left_out = 0;  // past a cap or on a thread past HtmlLimits::threads
    std::uint64_t unplaced = 0;           // kernel-log lines or markers without a time on the trace clock
};
// Deterministic: the same report gives the same bytes (no generation time, no random ids).
HtmlStats write_html_report(const Report& report, std::ostream& out, const HtmlLimits& limits = {});

// Why the export of `report` in `format` (`table` for csv) would hold no data: folded stacks without a call of
// known duration, a CSV table without a row (a bare header), a chrome trace without an event. `nvtrace export`
// refuses such an export (exit 2) with this message instead of writing an empty file; nullopt when it holds data.
// json and html always hold the report's head and completeness: never empty.
std::optional<std::string> empty_export_reason(const Report& report, ExportFormat format, CsvTable table);

// For the note on standard error when a report without calls is exported in json, chrome or html: why it has
// none (its source) and what the export holds instead ("the report has no calls (its input (strace) records
// none): the chrome export holds 2 ioctls (2 without a time laid out ...)"); nullopt for a report with calls.
std::optional<std::string> export_without_calls_note(const Report& report, ExportFormat format,
                                                     const ChromeTraceStats* chrome = nullptr);

// Dispatch on the format; Error::environment when the stream fails.
Result<void> export_report(const Report& report, ExportFormat format, std::ostream& out);

}  // namespace nvtrace
