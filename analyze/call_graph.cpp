#include "nvtrace/call_graph.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "nvtrace/call_stream.hpp"
#include "path_tree.hpp"

namespace nvtrace {

namespace {

// Shadow stacks are per task; sources without a task column (plain function_graph text) are per CPU.
std::int64_t stack_key(const Event& ev) {
    return ev.pid >= 0 ? ev.pid : -2 - static_cast<std::int64_t>(ev.cpu);
}

}  // namespace

struct CallStream::Impl {
    struct Frame {
        Call call;
        int kernel_depth = 0;
        std::uint32_t line = 0;  // of the entry
        std::uint64_t func_addr = 0;
        std::uint64_t child_ns = 0;  // known durations of the direct children handed over
        std::uint32_t node = detail::PathTree::kRoot;
    };
    // A shadow stack whose popped frames stay allocated: the next entry at that depth reuses the strings
    // of the call that was there (no allocation per call once a sink has only read the call it was given).
    class Stack {
    public:
        std::size_t size() const { return n_; }
        bool empty() const { return n_ == 0; }
        Frame& back() { return v_[n_ - 1]; }
        const Frame& back() const { return v_[n_ - 1]; }
        Frame& operator[](std::size_t i) { return v_[i]; }
        const Frame& operator[](std::size_t i) const { return v_[i]; }
        // The slot above the top, not pushed yet (valid until the next push()).
        Frame& spare() {
            if (n_ == v_.size()) v_.emplace_back();
            return v_[n_];
        }
        void push() { ++n_; }
        void pop_back() { --n_; }

    private:
        std::vector<Frame> v_;
        std::size_t n_ = 0;
    };

    Sink sink;
    std::vector<Call>* slots = nullptr;  // build_call_graph: calls land at index id - 1
    bool aggregate = true;
    CallGraph g;
    std::uint64_t next_id = 1;
    std::unordered_map<std::int64_t, Stack> stacks;
    Stack* last_stack = nullptr;  // stacks[last_key]: events of one task come in runs
    std::int64_t last_key = 0;
    Stack& stack(std::int64_t key) {
        if (!last_stack || key != last_key) {
            last_stack = &stacks[key];  // stable: an unordered_map never moves its elements
            last_key = key;
        }
        return *last_stack;
    }
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
    static constexpr std::int64_t kNoKey = std::numeric_limits<std::int64_t>::min();
    std::int64_t after_inferred_ = kNoKey;  // the stack whose last event was an inferred entry
    detail::PathTree paths;
    const std::map<int, std::string>* comms = nullptr;
    // The comm of the last pid looked up in `comms` (a map node: stable, and its text updated in place when
    // a longer name comes): calls of one task come in runs, so most calls skip the map's tree walk. Valid
    // because the comm maps only grow (no entry is erased while events are read).
    const std::map<int, std::string>* comm_map = nullptr;
    int comm_pid = 0;
    const std::string* comm_of_pid = nullptr;
    const std::string* comm(int pid) {
        if (comm_of_pid && pid == comm_pid && comm_map == comms) return comm_of_pid;
        auto it = comms->find(pid);
        if (it == comms->end()) return nullptr;  // not cached: the pid may be named later
        comm_map = comms;
        comm_pid = pid;
        comm_of_pid = &it->second;
        return comm_of_pid;
    }

    bool same_function(const Frame& fr, const FuncExit& x, std::string_view function) const {
        if (fr.func_addr != 0 && x.func_addr != 0) return fr.func_addr == x.func_addr;
        return function.empty() || detail::same_name(fr.call.function, function);  // a bare "}" closes whatever is open
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
    void pop(Stack& st) {
        Frame& f = st.back();
        st.pop_back();  // f stays allocated above the top
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
    static EventPlace place(const Event& ev, std::string_view function) {
        return {ev.line, ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt, ev.cpu, std::string(function)};
    }
    void drop_unclosed(Stack& st, std::size_t keep) {
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
    void flush_orphans(std::int64_t key, Stack& st) {
        auto it = orphans.find(key);
        if (it == orphans.end() || it->second.tops.empty()) return;
        Orphans o = std::move(it->second);
        orphans.erase(it);
        Frame* under = o.base > 0 ? &st[o.base - 1] : nullptr;
        std::vector<std::uint32_t> node(o.pool.size(), detail::PathTree::kRoot);
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
                            static_cast<int>(o.base), under ? under->node : detail::PathTree::kRoot});
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
    void flush_if(std::int64_t key, Stack& st, bool cond) {
        if (cond) flush_orphans(key, st);
    }
    const Orphans* waiting(std::int64_t key) const {
        if (orphans.empty()) return nullptr;  // the usual case: no hashing (a division) per event
        auto it = orphans.find(key);
        return it == orphans.end() || it->second.tops.empty() ? nullptr : &it->second;
    }

    // Sets every field of `c` (a reused call: its strings keep their buffers) for an entry on top of `st`.
    void init_call(Call& c, const Event& ev, const FuncEntry& e, const Stack& st, std::string_view function,
                   const std::string_view* module) {
        c.id = next_id++;
        if (!st.empty())
            c.parent = st.back().call.id;
        else
            c.parent.reset();
        c.cpu = ev.cpu;
        c.pid = ev.pid;
        if (const std::string* name = comm(ev.pid))
            c.comm.assign(*name);
        else
            c.comm.clear();
        c.depth = static_cast<int>(st.size());
        c.function.assign(function);
        if (!module)
            c.module.reset();
        else if (c.module)
            c.module->assign(*module);
        else
            c.module.emplace(*module);
        if (ev.ts_known)
            c.entry_ns = ev.ts_ns;
        else
            c.entry_ns.reset();
        c.duration_ns.reset();
        c.retval.reset();
        c.kernel_depth = e.depth;
        if (e.args.empty())
            c.args.reset();
        else
            c.args = e.args;
        if (e.retaddr.empty())
            c.retaddr.reset();
        else
            c.retaddr = e.retaddr;
        c.irq = ev.irq;
        c.entry_seen = true;
        c.exit_seen = false;
        c.phase.reset();
        if (slots) slots->emplace_back();
    }
    std::uint32_t node_for(const Stack& st, std::string_view function) {
        if (!aggregate) return detail::PathTree::kRoot;
        return paths.intern(st.empty() ? detail::PathTree::kRoot : st.back().node, function);
    }

    // `function` and `module` (null: none) stand for the FuncEntry's / FuncExit's own (ignored for other
    // events). A pointer, not a std::optional: building one per event stalls on its store and reload.
    void add(const Event& ev, std::string_view function, const std::string_view* module) {
        if (auto* e = std::get_if<FuncEntry>(&ev.body)) {
            std::int64_t key = stack_key(ev);
            auto& st = stack(key);
            // An entry as deep as the waiting orphans is their sibling; a shallower one ends their parent, unless
            // it is that parent: an inferred entry one level up over the same frame (FuncEntry::inferred).
            bool adopts_waiting = false;
            if (const Orphans* o = waiting(key)) {
                std::size_t open_below = st.size();
                while (open_below > 0 && st[open_below - 1].kernel_depth >= e->depth)
                    --open_below;
                // Inferred entries come outermost first: the frames opened since the orphans began waiting
                // must all be inferred ones (entry not seen) for this one to be part of the same chain.
                bool over_inferred = open_below >= o->base;
                for (std::size_t k = o->base; over_inferred && k < open_below; ++k)
                    over_inferred = !st[k].call.entry_seen;
                bool chain = e->inferred && e->depth < o->depth && over_inferred;
                adopts_waiting = chain && e->depth + 1 == o->depth;
                flush_if(key, st, e->depth < o->depth && !chain);
            }
            std::size_t keep = st.size();
            while (keep > 0 && st[keep - 1].kernel_depth >= e->depth)
                --keep;
            drop_unclosed(st, keep);
            int expected_depth = st.empty() ? 0 : st.back().kernel_depth + 1;
            // Deeper than expected: parent entries are missing, unless an interrupt nested into the open call
            // (text without irq markers shows it so), or the data starts in the middle of a tree.
            // Frames this reader inferred (FuncEntry::inferred) stand for calls outside the data: an entry
            // on them alone still starts mid-tree; the inferred entries themselves are not counted.
            // (The reader puts them right before the entry they were inferred for.)
            bool on_inferred = after_inferred_ == key;
            after_inferred_ = e->inferred ? key : kNoKey;
            if (e->inferred) {
            } else if (on_inferred && e->depth > 0) {
                ++g.starts_mid_tree;
                note(g.first_starts_mid_tree, place(ev, function));
            } else if (e->depth > expected_depth) {
                if (st.empty()) {
                    ++g.starts_mid_tree;
                    note(g.first_starts_mid_tree, place(ev, function));
                } else if (!ev.irq) {
                    ++g.depth_gaps;
                    note(g.first_depth_gap, place(ev, function));
                }
            }
            Frame& f = st.spare();
            if (e->inferred && function.empty()) function = "?";  // a bare "}" named nothing
            init_call(f.call, ev, *e, st, function, module);
            f.kernel_depth = e->depth;
            f.line = ev.line;
            f.func_addr = e->func_addr;
            f.child_ns = 0;
            f.node = node_for(st, function);
            if (e->inferred) {
                f.call.entry_seen = false;
                f.call.entry_ns.reset();
                f.line = 0;
            }
            st.push();
            if (adopts_waiting) {
                orphans[key].base = st.size();  // the waiting orphans return into this frame
                flush_orphans(key, st);
            }
        } else if (auto* x = std::get_if<FuncExit>(&ev.body)) {
            std::int64_t key = stack_key(ev);
            auto& st = stack(key);
            g.graph_overruns += x->overrun;
            std::size_t found = st.size();
            for (std::size_t k = st.size(); k-- > 0;) {
                if (st[k].kernel_depth == x->depth && same_function(st[k], *x, function)) {
                    found = k;
                    break;
                }
                if (st[k].kernel_depth < x->depth) break;
            }
            // A flag and a value, not a std::optional built on the stack (its store and reload stall).
            bool has_duration = x->duration_ns.has_value();
            std::uint64_t duration = x->duration_ns.value_or(0);
            if (!has_duration && x->rettime_ns >= x->calltime_ns && x->calltime_ns != 0) {
                duration = x->rettime_ns - x->calltime_ns;
                has_duration = true;
            }
            if (found < st.size()) {
                if (const Orphans* o = waiting(key)) flush_if(key, st, x->depth < o->depth);
                drop_unclosed(st, found + 1);
                Call& c = st.back().call;
                c.exit_seen = true;
                if (has_duration)
                    c.duration_ns = duration;
                else
                    c.duration_ns.reset();
                c.retval = x->retval;
                if (!c.entry_seen) {  // an inferred entry: a return whose entry is not in the data
                    if (ev.ts_known && has_duration && ev.ts_ns >= duration) c.entry_ns = ev.ts_ns - duration;
                    ++g.orphan_returns;
                    note(g.first_orphan_return, place(ev, c.function));
                }
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
                if (const std::string* name = comm(ev.pid)) c.comm = *name;
                c.irq = ev.irq;
                if (function.empty())
                    c.function.push_back('?');  // a bare "}" names nothing
                else
                    c.function = function;
                if (module) c.module = std::string(*module);
                c.entry_seen = false;
                c.exit_seen = true;
                c.kernel_depth = x->depth;
                if (x->calltime_ns != 0)
                    c.entry_ns = x->calltime_ns;
                else if (ev.ts_known && has_duration && ev.ts_ns >= duration)
                    c.entry_ns = ev.ts_ns - duration;
                if (has_duration) c.duration_ns = duration;
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

CallStream::CallStream(std::vector<Call>& by_id) : impl_(std::make_unique<Impl>()) {
    impl_->slots = &by_id;
}

CallStream::~CallStream() = default;

std::optional<std::uint64_t> CallStream::open_call(const Event& ev) const {
    auto it = impl_->stacks.find(stack_key(ev));
    if (it == impl_->stacks.end() || it->second.empty()) return std::nullopt;
    return it->second.back().call.id;
}

bool CallStream::may_root_in(int pid, std::uint64_t lo, std::optional<std::uint64_t> hi) const {
    auto in = [&](const std::optional<std::uint64_t>& e) { return !e || (*e >= lo && (!hi || *e <= *hi)); };
    if (auto it = impl_->stacks.find(pid); it != impl_->stacks.end() && !it->second.empty())
        if (in(it->second[0].call.entry_ns)) return true;
    if (auto it = impl_->orphans.find(pid); it != impl_->orphans.end() && it->second.base == 0)
        for (std::size_t t : it->second.tops)
            if (in(it->second.pool[t].call.entry_ns)) return true;
    return false;
}

namespace {

// The names of an event: its FuncEntry's or FuncExit's own (empty for other events).
std::pair<std::string_view, std::optional<std::string_view>> names_of(const Event& ev) {
    const std::string* function = nullptr;
    const std::optional<std::string>* module = nullptr;
    if (const auto* e = std::get_if<FuncEntry>(&ev.body)) {
        function = &e->function;
        module = &e->module;
    } else if (const auto* x = std::get_if<FuncExit>(&ev.body)) {
        function = &x->function;
        module = &x->module;
    }
    if (!function) return {};
    std::optional<std::string_view> m;
    if (*module) m = **module;
    return {*function, m};
}

}  // namespace

void CallStream::add(const Event& ev, const std::map<int, std::string>& comms) {
    impl_->comms = &comms;
    auto [function, module] = names_of(ev);
    impl_->add(ev, function, module ? &*module : nullptr);
}

void CallStream::add(const Event& ev, const std::map<int, std::string>& comms, std::string_view function,
                     const std::string_view* module) {
    impl_->comms = &comms;
    impl_->add(ev, function, module);
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

GraphStats CallStream::graph_stats() const {
    return impl_->paths.stats();
}

std::uint64_t CallStream::calls() const {
    return impl_->next_id - 1;
}

CallGraph build_call_graph(const EventStream& stream) {
    std::vector<Call> calls;
    CallStream cs(calls);
    cs.impl_->aggregate = false;
    cs.impl_->comms = &stream.comms;
    for (const Event& ev : stream.events) {
        auto [function, module] = names_of(ev);
        cs.impl_->add(ev, function, module ? &*module : nullptr);
    }
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

}  // namespace nvtrace
