// nvtrace/stream_report.hpp: the report of a trace too large to hold, with its calls streamed out as
// JSON Lines (`nvtrace report FILE --calls-jsonl OUT`, docs/report.md, docs/performance.md).
//
// function_graph text is read in one pass: events go through CallStream (call_stream.hpp) as they are read
// and each call is written to `calls_out` once it is final, so memory is bounded by the open frames, the
// distinct call paths (the graph) and the non-call events (markers, kernel-log lines, ioctls), not by the
// file size. Every other format is read whole (import_file + build_report) and its calls are written after.
//
// The report equals build_report's, with these differences:
//  - report.calls is empty; `calls_out` has one compact JSON object per line, the same objects as
//    report.calls[] (docs/report-format.md), in the order calls end (a call before its parent), not by id;
//  - streamed text is processed in file order: a timestamp that goes back is counted (diagnostic
//    unsorted_timestamps, "streamed in file order, not sorted") instead of being sorted;
//  - ioctls[].call / calls stay empty (linking needs every call); a kernel-log line printed inside a call
//    (a "console:" comment) still gets its call;
//  - comm is the comm known when the call starts (the whole-file report uses the longest comm seen for the pid).
// Errors: those of import_file (Error::usage naming file:line).
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "nvtrace/error.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

struct StreamedReport {
    Report report;  // calls empty; source and environment left to the caller
    TraceFormat format = TraceFormat::fgraph_text;
    std::vector<KernelLogMessage> kernel_log;  // a kernel-log input's messages (import_file's kernel_log)
    std::uint64_t calls = 0;                   // lines written to calls_out
    bool streamed = false;                     // false: the format was read whole
};

Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream& calls_out);

}  // namespace nvtrace
