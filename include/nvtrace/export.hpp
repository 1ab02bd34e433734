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
//          parent stretched: such tracks and slices are counted in otherData.nvtrace.
//  folded  folded stacks ("a;b;c <self ns>", one line per graph path with self time > 0) for flamegraph.pl,
//          speedscope and inferno; summing the lines under a path gives the report's total_ns for it.
//  csv     the calls table (RFC 4180; the report's call fields, null as an empty cell).
// Thread-safety: pure functions of the report; each writes only to its stream.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "nvtrace/error.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

enum class ExportFormat { json, chrome, folded, csv };

std::string_view to_string(ExportFormat f);  // "json", "chrome", "folded", "csv"
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
    std::uint64_t skipped_instants = 0;  // kernel-log lines with neither a time nor a call, markers without a time
};
ChromeTraceStats write_chrome_trace(const Report& report, std::ostream& out);

void write_folded_stacks(const Report& report, std::ostream& out);

void write_calls_csv(const Report& report, std::ostream& out);

// Dispatch on the format; Error::environment when the stream fails.
Result<void> export_report(const Report& report, ExportFormat format, std::ostream& out);

}  // namespace nvtrace
