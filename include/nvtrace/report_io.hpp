// nvtrace/report_io.hpp: reading a report back (the inverse of write_json in report.hpp).
//
// Format: docs/report-format.md, schema "nvtrace.report/1" (docs/report.schema.json). Every consumer that
// works on a saved report (check, diff, export) reads it through here, so they all see the same Report.
// Unknown keys are ignored and a missing optional field reads as its default (null -> nullopt); a field of
// the wrong type is an error naming its JSON path ("calls[3].function: expected a string").
// Implementation: analyze/export/report_from_json.cpp. Thread-safety: pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include <string>

#include "nvtrace/error.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

// A saved report given as text (standard input or a pipe, read whole): nullopt when the text does not start
// with '{' (after blanks), so it is a trace; else the report, or Error::usage naming `name` and, for text that is
// not JSON, nlohmann's position ("<stdin>: not valid JSON: ... at line L, column C: ...", "<stdin>: completeness:
// ..."), as read_report_file says it of a file.
std::optional<Result<Report>> saved_report_from_text(std::string_view text, const std::string& name);

// Reads a report.json file (streamed: each call, ioctl, ... is converted as it is parsed; the file is read in
// 1 MiB blocks, never held whole, and `calls` elements are filled without a DOM per call). Errors name the
// file: "PATH: not valid JSON: ... at line L, column C: ...", "PATH: calls[3].function: expected a string",
// "PATH: cannot open: ...", "PATH: cannot read: ...". Thread-safety: reads of different (or the same) files
// may run at once on different threads.
Result<Report> read_report_file(const std::string& path);

// Receives each call of a saved report as it is read, in file order, instead of Report::calls (which stays
// empty): a consumer that folds the calls (nvtrace diff's trees, DiffCalls in nvtrace/diff.hpp) need not hold
// them. Every error is the reader's as without a sink (a wrong field type, a cycle, a call id listed twice); a
// call already given to the sink does not make the file valid: the result is the error, found later. With a sink,
// the elements of `calls` are parsed by simdjson (where the build has it; not the static one) and everything else
// by nlohmann; a file holding anything the two could read differently (a \u escape, -0, a raw control character,
// a number above 2^64), or any error, is read again by nlohmann past the calls already given.
using CallSink = std::function<void(Call&&)>;
Result<Report> read_report_file(const std::string& path, const CallSink& calls);

// What `nvtrace check/diff/export` accept, as open_input (nvtrace/input.hpp) tells it: a saved report, a capture
// directory holding one (its report.json), or a trace in any format `nvtrace report` reads (built into a report
// on the fly, source.kind "file", source.path as given). "-", a FIFO or a socket is read whole once. Errors:
// open_input's, "DIR: no report.json (...)", the readers'.
Result<Report> load_report(Input in);
// The same with the calls given to `calls` (as read_report_file's sink): a saved report's file is streamed; what
// is built or read whole (a trace, standard input) gives its calls once it is, and is returned without them.
Result<Report> load_report(Input in, const CallSink& calls);
Result<Report> load_report_input(const std::string& path);  // load_report(open_input(path))

// Whether load_report_input(path) reads a saved report (a capture directory, or a file whose first non-blank
// character is '{') rather than importing a trace file; also true for a path it cannot open (it says why).
// False for what can be read only once (is_read_once), which is not opened here.
// Saved reports may be loaded on several threads at once (`nvtrace diff` reads its two inputs in parallel);
// trace files are imported one at a time (the trace.dat reader goes through libtracecmd).
bool is_saved_report_input(const std::string& path);

}  // namespace nvtrace
