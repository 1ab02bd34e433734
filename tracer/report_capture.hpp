// The report of a capture directory (docs/formats.md "Capture directory"): what `nvtrace report DIR` prints
// and writes, and what `nvtrace run` prints and writes once its capture is saved. One function, so that the two
// are the same by construction (tests/live/test_live_capture_dir.cpp compares their bytes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report.hpp"
#include "report_sinks.hpp"

namespace nvtrace::cli {

struct CaptureReport {
    int exit_code = 0;                      // 0, or the ExitCode of an unreadable capture / unwritable output
    std::vector<Check> checks;              // the checks the report holds
    std::optional<std::string> cannot_run;  // a scenario that said it cannot run here, and why
};

struct CaptureReportOptions {
    std::vector<KernelLogMessage> extra_log;  // --kmsg: appended to kernel_log
    std::string source_dir;                   // --source: driver sources for source_links
};

// The capture's report: re-analysed from its raw pages and saved files; report.source and report.environment
// are the run's (meta.json "report_source", "environment"); the run's expectations are checked again when the
// file is still at its recorded path, and a scenario's program verdict comes from the recorded exit status.
// Streamed (no event held) unless function_graph data, checks or --source need the whole report. The summary
// is: the program and tracer lines, the report body, the checks, then `sinks.tail`.
CaptureReport report_capture_dir(const std::string& dir, ReportSinks sinks, CaptureReportOptions o);

// A capture directory written before the raw format (meta.json without "capture_format"): its report.json as
// it is (--reemit). Exit code.
int reemit_report_json(const std::string& dir, const ReportSinks& sinks, std::vector<KernelLogMessage> extra_log);

}  // namespace nvtrace::cli
