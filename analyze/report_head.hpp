// report_head.hpp: JSON of a report's "source" and "environment" objects (nvtrace/report_source.hpp), for the
// report's writers and readers (report_json.cpp, export/report_from_json.cpp), meta.json (import/capture_meta.cpp),
// the diff's and the fleet's JSON. Private to analyze. Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "nvtrace/report_source.hpp"

namespace nvtrace {

// The object with every member that is set, and `other`'s keys as they were read (sorted by key).
nlohmann::json to_json(const ReportSource& s);
nlohmann::json to_json(const ReportEnvironment& e);

// From a JSON object (anything else reads as nothing set). Never fails: a key nvtrace does not know, or a known key
// whose value has another type than its member's, goes into `other` unchanged.
ReportSource report_source_from_json(const nlohmann::json& j);
ReportEnvironment report_environment_from_json(const nlohmann::json& j);

}  // namespace nvtrace
