#include "nvtrace/call_graph.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "nvtrace/call_stream.hpp"

namespace nvtrace {

namespace {

// Shadow stacks are per task; sources without a task column (plain function_graph text) are per CPU.
std::int64_t stack_key(const Event& ev) {
    return ev.pid >= 0 ? ev.pid : -2 - static_cast<std::int64_t>(ev.cpu);
}

// Distinct call paths ("a > b > c"), each a node under its parent path, with the aggregated row. One flat
// hash table of (parent, name) -> node: a lookup per call hashes the name once and compares it once.
class PathTree {
public:
    static constexpr std::uint32_t kRoot = std::numeric_limits<std::uint32_t>::max();

    std::uint32_t intern(std::uint32_t parent, const std::string& function) {
        // Calls repeat: the child a path got last time is the likely one again (one compare, no hashing).
        std::uint32_t& last = parent == kRoot ? last_root_ : nodes_[parent].last_kid;
        if (last != kRoot && *nodes_[last].function == function) return last;
        Key k{parent, function};
        auto it = index_.find(k);
        if (it != index_.end()) return last = it->second;
        auto id = static_cast<std::uint32_t>(nodes_.size());
        names_.push_back(function);  // a deque: the views in index_ stay valid
        Node n;
        n.parent = parent;
        n.function = &names_.back();
        n.row.min_ns = std::numeric_limits<std::uint64_t>::max();
        nodes_.push_back(n);
        index_.emplace(Key{parent, names_.back()}, id);
        (parent == kRoot ? last_root_ : nodes_[parent].last_kid) = id;
        return id;
    }

    void add(std::uint32_t node, const std::optional<std::uint64_t>& duration, std::uint64_t child_ns) {
        GraphNode& n = nodes_[node].row;
        ++n.count;
        if (duration) {
            std::uint64_t d = *duration;
            n.total_ns += d;
            n.self_ns += d > child_ns ? d - child_ns : 0;
            n.min_ns = std::min(n.min_ns, d);
            n.max_ns = std::max(n.max_ns, d);
        }
    }

    // One row per path that was counted, sorted by path (byte order).
    std::vector<GraphNode> rows() const {
        std::vector<std::string> paths(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i) {  // a parent is always interned before its children
            const Node& n = nodes_[i];
            paths[i] = n.parent == kRoot ? *n.function : paths[n.parent] + " > " + *n.function;
        }
        std::vector<std::size_t> order;
        order.reserve(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].row.count) order.push_back(i);
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return paths[a] < paths[b]; });
        std::vector<GraphNode> out;
        out.reserve(order.size());
        for (std::size_t i : order) {
            const GraphNode& r = nodes_[i].row;
            if (!out.empty() && out.back().path == paths[i]) {  // names holding " > " can spell one path twice
                GraphNode& n = out.back();
                n.count += r.count;
                n.total_ns += r.total_ns;
                n.self_ns += r.self_ns;
                n.min_ns = std::min(n.min_ns, r.min_ns);
                n.max_ns = std::max(n.max_ns, r.max_ns);
                continue;
            }
            out.push_back(r);
            out.back().path = std::move(paths[i]);
        }
        for (GraphNode& n : out)
            if (n.min_ns == std::numeric_limits<std::uint64_t>::max()) n.min_ns = 0;
        return out;
    }

private:
    struct Key {
        std::uint32_t parent;
        std::string_view name;
        bool operator==(const Key& o) const { return parent == o.parent && name == o.name; }
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<std::string_view>()(k.name) ^ (std::size_t(k.parent) * 0x9e3779b97f4a7c15ULL);
        }
    };
    struct Node {
        std::uint32_t parent = kRoot;
        const std::string* function = nullptr;  // in names_
        std::uint32_t last_kid = kRoot;         // the child interned last, kRoot for none
        GraphNode row;                          // path filled in by rows()
    };
    std::vector<Node> nodes_;
    std::deque<std::string> names_;
    std::unordered_map<Key, std::uint32_t, KeyHash> index_;
    std::uint32_t last_root_ = kRoot;
};

}  // namespace

struct CallStream::Impl {
    struct Frame {
        Call call;
        int kernel_depth = 0;
        std::uint32_t line = 0;  // of the entry
        std::uint64_t func_addr = 0;
        std::uint64_t child_ns = 0;  // known durations of the direct children handed over
        std::uint32_t node = PathTree::kRoot;
    };

    Sink sink;
    std::vector<Call>* slots = nullptr;  // build_call_graph: calls land at index id - 1
    bool aggregate = true;
    CallGraph g;
    std::uint64_t next_id = 1;
    std::unordered_map<std::int64_t, std::vector<Frame>> stacks;
    // Orphan returns not handed over yet, per stack: a later orphan one level up is their parent (the
    // kernel returns inner calls first), so they wait until none can come. `tops`: the ones not adopted,
    // all at kernel depth `depth`, all under the open frame stack[base - 1] (a root when base is 0).
    struct Orphan {
        Call call;
        std::vector<std::size_t> kids;  // into pool
    };
    struct Orphans {
        std::vector<Orphan> pool;
        std::vector<std::size_t> tops;
        int depth = 0;
        std::size_t base = 0;
    };
    std::unordered_map<std::int64_t, Orphans> orphans;
    PathTree paths;
    const std::map<int, std::string>* comms = nullptr;

    bool same_function(const Frame& fr, const FuncExit& x) const {
        if (fr.func_addr != 0 && x.func_addr != 0) return fr.func_addr == x.func_addr;
        return x.function.empty() || fr.call.function == x.function;  // a bare "}" closes whatever is open
    }

    // A final call: aggregated, its duration added to its parent's children (`parent`: the frame below
    // it, or null for a root), then handed over.
    void emit(Call&& c, std::uint32_t node, std::uint64_t child_ns, Frame* parent) {
        if (aggregate) paths.add(node, c.duration_ns, child_ns);
        if (parent && c.duration_ns) parent->child_ns += *c.duration_ns;
        if (slots)
            (*slots)[c.id - 1] = std::move(c);
        else
            sink(std::move(c));
    }
    void pop(std::vector<Frame>& st) {
        Frame f = std::move(st.back());
        st.pop_back();
        emit(std::move(f.call), f.node, f.child_ns, st.empty() ? nullptr : &st.back());
    }
    // Keeps the earlier of `at` and the example already there.
    static void note(std::optional<EventPlace>& first, EventPlace at) {
        if (!first) {
            first = std::move(at);
            return;
        }
        bool earlier =
            first->line && at.line ? at.line < first->line : at.ts_ns && (!first->ts_ns || *at.ts_ns < *first->ts_ns);
        if (earlier) first = std::move(at);
    }
    static EventPlace place(const Event& ev, std::string function) {
        return {ev.line, ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt, ev.cpu, std::move(function)};
    }
    void drop_unclosed(std::vector<Frame>& st, std::size_t keep) {
        while (st.size() > keep) {
            const Frame& f = st.back();
            note(g.first_unclosed_call, {f.line, f.call.entry_ns, f.call.cpu, f.call.function});
            st.back().call.exit_seen = false;
            ++g.unclosed_calls;
            pop(st);
        }
    }
    // Ids, parents and depths of the waiting orphans, parents first (entry order), then hands them over,
    // children first, under the frame they returned into.
    void flush_orphans(std::int64_t key, std::vector<Frame>& st) {
        auto it = orphans.find(key);
        if (it == orphans.end() || it->second.tops.empty()) return;
        Orphans o = std::move(it->second);
        orphans.erase(it);
        Frame* under = o.base > 0 ? &st[o.base - 1] : nullptr;
        std::vector<std::uint32_t> node(o.pool.size(), PathTree::kRoot);
        std::vector<std::size_t> order;  // pre-order
        order.reserve(o.pool.size());
        struct Item {
            std::size_t at;
            std::optional<std::uint64_t> parent;
            int depth;
            std::uint32_t parent_node;
        };
        std::vector<Item> work;
        for (auto t = o.tops.rbegin(); t != o.tops.rend(); ++t)
            work.push_back({*t, under ? std::optional<std::uint64_t>(under->call.id) : std::nullopt,
                            static_cast<int>(o.base), under ? under->node : PathTree::kRoot});
        while (!work.empty()) {
            Item w = work.back();
            work.pop_back();
            Call& c = o.pool[w.at].call;
            c.id = next_id++;
            if (slots) slots->emplace_back();
            c.parent = w.parent;
            c.depth = w.depth;
            if (aggregate) node[w.at] = paths.intern(w.parent_node, c.function);
            order.push_back(w.at);
            const auto& kids = o.pool[w.at].kids;
            for (auto k = kids.rbegin(); k != kids.rend(); ++k)
                work.push_back({*k, c.id, w.depth + 1, node[w.at]});
        }
        std::vector<std::uint64_t> child_ns(o.pool.size(), 0);
        for (auto i = order.rbegin(); i != order.rend(); ++i) {
            Orphan& x = o.pool[*i];
            for (std::size_t k : x.kids)
                if (o.pool[k].call.duration_ns) child_ns[*i] += *o.pool[k].call.duration_ns;
        }
        std::vector<bool> top(o.pool.size(), false);
        for (std::size_t t : o.tops)
            top[t] = true;
        for (auto i = order.rbegin(); i != order.rend(); ++i)
            emit(std::move(o.pool[*i].call), node[*i], child_ns[*i], top[*i] ? under : nullptr);
    }
    // Before `st` loses or gains frames at or below the waiting orphans' parent frame.
    void flush_if(std::int64_t key, std::vector<Frame>& st, bool cond) {
        if (cond) flush_orphans(key, st);
    }
    const Orphans* waiting(std::int64_t key) const {
        auto it = orphans.find(key);
        return it == orphans.end() || it->second.tops.empty() ? nullptr : &it->second;
    }

    Call new_call(const Event& ev, const std::vector<Frame>& st) {
        Call c;
        c.id = next_id++;
        if (!st.empty()) c.parent = st.back().call.id;
        c.cpu = ev.cpu;
        c.pid = ev.pid;
        if (auto it = comms->find(ev.pid); it != comms->end()) c.comm = it->second;
        c.depth = static_cast<int>(st.size());
        c.irq = ev.irq;
        if (slots) slots->emplace_back();
        return c;
    }
    std::uint32_t node_for(const std::vector<Frame>& st, const std::string& function) {
        if (!aggregate) return PathTree::kRoot;
        return paths.intern(st.empty() ? PathTree::kRoot : st.back().node, function);
    }

    // `Ev` non-const: the event is not needed afterwards and its strings are moved into the call.
    template <class Ev>
    void add(Ev& ev, std::size_t idx) {
        constexpr bool steal = !std::is_const_v<Ev>;
        if (std::holds_alternative<ConsoleLine>(ev.body) || std::holds_alternative<Marker>(ev.body)) {
            if (auto it = stacks.find(stack_key(ev)); it != stacks.end() && !it->second.empty())
                g.open_call_at[idx] = it->second.back().call.id;
            return;
        }
        if (auto* e = std::get_if<FuncEntry>(&ev.body)) {
            std::int64_t key = stack_key(ev);
            auto& st = stacks[key];
            // An entry as deep as the waiting orphans is their sibling; a shallower one ends their parent.
            if (const Orphans* o = waiting(key)) flush_if(key, st, e->depth < o->depth);
            std::size_t keep = st.size();
            while (keep > 0 && st[keep - 1].kernel_depth >= e->depth)
                --keep;
            drop_unclosed(st, keep);
            int expected_depth = st.empty() ? 0 : st.back().kernel_depth + 1;
            // Deeper than expected: parent entries are missing, unless an interrupt nested into the open call
            // (text without irq markers shows it so), or the data starts in the middle of a tree.
            if (e->depth > expected_depth) {
                if (st.empty()) {
                    ++g.starts_mid_tree;
                    note(g.first_starts_mid_tree, place(ev, e->function));
                } else if (!ev.irq) {
                    ++g.depth_gaps;
                    note(g.first_depth_gap, place(ev, e->function));
                }
            }
            Frame f;
            f.call = new_call(ev, st);
            if constexpr (steal) {
                f.call.function = std::move(e->function);
                f.call.module = std::move(e->module);
            } else {
                f.call.function = e->function;
                f.call.module = e->module;
            }
            if (ev.ts_known) f.call.entry_ns = ev.ts_ns;
            f.call.exit_seen = false;
            f.kernel_depth = e->depth;
            f.line = ev.line;
            f.func_addr = e->func_addr;
            f.node = node_for(st, f.call.function);
            st.push_back(std::move(f));
        } else if (auto* x = std::get_if<FuncExit>(&ev.body)) {
            std::int64_t key = stack_key(ev);
            auto& st = stacks[key];
            g.graph_overruns += x->overrun;
            std::size_t found = st.size();
            for (std::size_t k = st.size(); k-- > 0;) {
                if (st[k].kernel_depth == x->depth && same_function(st[k], *x)) {
                    found = k;
                    break;
                }
                if (st[k].kernel_depth < x->depth) break;
            }
            std::optional<std::uint64_t> duration = x->duration_ns;
            if (!duration && x->rettime_ns >= x->calltime_ns && x->calltime_ns != 0)
                duration = x->rettime_ns - x->calltime_ns;
            if (found < st.size()) {
                if (const Orphans* o = waiting(key)) flush_if(key, st, x->depth < o->depth);
                drop_unclosed(st, found + 1);
                Call& c = st.back().call;
                c.exit_seen = true;
                c.duration_ns = duration;
                c.retval = x->retval;
                pop(st);
            } else {
                // The entry is not in the data: keep the return, with what the exit itself says.
                std::size_t keep = st.size();
                while (keep > 0 && st[keep - 1].kernel_depth >= x->depth)
                    --keep;
                // One level above the waiting orphans, over the same frame: their parent (or, at their
                // level, their sibling). Anything else ends them.
                const Orphans* o = waiting(key);
                bool adopts = o && keep == o->base && x->depth + 1 == o->depth;
                bool sibling = o && keep == o->base && x->depth == o->depth;
                if (o && !adopts && !sibling) flush_orphans(key, st);
                drop_unclosed(st, keep);
                Call c;
                c.cpu = ev.cpu;
                c.pid = ev.pid;
                if (auto it = comms->find(ev.pid); it != comms->end()) c.comm = it->second;
                c.irq = ev.irq;
                if (x->function.empty())
                    c.function.push_back('?');  // a bare "}" names nothing
                else if constexpr (steal)
                    c.function = std::move(x->function);
                else
                    c.function = x->function;
                if constexpr (steal)
                    c.module = std::move(x->module);
                else
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
                note(g.first_orphan_return, place(ev, c.function));
                Orphans& w = orphans[key];
                w.pool.push_back(Orphan{std::move(c), {}});
                std::size_t at = w.pool.size() - 1;
                if (adopts) w.pool[at].kids = std::move(w.tops);
                if (!sibling) w.tops.clear();
                w.tops.push_back(at);
                w.depth = x->depth;
                w.base = keep;
                // Nothing can adopt them at depth 0, nor where the open frame is already one level up.
                if (x->depth == 0 || (keep > 0 && st[keep - 1].kernel_depth + 1 == x->depth)) flush_orphans(key, st);
            }
        }
    }

    void finish() {
        std::vector<std::int64_t> keys;  // waiting orphans get their ids in a fixed order: by stack key
        for (const auto& [key, o] : orphans)
            keys.push_back(key);
        std::sort(keys.begin(), keys.end());
        for (std::int64_t key : keys)
            flush_orphans(key, stacks[key]);
        for (auto& [key, st] : stacks)
            drop_unclosed(st, 0);
    }
};

CallStream::CallStream(Sink sink, bool aggregate) : impl_(std::make_unique<Impl>()) {
    impl_->sink = std::move(sink);
    impl_->aggregate = aggregate;
}

CallStream::~CallStream() = default;

void CallStream::add(const Event& ev, std::size_t index, const std::map<int, std::string>& comms) {
    impl_->comms = &comms;
    impl_->add(ev, index);
}

void CallStream::add(Event&& ev, std::size_t index, const std::map<int, std::string>& comms) {
    impl_->comms = &comms;
    impl_->add(ev, index);
}

void CallStream::finish() {
    impl_->finish();
}

const CallGraph& CallStream::summary() const {
    return impl_->g;
}

std::vector<GraphNode> CallStream::graph() const {
    return impl_->paths.rows();
}

std::uint64_t CallStream::calls() const {
    return impl_->next_id - 1;
}

CallGraph build_call_graph(const EventStream& stream) {
    CallStream cs(nullptr, false);
    std::vector<Call> calls;
    cs.impl_->slots = &calls;
    cs.impl_->comms = &stream.comms;
    for (std::size_t idx = 0; idx < stream.events.size(); ++idx)
        cs.impl_->add(stream.events[idx], idx);
    cs.finish();
    CallGraph g = std::move(cs.impl_->g);
    g.calls = std::move(calls);
    return g;
}

std::string describe_place(const std::optional<EventPlace>& p, std::string_view file_name) {
    if (!p) return "";
    std::string out;
    if (p->line && !file_name.empty())
        out.append(file_name).append(":").append(std::to_string(p->line));
    else if (p->ts_ns)
        out.append("cpu ")
            .append(std::to_string(p->cpu))
            .append(" ts ")
            .append(std::to_string(*p->ts_ns))
            .append(" ns");
    else
        out.append("cpu ").append(std::to_string(p->cpu));
    return out.append(": ").append(p->function);
}

std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls) {
    PathTree tree;
    std::vector<std::uint32_t> node(calls.size());
    std::vector<std::uint64_t> child_ns(calls.size(), 0);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& c = calls[i];
        if (c.parent) {
            std::size_t p = *c.parent - 1;
            node[i] = tree.intern(node[p], c.function);
            if (c.duration_ns) child_ns[p] += *c.duration_ns;
        } else {
            node[i] = tree.intern(PathTree::kRoot, c.function);
        }
    }
    for (std::size_t i = 0; i < calls.size(); ++i)
        tree.add(node[i], calls[i].duration_ns, child_ns[i]);
    return tree.rows();
}

}  // namespace nvtrace
