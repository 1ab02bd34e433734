// nvtrace/stream_report.hpp: the report of a trace too large to hold, with its calls streamed out as
// JSON Lines (`nvtrace report FILE --calls-jsonl OUT`, docs/report.md, docs/performance.md).
//
// function_graph text is read in one pass: events go through CallStream (call_stream.hpp) as they are read
// and each call is written to `calls_out` once it is final; every other event goes to a ReportStream
// (report_stream.hpp) in `temp_dir`, which writes the report's ioctls, events and markers to its files as they
// come. Memory is bounded by the open frames, the distinct call paths (the graph), the kernel-log lines and the
// open_call_at index of console lines and markers, not by the file size. Every other format is read whole
// (import_file + build_report) and its calls are written after.
//
// The report equals build_report's, with these differences:
//  - report.calls is empty; `calls_out` has one compact JSON object per line, the same objects as
//    report.calls[] (docs/report-format.md), in the order calls end (a call before its parent), not by id;
//  - streamed text is processed in file order: a timestamp that goes back is counted (diagnostic
//    unsorted_timestamps, "streamed in file order, not sorted") instead of being sorted;
//  - ioctls[].call / calls stay empty (linking needs every call); a kernel-log line printed inside a call
//    (a "console:" comment) still gets its call;
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
    // A format read whole: the report, calls empty; source and environment left to the caller. Streamed text:
    // empty, the report is `records` (report(), write_to(), write()).
    Report report;
    std::unique_ptr<ReportStream> records;  // streamed function_graph text; finish() called
    TraceFormat format = TraceFormat::fgraph_text;
    std::vector<KernelLogMessage> kernel_log;  // a kernel-log input's messages (import_file's kernel_log)
    std::uint64_t calls = 0;                   // lines written to calls_out
    bool streamed = false;                     // false: the format was read whole
};

// `options`: where the streamed report's JSON goes (ReportStream::Options; time_order is not used). `on_ioctl`:
// called with each ioctl record as the streamed report writes it (not for a format read whole).
Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream& calls_out, const std::string& temp_dir,
                                        ReportStream::Options options = {},
                                        std::function<void(const IoctlRecord&)> on_ioctl = {});
// The same for an input already opened (open_input; a read-once input is best opened with temp_dir as its spool_dir,
// so that it is mapped from disk, not held in memory). `in` must outlive the call.
Result<StreamedReport> report_streaming(const Input& in, std::ostream& calls_out, const std::string& temp_dir,
                                        ReportStream::Options options = {},
                                        std::function<void(const IoctlRecord&)> on_ioctl = {});

}  // namespace nvtrace
