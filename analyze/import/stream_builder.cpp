#include "stream_builder.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "printable_ascii.hpp"

namespace nvtrace::import {

EventBody comment_event(std::string_view text) {
    if (auto ev = event_from_body(text)) return std::move(*ev);
    return Marker{clean(text)};  // trace_printk() output is printed bare (print_graph_comment)
}

StreamBuilder::StreamBuilder(std::string_view file_name, std::string_view text) : file_(file_name) {
    stream_.file_name = std::string(file_name);
    std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    // Capped: a file of empty lines must not reserve gigabytes; past the cap the vector grows as usual.
    stream_.events.reserve(std::min<std::size_t>(lines + lines / 4, std::size_t(1) << 22));
}

StreamBuilder::TaskState& StreamBuilder::task(const LineCtx& ctx) {
    // Same keys as build_call_graph: the task when known, else the CPU.
    std::int64_t key = ctx.pid >= 0 ? ctx.pid : -2 - static_cast<std::int64_t>(ctx.cpu);
    if (!last_task_ || key != last_task_key_) {  // lines of one task come in runs
        last_task_ = &tasks_[key];               // stable: an unordered_map never moves its elements
        last_task_key_ = key;
    }
    return *last_task_;
}

// An entry deeper than the innermost open frame + 1, with an open frame, is an interrupt that arrived
// with no marker (trace-cmd report prints none; the kernel's funcgraph-irqs may be off): it and its
// subtree run in interrupt context, nested in that frame (ftrace-formats.md section 1.6).
bool StreamBuilder::in_irq(const LineCtx& ctx, TaskState& t, int depth, bool entering) {
    if (t.irq_floor >= 0 && depth < t.irq_floor) t.irq_floor = -1;
    if (entering && t.irq_floor < 0 && !t.open.empty() && depth > t.open.back() + 1) t.irq_floor = depth;
    bool marked = irq_marks(ctx.cpu) > 0;
    return ctx.irq || marked || (t.irq_floor >= 0 && depth >= t.irq_floor);
}

namespace {

// True when clean() would return `s` unchanged (printable ASCII).
[[gnu::always_inline]] inline bool plain_ascii(std::string_view s) {
    return printable_ascii<false>(s);
}

}  // namespace

void StreamBuilder::push(const LineCtx& ctx, EventBody body, const FuncNames& names) {
    emplace(ctx, std::move(body), names);
}

template <class Body>
void StreamBuilder::emplace(const LineCtx& ctx, Body&& body, const FuncNames& names) {
    bool irq = ctx.irq || irq_marks(ctx.cpu) > 0;
    if (drain_) {
        pend(ctx, irq, Pending::Kind::other, 0, nullptr, names);
        others_.push_back(
            Event{ctx.ts_ns, ctx.cpu, ctx.pid, irq, EventBody(std::forward<Body>(body)), ctx.ts_known, ctx.line});
        return;
    }
    // Member by member (Event is an aggregate; braces, not emplace_back's parentheses, which clang 14 refuses).
    stream_.events.push_back(
        Event{ctx.ts_ns, ctx.cpu, ctx.pid, irq, EventBody(std::forward<Body>(body)), ctx.ts_known, ctx.line});
}

void StreamBuilder::pend(const LineCtx& ctx, bool irq, Pending::Kind kind, int depth, const GraphBody* b,
                         const FuncNames& names) {
    Pending& p = pending_.add();  // a reused slot: every field is written
    p.ts_ns = ctx.ts_ns;
    p.cpu = ctx.cpu;
    p.pid = ctx.pid;
    p.line = ctx.line;
    p.irq = irq;
    p.ts_known = ctx.ts_known;
    p.kind = kind;
    p.depth = depth;
    p.names = names;
    p.args = b ? b->args : std::string_view();
    p.retaddr = b ? b->retaddr : std::string_view();
    if (b) {
        p.has_duration = b->duration_ns.has_value();
        p.duration_ns = b->duration_ns.value_or(0);
        p.has_retval = b->retval.has_value();
        p.retval = b->retval.value_or(0);
    } else {
        p.has_duration = false;
        p.duration_ns = 0;
        p.has_retval = false;
        p.retval = 0;
    }
    p.overrun = 0;
}

void StreamBuilder::backfill_pid(std::size_t from, int cpu, int pid) {
    // The entries open on the CPU were the task's: its lines on another CPU (it slept in the call and woke there)
    // continue them. They stayed under the CPU's key, so a return there found nothing open and the look-ahead
    // inferred a second copy of the call (fresh user: one nv_ioctl that slept in schedule() became two).
    if (auto it = tasks_.find(-2 - static_cast<std::int64_t>(cpu)); it != tasks_.end()) {
        TaskState moved = std::move(it->second);
        tasks_.erase(it);
        last_task_ = nullptr;  // it may have pointed at the erased state
        if (TaskState& to = tasks_[pid]; to.open.empty()) to = std::move(moved);
    }
    if (drain_) {
        for (std::size_t i = from - base_; i < pending_.size(); ++i)
            if (pending_[i].cpu == cpu && pending_[i].pid < 0) pending_[i].pid = pid;
        return;
    }
    auto& evs = stream_.events;
    for (std::size_t i = from - base_; i < evs.size(); ++i)
        if (evs[i].cpu == cpu && evs[i].pid < 0) evs[i].pid = pid;
}

void StreamBuilder::graph(const LineCtx& ctx, const GraphBody& b) {
    using K = GraphBody::Kind;
    if (!b.unknown_tail.empty()) [[unlikely]]
        count_diagnostic(
            stream_.diagnostics, Diag::graph_unknown_tail,
            example(file_, ctx.line, "a '/* ... */' comment or ' (ret=V)' after the call", b.unknown_tail));
    switch (b.kind) {
        case K::irq_enter:
            ++irq_marks(ctx.cpu);
            return;
        case K::irq_exit: {
            auto& n = irq_marks(ctx.cpu);
            if (n > 0) --n;
            return;
        }
        case K::comment:
            push(ctx, comment_event(b.comment));
            return;
        case K::entry:
        case K::leaf: {
            TaskState& t = task(ctx);
            while (!t.open.empty() && t.open.back() >= b.depth)
                t.open.pop_back();
            bool irq = in_irq(ctx, t, b.depth, true);
            LineCtx c = ctx;
            c.irq = irq;
            // Streaming: names stay views into the text when cleaning would not change them, and the
            // events wait as Pending records.
            if (drain_ && plain_ascii(b.function) && plain_ascii(b.module)) {
                FuncNames names{b.function, b.module, !b.module.empty(), true};
                bool marked = irq || irq_marks(ctx.cpu) > 0;
                if (b.kind == K::entry) {
                    t.open.push_back(b.depth);
                    pend(c, marked, Pending::Kind::entry, b.depth, &b, names);
                    return;
                }
                if (t.irq_floor == b.depth) t.irq_floor = -1;  // an interrupt that was a leaf
                pend(c, marked, Pending::Kind::entry, b.depth, &b, names);
                last_exit_ = size();
                pend(c, marked, Pending::Kind::exit, b.depth, &b, names);
                return;
            }
            FuncNames names;
            // Streaming: names stay views into the text when cleaning would not change them.
            names.viewed = drain_ && plain_ascii(b.function) && plain_ascii(b.module);
            FuncEntry e;
            if (names.viewed) {
                names.function = b.function;
                names.module = b.module;
                names.has_module = !b.module.empty();
            } else {
                e.function = clean(b.function);
                if (!b.module.empty()) e.module = clean(b.module);
            }
            e.depth = b.depth;
            if (!b.args.empty()) e.args = clean(b.args);
            if (!b.retaddr.empty()) e.retaddr = clean(b.retaddr);
            if (b.kind == K::entry) {
                t.open.push_back(b.depth);
                emplace(c, std::move(e), names);
                return;
            }
            FuncExit x;
            if (!names.viewed) {
                x.function = e.function;
                x.module = e.module;
            }
            x.depth = b.depth;
            x.duration_ns = b.duration_ns;
            x.retval = b.retval;
            if (t.irq_floor == b.depth) t.irq_floor = -1;  // an interrupt that was a leaf
            emplace(c, std::move(e), names);
            last_exit_ = size();
            emplace(c, std::move(x), names);
            return;
        }
        case K::exit: {
            TaskState& t = task(ctx);
            while (!t.open.empty() && t.open.back() > b.depth)
                t.open.pop_back();
            if (!t.open.empty() && t.open.back() == b.depth) t.open.pop_back();
            LineCtx c = ctx;
            c.irq = in_irq(ctx, t, b.depth, false);
            if (t.irq_floor == b.depth) t.irq_floor = -1;
            if (drain_ && plain_ascii(b.function)) {
                FuncNames names;
                names.function = b.function;
                names.viewed = true;
                last_exit_ = size();
                pend(c, c.irq || irq_marks(ctx.cpu) > 0, Pending::Kind::exit, b.depth, &b, names);
                return;
            }
            FuncExit x;
            FuncNames names;
            names.viewed = drain_ && plain_ascii(b.function);
            if (names.viewed)
                names.function = b.function;
            else
                x.function = clean(b.function);  // empty for a bare "}": closes the innermost open call
            x.depth = b.depth;
            x.duration_ns = b.duration_ns;
            x.retval = b.retval;
            last_exit_ = size();
            emplace(c, std::move(x), names);
            return;
        }
        case K::none:
        case K::malformed:
            return;
    }
}

void StreamBuilder::lost(const LineCtx& ctx, std::optional<std::uint64_t> count, LostEvents::Kind kind) {
    push(ctx, LostEvents{count, kind});
    if (kind == LostEvents::Kind::buffer_started) return;  // nothing was open on that CPU's data before it
    // Open frames are unreliable after a loss; which tasks ran on that CPU is not known here, so irq
    // detection forgets all of them (build_call_graph keeps its own stacks).
    for (auto& [key, t] : tasks_) {
        t.open.clear();
        t.irq_floor = -1;
    }
}

bool StreamBuilder::overruns(std::uint64_t n) {
    if (!last_exit_) return false;
    if (drain_) {
        Pending& p = pending_[*last_exit_ - base_];
        if (p.kind == Pending::Kind::exit) {
            p.overrun += n;
            return true;
        }
        // An exit kept whole: the others_ before it are those of the pending records before it.
        std::size_t k = 0;
        for (std::size_t i = 0; i < *last_exit_ - base_; ++i)
            if (pending_[i].kind == Pending::Kind::other) ++k;
        std::get<FuncExit>(others_[k].body).overrun += n;
        return true;
    }
    std::get<FuncExit>(stream_.events[*last_exit_ - base_].body).overrun += n;
    return true;
}

void StreamBuilder::malformed(std::uint32_t line, std::string_view expected, std::string_view found) {
    std::string ex;
    last_malformed_line_ = line;
    if (first_malformed_line_ == 0) {
        first_malformed_line_ = line;
        first_malformed_ = example(file_, line, expected, found);
        ex = first_malformed_;
    }
    count_diagnostic(stream_.diagnostics, Diag::malformed_line, ex);
}

void StreamBuilder::inferred_entry(const LineCtx& ctx, std::string_view function, int depth) {
    TaskState& t = task(ctx);
    while (!t.open.empty() && t.open.back() >= depth)
        t.open.pop_back();
    t.open.push_back(depth);
    FuncEntry e;
    e.function = clean(function);
    e.depth = depth;
    e.inferred = true;
    LineCtx c = ctx;
    c.irq = in_irq(ctx, t, depth, false);
    emplace(c, std::move(e), FuncNames{});
}

void StreamBuilder::check_last_line(std::string_view text, std::uint32_t last_line) {
    if (text.empty() || text.back() == '\n' || last_line == 0 || first_malformed_line_ == 0) return;
    if (last_malformed_line_ != last_line) return;
    count_diagnostic(stream_.diagnostics, Diag::truncated_last_line,
                     fmt::format("{}:{}: the last line ends without a newline and cannot be read", file_, last_line));
}

void StreamBuilder::header(std::string_view h) {
    if (auto e = parse_entries_header(h)) {
        stream_.entries_in_buffer = e->in_buffer;
        stream_.entries_written = e->written;
    }
}

void StreamBuilder::comm(int pid, std::string_view comm) {
    // "<...>" is ftrace's placeholder for a pid missing from saved_cmdlines (kernel/trace/trace.c,
    // __trace_find_cmdline), not a name: it names no task, and, longer than "cat", it must not replace one.
    if (pid < 0 || comm == "<...>") return;
    // Nearly every line of a funcgraph-proc trace names its task, and consecutive lines mostly name the same
    // one: the map is looked up only when the pid changes or a longer name comes (a truncated one grew).
    if (pid == last_comm_pid_ && comm.size() <= last_comm_size_) return;
    auto [it, fresh] = stream_.comms.try_emplace(pid);
    if (fresh || it->second.size() < comm.size()) {
        it->second = clean(comm);
        ++comms_written_;
    }
    last_comm_pid_ = pid;
    last_comm_size_ = it->second.size();
}

void StreamBuilder::set_drain(Drain sink, std::function<void(const char*)> consumed) {
    drain_ = std::move(sink);
    consumed_ = std::move(consumed);
    stream_.events = {};
    pending_.reset();
    others_.clear();
    entry_ev_.body = FuncEntry{};
    exit_ev_.body = FuncExit{};
}

void StreamBuilder::drain(std::size_t upto) {
    if (!drain_) return;
    if (last_exit_) upto = std::min(upto, *last_exit_);
    if (upto <= base_) return;
    std::size_t n = std::min(upto - base_, pending_.size());
    for (std::size_t i = 0; i < n; ++i) {
        const Pending& p = pending_[i];
        if (p.ts_ns < drained_ts_ && first_unsorted_line_ == 0) first_unsorted_line_ = p.line ? p.line : 1;
        drained_ts_ = p.ts_ns;
        if (p.kind == Pending::Kind::other) {
            Event& ev = others_.front();
            ev.pid = p.pid;  // backfill_pid may have set it
            drain_(std::move(ev), base_ + i, p.names);
            others_.pop_front();
            continue;
        }
        // Every field set: the sink may have moved from the event last time.
        Event& ev = p.kind == Pending::Kind::entry ? entry_ev_ : exit_ev_;
        ev.ts_ns = p.ts_ns;
        ev.cpu = p.cpu;
        ev.pid = p.pid;
        ev.irq = p.irq;
        ev.ts_known = p.ts_known;
        ev.line = p.line;
        if (p.kind == Pending::Kind::entry) {
            auto& e = std::get<FuncEntry>(ev.body);
            e.func_addr = 0;
            e.function.clear();
            e.module.reset();
            e.depth = p.depth;
            e.args.clear();
            e.retaddr.clear();
            if (!p.args.empty()) append_utf8_clean(e.args, p.args);
            if (!p.retaddr.empty()) append_utf8_clean(e.retaddr, p.retaddr);
        } else {
            auto& x = std::get<FuncExit>(ev.body);
            x.func_addr = 0;
            x.function.clear();
            x.module.reset();
            x.depth = p.depth;
            x.calltime_ns = 0;
            x.rettime_ns = 0;
            if (p.has_duration)
                x.duration_ns = p.duration_ns;
            else
                x.duration_ns.reset();
            x.overrun = p.overrun;
            if (p.has_retval)
                x.retval = p.retval;
            else
                x.retval.reset();
        }
        drain_(std::move(ev), base_ + i, p.names);
    }
    pending_.erase_front(n);
    base_ += n;
}

Result<EventStream> StreamBuilder::finish(std::string_view what) {
    if (drain_ && size() > 0) {
        last_exit_.reset();
        drain(size());
        stream_.events = {};  // all handed over: the buffers go (the caller builds its report next)
        pending_.reset();
        others_ = {};
        if (first_unsorted_line_)
            count_diagnostic(stream_.diagnostics, Diag::unsorted_timestamps,
                             fmt::format("{}:{}: timestamp goes back; streamed in file order, not sorted", file_,
                                         first_unsorted_line_));
        return std::move(stream_);
    }
    if (stream_.events.empty()) {
        if (!first_malformed_.empty())
            return fail(Error::usage(fmt::format("{} (nothing usable in it)", first_malformed_)));
        return fail(Error::usage(fmt::format("{}: no {} found", file_, what)));
    }
    auto& evs = stream_.events;
    bool sorted =
        std::is_sorted(evs.begin(), evs.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    if (!sorted) {
        std::uint32_t first_line = 0;
        for (std::size_t i = 1; i < evs.size() && first_line == 0; ++i)
            if (evs[i].ts_ns < evs[i - 1].ts_ns) first_line = evs[i].line;
        std::stable_sort(evs.begin(), evs.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
        count_diagnostic(stream_.diagnostics, Diag::unsorted_timestamps,
                         fmt::format("{}:{}: timestamp goes back; events were sorted by time", file_, first_line));
    }
    return std::move(stream_);
}

}  // namespace nvtrace::import
