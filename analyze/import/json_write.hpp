// json_write.hpp: a direct JSON writer for the report's largest arrays (private to analyze). A report of
// millions of calls spends most of its writing time building one nlohmann::json object per call; these
// functions append the same bytes as `call_json(c).dump()` (keys in nlohmann's sorted order, the same
// string escaping, no spaces) straight into a string.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/report.hpp"

namespace nvtrace::import {

// `s` as a JSON string, escaped as nlohmann::json::dump() does (ensure_ascii off). Text with bytes >= 0x80
// goes through nlohmann itself, so invalid UTF-8 fails exactly as it does there.
void append_json_string(std::string& out, std::string_view s);

// One call as the compact JSON object `call_json(c).dump()` prints (docs/report-format.md, calls[]).
void append_call_json(std::string& out, const Call& c);

// ` "calls": [` ... `],` as write_json() lays out its arrays (one element a line), in 1 MiB writes.
void write_calls_array(std::ostream& out, const std::vector<Call>& calls);

}  // namespace nvtrace::import
