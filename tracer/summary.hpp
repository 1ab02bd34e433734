// summary.hpp: the human summary of a report that `nvtrace run` and `nvtrace report` print.
#pragma once

#include <cstdint>
#include <string>

#include "nvtrace/report.hpp"

namespace nvtrace::cli {

// "82.823 us", "1.204 ms", "3.594 s".
std::string format_ns(std::uint64_t ns);

// Calls and the five heaviest root paths, ioctls by name, markers (when `markers`), the first kernel-log
// messages, diagnostics (when `diagnostics`) and completeness with its reasons.
void print_report_body(const Report& r, bool markers, bool diagnostics);

}  // namespace nvtrace::cli
