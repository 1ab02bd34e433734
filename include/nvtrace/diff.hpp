// nvtrace/diff.hpp: structural diff of two reports' call trees (docs/diff.md), e.g. one scenario under two
// driver versions.
//
// Alignment. Each report's calls are folded into a tree keyed by call path, after normalising every frame:
// compiler suffixes (.isra.N, .constprop.N, .part.N, .cold[.N], .lto_priv.N, .llvm.N, .localalias) and a
// "[module]" / "\t[module]" tail are stripped, then a rename map applies (old -> new, e.g.
// nvidia_frontend_unlocked_ioctl -> nvidia_unlocked_ioctl for 535 vs 545 and later; a frame renamed to ""
// is collapsed: its children hang from its parent, for wrapper layers that exist in one version only).
// Interrupts nest wherever they happened to arrive, which differs from run to run, so by default a subtree
// entered in irq context is moved under a pseudo-root "[irq]" (DiffOptions::keep_irq_nesting keeps it).
//
// Changes, per aligned node: added (only in B; the top of an added subtree is one "added path"), removed
// (only in A), count (call counts differ), retval (the sets of return-value classes differ: 0, each errno,
// each positive value below 2^32 such as an NV_STATUS, and "pointer" for anything else; compared only where
// both sides recorded return values), time (|delta total_ns| >= min_abs_ns and >= min_rel of A's total).
// Structure and counts are exact; time needs the threshold because two runs never take the same time.
// Siblings are sorted by impact: the time of an added/removed subtree, else |delta total_ns|, at least
// the largest impact below it. Unchanged subtrees are pruned unless DiffOptions::keep_unchanged.
//
// Thread-safety: pure functions (diff_reports builds the two reports' trees on two threads of its own); DiffCalls:
// one builder per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/symbol_name.hpp"  // normalise_symbol: the names paths are made of

namespace nvtrace {

inline constexpr const char* kDiffSchema = "nvtrace.diff/1";

// One rename "OLD=NEW" (NEW may be empty: collapse OLD). Names are normalised.
Result<std::pair<std::string, std::string>> parse_rename(std::string_view text);

// A rename map file: one "OLD NEW" or "OLD=NEW" per line, "OLD" alone or "OLD=" to collapse; '#' starts a
// comment. Errors name file:line.
Result<std::map<std::string, std::string>> parse_rename_map(std::string_view text, std::string_view file_name);

// --min-delta: "ABS", "REL%" or "ABS,REL%"; ABS is a number with a unit ns, us, ms or s ("10us", "1.5ms").
struct DiffThreshold {
    std::uint64_t min_abs_ns = 10'000;
    double min_rel = 0.20;  // a fraction: 0.20 = 20%
};
Result<DiffThreshold> parse_min_delta(std::string_view text, DiffThreshold defaults = {});

struct DiffOptions {
    std::optional<std::string> phase;            // only calls whose phase is this
    std::map<std::string, std::string> renames;  // normalised old -> new ("" collapses the frame)
    std::vector<std::string> ignore;             // fnmatch globs: matching frames and their subtrees are left out
    DiffThreshold threshold;
    bool keep_irq_nesting = false;
    bool keep_unchanged = false;
};

// One side of an aligned node: the calls of that path in one report.
// A duration the report does not have (the call's exit was not seen: a truncated trace, a lost return) is never
// counted as 0: a sum that would need it is null (unknown), and so is a sum past kDiffMaxTotalNs.
struct DiffSide {
    std::uint64_t count = 0;
    std::optional<std::uint64_t> total_ns;  // sum of the durations; null when unknown_durations or overflow
    // total minus the durations of the direct children in the aligned tree; null when a call's own duration or a
    // direct child's is unknown, or on overflow
    std::optional<std::uint64_t> self_ns;
    std::optional<std::uint64_t> min_ns, max_ns;   // null when a call has no duration
    std::uint64_t known_total_ns = 0;              // sum of the known durations (at most kDiffMaxTotalNs)
    std::uint64_t unknown_durations = 0;           // calls with no duration
    std::uint64_t exit_not_seen = 0;               // of those, calls whose exit was not seen
    bool overflow = false;                         // a sum of durations passed kDiffMaxTotalNs
    std::map<std::string, std::uint64_t> retvals;  // class -> calls ("0", "-22 (EINVAL)", "30 (0x1e)", "pointer")
    std::vector<std::string> names;                // the symbols as recorded (before normalisation), sorted
};

// The largest sum of durations the diff computes with: 2^63-1 ns (292 years, the --min-delta bound). A larger
// sum is no real duration (a damaged report's 2^64-1) and its delta could not be signed: it is unknown.
inline constexpr std::uint64_t kDiffMaxTotalNs = 0x7fffffffffffffffULL;

// Why `s.total_ns` is null ("2 of 3 calls without a duration (exit not seen)", "the durations sum past 2^63-1 ns
// (292 years): not a real duration"); "" when it is known.
std::string why_time_unknown(const DiffSide& s);

// The pseudo-root the interrupt subtrees are moved under (no call: it has no count or time of its own).
inline constexpr const char* kIrqRoot = "[irq]";

enum class DiffStatus { same, context, changed, added, removed };
std::string_view to_string(DiffStatus s);

struct DiffNode {
    std::string function;                  // normalised, renamed
    std::string path;                      // "a > b > c" of normalised names; irq subtrees start with "[irq]"
    DiffStatus status = DiffStatus::same;  // context: unchanged itself, something below changed
    bool count_changed = false;
    bool retval_changed = false;
    bool time_changed = false;
    bool irq = false;  // under the "[irq]" pseudo-root
    std::optional<DiffSide> a, b;
    std::int64_t delta_count = 0;
    std::optional<std::int64_t> delta_total_ns;  // null when a side's total is unknown
    std::optional<std::int64_t> delta_self_ns;   // null when a side's self time is unknown
    std::optional<double> rel_total;             // delta_total_ns / a.total_ns when a.total_ns > 0
    // Present in both reports but a total is unknown: time is not compared (no time change, no "same" either);
    // why, per side: "B: 1 of 1 calls without a duration (exit not seen)". Such a node is kept (shown) like a change.
    std::optional<std::string> time_unknown;
    // Sort key: |delta_total_ns|, or the time of an added/removed subtree (its known durations when the total is
    // unknown), at least the largest impact below.
    std::uint64_t impact_ns = 0;
    std::vector<DiffNode> children;  // by impact, largest first
};

struct DiffSummary {
    std::uint64_t added_paths = 0;  // tops of added subtrees
    std::uint64_t added_nodes = 0;  // every node in them
    std::uint64_t added_calls = 0;
    std::uint64_t removed_paths = 0;
    std::uint64_t removed_nodes = 0;
    std::uint64_t removed_calls = 0;
    std::uint64_t count_changes = 0;
    std::uint64_t retval_changes = 0;
    std::uint64_t time_changes = 0;
    std::uint64_t irq_changes = 0;   // of the above, those under "[irq]"
    std::uint64_t time_unknown = 0;  // nodes in both reports whose time was not compared (DiffNode::time_unknown)
    bool structural() const { return added_paths + removed_paths + count_changes + retval_changes > 0; }
    bool any() const { return structural() || time_changes > 0; }
};

struct DiffInput {
    std::string label;  // what was read (path); set by the caller
    ReportSource source;
    ReportEnvironment environment;
    bool complete = true;
    std::vector<std::string> reasons;      // why not complete
    std::uint64_t calls = 0;               // calls considered (after --phase)
    bool has_retvals = false;              // any call carries a return value
    std::vector<std::string> phases;       // phases seen in the report: of its markers, ioctls and calls, sorted
    std::vector<std::string> call_phases;  // those phases that hold calls, sorted
    std::uint64_t report_calls = 0;        // calls in the report (before --phase/--ignore)
};

// Why `in` has no calls left for `--phase phase` (in.calls == 0), for the error message:
// "LABEL: no calls in phase 'P' (the report has no calls: function_graph was not traced; its phases, from
// markers and ioctls: one, two)", "LABEL: no phase 'P' in the report (phases: one, two)", or "LABEL: no calls
// in phase 'P' (phases: one, two; with calls: two)".
std::string describe_empty_phase(const DiffInput& in, const std::string& phase);

// The ioctl part (docs/diff.md, "ioctls"): the rows of every task (pid null) of the two reports' ioctl_stats,
// aligned by (device, or fd when the device is not known, cmd). added: the request is only in B; removed: only in
// A; count: the call counts differ (exact); latency: |delta mean_ns| >= min_abs_ns and >= min_rel of A's mean (the
// threshold of the call tree's time changes), compared only when both rows have a mean; new errors: error names
// (errno, NV_STATUS) B has and A has not (for an added request, every error name of B).
struct IoctlDiffRow {
    std::optional<std::string> device;
    std::optional<int> fd;
    std::uint64_t cmd = 0;
    std::optional<std::string> name;
    std::optional<IoctlStat> a, b;  // null where the request is missing
    DiffStatus status = DiffStatus::same;
    bool count_changed = false;
    bool latency_changed = false;
    std::vector<std::string> new_errors;  // sorted
    std::int64_t delta_count = 0;
    std::optional<std::int64_t> delta_mean_ns;  // both means known
    std::optional<double> rel_mean;             // delta_mean_ns / a.mean_ns when a.mean_ns > 0
};
struct IoctlDiffSummary {
    std::uint64_t added = 0, removed = 0, count_changes = 0, latency_changes = 0;
    std::uint64_t new_errors = 0;  // requests with new error names
    bool any() const { return added + removed + count_changes + latency_changes + new_errors > 0; }
};

// The API-call part (docs/diff.md, "API calls"): the two reports' api_calls (Report::api_calls, uprobe spans)
// aligned by (api, function): "cuda_driver" + "cuMemHostRegister_v2". With DiffOptions::phase, only the calls
// whose phase is that one. added: the function was called only in B; removed: only in A; count: the call counts
// differ (exact); results: the calls per result class differ (the result's CUresult / cudaError_t name; a result
// without a name is "0", an errno "-22 (EINVAL)", another value "other" since a pid or a pointer differs every
// run; "unknown" when no return was seen); latency: the total or the max of the known durations moved past the
// tree's threshold (|delta| >= min_abs_ns and >= min_rel of A's); ioctls: the ioctls made inside the calls
// (ApiCall::ioctl_names: request, RM class, how it failed) differ in count for some label.
struct ApiDiffSide {
    std::uint64_t count = 0;
    std::uint64_t total_ns = 0;                    // sum of the known durations (exit - entry)
    std::optional<std::uint64_t> max_ns;           // null when no duration is known
    std::uint64_t unknown_durations = 0;           // calls whose return was not seen
    std::map<std::string, std::uint64_t> results;  // result class -> calls
    std::map<std::string, std::uint64_t> ioctls;   // ioctl label -> ioctls made inside these calls
};
struct ApiIoctlChange {
    std::string ioctl;  // the label ("NV_ESC_RM_ALLOC hClass NV01_ROOT_CLIENT(0x41)")
    std::uint64_t a = 0, b = 0;
};
struct ApiDiffRow {
    std::string api;       // "cuda_driver", "cuda_runtime", "user", "unknown"
    std::string function;  // as recorded
    std::optional<std::string> library;
    std::optional<ApiDiffSide> a, b;  // null where the function was not called
    DiffStatus status = DiffStatus::same;
    bool count_changed = false;
    bool results_changed = false;
    bool total_changed = false;  // past the threshold
    bool max_changed = false;    // past the threshold
    std::int64_t delta_count = 0;
    std::optional<std::int64_t> delta_total_ns;  // both sides have a known duration
    std::optional<double> rel_total;             // delta_total_ns / a.total_ns when a.total_ns > 0
    std::optional<std::int64_t> delta_max_ns;
    std::optional<double> rel_max;
    std::vector<ApiIoctlChange> ioctl_changes;  // labels whose count differs, by label; every label of an
                                                // added or removed function
};
struct ApiDiffSummary {
    std::uint64_t added = 0, removed = 0, count_changes = 0, result_changes = 0, latency_changes = 0;
    std::uint64_t ioctl_changes = 0;  // functions (present in both) whose ioctls changed
    bool any() const { return added + removed + count_changes + result_changes + latency_changes + ioctl_changes > 0; }
};

// The API rows of two reports (DiffResult::api_calls): changed rows first (added, removed, changed), then by count
// in B; unchanged rows only with `keep_unchanged`.
std::vector<ApiDiffRow> diff_api_calls(const std::vector<ApiCall>& a, const std::vector<ApiCall>& b,
                                       const DiffOptions& options, ApiDiffSummary& summary);

struct DiffResult {
    DiffInput a, b;
    DiffOptions options;
    bool retvals_compared = false;  // both reports carry return values
    // False when one report has calls and the other none (strace output, a kernel log, a run without function
    // tracing): every path would be "added" or "removed", a difference of what was traced, not of what the kernel
    // did. Then `roots` is empty and the summary counts nothing; the ioctls and API calls are still compared.
    bool calls_compared = true;
    std::vector<DiffNode> roots;  // by impact
    DiffSummary summary;
    // Either report has ioctl_stats, and a report without any is of an input that shows whether ioctls were made
    // (records_ioctls): a function_graph text or kernel log, which need not hold syscall events, would make every
    // request "removed", a difference of what was traced. Then `ioctls_unrecorded` names that side ('a' or 'b').
    bool ioctls_compared = false;
    char ioctls_unrecorded = 0;
    std::vector<IoctlDiffRow> ioctls;  // changed rows first (added, removed, changed), then by count in B
    IoctlDiffSummary ioctl_summary;
    bool api_compared = false;          // either report has api_calls
    std::vector<ApiDiffRow> api_calls;  // changed rows first, then by count in B
    ApiDiffSummary api_summary;
    bool any_change() const { return summary.any() || ioctl_summary.any() || api_summary.any(); }
};

// The ioctl rows of two reports' ioctl_stats (DiffResult::ioctls); unchanged rows only with `keep_unchanged`.
std::vector<IoctlDiffRow> diff_ioctl_stats(const std::vector<IoctlStat>& a, const std::vector<IoctlStat>& b,
                                           const DiffThreshold& threshold, bool keep_unchanged,
                                           IoctlDiffSummary& summary);

DiffResult diff_reports(const Report& a, const Report& b, const DiffOptions& options);

// Why `in` has no call graph, for the messages when one side has calls and the other none:
// "its input (strace) records no calls", "it was traced with tracer events (no function_graph)", or
// "it has no calls".
std::string why_no_call_graph(const DiffInput& in);
// Whether a report with no ioctls shows that none were made: a live run or its capture directory (the ioctl
// tracepoints are always enabled) and strace output do; function_graph / function text, trace-cmd report text,
// trace.dat and kernel logs may hold no syscall events at all. A report with ioctls records them.
bool records_ioctls(const Report& r);
// Why `in` (a report without ioctls that records_ioctls refused) is not compared on its ioctls: "its input
// (fgraph-text) recorded no ioctl and need not record syscalls: whether ioctls were made is unknown".
std::string why_no_ioctls(const DiffInput& in);

// One report's side of the call-tree diff, folded call by call, so that the calls themselves need not be held:
// `nvtrace diff` feeds it from read_report_file's call sink (nvtrace/report_io.hpp) while the file is read. Kept
// per call until diff_reports: its path node, the call its time counts under, its duration and its children's
// (32 bytes, against 328 for a Call and its strings). Calls must come in report order: a parent before its
// children, as every saved report lists them (read_report_file refuses a parent with a larger id that is in the
// report). diff_reports(a, b, options) above builds one from each report's calls, with the same result.
// Thread-safety: one builder per thread (the two sides may be fed on two threads at once).
// Kernel function_graph call trees are shallow (each task's stack of return addresses, kernel/trace/fgraph.c
// ret_stack, has a fixed size); a saved report nesting deeper than this is another producer's, and not compared.
inline constexpr std::size_t kDiffMaxDepth = 4096;

class DiffCalls {
public:
    explicit DiffCalls(const DiffOptions& options);  // copied
    DiffCalls(DiffCalls&&) noexcept;
    DiffCalls& operator=(DiffCalls&&) noexcept;
    ~DiffCalls();
    void add(const Call& call);
    std::uint64_t report_calls() const;  // calls added (before --phase/--ignore)
    // The deepest call path so far, in calls (a root is 1). The comparison walks the paths recursively: callers
    // refuse reports deeper than kDiffMaxDepth.
    std::size_t depth() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    friend DiffResult diff_reports(const Report&, DiffCalls, const Report&, DiffCalls, const DiffOptions&);
};

// The diff of two reports whose calls were folded into `a_calls` and `b_calls` (each report's own calls, in its
// order); `a.calls` and `b.calls` are not read (they may be empty). Everything else (phases of markers and
// ioctls, ioctl_stats, api_calls, source, completeness) comes from `a` and `b`. `options`: as given to the builders.
DiffResult diff_reports(const Report& a, DiffCalls a_calls, const Report& b, DiffCalls b_calls,
                        const DiffOptions& options);

// {"schema":"nvtrace.diff/1","a":...,"b":...,"options":...,"summary":...,"tree":[...],"changes":[...],
//  "ioctls":{...},"api_calls":{...}}
// (docs/diff.md). "changes" lists every changed node flat, by impact. Indented by one space, invalid UTF-8
// replaced, no final newline.
std::string to_json_text(const DiffResult& d);

struct DiffTextOptions {
    bool colour = false;
    std::size_t max_rows = 0;  // 0 = all
};
// The indented tree with +/-/~ marks (docs/diff.md).
std::string format_diff_text(const DiffResult& d, const DiffTextOptions& options = {});

}  // namespace nvtrace
