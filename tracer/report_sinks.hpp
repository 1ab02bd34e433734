// Where a report goes once it is built (docs/architecture.md "Sinks"): -o FILE (the report JSON, streamed),
// --json (the report JSON on standard output instead of the summary) or the text summary. Every command that
// produces a report (`run`, `report`) leaves through these, so the same report prints the same way.
// Not thread-safe (stdout); errors are printed on stderr as "nvtrace COMMAND: ..." and returned as exit codes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

struct ReportSinks {
    std::string command = "report";  // for messages: "nvtrace report: cannot write ..."
    std::string out;                 // -o FILE ("" = none): written before anything goes to stdout
    bool json = false;               // the report JSON on stdout instead of the summary
    bool verbose = false;            // -v: every ioctl and kernel-log line in the summary
    bool summary = true;             // false (run --quiet): the files only, nothing on stdout without --json
    std::string write_hint;          // added to a failed -o write ("; the capture is kept: ...")
    bool remove_cut_out = false;     // a failed -o write removes the file (run: a cut report reads as a short one)
    // Called once the -o file is written and before stdout is used (run: the held signals are taken here).
    std::function<void()> after_files;
    // The summary's first lines (e.g. "input: FILE (format)") and what follows its body (e.g. the checks).
    std::function<void()> head;
    std::function<void()> tail;
};

// JSON text with invalid UTF-8 replaced (readers replace it already; a stray byte must not throw).
std::string dump(const nlohmann::json& j, int indent);

// A report held whole: -o, then --json or the summary (markers and diagnostics included). Exit code: 0, or
// ExitCode::environment when an output cannot be written.
int write_and_print(Report& report, const ReportSinks& s);

// A report whose records were streamed (ReportStream): its temporary files become -o, --json copies them to
// stdout, the summary is what `tap` gathered as the records went by.
int write_and_print_streamed(ReportStream& r, SummaryTap& tap, const ReportSinks& s);

// Where a streamed report writes its JSON for these sinks, and its temporary files: with -o FILE a temporary
// file in FILE's directory (write_to() then links it as FILE; --json copies it to stdout), with --json alone
// straight to stdout, with neither nowhere (the summary only counts the records). `may_refuse`: the stream can
// still be refused part way (the caller then reads the input whole), so nothing may reach stdout before the end:
// --json alone then goes through a temporary file too. Empty temp_dir: no place for the temporary files.
ReportStream::Options streamed_output(const ReportSinks& s, bool may_refuse, std::string& temp_dir);

}  // namespace nvtrace::cli
