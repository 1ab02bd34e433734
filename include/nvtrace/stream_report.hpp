// nvtrace/stream_report.hpp: the report of a text trace read in one pass, its calls streamed into report.json
// or out as JSON Lines (`nvtrace report FILE --json`, `-o`, `--calls-jsonl OUT`; docs/report.md,
// docs/performance.md).
//
// function_graph text is read in one pass: every event goes to a ReportStream (report_stream.hpp) in `temp_dir`
// as it is read, whose ReportBuilder builds the calls (CallStream) and writes them, the ioctls, events and
// markers to its files as they come; with `calls_out`, the calls go there instead, one compact JSON object per
// line (the objects of report.calls[], docs/report-format.md) in the order calls end (a call before its parent).
// Memory is bounded by the open frames, the distinct call paths (the graph), the kernel-log lines and the calls
// held to be written by id (report_stream.hpp), not by the file size. Every other format is read whole
// (import_file + build_report) and its calls are written after (or kept in the report, without `calls_out`).
//
// The report equals build_report's of the whole file, with these differences:
//  - with `calls_out`, report.calls is empty;
//  - streamed text is processed in file order: a timestamp that goes back is counted (diagnostic
//    unsorted_timestamps, "streamed in file order, not sorted") instead of being sorted;
//  - comm is the comm known when the call starts, or when the event or ioctl is read (the whole-file report uses
//    the longest comm seen for the pid).
// Errors: those of import_file (Error::usage naming file:line); ReportStream's (temporary files in temp_dir).
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "nvtrace/error.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"

namespace nvtrace {

struct StreamedReport {
    // A format read whole: the report (calls empty with calls_out); source and environment left to the caller.
    // Streamed text: empty, the report is `records` (report(), write_to(), write()).
    Report report;
    std::unique_ptr<ReportStream> records;  // streamed function_graph text; finish() called
    TraceFormat format = TraceFormat::fgraph_text;
    std::vector<KernelLogMessage> kernel_log;  // a kernel-log input's messages (import_file's kernel_log)
    std::uint64_t calls = 0;                   // calls built (the lines written to calls_out)
    bool streamed = false;                     // false: the format was read whole
};

// `options`: where the streamed report's JSON goes (ReportStream::Options; time_order is not used). `on_ioctl`:
// called with each ioctl record as the streamed report writes it (not for a format read whole).
Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream* calls_out, const std::string& temp_dir,
                                        ReportStream::Options options = {},
                                        std::function<void(const IoctlRecord&)> on_ioctl = {});
// The same for an input already opened (open_input; a read-once input is best opened with temp_dir as its spool_dir,
// so that it is mapped from disk, not held in memory). `in` must outlive the call.
Result<StreamedReport> report_streaming(const Input& in, std::ostream* calls_out, const std::string& temp_dir,
                                        ReportStream::Options options = {},
                                        std::function<void(const IoctlRecord&)> on_ioctl = {});

}  // namespace nvtrace
