// nvtrace/call_stream.hpp: the call-graph builder of build_call_graph, fed one event at a time, for traces
// too large to hold (docs/performance.md, `nvtrace report --calls-jsonl`).
//
// Model and rules: exactly those of build_call_graph (call_graph.hpp); build_call_graph is this class fed
// with a whole stream. A call is handed to the sink once it is final: when its exit is seen, when it is
// dropped as unclosed (a shallower entry or exit on its task, or finish()), or for an orphan return once no
// later orphan can adopt it (call_graph.hpp), with the orphans it adopted.
// Calls therefore arrive in the order they end, not by id; ids are the ones build_call_graph gives (entry
// order, 1-based), and a call always arrives before its parent.
// Memory: the open frames of every task plus one row per distinct call path (the aggregated graph), however
// many events go through. A call handed to the sink lives in its frame's slot, which the next entry at that
// depth of that task reuses: a sink that only reads the call lets its string buffers be reused (no allocation
// per call); one that moves from it costs the next call its allocations, nothing else.
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/call_graph.hpp"

namespace nvtrace {

class CallStream {
public:
    using Sink = std::function<void(Call&&)>;
    // `aggregate`: also fold every call into the per-path rows that graph() returns.
    explicit CallStream(Sink sink, bool aggregate = true);
    // Every call kept in `by_id` at index id - 1 (build_call_graph's order) instead of handed to a sink; the
    // rows of graph() are aggregated too. `by_id` must outlive the stream.
    explicit CallStream(std::vector<Call>& by_id);
    ~CallStream();
    CallStream(const CallStream&) = delete;
    CallStream& operator=(const CallStream&) = delete;

    // Events in ts_ns order (only FuncEntry / FuncExit are read); `comms` maps pids to comms as known at this
    // point.
    void add(const Event& ev, const std::map<int, std::string>& comms);
    // The same for a FuncEntry / FuncExit whose names the caller holds elsewhere (the function_graph reader's
    // views into the text it reads): `function` and `module` (null: none) stand for the event's own, which are
    // ignored. The views need to live only during the call.
    void add(const Event& ev, const std::map<int, std::string>& comms, std::string_view function,
             const std::string_view* module);
    // Hands over every call still open, as unclosed. Call once, after the last add().
    void finish();

    // The innermost call open on `ev`'s task (its stack) at this point, if any: the call a ConsoleLine printed
    // there ran in.
    std::optional<std::uint64_t> open_call(const Event& ev) const;
    // Whether a call of task `pid` not handed over yet (open, or an orphan return waiting for its parent) may
    // still become a root whose entry_ns is in [lo, hi] (hi unset: no upper bound), or has no entry_ns yet:
    // an ioctl of that pid over [lo, hi] may still get such a root call (link_ioctl_calls).
    bool may_root_in(int pid, std::uint64_t lo, std::optional<std::uint64_t> hi) const;

    // The counters of build_call_graph (`calls` stays empty).
    const CallGraph& summary() const;
    // aggregate_graph() of every call handed over so far (empty unless `aggregate`).
    std::vector<GraphNode> graph() const;
    // How graph() aggregated them (GraphStats, call_graph.hpp).
    GraphStats graph_stats() const;
    std::uint64_t calls() const;  // calls created so far (the largest id)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    friend CallGraph build_call_graph(const EventStream& stream);
};

}  // namespace nvtrace
