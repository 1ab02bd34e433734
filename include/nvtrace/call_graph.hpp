// nvtrace/call_graph.hpp: funcgraph entry/exit events -> call trees with durations.
//
// Model: one shadow stack per task (pid). The kernel keeps one return stack per task and records the
// nesting index in `depth` (kernel/trace/fgraph.c), so depth, not the CPU, says where an event belongs;
// interrupts nest on the interrupted task's stack and are flagged from common_flags.
// Lost data is kept, never guessed away: an exit with no open entry of the same function becomes an
// orphan return (entry_seen = false), an entry left open at the end an unclosed call (exit_seen = false).
// Thread-safety: pure functions.
#pragma once

#include <unordered_map>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

struct CallGraph {
    std::vector<Call> calls;  // in entry order; ids are indexes + 1 (0 is never an id)
    std::uint64_t orphan_returns = 0;
    std::uint64_t unclosed_calls = 0;
    std::uint64_t depth_gaps = 0;      // entries deeper than the open stack allows (lost parent entries)
    std::uint64_t graph_overruns = 0;  // sum of funcgraph_exit.overrun
    std::uint64_t starts_mid_tree =
        0;  // first entries of a task deeper than 0 (an excerpt, or tracing started mid-call)
    // For every ConsoleLine and Marker event (index into stream.events): the innermost call open on that
    // event's task at that point in the stream, when one was.
    std::unordered_map<std::size_t, std::uint64_t> open_call_at;
};

// `stream.events` must be sorted by ts_ns.
CallGraph build_call_graph(const EventStream& stream);

// Aggregates calls into one row per root path, sorted by path.
std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls);

}  // namespace nvtrace
