// nvtrace/api_calls.hpp: the summary's lines about a report's API calls (Report::api_calls, nvtrace/report.hpp;
// built by the ReportBuilder from uprobe pairs, analyze/api_calls.hpp). Implementation: analyze/api_calls.cpp.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nvtrace/report.hpp"

namespace nvtrace {

struct ApiSummaryOptions {
    bool verbose = false;        // every API call on its own line, every ioctl of each
    std::size_t max_calls = 30;  // without verbose: API call lines before "... N more"
    std::size_t max_ioctls = 4;  // without verbose: ioctls named per call before "... N more"
};

// Nothing when there are no API calls. Otherwise:
//   api calls: 6 (2 threads)
//     function            calls  errors  unknown   total us     max us
//     cudaMalloc              1       0        0     90.000     90.000
//   then one line per call, indented by its depth:
//     cuMemAlloc_v2(16 MiB) = CUDA_SUCCESS in 70.000 us: 2 ioctls (NV_ESC_RM_ALLOC, 0x21)
// The table: per function, by total time (known durations only): calls; errors (a named result other than
// CUDA_SUCCESS / cudaSuccess); unknown (result not named: no return seen, no ret, not a CUDA function); total and
// max of the known durations in us ("unknown" when none is known). A call's line: its decoded arguments other
// than pointers and handles (every argument as recorded for a function the CUDA table does not know), its result
// (name; the raw value when it has none; "unknown"), its duration, and the ioctls entered inside it while it was
// the innermost API call (ApiCall::ioctl_names).
std::vector<std::string> api_call_summary(const std::vector<ApiCall>& calls, const ApiSummaryOptions& options = {});

}  // namespace nvtrace
