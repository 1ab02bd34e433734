#include "nvtrace/report.hpp"
#include "nvtrace/report_builder.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "api_calls.hpp"
#include "klog/klog.hpp"
#include "kmsg_seq.hpp"
#include "nvtrace/call_graph.hpp"
#include "nvtrace/ioctl.hpp"
#include "phases.hpp"
#include "slot_ring.hpp"

namespace nvtrace {

namespace {

void add_diag(Completeness& c, Diag d, std::uint64_t count, std::string example) {
    if (count == 0) return;
    c.diagnostics.push_back(make_diagnostic(d, count, std::move(example)));
}

bool is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// "name=" at the start of `tok`: the length of name, 0 otherwise.
std::size_t key_length(std::string_view tok) {
    std::size_t i = 0;
    while (i < tok.size() && is_ident(tok[i]))
        ++i;
    return i > 0 && i < tok.size() && tok[i] == '=' ? i : 0;
}

// "51,128 events lost on CPU 4", "51,200 events lost (CPU 4: 51,128, CPU 5: 72); 2 loss marks without a count
// (CPU 1)": the kernel's loss marks with the CPU each named.
std::string lost_events_reason(const std::vector<Gap>& gaps) {
    std::vector<std::pair<int, std::uint64_t>> counted;  // cpu -> events, in first-seen order
    std::vector<int> uncounted_cpus;
    std::uint64_t total = 0, uncounted = 0;
    for (const Gap& g : gaps) {
        if (g.kind != "lost_events") continue;
        if (!g.count) {
            ++uncounted;
            if (std::find(uncounted_cpus.begin(), uncounted_cpus.end(), g.cpu) == uncounted_cpus.end())
                uncounted_cpus.push_back(g.cpu);
            continue;
        }
        total += *g.count;
        auto it = std::find_if(counted.begin(), counted.end(), [&](const auto& p) { return p.first == g.cpu; });
        if (it == counted.end())
            counted.emplace_back(g.cpu, *g.count);
        else
            it->second += *g.count;
    }
    auto cpu_name = [](int cpu) { return cpu < 0 ? std::string("an unknown CPU") : fmt::format("CPU {}", cpu); };
    std::string s;
    if (!counted.empty()) {
        if (counted.size() == 1) {
            s = fmt::format("{} events lost on {}", thousands(total), cpu_name(counted[0].first));
        } else {
            std::vector<std::string> parts;
            for (const auto& [cpu, n] : counted)
                parts.push_back(fmt::format("{}: {}", cpu_name(cpu), thousands(n)));
            s = fmt::format("{} events lost ({})", thousands(total), fmt::join(parts, ", "));
        }
    }
    if (uncounted) {
        std::vector<std::string> names;
        for (int cpu : uncounted_cpus)
            names.push_back(cpu_name(cpu));
        if (!s.empty()) s += "; ";
        s += fmt::format("{} loss mark{} without a count ({})", uncounted, uncounted == 1 ? "" : "s",
                         fmt::join(names, ", "));
    }
    return s;
}

}  // namespace

std::string thousands(std::uint64_t n) {
    std::string d = std::to_string(n), out;
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (i && (d.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(d[i]);
    }
    return out;
}

std::string completeness_line(const Completeness& c) {
    if (c.complete) return "complete: yes";
    if (c.reasons.empty()) return "complete: no";
    return fmt::format("complete: no: {}", fmt::join(c.reasons, "; "));
}

std::optional<std::map<std::string, std::string>> parse_event_fields(std::string_view text) {
    auto next_token = [&](std::string_view& rest) {
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
            rest.remove_prefix(1);
        std::size_t end = 0;
        while (end < rest.size() && rest[end] != ' ' && rest[end] != '\t')
            ++end;
        std::string_view tok = rest.substr(0, end);
        rest.remove_prefix(end);
        return tok;
    };
    std::string_view rest = text;
    std::string_view tok = next_token(rest);
    if (key_length(tok) == 0) return std::nullopt;
    std::map<std::string, std::string> fields;
    std::string* value = nullptr;
    for (; !tok.empty(); tok = next_token(rest)) {
        if (std::size_t k = key_length(tok)) {
            value = &fields[std::string(tok.substr(0, k))];
            value->assign(tok.substr(k + 1));
            continue;
        }
        bool word = false;
        for (char c : tok)
            word = word || is_ident(c);
        if (!word) continue;  // "==>" between sched_switch's prev and next halves
        if (!value->empty()) value->push_back(' ');
        value->append(tok);
    }
    return fields;
}

// ---- ReportBuilder ------------------------------------------------------------------------------------------

// With a call sink: link_ioctl_calls' rule applied as the ioctls and calls go by (a root call of a task belongs to
// the latest ioctl of that task entered at or before it, unless that ioctl returned before it), and the calls that
// attach_kernel_log_by_time may choose for a /dev/kmsg line (the closed ones overlapping its window).
struct ReportBuilder::Linker {
    struct Root {
        std::uint64_t entry_ns, id;
    };
    SlotRing<IoctlRecord> held;  // the ioctls handed over by the collector, in enter order
    std::unordered_map<int, std::deque<std::uint64_t>> enters;  // ioctl entry times per pid, not handed on yet
    std::unordered_map<int, std::vector<Root>> roots;           // root calls that may still join an ioctl
    std::vector<std::pair<std::uint64_t, std::uint64_t>> kmsg;  // merged [lo, hi] windows of the /dev/kmsg lines
    std::vector<Call> near_kmsg;                                // closed calls overlapping one of them
    std::optional<std::uint64_t> now;                           // ts_ns of the last event added

    Linker(const EventStream& side) {
        const bool usable = side.kmsg_clock && side.kmsg_clock->offset_ns;
        for (const auto& raw : usable ? side.kmsg : std::vector<KmsgRecordText>{}) {
            auto rec = parse_kmsg_record(raw.text);
            if (!rec) continue;
            // attach_kernel_log_by_time's window: the record's 1 us resolution and the clock's uncertainty.
            std::int64_t t = static_cast<std::int64_t>(rec->ts_us * 1000) + *side.kmsg_clock->offset_ns;
            auto unc = static_cast<std::int64_t>(side.kmsg_clock->uncertainty_ns);
            if (t + 999 + unc < 0) continue;
            kmsg.emplace_back(static_cast<std::uint64_t>(std::max<std::int64_t>(t - unc, 0)),
                              static_cast<std::uint64_t>(t + 999 + unc));
        }
        std::sort(kmsg.begin(), kmsg.end());
        std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
        for (const auto& w : kmsg)
            if (!merged.empty() && w.first <= merged.back().second)
                merged.back().second = std::max(merged.back().second, w.second);
            else
                merged.push_back(w);
        kmsg = std::move(merged);
    }

    void call(const Call& c) {
        if (!c.parent && c.entry_ns)
            if (auto it = enters.find(c.pid);
                it != enters.end() && !it->second.empty() && it->second.front() <= *c.entry_ns)
                roots[c.pid].push_back({*c.entry_ns, c.id});
        if (kmsg.empty() || !c.entry_ns || !c.duration_ns) return;
        const std::uint64_t b = *c.entry_ns, e = b + *c.duration_ns;
        auto w =
            std::lower_bound(kmsg.begin(), kmsg.end(), b, [](const auto& x, std::uint64_t v) { return x.second < v; });
        if (w == kmsg.end() || w->first > e) return;
        Call& k = near_kmsg.emplace_back();
        k.id = c.id;
        k.parent = c.parent;
        k.entry_ns = c.entry_ns;
        k.duration_ns = c.duration_ns;
    }

    // Hands on the oldest ioctls no later root call can join (all of them `at_end`).
    void release(const CallStream& calls, const std::function<void(IoctlRecord&&)>& sink, bool at_end) {
        while (!held.empty()) {
            IoctlRecord& r = held.front();
            // Without a time (strace without timestamps) the ioctl sorts first, as the stream's order has it.
            const std::uint64_t enter = r.enter_ns.value_or(0);
            auto& en = enters[r.pid];
            while (!en.empty() && en.front() <= enter)
                en.pop_front();
            // Roots entered at or after the pid's next ioctl are that one's.
            std::optional<std::uint64_t> next = en.empty() ? std::nullopt : std::optional(en.front());
            std::optional<std::uint64_t> hi = r.exit_ns;
            if (next && *next > 0 && (!hi || *next - 1 < *hi)) hi = *next - 1;
            if (!at_end) {
                if (r.exit_ns ? !now || *now <= *r.exit_ns : !next) break;
                if (calls.may_root_in(r.pid, enter, hi)) break;
            }
            if (auto it = roots.find(r.pid); it != roots.end()) {
                std::vector<Root>& v = it->second;
                std::vector<std::uint64_t> ids;
                std::erase_if(v, [&](const Root& x) {
                    if (x.entry_ns < enter) return true;  // before this ioctl: no ioctl's
                    if (hi && x.entry_ns > *hi) return false;
                    ids.push_back(x.id);
                    return true;
                });
                std::sort(ids.begin(), ids.end());
                if (!ids.empty()) r.call = ids.front();
                r.calls = std::move(ids);
                if (v.empty()) roots.erase(it);
            }
            if (en.empty()) {
                enters.erase(r.pid);
                roots.erase(r.pid);  // no ioctl of this pid is left for them
            }
            sink(std::move(r));
            held.pop_front();
        }
    }
};

ReportBuilder::ReportBuilder(const EventStream& side, Sinks sinks)
    : side_(side),
      sinks_(std::move(sinks)),
      fd_paths_(fd_paths_of(side)),
      ioctls_(
          side.comms, fd_paths_, [this](IoctlRecord&& io) { take_ioctl(std::move(io)); },
          fd_path_unknown_default(side)),
      phases_(std::make_unique<detail::Phases>()),
      api_(std::make_unique<detail::ApiCalls>(side.uprobes)) {
    if (sinks_.ioctl)  // the index an ioctl has in report.ioctls is the order the sink gets them
        sinks_.ioctl = [this, sink = std::move(sinks_.ioctl)](IoctlRecord&& io) {
            if (!api_->empty()) api_->ioctl(ioctls_handed_, io);
            ++ioctls_handed_;
            sink(std::move(io));
        };
    if (sinks_.call) {
        calls_ = std::make_unique<CallStream>([this](Call&& c) { take_call(std::move(c)); });
        linker_ = std::make_unique<Linker>(side);
    } else {
        calls_ = std::make_unique<CallStream>(calls_by_id_);
    }
}

ReportBuilder::~ReportBuilder() = default;

std::uint64_t ReportBuilder::calls() const {
    return calls_->calls();
}

std::vector<FdPath> ReportBuilder::fd_paths_of(const EventStream& side) {
    return nvtrace::fd_paths_of(side);  // nvtrace/ioctl.hpp: lifetimes, else /proc samples
}

std::optional<std::string> ReportBuilder::phase_at(int pid, std::uint64_t ts) const {
    if (!phases_->empty()) return phases_->at(ts);
    if (!api_->empty()) return api_->top_function(pid, ts);
    return std::nullopt;
}

void ReportBuilder::take_ioctl(IoctlRecord&& io) {
    ioctl_stats_.add(io);
    if ((!phases_->empty() || !api_->empty()) && io.enter_ns) io.phase = phase_at(io.pid, *io.enter_ns);
    if (linker_) {
        linker_->held.push_back(std::move(io));
    } else {
        if (!api_->empty()) api_->ioctl(r_.ioctls.size(), io);
        r_.ioctls.push_back(std::move(io));
    }
}

void ReportBuilder::take_call(Call&& c) {
    if (c.entry_ns) {
        if (!phases_->empty() || !api_->empty()) c.phase = phase_at(c.pid, *c.entry_ns);
        if (!c.parent && !api_->empty()) api_->call(c.id, c.pid, *c.entry_ns);
    }
    linker_->call(c);
    sinks_.call(std::move(c));
}

void ReportBuilder::flush_event() {
    if (!pending_event_) return;
    if (sinks_.event)
        sinks_.event(std::move(*pending_event_));
    else
        r_.events.push_back(std::move(*pending_event_));
    pending_event_.reset();
}

void ReportBuilder::add_other(const Event& ev, const OtherEvent& o) {
    bool is_stack = o.system == "ftrace" && (o.name == "kernel_stack" || o.name == "user_stack");
    std::vector<std::string> frames;
    if (is_stack) {
        std::size_t from = 0;
        while (from <= o.fields.size() && !o.fields.empty()) {
            std::size_t nl = o.fields.find('\n', from);
            frames.push_back(o.fields.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
            if (nl == std::string::npos) break;
            from = nl + 1;
        }
        // The stacktrace option records the stack right after the event it was taken for, on the same CPU
        // and task (kernel/trace/trace.c, __ftrace_trace_stack): it belongs to that event.
        if (pending_event_) {
            EventRecord& prev = *pending_event_;
            auto& slot = o.name == "kernel_stack" ? prev.stack : prev.user_stack;
            if (prev.cpu == ev.cpu && prev.pid == ev.pid && slot.empty() && !frames.empty() &&
                (!prev.ts_ns || !ev.ts_known || *prev.ts_ns <= ev.ts_ns)) {
                slot = std::move(frames);
                return;
            }
        }
    }
    if (ev.ts_known)
        if (ApiCall* a = api_->add(ev, o, side_.comms, side_.file_name))
            a->phase = !phases_->empty() ? phases_->at(a->entry_ns)
                       : a->parent       ? api_->top_function(a->pid, a->entry_ns)
                                         : std::optional(a->function);
    flush_event();
    EventRecord& e = pending_event_.emplace();
    e.name = o.system.empty() ? o.name : o.system + ":" + o.name;
    if (ev.ts_known) e.ts_ns = ev.ts_ns;
    e.cpu = ev.cpu;
    e.pid = ev.pid;
    if (auto it = side_.comms.find(ev.pid); ev.pid >= 0 && it != side_.comms.end()) e.comm = it->second;
    if (ev.line) e.line = ev.line;
    if (is_stack) {
        (o.name == "kernel_stack" ? e.stack : e.user_stack) = std::move(frames);
    } else {
        e.text = o.fields;
        e.fields = parse_event_fields(o.fields);
    }
}

void ReportBuilder::note_time(const Event& ev) {
    if (!ev.ts_known) return;
    last_ns_ = ev.ts_ns;
    if (ev.cpu < 0) return;
    const auto cpu = static_cast<std::size_t>(ev.cpu);
    if (cpu >= cpu_last_ns_.size()) cpu_last_ns_.resize(cpu + 1, 0);
    cpu_last_ns_[cpu] = ev.ts_ns;
}

void ReportBuilder::add(const Event& ev, std::string_view function, const std::string_view* module) {
    note_time(ev);
    calls_->add(ev, side_.comms, function, module);
    if (linker_) {
        if (ev.ts_known) linker_->now = ev.ts_ns;
        if (!linker_->held.empty()) linker_->release(*calls_, sinks_.ioctl, false);
    }
}

void ReportBuilder::add(const Event& ev) {
    Completeness& cm = r_.completeness;
    if (!std::holds_alternative<LostEvents>(ev.body)) note_time(ev);
    if (std::holds_alternative<FuncEntry>(ev.body) || std::holds_alternative<FuncExit>(ev.body)) {
        calls_->add(ev, side_.comms);
    } else if (const auto* l = std::get_if<LostEvents>(&ev.body)) {
        Gap gap;
        gap.kind = l->kind == LostEvents::Kind::elided           ? "elided"
                   : l->kind == LostEvents::Kind::buffer_started ? "buffer_started"
                                                                 : "lost_events";
        gap.cpu = ev.cpu;
        gap.count = l->count;
        if (ev.ts_known) gap.ts_ns = ev.ts_ns;
        if (ev.line) gap.line = ev.line;
        cm.gaps.push_back(std::move(gap));
        // Where the lost events may lie: after the CPU's last event (all of it for buffer_started: the CPU's
        // older events were overwritten; after the last event of any CPU for a mark without a CPU).
        const std::uint64_t since = l->kind == LostEvents::Kind::buffer_started ? 0
                                    : ev.cpu < 0                                ? last_ns_
                                    : static_cast<std::size_t>(ev.cpu) < cpu_last_ns_.size()
                                        ? cpu_last_ns_[static_cast<std::size_t>(ev.cpu)]
                                        : 0;
        ioctls_.loss(since, ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt);
        if (l->kind == LostEvents::Kind::elided) return;
        if (l->kind == LostEvents::Kind::buffer_started) return;
        if (l->count)
            cm.lost_events += *l->count;
        else
            ++unknown_loss_marks_;
        if (first_loss_.empty())
            first_loss_ = ev.line && !side_.file_name.empty() ? fmt::format("{}:{}", side_.file_name, ev.line)
                                                              : fmt::format("cpu {} before ts {} ns", ev.cpu, ev.ts_ns);
    } else if (const auto* m = std::get_if<Marker>(&ev.body)) {
        phases_->marker(ev.ts_ns, m->text);
        // The preload library's per-ioctl lines are folded into `ioctls`, not listed again.
        if (m->text.rfind("nvtrace-ioctl ", 0) == 0 || m->text.rfind("nvtrace-preload ", 0) == 0) {
            ioctls_.add(ev);
            return;
        }
        MarkerEntry me{ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt, ev.pid, m->text};
        if (sinks_.marker)
            sinks_.marker(std::move(me));
        else
            r_.markers.push_back(std::move(me));
    } else if (std::holds_alternative<IoctlEnter>(ev.body) || std::holds_alternative<IoctlExit>(ev.body)) {
        if (linker_ && std::holds_alternative<IoctlEnter>(ev.body)) linker_->enters[ev.pid].push_back(ev.ts_ns);
        ioctls_.add(ev);
    } else if (const auto* o = std::get_if<OtherEvent>(&ev.body)) {
        add_other(ev, *o);
    } else if (const auto* con = std::get_if<ConsoleLine>(&ev.body)) {
        KernelLogMessage msg;
        if (ev.ts_known) msg.ts_ns = ev.ts_ns;
        // Older kernels trace the console's formatted text (call_console_drivers), which starts with the printk time
        // "[ 1843.200010] " (and CONFIG_PRINTK_CALLER's "[  T591] ") when printk.time is on; newer ones trace the
        // message itself (printk_sprint). The prefix is left out as dmesg leaves it out of a message: an Xid behind
        // it was a message of kind other, and `log xid` FAILED (fresh user).
        std::string_view text = con->text;
        if (!text.empty() && text.front() == '[')
            if (klog::LinePrefix pre = klog::parse_line_prefix(text); pre.format == "dmesg" && pre.ts_ns)
                text.remove_prefix(std::min(pre.body, text.size()));
        msg.text = std::string(text);
        classify_kernel_message(msg);
        msg.call = calls_->open_call(ev);
        msg.attached = msg.call ? "console" : "none";  // its own time says no call was open on its task
        r_.kernel_log.push_back(std::move(msg));
    }
    if (linker_) {
        if (ev.ts_known) linker_->now = ev.ts_ns;
        if (!linker_->held.empty()) linker_->release(*calls_, sinks_.ioctl, false);
    }
}

Report ReportBuilder::finish() {
    const EventStream& stream = side_;
    Report& r = r_;
    flush_event();
    calls_->finish();
    ioctls_.finish();
    CallGraph g = calls_->summary();
    if (linker_) {
        linker_->release(*calls_, sinks_.ioctl, true);
    } else {
        g.calls = std::move(calls_by_id_);
        if (!phases_->empty() || !api_->empty())
            for (Call& c : g.calls)
                if (c.entry_ns) {
                    c.phase = phase_at(c.pid, *c.entry_ns);
                    if (!c.parent && !api_->empty()) api_->call(c.id, c.pid, *c.entry_ns);
                }
        link_ioctl_calls(r.ioctls, g.calls);
    }
    r.api_calls = api_->finish(r.completeness);

    // Console lines by text, in order, for their /dev/kmsg twins below (each twin taken once, the first first).
    // The views point into r.kernel_log's strings: no reallocation while they are used.
    r.kernel_log.reserve(r.kernel_log.size() + stream.kmsg.size());
    std::unordered_map<std::string_view, std::deque<std::size_t>> console_by_text;
    if (!stream.kmsg.empty())
        for (std::size_t i = 0; i < r.kernel_log.size(); ++i)
            console_by_text[r.kernel_log[i].text].push_back(i);
    std::uint64_t bad_kmsg = 0, kmsg_missing = 0;
    std::string first_bad_kmsg, first_kmsg_gap;
    std::optional<std::uint64_t> last_seq;
    for (const auto& raw : stream.kmsg) {
        auto rec = parse_kmsg_record(raw.text);
        if (!rec) {
            if (bad_kmsg++ == 0) first_bad_kmsg = rec.error().message;
            continue;
        }
        // The records were read in order from one open /dev/kmsg: a jump in seq is the records the kernel
        // overwrote before they were read (read() said EPIPE; Documentation/ABI/testing/dev-kmsg).
        if (auto gap = kmsg_seq_gap(last_seq, rec->seq)) {
            if (kmsg_missing == 0) first_kmsg_gap = std::move(gap->text);
            kmsg_missing += gap->missing;
        }
        last_seq = rec->seq;
        // The same line seen in the trace buffer (printk:console) keeps its call and trace-clock time and
        // takes the record's level, sequence number and facility, which the console event does not carry.
        KernelLogMessage* twin = nullptr;
        if (auto it = console_by_text.find(rec->message); it != console_by_text.end() && !it->second.empty()) {
            twin = &r.kernel_log[it->second.front()];
            it->second.pop_front();
        }
        if (twin) {
            twin->level = rec->level;
            twin->seq = rec->seq;
            if (rec->facility != 0) twin->fields["facility"] = std::to_string(rec->facility);
            continue;
        }
        KernelLogMessage msg;
        msg.ts_ns = rec->ts_us * 1000;
        msg.level = rec->level;
        msg.seq = rec->seq;
        msg.text = rec->message;
        if (rec->facility != 0) msg.source = "user";  // written to /dev/kmsg from user space
        classify_kernel_message(msg);
        if (rec->facility != 0) msg.fields["facility"] = std::to_string(rec->facility);
        r.kernel_log.push_back(std::move(msg));
    }

    // /dev/kmsg lines not seen through printk:console: by time, with the offset recorded at capture.
    attach_kernel_log_by_time(r.kernel_log, linker_ ? linker_->near_kmsg : g.calls, stream.kmsg_clock);
    r.kmsg_clock = stream.kmsg_clock;

    Completeness& cm = r.completeness;
    for (const auto& s : stream.buffer_stats) {
        cm.overruns += s.overrun;
        cm.dropped_events += s.dropped_events;
    }
    cm.graph_overruns = g.graph_overruns;

    if (cm.overruns)
        cm.reasons.push_back(fmt::format("{} events overwritten in the ring buffer (overrun)", cm.overruns));
    cm.entries_in_buffer = stream.entries_in_buffer;
    cm.entries_written = stream.entries_written;
    if (stream.entries_in_buffer && stream.entries_written && *stream.entries_written > *stream.entries_in_buffer) {
        std::uint64_t gone = *stream.entries_written - *stream.entries_in_buffer;
        cm.overruns += gone;
        cm.reasons.push_back(fmt::format("{} of {} entries overwritten (the buffer wrapped)", thousands(gone),
                                         thousands(*stream.entries_written)));
    }
    if (cm.dropped_events) cm.reasons.push_back(fmt::format("{} events dropped by the ring buffer", cm.dropped_events));
    if (cm.lost_events || unknown_loss_marks_) cm.reasons.push_back(lost_events_reason(cm.gaps));
    {
        std::vector<int> late;  // CPUs whose buffer started after others: their older events were overwritten
        for (const Gap& gp : cm.gaps)
            if (gp.kind == "buffer_started" && std::find(late.begin(), late.end(), gp.cpu) == late.end())
                late.push_back(gp.cpu);
        if (!late.empty())
            cm.reasons.push_back(fmt::format("{} {} {} started late (older events overwritten)",
                                             late.size() == 1 ? "CPU" : "CPUs", fmt::join(late, ", "),
                                             late.size() == 1 ? "buffer" : "buffers"));
    }
    if (std::uint64_t elided = cm.elided_spans())
        cm.reasons.push_back(fmt::format("{} elided span{}", thousands(elided), elided == 1 ? "" : "s"));
    if (g.orphan_returns) cm.reasons.push_back(fmt::format("{} returns without their entry", g.orphan_returns));
    if (g.unclosed_calls) cm.reasons.push_back(fmt::format("{} calls without their return", g.unclosed_calls));
    if (cm.graph_overruns)
        cm.reasons.push_back(fmt::format("{} calls not traced: return stack full", cm.graph_overruns));
    if (kmsg_missing)
        cm.reasons.push_back(fmt::format("{} kernel log record{} overwritten before {} read", thousands(kmsg_missing),
                                         kmsg_missing == 1 ? " was" : "s were",
                                         kmsg_missing == 1 ? "it was" : "they were"));
    else if (stream.kmsg_overwritten)
        cm.reasons.push_back("kernel log records were overwritten before they were read");
    add_diag(cm, Diag::kmsg_seq_gap, kmsg_missing, first_kmsg_gap);

    std::uint64_t loss_marks = 0, buffer_marks = 0;
    std::string first_buffer_mark, first_elided;
    for (const Gap& gp : cm.gaps) {
        std::string where =
            gp.line && !stream.file_name.empty()
                ? fmt::format("{}:{}", stream.file_name, *gp.line)
                : fmt::format("cpu {}{}", gp.cpu, gp.ts_ns ? fmt::format(" before ts {} ns", *gp.ts_ns) : "");
        if (gp.kind == "lost_events") ++loss_marks;
        if (gp.kind == "buffer_started" && buffer_marks++ == 0)
            first_buffer_mark = where + fmt::format(": CPU {}", gp.cpu);
        if (gp.kind == "elided" && first_elided.empty()) first_elided = where;
    }
    add_diag(cm, Diag::lost_event_marks, loss_marks, first_loss_);
    if (ioctls_.outcomes_lost()) {
        add_diag(cm, Diag::ioctl_outcome_after_loss, ioctls_.outcomes_lost(), ioctls_.first_outcome_lost());
        cm.reasons.push_back(
            fmt::format("{} ioctl(s) with an unknown outcome: events were lost while they were "
                        "open, so their task's next exit may be another ioctl's (first: {})",
                        thousands(ioctls_.outcomes_lost()), ioctls_.first_outcome_lost()));
    }
    add_diag(cm, Diag::buffer_started, buffer_marks, first_buffer_mark);
    add_diag(cm, Diag::elided_span, cm.elided_spans(), first_elided);
    add_diag(cm, Diag::orphan_return, g.orphan_returns, describe_place(g.first_orphan_return, stream.file_name));
    add_diag(cm, Diag::unclosed_call, g.unclosed_calls, describe_place(g.first_unclosed_call, stream.file_name));
    add_diag(cm, Diag::depth_gap, g.depth_gaps, describe_place(g.first_depth_gap, stream.file_name));
    add_diag(cm, Diag::starts_mid_tree, g.starts_mid_tree, describe_place(g.first_starts_mid_tree, stream.file_name));
    if (g.depth_gaps)
        cm.reasons.push_back(fmt::format("{} calls whose parent entries are missing (depth gaps)", g.depth_gaps));
    // A line or record that could not be read may have held anything: what it held is missing.
    auto unreadable_reason = [&cm](const Diagnostic& d) {
        const bool records = d.name == diagnostic_info(Diag::malformed_kmsg_record).name ||
                             d.name == diagnostic_info(Diag::undecodable_record).name;
        cm.reasons.push_back(fmt::format("{} {}{} could not be read (first: {})", thousands(d.count),
                                         records ? "record" : "line", d.count == 1 ? "" : "s", d.first_example));
    };
    if (bad_kmsg) {
        add_diag(cm, Diag::malformed_kmsg_record, bad_kmsg, first_bad_kmsg);
        unreadable_reason(cm.diagnostics.back());
    }
    for (const auto& d : stream.diagnostics) {
        cm.diagnostics.push_back(d);
        if (d.severity == "data_loss")
            cm.reasons.push_back(fmt::format("{}: {} ({})", d.name, d.count, d.first_example));
        if (const DiagnosticInfo* info = find_diagnostic(d.name); info && info->unreadable) unreadable_reason(d);
    }
    cm.complete = cm.reasons.empty();

    r.ioctl_stats = ioctl_stats_.rows();
    r.graph = calls_->graph();
    add_graph_cap_diagnostic(cm, calls_->graph_stats());
    r.calls = std::move(g.calls);
    return std::move(r);
}

Report build_report(const EventStream& stream) {
    ReportBuilder b(stream, {});
    for (const Event& ev : stream.events)
        b.add(ev);
    return b.finish();
}

}  // namespace nvtrace
