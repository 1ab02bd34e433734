// summary.hpp: the human summary of a report that `nvtrace run` and `nvtrace report` print.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/report.hpp"

namespace nvtrace::cli {

// "82.823 us", "1.204 ms", "3.594 s".
std::string format_ns(std::uint64_t ns);

// Calls and the five heaviest root paths, one line per ioctl (summarize_ioctls in nvtrace/ioctl.hpp: folded
// and capped at 40 lines unless `verbose`), the table of ioctl requests (ioctl_stats_table), markers (when `markers`),
// the first five kernel-log messages (all when `verbose`) with the call each was attached to, diagnostics (when
// `diagnostics`) and completeness with its reasons.
void print_report_body(const Report& r, bool markers, bool diagnostics, bool verbose = false);

// What a streamed report (nvtrace/report_stream.hpp) wrote without keeping: the summary's ioctl lines
// (IoctlSummary, fed every record as it was written) and the counts of ioctls, markers and events by name.
struct StreamedRecords {
    std::uint64_t ioctls = 0;
    std::vector<std::string> ioctl_lines;
    std::uint64_t markers = 0;
    std::uint64_t events = 0;
    std::map<std::string, std::uint64_t> event_names;
};
// The same lines for a report whose ioctls, markers and events are in `streamed` instead of `r`.
void print_report_body(const Report& r, const StreamedRecords& streamed, bool markers, bool diagnostics,
                       bool verbose = false);

// `--source DIR` of run and report: fills report.source_links (nvtrace/source_links.hpp). On an unusable DIR
// prints "nvtrace COMMAND: ..." on stderr and returns the exit code (usage); 0 otherwise.
int add_source_links(Report& report, const std::string& dir, std::string_view command);

}  // namespace nvtrace::cli
