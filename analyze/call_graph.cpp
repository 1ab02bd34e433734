#include "nvtrace/call_graph.hpp"

#include <limits>
#include <map>
#include <unordered_map>

namespace nvtrace {

namespace {

struct Frame {
    std::size_t index;  // into CallGraph::calls
    int kernel_depth;
    std::uint64_t func_addr;
};

bool same_function(const Call& c, const Frame& fr, const FuncExit& x) {
    if (fr.func_addr != 0 && x.func_addr != 0) return fr.func_addr == x.func_addr;
    return x.function.empty() || c.function == x.function;  // a bare "}" closes whatever is open
}

// Shadow stacks are per task; sources without a task column (plain function_graph text) are per CPU.
std::int64_t stack_key(const Event& ev) {
    return ev.pid >= 0 ? ev.pid : -2 - static_cast<std::int64_t>(ev.cpu);
}

}  // namespace

CallGraph build_call_graph(const EventStream& stream) {
    CallGraph g;
    std::unordered_map<std::int64_t, std::vector<Frame>> stacks;

    auto comm_of = [&](int pid) {
        auto it = stream.comms.find(pid);
        return it == stream.comms.end() ? std::string() : it->second;
    };
    auto new_call = [&](const Event& ev, std::vector<Frame>& st) -> Call& {
        Call c;
        c.id = g.calls.size() + 1;
        if (!st.empty()) c.parent = g.calls[st.back().index].id;
        c.cpu = ev.cpu;
        c.pid = ev.pid;
        c.comm = comm_of(ev.pid);
        c.depth = static_cast<int>(st.size());
        c.irq = ev.irq;
        g.calls.push_back(std::move(c));
        return g.calls.back();
    };
    auto drop_unclosed = [&](std::vector<Frame>& st, std::size_t keep) {
        while (st.size() > keep) {
            g.calls[st.back().index].exit_seen = false;
            ++g.unclosed_calls;
            st.pop_back();
        }
    };

    for (std::size_t idx = 0; idx < stream.events.size(); ++idx) {
        const Event& ev = stream.events[idx];
        if (std::holds_alternative<ConsoleLine>(ev.body) || std::holds_alternative<Marker>(ev.body)) {
            if (auto it = stacks.find(stack_key(ev)); it != stacks.end() && !it->second.empty())
                g.open_call_at[idx] = g.calls[it->second.back().index].id;
            continue;
        }
        if (const auto* e = std::get_if<FuncEntry>(&ev.body)) {
            auto& st = stacks[stack_key(ev)];
            std::size_t keep = st.size();
            while (keep > 0 && st[keep - 1].kernel_depth >= e->depth)
                --keep;
            drop_unclosed(st, keep);
            int expected_depth = st.empty() ? 0 : st.back().kernel_depth + 1;
            // Deeper than expected: parent entries are missing, unless an interrupt nested into the open call
            // (text without irq markers shows it so), or the data starts in the middle of a tree.
            if (e->depth > expected_depth) {
                if (st.empty())
                    ++g.starts_mid_tree;
                else if (!ev.irq)
                    ++g.depth_gaps;
            }
            Call& c = new_call(ev, st);
            c.function = e->function;
            c.module = e->module;
            if (ev.ts_known) c.entry_ns = ev.ts_ns;
            c.exit_seen = false;
            st.push_back({g.calls.size() - 1, e->depth, e->func_addr});
        } else if (const auto* x = std::get_if<FuncExit>(&ev.body)) {
            auto& st = stacks[stack_key(ev)];
            g.graph_overruns += x->overrun;
            std::size_t found = st.size();
            for (std::size_t k = st.size(); k-- > 0;) {
                if (st[k].kernel_depth == x->depth && same_function(g.calls[st[k].index], st[k], *x)) {
                    found = k;
                    break;
                }
                if (st[k].kernel_depth < x->depth) break;
            }
            std::optional<std::uint64_t> duration = x->duration_ns;
            if (!duration && x->rettime_ns >= x->calltime_ns && x->calltime_ns != 0)
                duration = x->rettime_ns - x->calltime_ns;
            if (found < st.size()) {
                drop_unclosed(st, found + 1);
                Call& c = g.calls[st.back().index];
                c.exit_seen = true;
                c.duration_ns = duration;
                c.retval = x->retval;
                st.pop_back();
            } else {
                // The entry is not in the data: keep the return, with what the exit itself says.
                std::size_t keep = st.size();
                while (keep > 0 && st[keep - 1].kernel_depth >= x->depth)
                    --keep;
                drop_unclosed(st, keep);
                Call& c = new_call(ev, st);
                c.function = x->function.empty() ? "?" : x->function;  // a bare "}" names nothing
                c.module = x->module;
                c.entry_seen = false;
                c.exit_seen = true;
                if (x->calltime_ns != 0)
                    c.entry_ns = x->calltime_ns;
                else if (ev.ts_known && duration && ev.ts_ns >= *duration)
                    c.entry_ns = ev.ts_ns - *duration;
                c.duration_ns = duration;
                c.retval = x->retval;
                ++g.orphan_returns;
            }
        }
    }
    for (auto& [pid, st] : stacks)
        drop_unclosed(st, 0);
    return g;
}

std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls) {
    std::vector<std::string> paths(calls.size());
    std::vector<std::uint64_t> child_ns(calls.size(), 0);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& c = calls[i];
        if (c.parent) {
            std::size_t p = *c.parent - 1;
            paths[i] = paths[p] + " > " + c.function;
            if (c.duration_ns) child_ns[p] += *c.duration_ns;
        } else {
            paths[i] = c.function;
        }
    }
    std::map<std::string, GraphNode> nodes;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        auto [it, fresh] = nodes.try_emplace(paths[i]);
        GraphNode& n = it->second;
        if (fresh) {
            n.path = paths[i];
            n.min_ns = std::numeric_limits<std::uint64_t>::max();
        }
        ++n.count;
        if (const auto& d = calls[i].duration_ns) {
            n.total_ns += *d;
            n.self_ns += *d > child_ns[i] ? *d - child_ns[i] : 0;
            n.min_ns = std::min(n.min_ns, *d);
            n.max_ns = std::max(n.max_ns, *d);
        }
    }
    std::vector<GraphNode> out;
    out.reserve(nodes.size());
    for (auto& [path, n] : nodes) {
        if (n.min_ns == std::numeric_limits<std::uint64_t>::max()) n.min_ns = 0;
        out.push_back(std::move(n));
    }
    return out;
}

}  // namespace nvtrace
