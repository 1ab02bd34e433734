// nvtrace/tree.hpp: the aggregated call-path tree of a report for the terminal (`nvtrace tree`, docs/tree.md).
//
// The model is uftrace's `graph` command (doc/uftrace-graph.md in namhyung/uftrace): every call with the same path
// from a tree's top is merged into one line with its call count, total time (the sum of the calls' durations),
// self time (total minus the direct children's) and the largest single duration; a function called 12 times under
// one parent is one line "12x". Children are sorted by total time, most first. On top of uftrace's fields a line
// carries what a CPU profiler cannot know: the ioctl request the tree's top ran under with its RM status or errno,
// the phase or API call (uprobe span) it ran under, and the kernel-log lines printed inside its calls.
//
// Input: a Report (include/nvtrace/report.hpp) however it was read (load_report_input in report_io.hpp). The tree
// is built from `calls` (parents by id); a report whose calls went elsewhere (--calls-jsonl) is drawn from its
// `graph` rows, without annotations or grouping; a report without calls (function tracing refused or not asked
// for) is drawn as its ioctl requests, the leaves, with their counts, outcomes and latency (enter -> exit).
//
// Units: ns in the model; the text prints microseconds with three decimals and thousands separators
// ("3,971.558"). A duration the data does not have (no exit recorded, a function tracer hit, an ioctl without
// its exit) is never summed as 0: `timed` counts the calls that have one, and a line where none has one prints
// `unknown`.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/report.hpp"

namespace nvtrace {

// A top level per phase (Call::phase / IoctlRecord::phase), per API call (the path of the uprobe spans the root
// call or ioctl ran inside, "cudaMalloc > cuMemAlloc_v2", Report::api_calls), per ioctl request (the root calls
// that ran inside each ioctl, keyed by its decoded name), or per thread ("comm-pid").
enum class TreeGroupBy { none, phase, api, ioctl, thread };
std::optional<TreeGroupBy> parse_tree_group_by(std::string_view name);  // "phase", "api", "ioctl", "thread"
std::string_view to_string(TreeGroupBy g);

struct TreeOptions {
    // Only the subtrees rooted at each outermost call of this function (a call of it inside another is part of
    // that one's subtree), merged into one tree; the paths that lead to it are listed above the tree.
    std::optional<std::string> focus;
    // Only the subtrees rooted at each outermost call of a function of this module (Call::module; '-' and '_'
    // are the same, as in kernel module names): the tree cut at the driver boundary. With `focus`, a top must
    // match both.
    std::optional<std::string> module;
    TreeGroupBy group_by = TreeGroupBy::none;
    // Rendering (write_tree): levels shown from the tree's tops (1: the tops alone); a line whose deeper paths
    // are cut says how many ("+3 paths below --depth 2").
    std::optional<std::uint32_t> max_depth;
    // Rendering: sibling paths whose known total is below this are folded into one line "... N paths below
    // 10.000 us" (N: the folded paths and every path under them) with their calls and time. A path whose total
    // is unknown is never folded.
    std::optional<std::uint64_t> min_time_ns;
    bool color = false;  // ANSI SGR colours (the command decides: a terminal, NO_COLOR, --color)
};

struct TreeNode {
    enum class Kind : std::uint8_t {
        path,     // a call path: the function (and its module) at this place in the tree
        group,    // a --group-by top level (rendered "[label]")
        request,  // an ioctl request of a report without calls
    };
    Kind kind = Kind::path;
    std::string label;                    // "nv_alloc_pages [nvidia]", "phase cudaMalloc", "NV_ESC_RM_ALLOC"
    std::uint64_t count = 0;              // calls (a group: its tops; a request: its ioctls)
    std::uint64_t timed = 0;              // of those, with a known duration
    std::uint64_t total_ns = 0;           // the sum of the known durations
    std::uint64_t max_ns = 0;             // the largest known duration
    std::uint64_t self_timed = 0;         // calls whose self time is known: their own and every direct child's duration
    std::uint64_t self_ns = 0;            // the sum of those self times
    std::uint64_t self_clamped = 0;       // of those, calls shorter than their direct children together (inconsistent
                                          // durations, e.g. a hand-edited report): self taken as 0, noted
    bool overflow = false;                // a sum (total_ns, self_ns) passed 2^64-1 ns: saturated, printed "overflow"
    std::vector<std::string> notes;       // annotations, in print order
    bool error = false;                   // a note says something failed (an RM status other than NV_OK, ret < 0)
    std::vector<std::uint32_t> children;  // indices into TreeView::nodes, sorted by total_ns (most first), then label
};

struct TreeView {
    std::vector<TreeNode> nodes;
    std::vector<std::uint32_t> tops;  // sorted like children
    bool from_ioctls = false;         // no calls: the nodes are ioctl requests (and their groups)
    bool from_graph = false;          // calls not in the report: the nodes are its `graph` rows
    std::vector<std::string> before;  // lines above the tree: what it shows, the paths that lead to --focus
    std::vector<std::string> after;   // lines below it: why durations are unknown, what could not be applied
    std::uint64_t calls = 0;          // calls (or ioctls) counted in the tree
};

// The aggregated tree of `report` under the focus, module and grouping of `options` (depth, min_time and color
// are the renderer's). Never fails: a focus that matches nothing gives no tops and says so in `before`.
TreeView build_tree(const Report& report, const TreeOptions& options);

// The tree as text: a column header ("TOTAL us  SELF us  MAX us  CALLS  CALL PATH"), one line per shown node
// with ASCII branches ("|- ", "`- "), then `after` and the report's completeness line (completeness_line).
void write_tree(const TreeView& view, const Report& report, const TreeOptions& options, std::ostream& out);

// "10us", "1.5ms", "250ns", "2s", "10" (microseconds, the unit of the text traces): ns; nullopt for anything
// else (no number, an unknown unit, a negative or overflowing value).
std::optional<std::uint64_t> parse_duration_ns(std::string_view text);

// 3971558 -> "3,971.558" (microseconds, three decimals, thousands separators).
std::string tree_us(std::uint64_t ns);

}  // namespace nvtrace
