// The report of any input that holds events (docs/architecture.md "The route"): what `nvtrace report INPUT`
// prints and writes, and what `nvtrace run` prints and writes once its capture is saved. One function on top of
// the one analyzer route (report_input, nvtrace/stream_report.hpp), so that the two are the same by
// construction (tests/live/test_live_capture_dir.cpp compares their bytes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nvtrace/input.hpp"
#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report.hpp"
#include "report_sinks.hpp"

namespace nvtrace::cli {

struct CaptureReport {
    int exit_code = 0;                      // 0, or the ExitCode of an unreadable input / unwritable output
    std::vector<Check> checks;              // the checks the report holds
    std::optional<std::string> cannot_run;  // a scenario that said it cannot run here, and why
};

struct CaptureReportOptions {
    std::vector<KernelLogMessage> extra_log;    // --kmsg: appended to kernel_log
    std::vector<Diagnostic> extra_diagnostics;  // --kmsg: its reader's diagnostics
    std::string kmsg;                           // --kmsg FILE: report.source.kmsg
    std::string source_dir;                     // --source: driver sources for source_links
    std::string calls_jsonl;                    // --calls-jsonl FILE: the calls there, report.calls empty
    std::string temp_dir;                       // where the report's temporary files go ("" : where -o is, or $TMPDIR)
    std::string expect;  // --expect FILE: a capture directory checked against FILE instead of the run's expectations
};

// The report of `in` (a capture directory, a trace.dat or a text trace), written and printed where `sinks` say.
// A capture directory's report.source and report.environment are the run's (meta.json "report_source",
// "environment"); the run's expectations are checked again from the copy the run kept (or `o.expect`), and a
// scenario's program verdict comes from the recorded exit status; its summary starts with the program and tracer
// lines and ends with the checks. The report is held whole only when something reads it whole: --source, checks
// to redo, or a summary of an input that may hold calls (uses_whole_report); otherwise report.json is written as
// the events are read.
CaptureReport report_and_write(const Input& in, ReportSinks sinks, CaptureReportOptions o);

// A capture directory written before the raw format (meta.json without "capture_format"): its report.json as
// it is (--reemit). Exit code.
int reemit_report_json(const std::string& dir, const ReportSinks& sinks, std::vector<KernelLogMessage> extra_log);

}  // namespace nvtrace::cli
