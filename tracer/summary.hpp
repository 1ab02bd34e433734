// summary.hpp: the human summary of a report that `nvtrace run` and `nvtrace report` print.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_stream.hpp"

namespace nvtrace::cli {

// "82.823 us", "1.204 ms", "3.594 s".
std::string format_ns(std::uint64_t ns);

// Calls and the five heaviest root paths, one line per ioctl (summarize_ioctls in nvtrace/ioctl.hpp: folded
// and capped at 40 lines unless `verbose`), the table of ioctl requests (ioctl_stats_table), markers (when `markers`),
// the first five kernel-log messages (all when `verbose`) with the call each was attached to, diagnostics (when
// `diagnostics`) and completeness with its reasons.
void print_report_body(const Report& r, bool markers, bool diagnostics, bool verbose = false);

// What the summary reads of a report's calls: how many, how many roots, the roots with a known duration by
// function (the root-path lines say "unknown" for the others), and the function of a call by id (kernel-log
// lines name the call they were printed in).
struct SummaryCalls {
    std::uint64_t calls = 0, roots = 0;
    std::map<std::string, std::size_t> known_roots;
    std::function<const std::string*(std::uint64_t id)> function_of;
};

// What a streamed report (nvtrace/report_stream.hpp) wrote without keeping: the summary's ioctl lines and calls
// (SummaryTap) and the counts of ioctls, markers and events by name.
struct StreamedRecords {
    std::uint64_t ioctls = 0;
    std::vector<std::string> ioctl_lines;
    std::uint64_t markers = 0;
    std::uint64_t events = 0;
    std::map<std::string, std::uint64_t> event_names;
    SummaryCalls calls;
};
// The summary of a report written as it was built (nvtrace/report_stream.hpp), gathered from its records as they
// went by: the ioctl lines (IoctlSummary, each with its kernel cost: the calls under the root calls it joined and
// their time, as ioctl_kernel_costs gives them) and SummaryCalls. Memory: the summary's lines, and 16 bytes per
// call (the function's index, the calls under it, its duration) plus each distinct function name once.
// Thread-safety: one thread.
class SummaryTap {
public:
    explicit SummaryTap(bool verbose);
    void call(const Call& c);  // each call as it ends (a call before its parent)
    void ioctl(const IoctlRecord& io);
    SummaryCalls calls() const;  // valid while the tap lives
    // What `r` (finished) wrote, with the ioctl lines and calls gathered here.
    StreamedRecords records(ReportStream& r);

private:
    IoctlSummary plain_, costed_;
    std::vector<std::uint32_t> function_, subtree_;  // by id - 1
    std::vector<std::int64_t> duration_;             // by id - 1; -1: not known
    std::unordered_map<std::string, std::uint32_t> index_;
    std::vector<std::string> names_;
    std::uint64_t calls_ = 0, roots_ = 0;
    std::map<std::string, std::size_t> known_roots_;
};

// The same lines for a report whose ioctls, markers, events and calls are in `streamed` instead of `r`.
void print_report_body(const Report& r, const StreamedRecords& streamed, bool markers, bool diagnostics,
                       bool verbose = false);

// `--source DIR` of run and report: fills report.source_links (nvtrace/source_links.hpp). On an unusable DIR
// prints "nvtrace COMMAND: ..." on stderr and returns the exit code (usage); 0 otherwise.
int add_source_links(Report& report, const std::string& dir, std::string_view command);

}  // namespace nvtrace::cli
