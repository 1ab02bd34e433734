// nvtrace/call_graph.hpp: funcgraph entry/exit events -> call trees with durations.
//
// Model: one shadow stack per task (pid). The kernel keeps one return stack per task and records the
// nesting index in `depth` (kernel/trace/fgraph.c), so depth, not the CPU, says where an event belongs;
// interrupts nest on the interrupted task's stack and are flagged from common_flags.
// Lost data is kept, never guessed away: an exit with no open entry of the same function becomes an
// orphan return (entry_seen = false), an entry left open at the end an unclosed call (exit_seen = false).
// Orphan returns nest: one at kernel depth d adopts the orphan returns at depth d + 1 before it on the same
// stack and under the same open frame (a trace that starts inside a call tree returns up it one level at a
// time). They wait for their ids until nothing can adopt them (an entry or matched return shallower than
// them, a return that does not fit, depth 0, an open frame one level up, or the end); ids then go parents
// first. Complete calls that ran between such returns stay where their own entry put them.
// Ids: parent before child always; entry order for calls whose entry is in the data.
// Thread-safety: pure functions.
#pragma once

#include <unordered_map>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

// Where an event of the stream was: its line in a text file (0 otherwise), time, CPU, and the function.
struct EventPlace {
    std::uint32_t line = 0;
    std::optional<std::uint64_t> ts_ns;
    int cpu = -1;
    std::string function;
};

struct CallGraph {
    std::vector<Call> calls;  // by id; ids are indexes + 1 (0 is never an id); order as said above
    std::uint64_t orphan_returns = 0;
    std::uint64_t unclosed_calls = 0;
    std::uint64_t depth_gaps = 0;      // entries deeper than the open stack allows (lost parent entries)
    std::uint64_t graph_overruns = 0;  // sum of funcgraph_exit.overrun
    std::uint64_t starts_mid_tree =
        0;  // first entries of a task deeper than 0 (an excerpt, or tracing started mid-call)
    // The first example of each (the earliest line, else the earliest time): the orphan's return, the
    // unclosed call's entry, the first entry that started mid-tree.
    std::optional<EventPlace> first_orphan_return;
    std::optional<EventPlace> first_unclosed_call;
    std::optional<EventPlace> first_starts_mid_tree;
    std::optional<EventPlace> first_depth_gap;
};

// A diagnostic's first example (Diagnostic::first_example): "FILE:LINE: function" when the event has a line
// and `file_name` is not empty (a text file), else "cpu C ts T ns: function"; "" without a place.
std::string describe_place(const std::optional<EventPlace>& p, std::string_view file_name);

// `stream.events` must be sorted by ts_ns.
CallGraph build_call_graph(const EventStream& stream);

// How the rows of a graph were aggregated. At most `max_paths` distinct call paths, with at most
// `max_path_bytes` bytes of path text in all, get a row of their own (the paths of the first calls, in id
// order); the `beyond_calls` calls on paths past that (and every call under them) are aggregated by function
// into rows "[beyond MAX_PATHS paths] > FUNCTION" (the info diagnostic graph_paths_capped, report-format.md).
struct GraphStats {
    std::uint64_t paths = 0;  // distinct paths with a row of their own
    std::uint64_t max_paths = 0;
    std::uint64_t max_path_bytes = 0;
    std::uint64_t beyond_calls = 0;
};

// Aggregates calls into one row per root path, sorted by path (byte order); `stats`, when given, says how.
std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls, GraphStats* stats = nullptr);

// The diagnostic graph_paths_capped for `s` (none when no call was past the cap).
void add_graph_cap_diagnostic(Completeness& c, const GraphStats& s);

}  // namespace nvtrace
