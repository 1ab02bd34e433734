#include "nvtrace/report.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include <fmt/format.h>

#include "nvtrace/call_graph.hpp"
#include "nvtrace/ioctl.hpp"

namespace nvtrace {

namespace {

// Phase markers written by scenarios through trace_marker (docs/markers.md):
//   "nvtrace-phase: NAME" starts phase NAME (ending the previous one), "nvtrace-phase-end" ends it.
constexpr std::string_view kPhaseBegin = "nvtrace-phase: ";
constexpr std::string_view kPhaseEnd = "nvtrace-phase-end";

struct PhaseSpan {
    std::uint64_t begin_ns;
    std::uint64_t end_ns;
    std::string name;
};

// The spans of the phase markers, fed every marker in stream order (from build_report's one walk of the events).
class PhaseSpans {
public:
    void add(std::uint64_t ts_ns, const std::string& text) {
        bool begin = text.rfind(kPhaseBegin, 0) == 0;
        bool end = text.rfind(kPhaseEnd, 0) == 0;
        if (!begin && !end) return;
        if (cur_) {
            cur_->end_ns = ts_ns;
            spans_.push_back(std::move(*cur_));
            cur_.reset();
        }
        if (begin) cur_ = PhaseSpan{ts_ns, UINT64_MAX, text.substr(kPhaseBegin.size())};
    }
    std::vector<PhaseSpan> finish() {
        if (cur_) spans_.push_back(std::move(*cur_));
        cur_.reset();
        return std::move(spans_);
    }

private:
    std::vector<PhaseSpan> spans_;
    std::optional<PhaseSpan> cur_;
};

// The phase of a time: the first span that holds it. Spans of a stream sorted by time follow each other
// without overlap, and are then found by binary search (a report can ask for millions of calls and ioctls);
// otherwise (text traces whose times go backwards) every span is tried in order.
class PhaseIndex {
public:
    explicit PhaseIndex(const std::vector<PhaseSpan>& spans) : spans_(spans) {
        for (std::size_t i = 0; i < spans.size() && ordered_; ++i)
            ordered_ = spans[i].begin_ns <= spans[i].end_ns && (i == 0 || spans[i - 1].end_ns <= spans[i].begin_ns);
    }
    bool empty() const { return spans_.empty(); }
    std::optional<std::string> at(std::uint64_t ts) const {
        if (!ordered_) {
            for (const auto& s : spans_)
                if (ts >= s.begin_ns && ts < s.end_ns) return s.name;
            return std::nullopt;
        }
        // The last span starting at or before ts is the only one that can hold it; an empty span before it
        // ([t, t)) holds nothing, so the first match is the same span.
        auto it = std::upper_bound(spans_.begin(), spans_.end(), ts,
                                   [](std::uint64_t t, const PhaseSpan& s) { return t < s.begin_ns; });
        if (it == spans_.begin()) return std::nullopt;
        --it;
        if (ts < it->end_ns) return it->name;
        return std::nullopt;
    }

private:
    const std::vector<PhaseSpan>& spans_;
    bool ordered_ = true;
};

void add_diag(Completeness& c, std::string name, std::string severity, std::uint64_t count, std::string example) {
    if (count == 0) return;
    c.diagnostics.push_back({std::move(name), std::move(severity), count, std::move(example)});
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

void add_event(std::vector<EventRecord>& out, const Event& ev, const OtherEvent& o,
               const std::map<int, std::string>& comms) {
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
        if (!out.empty()) {
            EventRecord& prev = out.back();
            auto& slot = o.name == "kernel_stack" ? prev.stack : prev.user_stack;
            if (prev.cpu == ev.cpu && prev.pid == ev.pid && slot.empty() && !frames.empty() &&
                (!prev.ts_ns || !ev.ts_known || *prev.ts_ns <= ev.ts_ns)) {
                slot = std::move(frames);
                return;
            }
        }
    }
    EventRecord e;
    e.name = o.system.empty() ? o.name : o.system + ":" + o.name;
    if (ev.ts_known) e.ts_ns = ev.ts_ns;
    e.cpu = ev.cpu;
    e.pid = ev.pid;
    if (auto it = comms.find(ev.pid); ev.pid >= 0 && it != comms.end()) e.comm = it->second;
    if (ev.line) e.line = ev.line;
    if (is_stack) {
        (o.name == "kernel_stack" ? e.stack : e.user_stack) = std::move(frames);
    } else {
        e.text = o.fields;
        e.fields = parse_event_fields(o.fields);
    }
    out.push_back(std::move(e));
}

}  // namespace

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

Report build_report(const EventStream& stream) {
    Report r;
    CallGraph g = build_call_graph(stream);
    PhaseSpans span_builder;

    Completeness& cm = r.completeness;
    std::uint64_t unknown_loss_marks = 0;
    std::string first_loss;
    for (std::size_t idx = 0; idx < stream.events.size(); ++idx) {
        const Event& ev = stream.events[idx];
        if (const auto* l = std::get_if<LostEvents>(&ev.body)) {
            if (l->count)
                cm.lost_events += *l->count;
            else
                ++unknown_loss_marks;
            if (first_loss.empty())
                first_loss = ev.line && !stream.file_name.empty()
                                 ? fmt::format("{}:{}", stream.file_name, ev.line)
                                 : fmt::format("cpu {} before ts {} ns", ev.cpu, ev.ts_ns);
        } else if (const auto* m = std::get_if<Marker>(&ev.body)) {
            span_builder.add(ev.ts_ns, m->text);
            // The preload library's per-ioctl lines are folded into `ioctls`, not listed again.
            if (m->text.rfind("nvtrace-ioctl ", 0) == 0 || m->text.rfind("nvtrace-preload ", 0) == 0) continue;
            r.markers.push_back({ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt, ev.pid, m->text});
        } else if (const auto* o = std::get_if<OtherEvent>(&ev.body)) {
            add_event(r.events, ev, *o, stream.comms);
        } else if (const auto* con = std::get_if<ConsoleLine>(&ev.body)) {
            KernelLogMessage msg;
            if (ev.ts_known) msg.ts_ns = ev.ts_ns;
            msg.text = con->text;
            classify_kernel_message(msg);
            if (auto it = g.open_call_at.find(idx); it != g.open_call_at.end()) msg.call = it->second;
            msg.attached = msg.call ? "console" : "none";  // its own time says no call was open on its task
            r.kernel_log.push_back(std::move(msg));
        }
    }
    auto spans = span_builder.finish();
    PhaseIndex phases(spans);
    if (!phases.empty())
        for (Call& c : g.calls)
            if (c.entry_ns) c.phase = phases.at(*c.entry_ns);
    std::vector<FdPath> fds;
    fds.reserve(stream.fd_paths.size());
    for (const auto& [key, path] : stream.fd_paths)
        fds.push_back({key.first, key.second, 0, path});
    r.ioctls = collect_ioctls(stream, g.calls, fds);
    if (!phases.empty())
        for (auto& io : r.ioctls)
            io.phase = phases.at(io.enter_ns);

    // Console lines by text, in order, for their /dev/kmsg twins below (each twin taken once, the first first).
    // The views point into r.kernel_log's strings: no reallocation while they are used.
    r.kernel_log.reserve(r.kernel_log.size() + stream.kmsg.size());
    std::unordered_map<std::string_view, std::deque<std::size_t>> console_by_text;
    if (!stream.kmsg.empty())
        for (std::size_t i = 0; i < r.kernel_log.size(); ++i)
            console_by_text[r.kernel_log[i].text].push_back(i);
    std::uint64_t bad_kmsg = 0;
    std::string first_bad_kmsg;
    for (const auto& raw : stream.kmsg) {
        auto rec = parse_kmsg_record(raw.text);
        if (!rec) {
            if (bad_kmsg++ == 0) first_bad_kmsg = rec.error().message;
            continue;
        }
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
    attach_kernel_log_by_time(r.kernel_log, g.calls, stream.kmsg_clock);
    r.kmsg_clock = stream.kmsg_clock;

    for (const auto& s : stream.buffer_stats) {
        cm.overruns += s.overrun;
        cm.dropped_events += s.dropped_events;
    }
    cm.orphan_returns = g.orphan_returns;
    cm.unclosed_calls = g.unclosed_calls;
    cm.graph_overruns = g.graph_overruns;

    if (cm.overruns)
        cm.reasons.push_back(fmt::format("{} events overwritten in the ring buffer (overrun)", cm.overruns));
    if (cm.dropped_events) cm.reasons.push_back(fmt::format("{} events dropped by the ring buffer", cm.dropped_events));
    if (cm.lost_events || unknown_loss_marks)
        cm.reasons.push_back(fmt::format("the kernel marked lost events {} time(s) ({} counted)",
                                         unknown_loss_marks + (cm.lost_events ? 1 : 0), cm.lost_events));
    if (cm.orphan_returns) cm.reasons.push_back(fmt::format("{} returns without their entry", cm.orphan_returns));
    if (cm.unclosed_calls) cm.reasons.push_back(fmt::format("{} calls without their return", cm.unclosed_calls));
    if (cm.graph_overruns)
        cm.reasons.push_back(fmt::format("{} calls not traced: return stack full", cm.graph_overruns));
    if (stream.kmsg_overwritten) cm.reasons.push_back("kernel log records were overwritten before they were read");

    add_diag(cm, "lost_event_marks", "data_loss", unknown_loss_marks + (cm.lost_events ? 1 : 0), first_loss);
    add_diag(cm, "orphan_return", "data_loss", g.orphan_returns,
             describe_place(g.first_orphan_return, stream.file_name));
    add_diag(cm, "unclosed_call", "data_loss", g.unclosed_calls,
             describe_place(g.first_unclosed_call, stream.file_name));
    add_diag(cm, "depth_gap", "data_loss", g.depth_gaps, describe_place(g.first_depth_gap, stream.file_name));
    add_diag(cm, "starts_mid_tree", "info", g.starts_mid_tree,
             describe_place(g.first_starts_mid_tree, stream.file_name));
    if (g.depth_gaps)
        cm.reasons.push_back(fmt::format("{} calls whose parent entries are missing (depth gaps)", g.depth_gaps));
    add_diag(cm, "malformed_kmsg_record", "error", bad_kmsg, first_bad_kmsg);
    for (const auto& d : stream.diagnostics) {
        cm.diagnostics.push_back(d);
        if (d.severity == "data_loss")
            cm.reasons.push_back(fmt::format("{}: {} ({})", d.name, d.count, d.first_example));
    }
    cm.complete = cm.reasons.empty();

    r.graph = aggregate_graph(g.calls);
    r.calls = std::move(g.calls);
    return r;
}

}  // namespace nvtrace
