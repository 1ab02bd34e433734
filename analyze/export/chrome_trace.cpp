// Chrome trace event JSON (include/nvtrace/export.hpp, docs/export.md). Format: Google's "Trace Event Format"
// document (JSON Object Format: {"traceEvents":[...],"displayTimeUnit":...,"otherData":{...}}; B/E duration
// events must nest per thread; "ph":"i" instant events with scope "t"; "ph":"M" process_name/thread_name).
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../report_head.hpp"
#include "nvtrace/export.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

// Above any real pid (PID_MAX_LIMIT, include/linux/threads.h, is 4194304), so synthetic tracks never collide.
constexpr std::int64_t kUnknownTaskPid = 4194304;
constexpr std::int64_t kKernelLogPid = 2 * kUnknownTaskPid;

// A track: a task (pid >= 0, cpu = -1), a CPU for calls whose task is unknown (pid = -1), or the kernel log.
struct TrackKey {
    int pid = -1;
    int cpu = -1;
    bool kernel_log = false;
    auto operator<=>(const TrackKey&) const = default;
};

struct Instant {
    std::uint64_t ts = 0;
    std::string name;
    std::string cat;
    json args;
    std::optional<std::uint64_t> dur;  // ns: written as a complete ('X') slice, not an instant
    bool open = false;                 // a begin ('B') with no end: an API call still open when the trace ended
};

struct Ev {
    std::uint64_t ts = 0;
    char ph = 'B';        // 'B', 'E', 'i' (an instant, or a complete slice when it has a dur)
    std::size_t ref = 0;  // call index for B/E, instant index for i
};

struct Track {
    std::string comm;
    std::vector<std::size_t> roots;
    std::vector<Ev> events;
    std::vector<std::size_t> instants;
};

std::string ts_us(std::uint64_t ns) {
    return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string shorten(std::string_view s, std::size_t n) {
    auto nl = s.find('\n');
    if (nl != std::string_view::npos) s = s.substr(0, nl);
    return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "...";
}

std::pair<std::int64_t, std::int64_t> chrome_ids(const TrackKey& k) {
    if (k.kernel_log) return {kKernelLogPid, kKernelLogPid};
    if (k.pid >= 0) return {k.pid, k.pid};
    return {kUnknownTaskPid, kUnknownTaskPid + 2 + k.cpu};
}

class ChromeWriter {
public:
    ChromeWriter(const Report& r, std::ostream& out) : r_(r), out_(out) {}

    ChromeTraceStats run() {
        index_calls();
        for (auto& [key, t] : tracks_)
            layout_track(t);
        add_api_calls();
        add_instants();
        write();
        return stats_;
    }

private:
    const Report& r_;
    std::ostream& out_;
    ChromeTraceStats stats_;
    std::map<TrackKey, Track> tracks_;
    std::vector<std::vector<std::size_t>> kids_;
    std::vector<TrackKey> track_of_;
    std::vector<std::uint64_t> start_, end_;
    std::unordered_map<std::uint64_t, std::size_t> pos_;  // call id -> index
    std::vector<Instant> instants_;
    std::map<TrackKey, std::uint64_t> ioctl_slice_end_;  // ns: where each track's last ioctl slice ended
    // Kernel-log lines, ioctls and markers without a time (strace without -t, a kernel log without timestamps),
    // laid out once the timed events are in: their track, the instant, and whether it is an ioctl slice.
    struct Untimed {
        TrackKey track;
        Instant in;
    };
    std::vector<Untimed> untimed_;
    Track* current_ = nullptr;
    bool first_event_ = true;

    void index_calls() {
        const auto& calls = r_.calls;
        kids_.resize(calls.size());
        track_of_.resize(calls.size());
        start_.assign(calls.size(), 0);
        end_.assign(calls.size(), 0);
        pos_.reserve(calls.size());
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const Call& c = calls[i];
            pos_.emplace(c.id, i);
            std::optional<std::size_t> p;
            if (c.parent)
                if (auto it = pos_.find(*c.parent); it != pos_.end()) p = it->second;
            if (p) {
                track_of_[i] = track_of_[*p];
                kids_[*p].push_back(i);
                continue;
            }
            TrackKey k = c.pid >= 0 ? TrackKey{c.pid, -1, false} : TrackKey{-1, c.cpu, false};
            track_of_[i] = k;
            Track& t = tracks_[k];
            t.roots.push_back(i);
            if (t.comm.empty()) t.comm = c.comm;
        }
    }

    void layout_track(Track& t) {
        const auto& calls = r_.calls;
        bool timed = std::all_of(t.roots.begin(), t.roots.end(), [&](std::size_t i) { return calls[i].entry_ns; });
        if (timed)
            std::stable_sort(t.roots.begin(), t.roots.end(),
                             [&](std::size_t x, std::size_t y) { return *calls[x].entry_ns < *calls[y].entry_ns; });
        current_ = &t;
        std::uint64_t cursor = 0;
        for (std::size_t root : t.roots)
            cursor = layout(root, cursor);
    }

    // Places the tree of call `root` no earlier than `cursor` and returns its end. Every B is at or after the
    // previous event of the track and every E at or after its children's, so the track stays nested and monotonic.
    // Depth first with an explicit stack: a saved report may nest calls far deeper than the C++ stack allows.
    std::uint64_t layout(std::size_t root, std::uint64_t cursor) {
        struct Frame {
            std::size_t call;
            std::uint64_t start;
            std::uint64_t cur;  // where the next child may start: the end of the previous one
            std::size_t next_kid = 0;
        };
        std::vector<Frame> stack;
        auto open = [&](std::size_t i, std::uint64_t at) {
            const Call& c = r_.calls[i];
            std::uint64_t start = at;
            if (c.entry_ns) {
                if (*c.entry_ns < at) ++stats_.adjusted_slices;
                start = std::max(*c.entry_ns, at);
            } else {
                ++stats_.synthetic_slices;
            }
            current_->events.push_back({start, 'B', i});
            stack.push_back({i, start, start});
        };
        open(root, cursor);
        std::uint64_t end = cursor;
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next_kid < kids_[f.call].size()) {
                const std::size_t k = kids_[f.call][f.next_kid++];
                open(k, f.cur);  // `f` is not used after this
                continue;
            }
            const Call& c = r_.calls[f.call];
            end = c.duration_ns ? f.start + *c.duration_ns : f.cur;
            if (end < f.cur) {
                end = f.cur;
                ++stats_.adjusted_slices;
            }
            current_->events.push_back({end, 'E', f.call});
            start_[f.call] = f.start;
            end_[f.call] = end;
            ++stats_.slices;
            stack.pop_back();
            if (!stack.empty()) stack.back().cur = end;
        }
        return end;
    }

    void add_instant(const TrackKey& k, Instant in) {
        Track& t = tracks_[k];
        if (!in.dur && in.cat != "api") ++stats_.instants;
        instants_.push_back(std::move(in));
        t.instants.push_back(instants_.size() - 1);
    }

    // The report's API calls (Report::api_calls, uprobe spans) on their threads' tracks, above the calls and
    // ioctls made inside them. A call with a known exit is an X slice from entry to exit. One whose return was
    // not seen gets no made-up end: when the trace ended inside it (neither it nor any caller returned) it is a
    // B with no E, open to the end of the track as it was; when its caller's return closed it (its own return
    // lost) it is an instant at its entry. Added before the other instants: at one timestamp the stable sort
    // keeps a caller before its callee and a call before the ioctl it made.
    void add_api_calls() {
        const auto& api = r_.api_calls;
        if (api.empty()) return;
        std::unordered_map<std::uint64_t, std::size_t> at;  // API call id -> index
        at.reserve(api.size());
        for (std::size_t i = 0; i < api.size(); ++i)
            at.emplace(api[i].id, i);
        auto parent_of = [&](const ApiCall& a) -> const ApiCall* {
            if (!a.parent) return nullptr;
            auto it = at.find(*a.parent);
            return it == at.end() ? nullptr : &api[it->second];
        };
        // The end each slice is drawn to: its exit, or later when what ran inside it was laid out past it
        // (a shifted call); callees (later ids) first, so a caller covers its callees' drawn ends.
        std::vector<std::optional<std::uint64_t>> end(api.size());
        for (std::size_t i = 0; i < api.size(); ++i)
            if (api[i].exit_ns) end[i] = std::max(*api[i].exit_ns, api[i].entry_ns);
        for (std::size_t n = api.size(); n-- > 0;) {
            const ApiCall& a = api[n];
            if (!end[n]) continue;
            for (std::uint64_t id : a.calls)
                if (auto it = pos_.find(id); it != pos_.end()) end[n] = std::max(*end[n], end_[it->second]);
            for (std::uint64_t k : a.ioctls)
                if (k < r_.ioctls.size()) {
                    const IoctlRecord& io = r_.ioctls[k];
                    if (io.enter_ns && io.exit_ns && *io.exit_ns >= *io.enter_ns)
                        end[n] = std::max(*end[n], *io.exit_ns);
                }
            if (const ApiCall* p = parent_of(a); p) {
                std::optional<std::uint64_t>& pe = end[static_cast<std::size_t>(p - api.data())];
                if (pe) pe = std::max(*pe, *end[n]);
            }
        }
        std::vector<bool> stretched(api.size(), false);
        for (std::size_t i = 0; i < api.size(); ++i)
            if (end[i] && *end[i] != *api[i].exit_ns) {
                stretched[i] = true;
                ++stats_.adjusted_slices;
            }
        for (std::size_t i = 0; i < api.size(); ++i) {
            const ApiCall& a = api[i];
            json arguments = json::object();
            for (const auto& [name, raw] : a.args) {
                auto d = a.args_decoded.find(name);
                arguments[name] = d != a.args_decoded.end() ? d->second : raw;
            }
            json args = {{"id", a.id},
                         {"api", a.api},
                         {"library", a.library ? json(*a.library) : json("unknown")},
                         {"arguments", std::move(arguments)},
                         {"result_name", a.result_name},
                         {"ioctls", a.ioctls.size()}};
            if (a.parent) args["parent"] = *a.parent;
            if (a.result) args["result"] = *a.result;
            if (a.result_unknown) args["result_unknown"] = *a.result_unknown;
            if (!a.calls.empty()) args["calls"] = a.calls.size();
            if (a.phase) args["phase"] = *a.phase;
            if (a.cpu >= 0) args["cpu"] = a.cpu;
            if (!a.group.empty()) args["group"] = a.group;
            Instant in;
            in.ts = a.entry_ns;
            in.name = a.function;
            in.cat = "api";
            if (end[i]) {
                if (*a.exit_ns >= a.entry_ns) args["duration_ns"] = *a.exit_ns - a.entry_ns;
                if (stretched[i]) args["stretched"] = true;
                in.dur = *end[i] - a.entry_ns;
                ++stats_.api_slices;
            } else {
                args["return_seen"] = false;
                args["exit_unknown"] = a.exit_unknown.value_or("no return seen");
                bool caller_returned = false;
                for (const ApiCall* p = parent_of(a); p && !caller_returned; p = parent_of(*p))
                    caller_returned = p->exit_ns.has_value();
                in.open = !caller_returned;
                ++stats_.api_unreturned;
            }
            in.args = std::move(args);
            TrackKey k = a.pid >= 0 ? TrackKey{a.pid, -1, false} : TrackKey{-1, a.cpu, false};
            if (tracks_[k].comm.empty()) tracks_[k].comm = a.comm;
            add_instant(k, std::move(in));
        }
    }

    void add_instants() {
        for (const KernelLogMessage& m : r_.kernel_log) {
            json args = {
                {"text", m.text}, {"level", m.level}, {"source", m.source}, {"kind", m.kind}, {"fields", m.fields}};
            if (m.seq) args["seq"] = *m.seq;
            if (m.ts_ns) args["ts_ns"] = *m.ts_ns;
            // The source leads the name, once: an NVRM line's text already starts with "NVRM: ".
            const bool source_in_text = !m.source.empty() && m.text.size() > m.source.size() &&
                                        m.text.compare(0, m.source.size(), m.source) == 0 &&
                                        m.text[m.source.size()] == ':';
            std::string name =
                m.source.empty() || source_in_text ? shorten(m.text, 60) : m.source + ": " + shorten(m.text, 60);
            std::optional<std::size_t> call;
            if (m.call)
                if (auto it = pos_.find(*m.call); it != pos_.end()) call = it->second;
            if (call) {
                // Lines from /dev/kmsg carry CLOCK_MONOTONIC time, the calls the trace clock: the line is kept on
                // the call it was printed under.
                std::uint64_t ts = m.ts_ns ? std::clamp(*m.ts_ns, start_[*call], end_[*call]) : start_[*call];
                args["call"] = *m.call;
                add_instant(track_of_[*call], {ts, std::move(name), "kernel_log", std::move(args), {}});
            } else if (m.ts_ns) {
                add_instant(TrackKey{-1, -1, true}, {*m.ts_ns, std::move(name), "kernel_log", std::move(args), {}});
            } else {
                untimed_.push_back({TrackKey{-1, -1, true}, {0, std::move(name), "kernel_log", std::move(args), {}}});
            }
        }
        for (const IoctlRecord& io : r_.ioctls) {
            json args = {{"cmd", fmt::format("0x{:x}", io.cmd)}, {"fd", io.fd}};
            if (io.name) args["name"] = *io.name;
            if (io.fd_path) args["fd_path"] = *io.fd_path;
            if (io.hclass) args["hclass"] = fmt::format("0x{:x}", *io.hclass);
            if (io.status) args["status"] = *io.status;
            if (io.ret) args["ret"] = *io.ret;
            // A record made without the builder (a test's) may have its times only.
            std::optional<std::uint64_t> took = io.duration_ns;
            if (!took && io.enter_ns && io.exit_ns && *io.exit_ns >= *io.enter_ns) took = *io.exit_ns - *io.enter_ns;
            if (took) args["duration_ns"] = *took;
            // The input's clock went back between the call and its return (strace -t across midnight, a clock
            // step): no duration, so an instant, which says why.
            if (!took && io.enter_ns && io.exit_ns && *io.exit_ns < *io.enter_ns)
                args["duration_unknown"] =
                    fmt::format("the exit's time ({} ns) is before the entry's ({} ns)", *io.exit_ns, *io.enter_ns);
            if (io.phase) args["phase"] = *io.phase;
            if (!io.calls.empty()) args["calls"] = io.calls;
            std::optional<std::uint64_t> ts = io.enter_ns;
            TrackKey k{io.pid, -1, false};
            if (io.call)
                if (auto it = pos_.find(*io.call); it != pos_.end()) {
                    k = track_of_[it->second];
                    if (!r_.calls[it->second].entry_ns) ts = start_[it->second];  // that track's time is laid out
                }
            std::string name = io.name ? "ioctl " + *io.name : fmt::format("ioctl 0x{:x}", io.cmd);
            if (tracks_[k].comm.empty()) tracks_[k].comm = io.comm;
            if (!ts) {  // no time (strace without -t): laid out in recorded order after the timed events
                untimed_.push_back({k, {0, std::move(name), "ioctl", std::move(args), took}});
                continue;
            }
            // An ioctl with no call under it and a known exit is a slice of its thread (a run without function
            // tracing is a timeline of these); one under a call is an instant, the call's slice has the time.
            // One that would overlap the thread's previous ioctl slice stays an instant, counted as adjusted.
            std::optional<std::uint64_t> dur;
            if (!io.call && io.calls.empty() && io.enter_ns && took) {
                std::uint64_t& free_from = ioctl_slice_end_[k];
                if (*io.enter_ns >= free_from) {
                    dur = *took;
                    free_from = *io.enter_ns + *took;
                    ++stats_.ioctl_slices;
                } else {
                    ++stats_.adjusted_slices;
                }
            }
            add_instant(k, {*ts, std::move(name), "ioctl", std::move(args), dur});
        }
        for (const MarkerEntry& m : r_.markers) {
            Instant in;
            in.ts = m.ts_ns.value_or(0);
            in.name = shorten(m.text, 80);
            in.cat = "marker";
            in.args = {{"text", m.text}};
            if (!m.ts_ns)
                untimed_.push_back({TrackKey{m.pid, -1, false}, std::move(in)});
            else
                add_instant(TrackKey{m.pid, -1, false}, std::move(in));
        }
        add_untimed();
        // Merge each track's instants into its slices by time: an instant at a slice's start or end lands inside.
        for (auto& [key, t] : tracks_) {
            std::stable_sort(t.instants.begin(), t.instants.end(),
                             [&](std::size_t a, std::size_t b) { return instants_[a].ts < instants_[b].ts; });
            std::vector<Ev> merged;
            merged.reserve(t.events.size() + t.instants.size());
            std::size_t k = 0;
            // A slice with no call in it that starts when a call ends or begins goes after the end, before the begin;
            // so does an API call, which holds the calls that start with it.
            auto before = [&](const Instant& in, const Ev& e) {
                const bool slice = in.dur || in.open || in.cat == "api";
                return in.ts < e.ts || (in.ts == e.ts && e.ph == (slice ? 'B' : 'E'));
            };
            for (const Ev& e : t.events) {
                while (k < t.instants.size() && before(instants_[t.instants[k]], e))
                    merged.push_back({instants_[t.instants[k++]].ts, 'i', t.instants[k - 1]});
                merged.push_back(e);
            }
            for (; k < t.instants.size(); ++k)
                merged.push_back({instants_[t.instants[k]].ts, 'i', t.instants[k]});
            t.events = std::move(merged);
        }
    }

    // Items without a time have no place on the trace clock. Rather than leave them out of the trace (a strace
    // without -t would be an empty one), they follow the last timed event (1 us after it), one after another in the
    // report's order (kernel-log lines, then ioctls, then markers: their order across kinds is not recorded), 1 us
    // apart or their duration apart, each with args.synthetic_time. An ioctl with a known duration is a slice, like a
    // timed one.
    void add_untimed() {
        if (untimed_.empty()) return;
        std::uint64_t at = 0;
        for (const auto& [key, t] : tracks_)
            for (const Ev& e : t.events)
                at = std::max(at, e.ts);
        for (const Instant& in : instants_)
            at = std::max(at, in.ts + in.dur.value_or(0));
        // 1 us after the last event: at its very time an instant would land inside the slice that ends there.
        if (!instants_.empty() ||
            std::any_of(tracks_.begin(), tracks_.end(), [](const auto& t) { return !t.second.events.empty(); }))
            at += 1000;
        for (auto& [k, in] : untimed_) {
            in.ts = at;
            in.args["synthetic_time"] = true;
            if (in.cat == "ioctl" && in.dur) {
                ++stats_.ioctl_slices;
                ioctl_slice_end_[k] = at + *in.dur;
            } else {
                in.dur.reset();
            }
            at += std::max<std::uint64_t>(in.dur.value_or(0), 1000);
            ++stats_.synthetic_instants;
            add_instant(k, std::move(in));
        }
    }

    void emit(const json& j) {
        out_ << (first_event_ ? "\n" : ",\n") << dump(j);
        first_event_ = false;
    }

    void write() {
        out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
        for (const auto& [key, t] : tracks_) {
            ++stats_.tracks;
            auto [pid, tid] = chrome_ids(key);
            std::string process, thread;
            if (key.kernel_log) {
                process = thread = "kernel log";
            } else if (key.pid >= 0) {
                process = fmt::format("{} ({})", t.comm.empty() ? "task" : t.comm, key.pid);
                thread = t.comm.empty() ? fmt::format("pid {}", key.pid) : t.comm;
            } else {
                process = "task unknown (one track per CPU)";
                thread = key.cpu >= 0 ? fmt::format("cpu {}", key.cpu) : "cpu unknown";
            }
            emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", process}}}});
            emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", thread}}}});
            for (const Ev& e : t.events)
                write_event(e, pid, tid);
        }
        json counts = {{"schema", kReportSchema},
                       {"source", to_json(r_.source)},
                       {"tracks", stats_.tracks},
                       {"slices", stats_.slices},
                       {"instants", stats_.instants},
                       {"ioctl_slices", stats_.ioctl_slices},
                       {"synthetic_slices", stats_.synthetic_slices},
                       {"adjusted_slices", stats_.adjusted_slices},
                       {"skipped_instants", stats_.skipped_instants}};
        // Only when there are some: the export of a report whose items all have a time stays as it was.
        if (stats_.synthetic_instants) counts["synthetic_instants"] = stats_.synthetic_instants;
        // Only a report with API calls has these: the export of one without stays as it was.
        if (!r_.api_calls.empty()) {
            counts["api_slices"] = stats_.api_slices;
            counts["api_unreturned"] = stats_.api_unreturned;
        }
        out_ << "\n],\"otherData\":{\"nvtrace\":" << dump(counts) << "}}\n";
    }

    void write_event(const Ev& e, std::int64_t pid, std::int64_t tid) {
        // Timestamps are written as raw JSON numbers with exactly three decimals (ns precision, no rounding).
        auto head = [&](std::string_view ph, const std::string& name) {
            return fmt::format("{{\"ph\":\"{}\",\"ts\":{},\"pid\":{},\"tid\":{},\"name\":{}", ph, ts_us(e.ts), pid, tid,
                               dump(json(name)));
        };
        out_ << (first_event_ ? "\n" : ",\n");
        first_event_ = false;
        if (e.ph == 'i') {
            const Instant& in = instants_[e.ref];
            if (in.dur)
                out_ << head("X", in.name) << ",\"dur\":" << ts_us(*in.dur);
            else if (in.open)
                out_ << head("B", in.name);
            else
                out_ << head("i", in.name) << ",\"s\":\"t\"";
            out_ << ",\"cat\":" << dump(json(in.cat)) << ",\"args\":" << dump(in.args) << '}';
            return;
        }
        const Call& c = r_.calls[e.ref];
        if (e.ph == 'E') {
            out_ << head("E", c.function) << '}';
            return;
        }
        json args = {{"id", c.id}, {"irq", c.irq}};
        if (c.module) args["module"] = *c.module;
        if (c.duration_ns) args["duration_ns"] = *c.duration_ns;
        if (c.retval) args["retval"] = *c.retval;
        if (c.phase) args["phase"] = *c.phase;
        if (c.cpu >= 0) args["cpu"] = c.cpu;
        if (!c.entry_seen) args["entry_seen"] = false;
        if (!c.exit_seen) args["exit_seen"] = false;
        if (!c.entry_ns) args["synthetic_time"] = true;
        std::string cat = c.irq ? "irq" : c.module.value_or("kernel");
        out_ << head("B", c.function) << ",\"cat\":" << dump(json(cat)) << ",\"args\":" << dump(args) << '}';
    }
};

}  // namespace

ChromeTraceStats write_chrome_trace(const Report& r, std::ostream& out) {
    return ChromeWriter(r, out).run();
}

}  // namespace nvtrace
