// nvtrace/stream_report.hpp: the one route from an input to its report (docs/architecture.md "The route").
//
// Every input that holds events goes the same way: its source (one reader per format) hands them one at a time
// to one ReportStream (report_stream.hpp), whose ReportBuilder is the one analyzer; what differs between inputs is
// only how the reader gets its events:
//  - a capture directory: CaptureDirReader::stream (nvtrace/capture_dir.hpp), a page of each CPU file at a time,
//    funcgraph records named from the saved kallsyms, folded on a second thread (ReportFold) and put in time
//    order by the sorter; report.source and report.environment are meta.json's;
//  - a trace.dat named by a path: stream_trace_dat (every buffer at once, by time), through ReportFold and the
//    sorter; a trace.dat read once (a pipe) is read whole (libtracecmd needs a file) and handed over in order;
//  - function_graph text: read in one pass in file order, each event handed over as it is read (a timestamp
//    that goes back is counted, diagnostic unsorted_timestamps, not sorted);
//  - every other text format (function tracer, trace-cmd report, strace, kernel log): read whole by import_input,
//    its events then handed over in order, and a kernel log's messages added to report.kernel_log.
// A saved report (nvtrace.report/1) holds no events: it is not an input of this route (read_report_file).
//
// What the report keeps is the request's choice (ReportRequest::out): held whole (Options::hold: what checks,
// --source and a summary with calls read), or written as it is built (report.json in a temporary file, straight
// to a descriptor, or only counted), the calls optionally to their own sink (--calls-jsonl). The bytes of
// report.json are the same either way (tests/analyze/test_report_stream.cpp, tests/analyze/import/
// test_stream_report.cpp).
//
// report.source: meta.json's for a capture directory; else {"kind": "file", "path": the input as given, "format"}.
// Errors: those of the readers (Error::usage naming file:line or file and offset), ReportStream's (temporary files
// in temp_dir). Thread-safety: pure function (a capture directory and a trace.dat use a second thread inside).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "nvtrace/capture_meta.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"

namespace nvtrace {

struct ReportRequest {
    ReportStream::Options out;  // held or written as built, and where; out.time_order is the route's choice
    std::string temp_dir;       // the ReportStream's temporary files (not used when held)
    // Each ioctl record as it is written (a report not held): IoctlSummary::add for the summary.
    std::function<void(const IoctlRecord&)> on_ioctl;
    // Each call as it ends (a report not held), before the ioctl its root joins (ReportStream::on_call).
    std::function<void(const Call&)> on_call;
    // Set: every call written here as one compact JSON object per line (the objects of report.calls[],
    // docs/report-format.md) in the order calls end (a call before its parent); report.calls stays empty.
    std::ostream* calls_jsonl = nullptr;
    // Added to the report's diagnostics (e.g. those of a --kmsg file).
    std::vector<Diagnostic> diagnostics;
    // Asked once the input's reader is open, before an event is read: true holds the report whole (out.hold).
    // `meta`: a capture directory's meta.json (else null).
    std::function<bool(const CaptureMeta* meta)> hold_if;
};

struct InputReport {
    std::unique_ptr<ReportStream> stream;           // finish() called: report(), write_to(), write()
    TraceFormat format = TraceFormat::fgraph_text;  // trace_dat and text inputs
    std::optional<CaptureMeta> meta;                // a capture directory's meta.json
};

// The report of `in` (kind capture_dir, trace_dat or text; `in` must outlive the call). Error::usage for a saved
// report or a directory without raw data ("... not a trace").
Result<InputReport> report_input(const Input& in, ReportRequest request);

// The same for a path: opened with open_input, a read-once input spooled to request.temp_dir (on disk, not in
// memory).
Result<InputReport> report_input(const std::string& path, std::optional<TraceFormat> forced, ReportRequest request);

}  // namespace nvtrace
