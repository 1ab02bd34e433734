// json_values.hpp: the JSON documents of nvtrace's results as nlohmann::json values, for code inside analyze/ that
// composes one document from others (the fleet's JSON holds diffs; a report re-read with more kernel-log lines)
// and for the unit tests, which compare values rather than bytes. Private to analyze: include/nvtrace/ gives the
// same documents as text (write_json, dump_capture_meta, to_json_text) and reads them from files, so no interface
// of the contracts carries an untyped JSON value. Documents: docs/report-format.md (Report), docs/formats.md
// "Capture directory" (CaptureMeta), docs/diff.md (DiffResult), docs/fleet.md (FleetResult), docs/decode.md
// (IoctlDescription). Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "nvtrace/capture_meta.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/knowledge.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

// The whole report as one value (small reports, tests); write_json (nvtrace/report.hpp) writes the same document
// element by element.
nlohmann::json to_json(const Report& report);  // analyze/report_json.cpp
// A report from its JSON. Errors (ExitCode::usage): not an object, a schema other than "nvtrace.report/1", no
// completeness, a field of the wrong type (its JSON path named). analyze/export/report_from_json.cpp.
Result<Report> report_from_json(const nlohmann::json& j);

// meta.json as a value; dump_capture_meta gives its bytes. `file` names the file in errors. Error::usage when a
// needed key is missing or any key has the wrong type, when capture_format is not kCaptureDirFormat, or raw
// describes no buffer nvtrace can decode. analyze/import/capture_meta.cpp.
nlohmann::json to_json(const CaptureMeta& m);
Result<CaptureMeta> capture_meta_from_json(const nlohmann::json& j, const std::string& file);

nlohmann::json to_json(const DiffResult& d);        // analyze/diff/diff_format.cpp
nlohmann::json to_json(const FleetResult& f);       // analyze/fleet/fleet.cpp
nlohmann::json to_json(const IoctlDescription& d);  // analyze/knowledge/describe.cpp

}  // namespace nvtrace
