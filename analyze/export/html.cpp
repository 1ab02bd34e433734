// The HTML page of a report (include/nvtrace/export.hpp, docs/export.md "HTML page"): one file that opens
// without a network. C++ aggregates and caps the data and writes the parts that need no script (the header,
// the completeness line, the checks) as escaped HTML; the call tree and the timeline are embedded as JSON in a
// <script type="application/json"> element and drawn as SVG by the inline script below, which only ever sets
// text through textContent and attributes through setAttribute (no markup is built from data).
#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "../phases.hpp"
#include "nvtrace/call_graph.hpp"
#include "nvtrace/export.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

// & < > " ' as character references: safe in element content and in quoted attribute values.
std::string html_escape(std::string_view s) {
    std::string o;
    o.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            case '\'':
                o += "&#39;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

// JSON for a <script> element: every '<', '>' and '&' (only ever inside strings) becomes its \u escape, so no
// "</script", "<!--" or "]]>" can appear in the element's text (HTML's script data state ends at "</script").
// Invalid UTF-8 is replaced (U+FFFD) as the other writers do.
std::string script_json(const json& j) {
    std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string o;
    o.reserve(s.size() + s.size() / 16);
    for (char c : s) {
        if (c == '<')
            o += "\\u003c";
        else if (c == '>')
            o += "\\u003e";
        else if (c == '&')
            o += "\\u0026";
        else
            o += c;
    }
    return o;
}

// As the summary prints durations (tracer/summary.cpp format_ns).
std::string fmt_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

std::optional<std::uint64_t> opt_u64(const std::optional<std::uint64_t>& v) {
    return v;
}
std::optional<std::uint64_t> opt_u64(std::uint64_t v) {
    return v;
}

// ---- the call tree ----

struct Frame {
    std::string function;
    std::string module;
    std::int64_t parent = -1;
    std::uint64_t count = 0;
    std::uint64_t unknown = 0;   // calls without a known duration (exit not seen)
    std::uint64_t total_ns = 0;  // known durations
    std::uint64_t child_ns = 0;  // known durations of the direct children's calls
    std::uint64_t max_ns = 0;
    std::uint64_t value = 0;  // width: max(total_ns, sum of the children's values)
    bool has_self = true;     // false for frames rebuilt from graph rows (self given)
    std::uint64_t self_ns = 0;
    std::vector<std::uint32_t> children;
};

struct Tree {
    std::vector<Frame> frames;  // [0] is the root "all calls"
    bool by_count = false;      // no duration known anywhere: widths by call count
};

std::uint32_t child_of(Tree& t, std::unordered_map<std::string, std::uint32_t>& index, std::uint32_t parent,
                       std::string_view fn) {
    std::string key = std::to_string(parent);
    key += '\x1f';
    key += fn;
    auto [it, added] = index.try_emplace(std::move(key), static_cast<std::uint32_t>(t.frames.size()));
    if (added) {
        Frame f;
        f.function = std::string(fn);
        f.parent = parent;
        t.frames.push_back(std::move(f));
        t.frames[parent].children.push_back(it->second);
    }
    return it->second;
}

Tree build_tree(const Report& r) {
    Tree t;
    t.frames.emplace_back();
    t.frames[0].function = "all calls";
    std::unordered_map<std::string, std::uint32_t> index;
    if (!r.calls.empty()) {
        // Ids are parent-before-child (docs/report-format.md), so a call's parent has its frame already.
        std::unordered_map<std::uint64_t, std::uint32_t> frame_of;
        frame_of.reserve(r.calls.size());
        for (const Call& c : r.calls) {
            std::uint32_t p = 0;
            if (c.parent)
                if (auto it = frame_of.find(*c.parent); it != frame_of.end()) p = it->second;
            std::uint32_t f = child_of(t, index, p, c.function);
            frame_of.emplace(c.id, f);
            Frame& fr = t.frames[f];
            if (fr.module.empty() && c.module) fr.module = *c.module;
            ++fr.count;
            if (c.duration_ns) {
                fr.total_ns += *c.duration_ns;
                fr.max_ns = std::max(fr.max_ns, *c.duration_ns);
                if (p != 0) t.frames[p].child_ns += *c.duration_ns;
            } else {
                ++fr.unknown;
            }
        }
        for (Frame& f : t.frames)
            f.self_ns = f.total_ns > f.child_ns ? f.total_ns - f.child_ns : 0;
    } else {
        // A report with graph rows and no calls (calls streamed elsewhere): the rows' own figures.
        for (const GraphNode& g : r.graph) {
            std::uint32_t p = 0;
            std::string_view rest = g.path;
            for (;;) {
                auto sep = rest.find(" > ");
                p = child_of(t, index, p, rest.substr(0, sep));
                if (sep == std::string_view::npos) break;
                rest.remove_prefix(sep + 3);
            }
            Frame& fr = t.frames[p];
            fr.count = g.count;
            fr.total_ns = g.total_ns;
            fr.self_ns = g.self_ns;
            fr.max_ns = g.max_ns;
        }
    }
    // Children come after their parents: one backward pass sums the widths.
    std::uint64_t any_known = 0;
    for (const Frame& f : t.frames)
        any_known |= f.total_ns;
    t.by_count = any_known == 0;
    for (std::size_t i = t.frames.size(); i-- > 0;) {
        Frame& f = t.frames[i];
        std::uint64_t kids = 0;
        for (std::uint32_t c : f.children)
            kids += t.frames[c].value;
        std::uint64_t own = i == 0 ? 0 : (t.by_count ? f.count : f.total_ns);
        f.value = std::max(own, kids);
    }
    Frame& root = t.frames[0];
    // The root counts every call; its time is that of the root calls.
    for (std::size_t i = 1; i < t.frames.size(); ++i) {
        root.count += t.frames[i].count;
        root.unknown += t.frames[i].unknown;
    }
    for (std::uint32_t c : root.children) {
        root.total_ns += t.frames[c].total_ns;
        root.max_ns = std::max(root.max_ns, t.frames[c].max_ns);
    }
    return t;
}

// The widest frames first, a frame only after its parent: the kept set is a tree whose left-out parts are
// inside their parents' widths.
json tree_json(const Tree& t, const HtmlLimits& lim, HtmlStats& st) {
    std::vector<std::int64_t> kept_as(t.frames.size(), -1);
    auto wider = [&](std::uint32_t a, std::uint32_t b) {
        const Frame& x = t.frames[a];
        const Frame& y = t.frames[b];
        if (x.value != y.value) return x.value < y.value;
        if (x.count != y.count) return x.count < y.count;
        return a > b;  // earlier first
    };
    std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, decltype(wider)> q(wider);
    kept_as[0] = 0;
    std::vector<std::uint32_t> order{0};
    for (std::uint32_t c : t.frames[0].children)
        q.push(c);
    while (!q.empty() && order.size() <= lim.frames) {
        std::uint32_t f = q.top();
        q.pop();
        kept_as[f] = 1;
        order.push_back(f);
        for (std::uint32_t c : t.frames[f].children)
            q.push(c);
    }
    // In creation order (parents before children, siblings in call order) with parents renumbered.
    std::sort(order.begin(), order.end());
    std::vector<std::int64_t> new_index(t.frames.size(), -1);
    for (std::size_t i = 0; i < order.size(); ++i)
        new_index[order[i]] = static_cast<std::int64_t>(i);
    json nodes = json::array();
    for (std::uint32_t f : order) {
        const Frame& fr = t.frames[f];
        nodes.push_back(json::array({fr.parent < 0 ? -1 : new_index[fr.parent], fr.function, fr.module, fr.count,
                                     fr.unknown, fr.total_ns, fr.self_ns, fr.max_ns, fr.value}));
    }
    st.frames = order.size() - 1;
    for (std::size_t i = 1; i < t.frames.size(); ++i) {
        if (kept_as[i] >= 0) continue;
        ++st.frames_left_out;
        st.calls_left_out += t.frames[i].count;
    }
    return json{{"by_count", t.by_count},
                {"nodes", std::move(nodes)},
                {"cap", lim.frames},
                {"paths", t.frames.size() - 1},
                {"left_out_paths", st.frames_left_out},
                {"left_out_calls", st.calls_left_out}};
}

// ---- the timeline ----

struct Item {
    std::string kind;  // "phase", "api", "call", "ioctl", "log", "marker"
    std::int64_t row = 0;
    std::uint64_t start = 0;
    std::optional<std::uint64_t> end;
    std::string label;
    std::string tip;
    bool bad = false;  // an error: failed ioctl, API error, warning or worse log line, failed call
};

struct Timeline {
    std::vector<std::string> rows;        // labels
    std::vector<int> row_pid;             // -1 for the pseudo rows
    std::map<int, std::int64_t> pid_row;  // task -> row
    std::set<int> capped_pids;            // tasks past HtmlLimits::threads
    std::vector<Item> items;
    std::map<std::string, std::uint64_t> shown, total, left_out;
    std::uint64_t threads = 0, threads_left_out = 0, unplaced = 0;
    bool order_only = false;  // no timestamps: items in recorded order, 1000 units each
};

std::string hex(std::uint64_t v) {
    return fmt::format("{:#x}", v);
}

std::string ioctl_tip(const IoctlRecord& io, std::optional<std::uint64_t> dur) {
    std::string t = io.name ? *io.name : "unknown request";
    t += fmt::format("\ncmd {}", hex(io.cmd));
    t += fmt::format("\nfd {} {}", io.fd, io.fd_path ? *io.fd_path : io.fd_path_unknown.value_or("unknown"));
    if (io.hclass) t += fmt::format("\nhClass {}", hex(*io.hclass));
    if (io.ctrl) t += fmt::format("\nctrl {}{}", hex(*io.ctrl), io.ctrl_class ? " (" + *io.ctrl_class + ")" : "");
    if (io.status) t += "\nstatus " + *io.status;
    if (io.ret)
        t += fmt::format("\nret {}", *io.ret);
    else
        t += "\nret unknown (exit not seen)";
    if (io.errno_name) t += " " + *io.errno_name + (io.errno_text ? " (" + *io.errno_text + ")" : "");
    t += "\nduration " + (dur ? fmt_ns(*dur) : std::string("unknown"));
    if (io.phase) t += "\nphase " + *io.phase;
    t += fmt::format("\ntask {} ({})", io.comm, io.pid);
    if (!io.calls.empty()) t += fmt::format("\ndriver calls under it: {}", io.calls.size());
    return t;
}

template <class R>
void add_api_calls(const R& r, const auto& add) {
    if constexpr (requires { r.api_calls; }) {
        for (const auto& a : r.api_calls) {
            std::string t = a.function;
            if (a.library) t += " (" + *a.library + ")";
            for (const auto& [k, v] : a.args_decoded)
                t += "\n" + k + " = " + v;
            t += "\nresult " + (a.result ? std::to_string(*a.result) + " " + a.result_name : "unknown");
            t += "\nduration " + (a.exit_ns && *a.exit_ns >= a.entry_ns
                                      ? fmt_ns(*a.exit_ns - a.entry_ns)
                                      : "unknown" + (a.exit_unknown ? ": " + *a.exit_unknown : std::string()));
            t += fmt::format("\ntask {} ({})", a.comm, a.pid);
            bool bad = a.result && *a.result != 0;
            add("api", a.pid, a.comm, opt_u64(a.entry_ns), a.exit_ns, a.function, t, bad);
        }
    }
}

// Ns on the trace clock of a kernel-log line: the trace buffer's own time (printk:console), a /dev/kmsg record's
// time moved onto the trace clock, or, for a report that holds nothing else, the log's own time.
std::optional<std::uint64_t> log_time(const KernelLogMessage& m, bool log_only) {
    if (m.trace_ts_ns) return m.trace_ts_ns;
    if (m.attached == "console" || log_only) return m.ts_ns;
    return std::nullopt;
}

// A template so that the fields another part of nvtrace may add (Report::api_calls, IoctlRecord::duration_ns)
// are read when they exist.
template <class R>
Timeline build_timeline(const R& r, const HtmlLimits& lim) {
    Timeline tl;
    // Rows: phases and API calls first, then one per task by pid, then the lines that belong to no task.
    std::map<int, std::string> comms;
    auto note_task = [&](int pid, const std::string& comm) {
        if (pid < 0) return;
        auto& c = comms[pid];
        if (c.empty()) c = comm;
    };
    for (const Call& c : r.calls)
        if (c.depth == 0) note_task(c.pid, c.comm);
    for (const auto& io : r.ioctls)
        note_task(io.pid, io.comm);
    if constexpr (requires { r.api_calls; })
        for (const auto& a : r.api_calls)
            note_task(a.pid, a.comm);
    tl.rows.push_back("phases");
    tl.row_pid.push_back(-1);
    for (const auto& [pid, comm] : comms) {
        if (tl.pid_row.size() >= lim.threads) {
            ++tl.threads_left_out;
            tl.capped_pids.insert(pid);
            continue;
        }
        tl.pid_row[pid] = static_cast<std::int64_t>(tl.rows.size());
        tl.rows.push_back(fmt::format("{} ({})", comm.empty() ? "?" : comm, pid));
        tl.row_pid.push_back(pid);
    }
    tl.threads = tl.pid_row.size();
    std::int64_t other_row = static_cast<std::int64_t>(tl.rows.size());
    tl.rows.push_back("no task");
    tl.row_pid.push_back(-1);

    auto cap_of = [&](const std::string& kind) -> std::size_t {
        if (kind == "phase") return lim.phases;
        if (kind == "api") return lim.root_calls;
        if (kind == "call") return lim.root_calls;
        if (kind == "ioctl") return lim.ioctls;
        if (kind == "log") return lim.kernel_log;
        return lim.markers;
    };
    // Items without a time are kept until the end: a source without any timestamps (strace without -t, text
    // traces without a time column) is drawn in recorded order instead.
    std::vector<Item> untimed;
    auto plural = [](const std::string& kind) -> std::string {
        if (kind == "phase") return "phases";
        if (kind == "api") return "API calls";
        if (kind == "call") return "root calls";
        if (kind == "ioctl") return "ioctls";
        if (kind == "log") return "kernel-log lines";
        return "markers";
    };
    auto add = [&](const std::string& kind, int pid, const std::string&, std::optional<std::uint64_t> start,
                   std::optional<std::uint64_t> end, std::string label, std::string tip, bool bad) {
        ++tl.total[kind];
        std::int64_t row = other_row;
        if (kind == "phase") {
            row = 0;
        } else if (pid >= 0) {
            if (auto it = tl.pid_row.find(pid); it != tl.pid_row.end()) {
                row = it->second;
            } else if (tl.capped_pids.contains(pid)) {
                ++tl.left_out[plural(kind) + " (thread past the cap)"];
                return;
            }  // else a task that made no call or ioctl (the marker writer): the row without a task
        }
        if (tl.shown[kind] >= cap_of(kind)) {
            ++tl.left_out[fmt::format("{} (past the cap of {})", plural(kind), cap_of(kind))];
            return;
        }
        ++tl.shown[kind];
        if (!start) {
            untimed.push_back(
                Item{kind, row, 0, end.has_value() ? end : std::nullopt, std::move(label), std::move(tip), bad});
            return;
        }
        if (end && *end < *start) end.reset();
        tl.items.push_back(Item{kind, row, *start, end, std::move(label), std::move(tip), bad});
    };
    // Phases as docs/markers.md defines them: from "nvtrace-phase: NAME" to the next phase marker.
    {
        std::optional<std::pair<std::uint64_t, std::string>> open;
        auto close = [&](std::optional<std::uint64_t> at) {
            if (!open) return;
            std::string tip = "phase " + open->second;
            tip += at ? "\nduration " + fmt_ns(*at >= open->first ? *at - open->first : 0)
                      : std::string("\nno end marker: open until the end of the trace");
            add("phase", -1, "", open->first, at, open->second, tip, false);
            open.reset();
        };
        for (const MarkerEntry& m : r.markers) {
            bool phase = false;
            detail::for_each_phase_line(m.text, [&](const detail::PhaseLine& p) {
                phase = true;
                close(m.ts_ns);
                if (p.kind == detail::PhaseLine::begin && m.ts_ns) open = std::make_pair(*m.ts_ns, std::string(p.name));
            });
            if (phase) continue;
            add("marker", m.pid, "", m.ts_ns, std::nullopt, m.text, fmt::format("marker\n{}\npid {}", m.text, m.pid),
                false);
        }
        close(std::nullopt);
    }
    add_api_calls(r, add);
    for (const Call& c : r.calls) {
        if (c.depth != 0) continue;
        std::optional<std::uint64_t> end;
        if (c.entry_ns && c.duration_ns) end = *c.entry_ns + *c.duration_ns;
        if (!c.entry_ns && c.duration_ns) end = 0;  // no time: only says that the exit was seen
        std::string tip = c.function;
        if (c.module) tip += " [" + *c.module + "]";
        tip += "\nduration " + (c.duration_ns ? fmt_ns(*c.duration_ns) : std::string("unknown (exit not seen)"));
        if (c.retval) tip += fmt::format("\nretval {}", *c.retval);
        if (c.phase) tip += "\nphase " + *c.phase;
        tip += fmt::format("\ntask {} ({}), cpu {}", c.comm, c.pid, c.cpu);
        add("call", c.pid, c.comm, c.entry_ns, end, c.function, tip, c.retval && *c.retval < 0 && *c.retval > -4096);
    }
    for (const auto& io : r.ioctls) {
        std::optional<std::uint64_t> enter = opt_u64(io.enter_ns);
        std::optional<std::uint64_t> dur;
        if constexpr (requires { io.duration_ns; }) dur = io.duration_ns;
        if (!dur && enter && io.exit_ns && *io.exit_ns >= *enter) dur = *io.exit_ns - *enter;
        std::optional<std::uint64_t> end;
        if (enter && io.exit_ns) end = io.exit_ns;
        if (!enter && io.ret) end = 0;  // no time: only says that the exit was seen
        bool bad = (io.ret && *io.ret < 0) || (io.status && *io.status != "NV_OK");
        add("ioctl", io.pid, io.comm, enter, end, io.name ? *io.name : hex(io.cmd), ioctl_tip(io, dur), bad);
    }
    bool log_only = r.calls.empty() && r.ioctls.empty() && r.markers.empty();
    std::unordered_map<std::uint64_t, int> pid_of_call;
    for (const KernelLogMessage& m : r.kernel_log)
        if (m.call) pid_of_call.emplace(*m.call, -1);
    if (!pid_of_call.empty())
        for (const Call& c : r.calls)
            if (auto it = pid_of_call.find(c.id); it != pid_of_call.end()) it->second = c.pid;
    for (const KernelLogMessage& m : r.kernel_log) {
        int pid = -1;
        if (m.call)
            if (auto it = pid_of_call.find(*m.call); it != pid_of_call.end()) pid = it->second;
        std::string first = m.text.substr(0, m.text.find('\n'));
        std::string tip = fmt::format("kernel log ({} {}, level {})\n{}", m.source, m.kind, m.level, m.text);
        if (m.call) tip += fmt::format("\nprinted under call {} ({})", *m.call, m.attached);
        add("log", pid, "", log_time(m, log_only), std::nullopt, first, tip, m.level <= 4);
    }
    // No time anywhere (every item at one instant, or none has one): recorded order, one unit per item.
    bool timed = false;
    for (const Item& it : tl.items)
        if (it.start != tl.items.front().start || (it.end && *it.end != it.start)) timed = true;
    if (!timed && tl.items.size() + untimed.size() > 1) {
        for (Item& it : tl.items)
            untimed.push_back(std::move(it));
        tl.items.clear();
        tl.order_only = true;
        std::map<std::string, std::uint64_t> seq;
        for (Item& it : untimed) {
            std::uint64_t k = seq[it.kind]++;
            it.start = k * 1000;
            // An exit that was seen (its time unknown) draws a slice of one unit; an unseen one an instant.
            it.end = it.end ? std::optional<std::uint64_t>(it.start + 1000) : std::nullopt;
            tl.items.push_back(std::move(it));
        }
    } else {
        for (const Item& it : untimed)
            ++tl.left_out[plural(it.kind) + " (no time)"];
        tl.unplaced = untimed.size();
    }
    std::stable_sort(tl.items.begin(), tl.items.end(), [](const Item& a, const Item& b) { return a.start < b.start; });
    return tl;
}

json timeline_json(const Timeline& tl, const HtmlLimits& lim, HtmlStats& st) {
    json rows = json::array();
    for (std::size_t i = 0; i < tl.rows.size(); ++i)
        rows.push_back(tl.rows[i]);
    json items = json::array();
    for (const Item& it : tl.items) {
        json e =
            json::array({it.kind, it.row, it.start, it.end ? json(*it.end) : json(nullptr), it.label, it.tip, it.bad});
        items.push_back(std::move(e));
    }
    st.timeline_items = tl.items.size();
    st.unplaced = tl.unplaced;
    for (const auto& [k, n] : tl.left_out)
        if (k.find("(no time)") == std::string::npos) st.timeline_left_out += n;
    json caps = {{"threads", lim.threads}, {"root calls", lim.root_calls},       {"API calls", lim.root_calls},
                 {"ioctls", lim.ioctls},   {"kernel-log lines", lim.kernel_log}, {"markers", lim.markers},
                 {"phases", lim.phases}};
    return json{{"rows", std::move(rows)},
                {"items", std::move(items)},
                {"total", tl.total},
                {"left_out", tl.left_out},
                {"threads_left_out", tl.threads_left_out},
                {"order_only", tl.order_only},
                {"caps", std::move(caps)}};
}

// ---- the page ----

std::string env_line(const Report& r) {
    std::vector<std::string> parts;
    auto add = [&](const char* what, const std::optional<std::string>& s) {
        if (s && !s->empty()) parts.push_back(what + *s);
    };
    add("source: ", r.source.kind);
    if (auto command = command_text(r.source); !command.empty()) parts.push_back("command: " + command);
    add("tracer: ", r.source.tracer_mode);
    add("kernel: ", r.environment.kernel);
    add("driver: ", r.environment.nvidia_driver_version);
    if (r.environment.nvidia_driver_banner) add("driver: ", *r.environment.nvidia_driver_banner);
    std::string o;
    for (const auto& p : parts)
        o += (o.empty() ? "" : " · ") + p;
    return o;
}

constexpr std::string_view kCss = R"CSS(
:root{--fg:#1d1d1f;--muted:#5f6368;--bg:#fff;--line:#d0d4da;--pass:#1e7b34;--fail:#b3261e;--inc:#8a5a00}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:16px 20px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px;border-bottom:1px solid var(--line)}
.muted{color:var(--muted)}code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
#completeness{font-weight:600;padding:4px 8px;border-radius:4px;display:inline-block}
.complete-yes{background:#e6f4ea;color:var(--pass)}.complete-no{background:#fce8e6;color:var(--fail)}
svg text.row-label{font-weight:700;font-family:system-ui,sans-serif;font-size:12px}svg text.lane-label{fill:#5f6368}
svg text{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:11px;pointer-events:none}
.frame rect{stroke:#fff;stroke-width:.5;cursor:pointer}.frame:focus rect,.frame:hover rect{stroke:#000;stroke-width:1}
.frame.ancestor rect{opacity:.55}.frame.unknown rect{fill:url(#unknown-hatch)}
#flame-details,#timeline-details{min-height:1.4em;white-space:pre-wrap}
.slice{cursor:pointer}.slice:hover{stroke:#000}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:3px 6px;border-bottom:1px solid var(--line)}
td.result{font-weight:600;white-space:nowrap}.check.pass td.result{color:var(--pass)}.check.fail td.result{color:var(--fail)}
.check.inconclusive td.result{color:var(--inc)}td.evidence,td.why{white-space:pre-wrap;font-size:12px}
button{font:inherit;font-size:12px;margin-right:4px}.note{font-size:12px;color:var(--muted)}
)CSS";

// Records script errors in attributes of <html> so that a headless browser's DOM dump shows them: the test
// asserts data-script-errors="0" and data-rendered="yes".
constexpr std::string_view kErrorHook = R"JS(
(function(){var d=document.documentElement;d.setAttribute('data-script-errors','0');
function rec(m){d.setAttribute('data-script-errors',String(+d.getAttribute('data-script-errors')+1));
var l=d.getAttribute('data-script-error-messages')||'';d.setAttribute('data-script-error-messages',l+(l?' | ':'')+m);}
window.addEventListener('error',function(e){rec('error: '+e.message+' at line '+e.lineno);});
window.addEventListener('unhandledrejection',function(e){rec('unhandled rejection: '+e.reason);});
document.addEventListener('securitypolicyviolation',function(e){rec('blocked: '+e.violatedDirective+' '+e.blockedURI);});
var ce=console.error;console.error=function(){rec('console.error: '+Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};
})();
)JS";

constexpr std::string_view kScript = R"JS(
(function(){
'use strict';
var NS='http://www.w3.org/2000/svg';
var data=JSON.parse(document.getElementById('nvtrace-data').textContent);
function el(tag,attrs,parent){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,String(attrs[k]));if(parent)parent.appendChild(e);return e;}
function h(tag,text,parent,cls){var e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=text;if(cls)e.className=cls;if(parent)parent.appendChild(e);return e;}
function fmt(ns){if(ns>=1e9)return (ns/1e9).toFixed(3)+' s';if(ns>=1e6)return (ns/1e6).toFixed(3)+' ms';return (ns/1e3).toFixed(3)+' us';}
function num(n){return String(n).replace(/\B(?=(\d{3})+(?!\d))/g,',');}
var tf=0;  // the first item's time: the timeline's zero
function tl(v){return T.order_only?'item '+Math.max(1,Math.round(v/1000+1)):(v<0?'\u2212'+fmt(-v):'+'+fmt(v));}
function hue(s){var x=0;for(var i=0;i<s.length;i++)x=(x*31+s.charCodeAt(i))>>>0;return x;}
function fit(text,px){var n=Math.floor(px/6.8);if(n<2)return '';return text.length<=n?text:text.slice(0,n-1)+'\u2026';}

// ---- icicle ----
var F=data.flame;
if(F){
  var N=F.nodes,kids=N.map(function(){return [];}),paths=[];
  for(var i=0;i<N.length;i++){if(N[i][0]>=0)kids[N[i][0]].push(i);paths[i]=N[i][0]>0?paths[N[i][0]]+' > '+N[i][1]:(i===0?'':N[i][1]);}
  var host=document.getElementById('flame-graph'),details=document.getElementById('flame-details');
  var zoom=0,ROW=18;
  function total(n){var c=N[n][3],u=N[n][4],t=N[n][5];if(u===c&&t===0)return 'unknown ('+num(u)+' of '+num(c)+' calls without a seen exit)';return fmt(t)+(u?' + unknown ('+num(u)+' of '+num(c)+' calls without a seen exit)':'');}
  function tip(n){if(n===0)return 'all calls\ncalls: '+num(N[0][3])+'\ntotal: '+total(0)+'\nclick to zoom out';
    var s=N[n][1]+(N[n][2]?' ['+N[n][2]+']':'')+'\npath: '+paths[n]+'\ncalls: '+num(N[n][3])+'\ntotal: '+total(n)+'\nself: '+(N[n][4]===N[n][3]&&N[n][5]===0?'unknown':fmt(N[n][6]))+'\nmax: '+(N[n][5]===0&&N[n][4]?'unknown':fmt(N[n][7]));
    return s;}
  function depthOf(n){var d=0;while(N[n][0]>=0){n=N[n][0];d++;}return d;}
  function maxDepth(n){var m=0;kids[n].forEach(function(k){m=Math.max(m,1+maxDepth(k));});return m;}
  function draw(){
    while(host.firstChild)host.removeChild(host.firstChild);
    var W=Math.max(400,host.clientWidth||1160),anc=[],a=zoom;while(a>0){a=N[a][0];anc.unshift(a);}
    var rows=anc.length+1+maxDepth(zoom),H=rows*ROW+2,narrow=0;
    var svg=el('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H,role:'img','aria-labelledby':'flame-title'},host);
    el('title',{id:'flame-title'},svg).textContent='Icicle of the aggregated call tree'+(zoom?', zoomed to '+paths[zoom]:'')+(F.by_count?' (widths by call count)':' (widths by total time)');
    var defs=el('defs',{},svg),pat=el('pattern',{id:'unknown-hatch',width:6,height:6,patternUnits:'userSpaceOnUse',patternTransform:'rotate(45)'},defs);
    el('rect',{width:6,height:6,fill:'#c8c8c8'},pat);el('line',{x1:0,y1:0,x2:0,y2:6,stroke:'#8c8c8c','stroke-width':2},pat);
    function frame(n,x,w,y,cls){
      var g=el('g',{'class':'frame'+(cls?' '+cls:'')+(n>0&&N[n][5]===0&&N[n][4]?' unknown':''),tabindex:0,'data-path':n===0?'all calls':paths[n],'data-function':N[n][1],'data-count':N[n][3],'data-total-ns':N[n][4]===N[n][3]&&N[n][5]===0?'unknown':N[n][5],'data-self-ns':N[n][6]},svg);
      var t=tip(n);el('title',{},g).textContent=t;
      var h0=n===0?210:(N[n][2]&&N[n][2].indexOf('uvm')>=0?200:(N[n][2]==='nvidia'?95:hue(N[n][2]||N[n][1])%50+10));
      var light=n===0?85:55+hue(N[n][1])%20;
      el('rect',{x:x.toFixed(2),y:y,width:Math.max(w,0.5).toFixed(2),height:ROW-1,fill:'hsl('+h0+',65%,'+light+'%)',rx:1},g);
      var label=fit(n===0?'all calls '+(F.by_count?num(N[0][3])+' calls':fmt(N[0][5])):N[n][1],w-6);
      if(label)el('text',{x:(x+3).toFixed(2),y:y+ROW-6},g).textContent=label;
      function show(){details.textContent=t.replace(/\n/g,' \u00b7 ');}
      g.addEventListener('mouseenter',show);g.addEventListener('focus',show);
      function act(){zoom=(n===zoom&&n!==0)?Math.max(N[n][0],0):n;draw();}
      g.addEventListener('click',act);g.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();act();}});
      return g;}
    var y=0;anc.forEach(function(n){frame(n,0,W,y,'ancestor');y+=ROW;});
    var zv=N[zoom][8]||1;
    function lay(n,x,w,y){frame(n,x,w,y,n===zoom&&zoom!==0?'zoomed':'');var cx=x;kids[n].forEach(function(k){var kw=w*N[k][8]/(N[n][8]||1);if(kw<0.5){narrow++;cx+=kw;return;}lay(k,cx,kw,y+ROW);cx+=kw;});}
    lay(zoom,0,W,y);
    document.getElementById('flame-narrow').textContent=narrow?num(narrow)+' frames narrower than half a pixel at this zoom are not drawn (zoom in to see them).':'';
  }
  draw();window.addEventListener('resize',draw);
  // The accessible alternative: the widest paths as a table.
  var order=N.map(function(_,i){return i;}).filter(function(i){return i>0;}).sort(function(a,b){return N[b][8]-N[a][8]||a-b;}).slice(0,50);
  var tb=document.getElementById('flame-table');
  order.forEach(function(i){var tr=h('tr',null,tb);h('td',paths[i],tr,'mono');h('td',num(N[i][3]),tr);h('td',total(i),tr);h('td',N[i][4]===N[i][3]&&N[i][5]===0?'unknown':fmt(N[i][6]),tr);});
}

// ---- timeline ----
var T=data.timeline,th=document.getElementById('timeline-graph');
if(T&&T.items.length){
  var tdet=document.getElementById('timeline-details'),t0=Infinity,t1=-Infinity;
  T.items.forEach(function(it){t0=Math.min(t0,it[2]);t1=Math.max(t1,it[3]===null?it[2]:it[3]);});
  if(t1<=t0)t1=t0+1000;
  tf=t0;var pad=(t1-t0)*0.01;t0-=pad;t1+=pad;  // instants at the ends stay inside the plot
  var view=[t0,t1],LANES={phase:0,api:0,call:1,ioctl:2,log:3,marker:3},LN=['phases, API calls','calls','ioctls','log, markers'];
  var used={};T.items.forEach(function(it){(used[it[1]]=used[it[1]]||{})[LANES[it[0]]]=1;});
  var rowsShown=T.rows.map(function(_,r){return used[r]?Object.keys(used[r]).map(Number).sort():[];});
  var COL={phase:'#b39ddb',api:'#80cbc4',call:'#ffcc80',ioctl:'#90caf9',log:'#ef9a9a',marker:'#bdbdbd'};
  function drawT(){
    while(th.firstChild)th.removeChild(th.firstChild);
    var W=Math.max(400,th.clientWidth||1160),LEFT=150,PW=W-LEFT-10,LH=16,y=22,pos={},head={};
    rowsShown.forEach(function(ls,r){if(!ls.length)return;head[r]=y;y+=15;pos[r]={};ls.forEach(function(l){pos[r][l]=y;y+=LH;});y+=6;});
    var svg=el('svg',{width:W,height:y+4,viewBox:'0 0 '+W+' '+(y+4),role:'img','aria-labelledby':'timeline-title'},th);
    el('title',{id:'timeline-title'},svg).textContent=T.order_only?'Timeline per thread in recorded order (the source has no timestamps)':'Timeline per thread, '+fmt(Math.max(0,view[0]-tf))+' to '+fmt(view[1]-tf)+' after the first item';
    var span=view[1]-view[0];function X(t){return LEFT+(t-view[0])/span*PW;}
    for(var k=0;k<=5;k++){var tx=LEFT+PW*k/5;el('line',{x1:tx,y1:14,x2:tx,y2:y,stroke:'#e0e0e0'},svg);el('text',{x:k===5?tx-2:tx+2,y:11,'text-anchor':k===5?'end':'start'},svg).textContent=tl(view[0]-tf+span*k/5);}
    rowsShown.forEach(function(ls,r){if(!ls.length)return;
      el('text',{x:2,y:head[r]+11,'class':'row-label'},svg).textContent=T.rows[r];
      el('line',{x1:2,y1:head[r]+14,x2:W-10,y2:head[r]+14,stroke:'#c0c4ca'},svg);
      ls.forEach(function(l){var ty=pos[r][l];
      el('text',{x:12,y:ty+LH-4,'class':'lane-label'},svg).textContent=LN[l];
      el('line',{x1:LEFT,y1:ty+LH,x2:W-10,y2:ty+LH,stroke:'#f0f0f0'},svg);});});
    var clip=el('clipPath',{id:'tclip'},el('defs',{},svg));el('rect',{x:LEFT,y:0,width:PW,height:y},clip);
    var layer=el('g',{'clip-path':'url(#tclip)'},svg);
    T.items.forEach(function(it){var end=it[3]===null?it[2]:it[3];if(end<view[0]||it[2]>view[1])return;
      var ty=pos[it[1]][LANES[it[0]]],x=X(it[2]),g=el('g',{'class':'slice '+it[0]+(it[6]?' error':''),'data-kind':it[0],'data-label':it[4],tabindex:0},layer);
      el('title',{},g).textContent=it[5];
      if(it[3]!==null){var w=Math.max(1,X(it[3])-x);el('rect',{x:x.toFixed(2),y:ty+1,width:w.toFixed(2),height:LH-2,fill:it[6]?'#e57373':COL[it[0]],stroke:it[6]?'#b3261e':'none'},g);
        var lb=fit(it[4],w-4);if(lb)el('text',{x:(x+2).toFixed(2),y:ty+LH-4},g).textContent=lb;}
      else{el('path',{d:'M'+x.toFixed(2)+' '+(ty+1)+'l4 7l-4 7l-4 -7z',fill:it[6]?'#d32f2f':(it[0]==='ioctl'||it[0]==='call'?'#616161':COL[it[0]]),stroke:'#424242','stroke-width':0.5},g);}
      function show(){tdet.textContent=it[5].replace(/\n/g,' \u00b7 ');}
      g.addEventListener('mouseenter',show);g.addEventListener('focus',show);
      g.addEventListener('click',function(){var pad=Math.max((end-it[2])*0.5,span*0.01);view=[it[2]-pad,end+pad];drawT();});});
  }
  document.getElementById('tl-in').addEventListener('click',function(){var c=(view[0]+view[1])/2,s=(view[1]-view[0])/4;view=[c-s,c+s];drawT();});
  document.getElementById('tl-out').addEventListener('click',function(){var c=(view[0]+view[1])/2,s=(view[1]-view[0]);view=[c-s,c+s];drawT();});
  document.getElementById('tl-reset').addEventListener('click',function(){view=[t0,t1];drawT();});
  drawT();window.addEventListener('resize',drawT);
}
var lo=document.getElementById('timeline-left-out');
if(T){var parts=[];Object.keys(T.left_out).forEach(function(k){parts.push(num(T.left_out[k])+' '+k);});
  if(T.threads_left_out)parts.push(num(T.threads_left_out)+' threads past the cap of '+T.caps.threads);
  lo.textContent=parts.length?'Left out of the timeline: '+parts.join('; ')+'.':'Nothing was left out of the timeline.';}
// ---- kernel log list ----
var kl=document.getElementById('klog-table');
if(kl&&T){T.items.forEach(function(it){if(it[0]!=='log')return;var tr=h('tr',null,kl,it[6]?'error':'');h('td',tl(it[2]-tf),tr,'mono');h('td',it[5],tr,'mono');});}
var it2=document.getElementById('ioctl-table');
if(it2&&T){T.items.forEach(function(it){if(it[0]!=='ioctl')return;var tr=h('tr',null,it2,it[6]?'error':'');h('td',tl(it[2]-tf),tr,'mono');h('td',T.rows[it[1]],tr);h('td',it[4],tr,'mono');h('td',it[5].split('\n').slice(1).join(' \u00b7 '),tr,'mono');});}
document.documentElement.setAttribute('data-rendered','yes');
})();
)JS";

void write_check_rows(const Report& r, std::ostream& out) {
    for (const Check& c : r.checks) {
        std::string cls = c.result == "pass" || c.result == "fail" ? c.result : "inconclusive";
        out << "<tr class=\"check " << cls << "\" data-check=\"" << html_escape(c.id) << "\"><td class=\"result\">"
            << html_escape(c.result == "fail" ? "FAIL" : c.result) << "</td><td class=\"mono\">" << html_escape(c.id)
            << "</td><td class=\"evidence\">" << html_escape(c.evidence.empty() ? "(none)" : c.evidence)
            << "</td><td class=\"why\">" << html_escape(c.why) << "</td></tr>\n";
    }
}

}  // namespace

HtmlStats write_html_report(const Report& r, std::ostream& out, const HtmlLimits& lim) {
    HtmlStats st;
    json data = json::object();
    bool has_tree = !r.calls.empty() || !r.graph.empty();
    if (has_tree)
        data["flame"] = tree_json(build_tree(r), lim, st);
    else
        data["flame"] = nullptr;
    Timeline tl = build_timeline(r, lim);
    data["timeline"] = timeline_json(tl, lim, st);

    std::string title = "nvtrace report";
    if (auto command = command_text(r.source); !command.empty()) title += ": " + command;
    const Completeness& c = r.completeness;
    std::string cline = completeness_line(c);

    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           // Nothing may be fetched: the page is one file, and a browser enforces it.
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'unsafe-inline'; img-src data:\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
           "<meta name=\"generator\" content=\"nvtrace export --format html\">\n<title>"
        << html_escape(title) << "</title>\n<script>" << kErrorHook << "</script>\n<style>" << kCss
        << "</style>\n</head>\n<body>\n<header>\n<h1>" << html_escape(title) << "</h1>\n<p class=\"muted\">"
        << html_escape(env_line(r)) << "</p>\n<p class=\"muted\">"
        << html_escape(fmt::format("{} calls · {} ioctls · {} kernel-log lines · {} markers · {} checks",
                                   thousands(r.calls.size()), thousands(r.ioctls.size()),
                                   thousands(r.kernel_log.size()), thousands(r.markers.size()),
                                   thousands(r.checks.size())))
        << "</p>\n<p id=\"completeness\" class=\"" << (c.complete ? "complete-yes" : "complete-no")
        << "\" data-complete=\"" << (c.complete ? "yes" : "no") << "\">" << html_escape(cline) << "</p>\n</header>\n";

    if (has_tree) {
        out << "<section id=\"flame\" aria-labelledby=\"flame-h\">\n<h2 id=\"flame-h\">Call tree</h2>\n"
               "<p class=\"note\">Icicle of the aggregated call paths: a frame per path, its width by total time"
            << (data["flame"]["by_count"].get<bool>() ? " (here by call count: no duration is known)" : "")
            << ". Click a frame to zoom to it, the top frame to zoom out; hover for function, count, total and self. "
               "Hatched frames have no known duration (their exits were not seen).</p>\n"
               "<p id=\"flame-details\" class=\"mono\" aria-live=\"polite\"></p>\n<div id=\"flame-graph\"></div>\n"
               "<p id=\"flame-narrow\" class=\"note\"></p>\n<p id=\"flame-cap\" class=\"note\">"
            << html_escape(st.frames_left_out == 0
                               ? fmt::format("All {} call paths are in this page.", thousands(st.frames))
                               : fmt::format("{} of {} call paths are in this page (the widest, cap {}); {} paths with "
                                             "{} calls are left out, their time stays inside their parents' frames.",
                                             thousands(st.frames), thousands(st.frames + st.frames_left_out),
                                             thousands(lim.frames), thousands(st.frames_left_out),
                                             thousands(st.calls_left_out)))
            << "</p>\n<details><summary>The widest call paths as a table</summary>\n<table><thead><tr><th>path</th>"
               "<th>calls</th><th>total</th><th>self</th></tr></thead><tbody id=\"flame-table\"></tbody></table>"
               "</details>\n</section>\n";
    } else {
        out << "<p id=\"no-calls\" class=\"note\">No function calls in this report (function_graph was not traced, "
               "or the kernel refused it): no call tree.</p>\n";
    }
    out << "<section id=\"timeline\" aria-labelledby=\"timeline-h\">\n<h2 id=\"timeline-h\">Timeline</h2>\n"
           "<p class=\"note\">Per thread: phases and API calls, root calls, ioctls (enter to exit; a diamond when the "
           "exit or its time is unknown), kernel-log lines and markers (instants). Red: an error (negative return, "
           "an RM status other than NV_OK, a log line at warning level or worse). Click an item to zoom to it.</p>\n"
           "<p><button type=\"button\" id=\"tl-in\">zoom in</button><button type=\"button\" id=\"tl-out\">zoom "
           "out</button><button type=\"button\" id=\"tl-reset\">whole trace</button></p>\n"
           "<p id=\"timeline-details\" class=\"mono\" aria-live=\"polite\"></p>\n<div id=\"timeline-graph\"></div>\n"
           "<p id=\"timeline-left-out\" class=\"note\"></p>\n";
    if (tl.order_only)
        out << "<p id=\"timeline-order-only\" class=\"note\">The source has no timestamps: items are drawn in "
               "recorded order, one unit each (the axis counts items, not time).</p>\n";
    if (st.unplaced)
        out << "<p id=\"timeline-unplaced\" class=\"note\">"
            << html_escape(fmt::format("{} items have no time on the trace clock and are not on the timeline "
                                       "(kernel-log lines from /dev/kmsg without a clock offset, markers of text "
                                       "traces without timestamps).",
                                       thousands(st.unplaced)))
            << "</p>\n";
    out << "</section>\n";
    if (!r.ioctls.empty())
        out << "<section id=\"ioctls\" aria-labelledby=\"ioctls-h\">\n<h2 id=\"ioctls-h\">ioctls on the timeline</h2>\n"
            << (has_tree ? "<details>" : "<details open>") << "<summary>"
            << html_escape(fmt::format("{} ioctls", thousands(r.ioctls.size())))
            << "</summary><table><thead><tr><th>time</th><th>task</th><th>request</th><th>details</th></tr></thead>"
               "<tbody id=\"ioctl-table\"></tbody></table></details>\n</section>\n";
    if (!r.kernel_log.empty())
        out << "<section id=\"klog\" aria-labelledby=\"klog-h\">\n<h2 id=\"klog-h\">Kernel log on the timeline</h2>\n"
            << (has_tree || !r.ioctls.empty() ? "<details>" : "<details open>") << "<summary>"
            << html_escape(fmt::format("{} kernel-log lines", thousands(r.kernel_log.size())))
            << "</summary><table><thead><tr><th>time</th><th>line</th></tr></thead><tbody "
               "id=\"klog-table\"></tbody></table></details>\n</section>\n";
    out << "<section id=\"checks\" aria-labelledby=\"checks-h\">\n<h2 id=\"checks-h\">Checks</h2>\n";
    if (r.checks.empty()) {
        out << "<p class=\"note\">No checks in this report (run with a scenario, or nvtrace check --expect).</p>\n";
    } else {
        std::map<std::string, std::uint64_t> by;
        for (const Check& k : r.checks)
            ++by[k.result];
        std::string sum;
        for (const auto& [k, n] : by)
            sum += (sum.empty() ? "" : ", ") + fmt::format("{} {}", n, k);
        out << "<p>" << html_escape(sum) << "</p>\n<table><thead><tr><th>result</th><th>check</th><th>evidence"
            << "</th><th>why</th></tr></thead><tbody>\n";
        write_check_rows(r, out);
        out << "</tbody></table>\n";
    }
    out << "</section>\n<footer class=\"note\"><p>"
        << html_escape(fmt::format("Written by nvtrace export --format html. Caps: {} call paths, {} threads, {} root "
                                   "calls, {} ioctls, {} kernel-log lines, {} markers, {} phases (docs/export.md).",
                                   thousands(lim.frames), thousands(lim.threads), thousands(lim.root_calls),
                                   thousands(lim.ioctls), thousands(lim.kernel_log), thousands(lim.markers),
                                   thousands(lim.phases)))
        << "</p></footer>\n<script type=\"application/json\" id=\"nvtrace-data\">" << script_json(data)
        << "</script>\n<script>" << kScript << "</script>\n</body>\n</html>\n";
    return st;
}

}  // namespace nvtrace
