// The API-call section of the diff's outputs (analyze/diff/api_diff.cpp, docs/diff.md "API calls"), used by
// diff_format.cpp. The rows themselves: diff_api_calls (nvtrace/diff.hpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "nvtrace/diff.hpp"

namespace nvtrace::detail {

// {"compared":..., "summary":{...}, "rows":[...]}: the value of the diff JSON's "api_calls" key.
nlohmann::json api_calls_json(const DiffResult& d);

// Appends the text section (a header, the counts, a row per changed function with its detail lines); nothing when
// neither report has API calls.
void api_calls_text(const DiffResult& d, bool colour, std::string& out);

}  // namespace nvtrace::detail
