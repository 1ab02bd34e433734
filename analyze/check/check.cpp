// The checker (nvtrace/expect.hpp; rules in docs/expectations.md, "How a check is decided").
#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "../phases.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/symbol_name.hpp"
#include "values.hpp"

namespace nvtrace {

namespace {

using namespace check_values;

enum class Tri : std::uint8_t { yes, no, unknown };

enum class Outcome : std::uint8_t { pass, inconclusive, fail };  // ordered: worse is larger

struct FactResult {
    Outcome outcome = Outcome::pass;
    std::string evidence;
    std::string missing;  // for inconclusive: the data that was missing
};

constexpr std::string_view kResultMarker = "nvtrace-result: ";
constexpr std::size_t kMaxNames = 8;

std::optional<DriverVersion> leading_version(std::string_view s) {
    std::size_t n = 0;
    while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.'))
        ++n;
    std::string_view v = s.substr(0, n);
    while (!v.empty() && v.back() == '.')
        v.remove_suffix(1);
    // "6.1.0" or "595.45.04"; a fourth component ("6.1.0.1") is cut off.
    int dots = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] == '.' && ++dots == 3) {
            v = v.substr(0, i);
            break;
        }
    return parse_driver_version(v);
}

// The first "N.N[.N]" word of a banner ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  ...").
std::optional<DriverVersion> banner_version(std::string_view banner) {
    std::size_t i = 0;
    while (i < banner.size()) {
        while (i < banner.size() && banner[i] == ' ')
            ++i;
        std::size_t b = i;
        while (i < banner.size() && banner[i] != ' ')
            ++i;
        std::string_view w = banner.substr(b, i - b);
        if (w.find('.') != std::string_view::npos && std::isdigit(static_cast<unsigned char>(w.front())))
            if (auto v = parse_driver_version(w)) return v;
    }
    return std::nullopt;
}

const char* op_text(Condition::Op op) {
    switch (op) {
        case Condition::Op::lt:
            return "<";
        case Condition::Op::le:
            return "<=";
        case Condition::Op::eq:
            return "==";
        case Condition::Op::ne:
            return "!=";
        case Condition::Op::ge:
            return ">=";
        case Condition::Op::gt:
            return ">";
    }
    return "?";
}

Tri holds(const Condition& c, const CheckEnvironment& env) {
    if (c.subject == Condition::Subject::flavour) {
        if (!env.flavour) return Tri::unknown;
        return *env.flavour == c.flavour ? Tri::yes : Tri::no;
    }
    const auto& v = c.subject == Condition::Subject::driver ? env.driver : env.kernel;
    if (!v) return Tri::unknown;
    bool r = false;
    switch (c.op) {
        case Condition::Op::lt:
            r = *v < c.version;
            break;
        case Condition::Op::le:
            r = *v <= c.version;
            break;
        case Condition::Op::eq:
            r = *v == c.version;
            break;
        case Condition::Op::ne:
            r = *v != c.version;
            break;
        case Condition::Op::ge:
            r = *v >= c.version;
            break;
        case Condition::Op::gt:
            r = *v > c.version;
            break;
    }
    return r ? Tri::yes : Tri::no;
}

Tri all_hold(const std::vector<Condition>& cs, const CheckEnvironment& env) {
    Tri out = Tri::yes;
    for (const auto& c : cs) {
        Tri t = holds(c, env);
        if (t == Tri::no) return Tri::no;
        if (t == Tri::unknown) out = Tri::unknown;
    }
    return out;
}

std::string describe_env(const std::vector<Condition>& cs, const CheckEnvironment& env) {
    std::vector<std::string> parts;
    std::set<Condition::Subject> seen;
    for (const auto& c : cs) {
        if (!seen.insert(c.subject).second) continue;
        switch (c.subject) {
            case Condition::Subject::driver:
                parts.push_back(env.driver ? "driver " + to_string(*env.driver) : "driver version unknown");
                break;
            case Condition::Subject::kernel:
                parts.push_back(env.kernel ? "kernel " + to_string(*env.kernel) : "kernel version unknown");
                break;
            case Condition::Subject::flavour:
                parts.push_back(env.flavour ? "flavour " + *env.flavour : "driver flavour unknown");
                break;
        }
    }
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::string conditions_text(const std::vector<Condition>& cs) {
    std::vector<std::string> t;
    for (const auto& c : cs)
        t.push_back(c.subject == Condition::Subject::flavour
                        ? "flavour " + c.flavour
                        : fmt::format("{} {} {}", c.subject == Condition::Subject::driver ? "driver" : "kernel",
                                      op_text(c.op), to_string(c.version)));
    return fmt::format("{}", fmt::join(t, " and "));
}

std::string join_limited(const std::vector<std::string>& names, std::size_t limit = kMaxNames) {
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < limit; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > limit) out += fmt::format(", ... ({} in all)", names.size());
    return out;
}

bool same_value(std::string_view expected, std::string_view actual) {
    if (expected == actual) return true;
    auto a = number(expected), b = number(actual);
    if (a && b) return *a == *b;
    if (expected.size() != actual.size()) return false;
    for (std::size_t i = 0; i < expected.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(expected[i])) !=
            std::tolower(static_cast<unsigned char>(actual[i])))
            return false;
    return true;
}

// Whether a `pci=` or `device=` field names the address a kernel-log line names: the same domain, bus and device,
// and the same function when both give one. A line without a function (an Xid's "PCI:0000:01:00") names the
// device, which nvidia-smi's full address (function 0) is on; comparing the strings failed that line.
bool same_pci(std::string_view expected, std::string_view actual) {
    auto e = check_values::pci_address(expected), a = check_values::pci_address(actual);
    if (!e || !a) return same_value(expected, actual);
    return e->domain == a->domain && e->bus == a->bus && e->device == a->device &&
           (!e->function || !a->function || *e->function == *a->function);
}

// ---- where data is missing -------------------------------------------------------------------------------

// The kinds of data a hole can hide (a fact looks for one of them).
enum Hides : unsigned { kCalls = 1, kIoctls = 2, kLog = 4, kMarkers = 8, kAllData = 15 };

// A span of the trace where data is known to be missing: the data of `hides` that fell strictly between after_ns
// and before_ns (an absent bound: unbounded that way) may be lost. A loss the report does not place (overruns
// counted per CPU over the whole run, dropped events, unreadable lines, ...) has neither bound: it may hide
// anything anywhere.
struct Hole {
    unsigned hides = kAllData;
    std::optional<std::uint64_t> after_ns, before_ns;
    std::string text;  // what is missing, for a check's why
};

// A phase's time: from its marker to the next phase marker (docs/markers.md); absent bounds are open.
struct Window {
    std::optional<std::uint64_t> from_ns, until_ns;
};

// "1234.5 us" from ns (up to three decimals, trailing zeros dropped).
std::string us_text(std::uint64_t ns) {
    std::string t = fmt::format("{}.{:03}", ns / 1000, ns % 1000);
    while (t.back() == '0')
        t.pop_back();
    if (t.back() == '.') t.pop_back();
    return t + " us";
}

// The spans of `phase` as the phase markers give them ("nvtrace-phase: NAME" starts NAME and ends the phase
// before it, "nvtrace-phase-end" ends it). A marker without a time makes the phase's time unknown: one open window.
std::vector<Window> phase_windows(const Report& r, const std::string& phase) {
    std::vector<Window> out;
    bool open = false;
    for (const auto& m : r.markers) {
        bool unknown_time = false;
        detail::for_each_phase_line(m.text, [&](const detail::PhaseLine& p) {
            if (!m.ts_ns) {
                unknown_time = true;
                return;
            }
            if (open) {
                out.back().until_ns = *m.ts_ns;
                open = false;
            }
            if (p.kind == detail::PhaseLine::begin && p.name == phase) {
                out.push_back({*m.ts_ns, std::nullopt});
                open = true;
            }
        });
        if (unknown_time) return {Window{}};
    }
    if (out.empty()) out.push_back({});  // never marked: run_check says so before any fact is decided
    return out;
}

// Where the report says data is missing. A gap (completeness.gaps) is placed by its CPU and time: its data lies
// between the CPU's recorded events around the mark (the report's calls and events with that CPU: a call's entry
// when it was recorded, an orphan return's exit; ioctls, markers, the exits of calls whose entry was recorded (a
// task may return on another CPU) and times that were inferred carry no CPU here, so the neighbours found may lie
// farther out than the real ones, never nearer):
//  - buffer_started on CPU N: N's events before its first event after the mark were overwritten (ftrace prints
//    the mark before that event; kernel/trace/trace.c, test_cpu_buff_start);
//  - lost_events on CPU N at time T, the time of N's first record after the loss (a ring-buffer page's missed
//    events precede its first record; "CPU:N [LOST M EVENTS]" is printed with N's next record and the text
//    readers give it that record's time): between N's last event before T and its first at or after T;
//  - a gap without a CPU (an elided row): between the events of any CPU around it.
// A gap without a time, and every loss the report counts but does not place, hides everything, except that a
// loss of the ring buffer cannot hide kernel-log lines that did not come through it: a live capture that read
// /dev/kmsg (kmsg_clock recorded) and has no printk:console line (attached "console") in its kernel log.
std::vector<Hole> build_holes(const Report& r) {
    // function_graph text's context-switch banner (fgraph_text.cpp): its time is the line's before it, which may
    // be another CPU's, so it places nothing.
    static constexpr std::string_view kBorrowedTimeEvent = "nvtrace:task_switch";
    const Completeness& cm = r.completeness;
    std::vector<Hole> holes;
    const bool log_outside_buffer =
        r.kmsg_clock && std::none_of(r.kernel_log.begin(), r.kernel_log.end(),
                                     [](const KernelLogMessage& m) { return m.attached == "console"; });
    const unsigned buffer_data = log_outside_buffer ? kAllData & ~kLog : kAllData;
    std::map<int, std::vector<std::uint64_t>> cpu_times;  // CPU -> times of its recorded events, sorted
    std::vector<std::uint64_t> all_times;
    for (const Call& c : r.calls) {
        if (!c.entry_ns) continue;
        if (c.entry_seen) {
            if (c.cpu >= 0) cpu_times[c.cpu].push_back(*c.entry_ns);
            all_times.push_back(*c.entry_ns);
        } else if (c.exit_seen && c.duration_ns) {
            // An inferred entry's time is the return's less its duration: no event was recorded then (the entry
            // may lie in the very gap). The return was recorded, on the call's CPU.
            if (c.cpu >= 0) cpu_times[c.cpu].push_back(*c.entry_ns + *c.duration_ns);
            all_times.push_back(*c.entry_ns + *c.duration_ns);
        }
    }
    for (const EventRecord& e : r.events)
        if (e.ts_ns && e.name != kBorrowedTimeEvent) {
            if (e.cpu >= 0) cpu_times[e.cpu].push_back(*e.ts_ns);
            all_times.push_back(*e.ts_ns);
        }
    for (const IoctlRecord& io : r.ioctls) {
        if (io.enter_ns) all_times.push_back(*io.enter_ns);
        if (io.exit_ns) all_times.push_back(*io.exit_ns);
    }
    for (const MarkerEntry& m : r.markers)
        if (m.ts_ns) all_times.push_back(*m.ts_ns);
    for (auto& [cpu, t] : cpu_times)
        std::sort(t.begin(), t.end());
    std::sort(all_times.begin(), all_times.end());
    static const std::vector<std::uint64_t> kNone;
    auto times_of = [&](int cpu) -> const std::vector<std::uint64_t>& {
        if (cpu < 0) return all_times;
        auto it = cpu_times.find(cpu);
        return it == cpu_times.end() ? kNone : it->second;
    };
    auto last_before = [](const std::vector<std::uint64_t>& t, std::uint64_t ts) -> std::optional<std::uint64_t> {
        auto it = std::lower_bound(t.begin(), t.end(), ts);
        if (it == t.begin()) return std::nullopt;
        return *std::prev(it);
    };
    auto first_from = [](const std::vector<std::uint64_t>& t, std::uint64_t ts) -> std::optional<std::uint64_t> {
        auto it = std::lower_bound(t.begin(), t.end(), ts);
        if (it == t.end()) return std::nullopt;
        return *it;
    };
    auto line_text = [](const Gap& g) { return g.line ? fmt::format(", line {}", *g.line) : std::string(); };

    // The `trace` header's overwritten entries: with buffer_started marks (the annotate option was on) they are
    // the marked CPUs' events before their marks, and the first printed CPU's before the trace begins (ftrace
    // does not mark the first entry); without marks they are not placed.
    std::uint64_t overwritten = 0;
    if (cm.entries_in_buffer && cm.entries_written && *cm.entries_written > *cm.entries_in_buffer)
        overwritten = *cm.entries_written - *cm.entries_in_buffer;
    std::size_t started_marks = 0;
    std::uint64_t placed_lost = 0;
    for (const Gap& g : cm.gaps) {
        if (g.kind == "buffer_started") ++started_marks;
        if (g.kind == "lost_events" && g.count) placed_lost += *g.count;
    }

    for (const Gap& g : cm.gaps) {
        Hole h;
        if (g.kind != "elided") h.hides = buffer_data;
        const auto& t = times_of(g.cpu);
        std::string cpu = g.cpu >= 0 ? fmt::format(" on CPU {}", g.cpu) : std::string();
        if (g.kind == "buffer_started") {
            if (g.ts_ns) h.before_ns = first_from(t, *g.ts_ns);
            std::string before = h.before_ns ? " before " + us_text(*h.before_ns) : std::string();
            if (overwritten && started_marks == 1)
                h.text = fmt::format("{} entries overwritten{}{} (the buffer wrapped{})", thousands(overwritten), cpu,
                                     before, line_text(g));
            else if (overwritten)
                h.text = fmt::format("entries overwritten{}{} (the buffer wrapped: {} entries in all{})", cpu, before,
                                     thousands(overwritten), line_text(g));
            else
                h.text = fmt::format("events overwritten{}{} (its buffer started late{})", cpu, before, line_text(g));
        } else {
            if (g.ts_ns) {
                h.after_ns = last_before(t, *g.ts_ns);
                h.before_ns = first_from(t, g.cpu >= 0 ? *g.ts_ns : *g.ts_ns + 1);
            }
            std::string span = h.after_ns && h.before_ns
                                   ? fmt::format(" between {} and {}", us_text(*h.after_ns), us_text(*h.before_ns))
                               : h.before_ns ? " before " + us_text(*h.before_ns)
                               : h.after_ns  ? " after " + us_text(*h.after_ns)
                                             : std::string();
            if (g.kind == "elided")
                h.text = fmt::format("lines elided{}{} (an excerpt{})", cpu, span, line_text(g));
            else
                h.text = fmt::format("{} events lost{}{}{}", g.count ? thousands(*g.count) : "an unknown number of",
                                     cpu, span, g.line ? fmt::format(" (line {})", *g.line) : std::string());
        }
        if (!g.ts_ns) h.after_ns = h.before_ns = std::nullopt;  // no time: anywhere
        holes.push_back(std::move(h));
    }
    if (overwritten && started_marks) {
        Hole h;
        h.hides = buffer_data;
        if (!all_times.empty()) h.before_ns = all_times.front();
        h.text = fmt::format("entries overwritten before the trace begins (the buffer wrapped: {} entries in all)",
                             thousands(overwritten));
        holes.push_back(std::move(h));
    }

    // Counted, not placed: hides everything (the call-tree counts: every call).
    auto unplaced = [&](unsigned hides, std::string text) { holes.push_back({hides, {}, {}, std::move(text)}); };
    if (cm.lost_events > placed_lost)
        unplaced(buffer_data, fmt::format("{} lost events", cm.lost_events - placed_lost));
    std::uint64_t overruns = cm.overruns - (started_marks ? std::min(overwritten, cm.overruns) : 0);
    if (overruns) unplaced(buffer_data, fmt::format("{} ring-buffer overruns", overruns));
    if (cm.dropped_events) unplaced(buffer_data, fmt::format("{} dropped events", cm.dropped_events));
    if (cm.graph_overruns) unplaced(kCalls, fmt::format("{} graph return-stack overruns", cm.graph_overruns));
    if (cm.orphan_returns()) unplaced(kCalls, fmt::format("{} returns without entry", cm.orphan_returns()));
    if (cm.unclosed_calls()) unplaced(kCalls, fmt::format("{} calls without exit", cm.unclosed_calls()));
    for (const Diagnostic& d : cm.diagnostics) {
        const DiagnosticInfo* info = find_diagnostic(d.name);
        if (info &&
            (info->id == Diag::lost_event_marks || info->id == Diag::buffer_started || info->id == Diag::elided_span ||
             info->id == Diag::orphan_return || info->id == Diag::unclosed_call))
            continue;                                  // the gaps and counts above
        if (info && info->id == Diag::kmsg_seq_gap) {  // /dev/kmsg records: they hold kernel-log lines only
            unplaced(kLog, fmt::format("{} kernel log records missing by their seq ({})", d.count, d.first_example));
            continue;
        }
        if (info && info->id == Diag::depth_gap) {
            unplaced(kCalls, fmt::format("{} calls whose parent entries are missing", d.count));
            continue;
        }
        if (info ? makes_incomplete(*info) : d.severity == "data_loss")
            unplaced(kAllData, fmt::format("{}: {} ({})", d.name, d.count, d.first_example));
    }
    // /dev/kmsg said EPIPE (EventStream::kmsg_overwritten): the report keeps only its reason.
    for (const std::string& why : cm.reasons)
        if (why.rfind("kernel log records were overwritten", 0) == 0) unplaced(kLog, why);
    if (!cm.complete && holes.empty())
        unplaced(kAllData, cm.reasons.empty() ? std::string("the report says it is incomplete")
                                              : fmt::format("{}", fmt::join(cm.reasons, ", ")));
    return holes;
}

struct Context {
    const Report& report;
    const ExpectFile& file;
    CheckEnvironment env;
    std::map<std::uint64_t, std::vector<const Call*>> children;
    std::map<std::uint64_t, const Call*> by_id;
    // Functions are compared by their base names (normalise_symbol: no clone suffix, ".isra.0", ".constprop.0",
    // ".part.0", ".cold"): a rebuilt driver whose compiler cloned or split a function otherwise is the same driver.
    std::set<std::string> functions_seen;                      // base names, anywhere in the report
    std::unordered_map<std::string, std::string> clone_bases;  // each call name that has a suffix -> its base
    std::vector<Hole> holes;                                   // where data is known to be missing (build_holes)
    bool live = false;
    // Functions the run found it could not trace (environment.not_traceable, written by `nvtrace run`: absent from
    // available_filter_functions, or from /proc/kallsyms too: inlined). Treated like the file's `untraced` lines.
    std::vector<Untraced> not_traceable;

    Context(const Report& r, const ExpectFile& f) : report(r), file(f), env(check_environment(r)) {
        if (r.environment.not_traceable)
            for (const auto& [fn, why] : *r.environment.not_traceable)
                not_traceable.push_back({{fn}, {}, why, 0});
        for (const Call& c : r.calls) {
            by_id[c.id] = &c;
            if (c.parent) children[*c.parent].push_back(&c);
            if (c.function.find('.') != std::string::npos && !clone_bases.count(c.function))
                clone_bases.emplace(c.function, normalise_symbol(c.function));
            functions_seen.insert(base(c));
        }
        holes = build_holes(r);
        live = r.source.kind == "live";
    }

    // What is missing where data of `kind` for `phase` would be: the holes that hide that kind and overlap the
    // phase's time (every holes of that kind without a phase), joined; nullopt when none does (then not seeing
    // a thing is evidence).
    std::optional<std::string> missing_for(unsigned kind, const std::optional<std::string>& phase) const {
        std::vector<Window> win = phase ? phase_windows(report, *phase) : std::vector<Window>{Window{}};
        std::vector<std::string> texts;
        for (const Hole& h : holes) {
            if (!(h.hides & kind)) continue;
            bool overlaps = false;
            for (const Window& w : win)
                overlaps = overlaps || ((!h.after_ns || !w.until_ns || *h.after_ns < *w.until_ns) &&
                                        (!h.before_ns || !w.from_ns || *h.before_ns > *w.from_ns));
            if (overlaps) texts.push_back(h.text);
        }
        if (texts.empty()) return std::nullopt;
        // Gaps with the same text (several "an unknown number of events lost on CPU 1") are named once, counted.
        std::vector<std::string> named;
        std::map<std::string, std::size_t> times;
        for (const std::string& t : texts)
            if (times[t]++ == 0) named.push_back(t);
        for (std::string& t : named)
            if (times[t] > 1) t += fmt::format(" (x{})", times[t]);
        texts = std::move(named);
        constexpr std::size_t kShown = 3;
        std::string out =
            fmt::format("{}", fmt::join(texts.begin(), texts.begin() + std::min(texts.size(), kShown), ", "));
        if (texts.size() > kShown) out += fmt::format(", and {} more gaps", texts.size() - kShown);
        return out;
    }

    const std::string& base(const Call& c) const {
        if (clone_bases.empty()) return c.function;
        auto it = clone_bases.find(c.function);
        return it == clone_bases.end() ? c.function : it->second;
    }

    std::string tracer_hint() const {
        return report.source.tracer_mode ? fmt::format(" (tracer mode: {})", *report.source.tracer_mode) : "";
    }

    // The untraced declaration that hides `fn` (a base name) in this run, if any.
    const Untraced* hidden(const std::string& fn) const {
        auto names = [&](const std::vector<std::string>& v) {
            return std::any_of(v.begin(), v.end(), [&](const std::string& u) { return normalise_symbol(u) == fn; });
        };
        for (const auto& u : file.untraced)
            if (all_hold(u.when, env) != Tri::no && names(u.functions)) return &u;
        for (const auto& u : not_traceable)
            if (normalise_symbol(u.functions.front()) == fn) return &u;
        return nullptr;
    }
};

bool in_phase(const std::optional<std::string>& item_phase, const std::optional<std::string>& want) {
    return !want || (item_phase && *item_phase == *want);
}

// "in api F" (Fact::in_api): the root calls and ioctls made inside an API call F of report.api_calls, its own and
// those of the API calls it made (which hold their records themselves: each record is under its innermost call).
struct ApiScope {
    std::size_t api_calls = 0;  // calls of F
    std::set<std::uint64_t> roots, ioctls;
};
std::optional<ApiScope> api_scope(const Context& ctx, const Fact& f) {
    if (!f.in_api) return std::nullopt;
    ApiScope s;
    std::map<std::uint64_t, const ApiCall*> by_id;
    for (const ApiCall& a : ctx.report.api_calls)
        by_id[a.id] = &a;
    for (const ApiCall& a : ctx.report.api_calls) {
        bool inside = false;
        for (const ApiCall* p = &a; p && !inside;) {
            inside = p->function == *f.in_api;
            auto up = p->parent ? by_id.find(*p->parent) : by_id.end();
            p = up == by_id.end() ? nullptr : up->second;
        }
        if (!inside) continue;
        if (a.function == *f.in_api) ++s.api_calls;
        s.roots.insert(a.calls.begin(), a.calls.end());
        s.ioctls.insert(a.ioctls.begin(), a.ioctls.end());
    }
    return s;
}

// The root of `c`'s tree (its own id for a root).
std::uint64_t root_of(const Context& ctx, const Call& c) {
    const Call* at = &c;
    while (at->parent) {
        auto up = ctx.by_id.find(*at->parent);
        if (up == ctx.by_id.end()) break;
        at = up->second;
    }
    return at->id;
}

std::string call_ref(const Call& c) {
    return fmt::format("{}#{}", c.function, c.id);
}

// ---- chains ----------------------------------------------------------------------------------------------

// Longest match of steps[i..] below `at`; fills `path` with the calls matched (at is already in it).
void match_below(const Context& ctx, const Call& at, const std::vector<ChainStep>& steps, std::size_t i,
                 std::vector<const Call*>& path, std::vector<const Call*>& best) {
    if (path.size() > best.size()) best = path;
    if (i == steps.size()) return;
    auto kids = ctx.children.find(at.id);
    if (kids == ctx.children.end()) return;
    for (const Call* k : kids->second) {
        if (ctx.base(*k) == steps[i].function) {
            path.push_back(k);
            match_below(ctx, *k, steps, i + 1, path, best);
            path.pop_back();
            if (best.size() == steps.size()) return;
        }
        if (!steps[i].direct) {
            match_below(ctx, *k, steps, i, path, best);  // skip this level
            if (best.size() == steps.size()) return;
        }
    }
}

struct ChainMatch {
    std::size_t complete = 0;          // how many calls start a complete match
    std::vector<const Call*> example;  // first complete match, or the longest partial one
};

ChainMatch match_chain(const Context& ctx, const std::vector<ChainStep>& steps, const std::optional<std::string>& phase,
                       const std::optional<ApiScope>& scope) {
    ChainMatch m;
    for (const Call& c : ctx.report.calls) {
        if (ctx.base(c) != steps[0].function || !in_phase(c.phase, phase)) continue;
        if (scope && !scope->roots.count(root_of(ctx, c))) continue;
        std::vector<const Call*> path{&c}, best;
        match_below(ctx, c, steps, 1, path, best);
        if (best.size() == steps.size()) {
            if (m.complete++ == 0 || m.example.size() < steps.size()) m.example = best;
        } else if (m.complete == 0 && best.size() > m.example.size()) {
            m.example = best;
        }
    }
    return m;
}

std::string path_text(const std::vector<const Call*>& path) {
    std::vector<std::string> parts;
    for (const Call* c : path)
        parts.push_back(call_ref(*c));
    return fmt::format("{}", fmt::join(parts, " > "));
}

std::string phase_text(const std::optional<std::string>& phase) {
    return phase ? fmt::format(" in phase {}", *phase) : std::string();
}

std::vector<std::string> distinct_functions(const Context& ctx, const std::optional<std::string>& phase) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const Call& c : ctx.report.calls)
        if (in_phase(c.phase, phase) && seen.insert(c.function).second) names.push_back(c.function);
    return names;
}

std::size_t calls_in(const Context& ctx, const std::optional<std::string>& phase) {
    std::size_t n = 0;
    for (const Call& c : ctx.report.calls)
        n += in_phase(c.phase, phase) ? 1 : 0;
    return n;
}

// "... in api F": inconclusive without API calls in the report, failed when F was never called (unless the fact is
// `absent`); nullopt when the fact can be evaluated within the scope.
std::optional<FactResult> api_scope_outcome(const Context& ctx, const Fact& f, const std::optional<ApiScope>& scope) {
    if (!scope) return std::nullopt;
    if (ctx.report.api_calls.empty())
        return FactResult{Outcome::inconclusive, "",
                          "the report has no API calls (uprobes on the library: docs/api.md)"};
    if (scope->api_calls == 0 && !f.absent)
        return FactResult{
            Outcome::fail,
            fmt::format("{} is never called (no such API call among {})", *f.in_api, ctx.report.api_calls.size()), ""};
    return std::nullopt;
}

FactResult eval_chain(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    const std::optional<ApiScope> scope = api_scope(ctx, f);
    if (auto early = api_scope_outcome(ctx, f, scope)) return *early;
    if (ctx.report.calls.empty()) {
        // nvtrace run says why it ran a scenario without the graph (environment.function_graph).
        if (auto elsewhere = calls_written_elsewhere(ctx.report.source, 0))
            return {Outcome::inconclusive, "", "the report has no calls: " + *elsewhere};
        if (const auto& why = ctx.report.environment.function_graph)
            return {Outcome::inconclusive, "", "the report has no function_graph calls: " + *why};
        return {Outcome::inconclusive, "",
                "the report has no function_graph calls" + ctx.tracer_hint() +
                    ": the function tracer was not used or is not available here"};
    }
    // The visible chain: untraced steps removed, the link across them loosened to '>>'.
    std::vector<ChainStep> visible;
    std::vector<std::string> hidden_why;
    bool loosen = false;
    for (const auto& s : f.chain) {
        std::string fn = normalise_symbol(s.function);  // any clone of it
        if (const Untraced* u = ctx.hidden(fn)) {
            hidden_why.push_back(fmt::format("{}: {}", s.function, u->reason));
            loosen = true;
            continue;
        }
        visible.push_back({std::move(fn), s.direct && !loosen});
        loosen = false;
    }
    if (!visible.empty()) visible.front().direct = true;
    std::string hidden_text = fmt::format("{}", fmt::join(hidden_why, "; "));

    if (f.absent) {
        if (!hidden_why.empty())
            return {Outcome::inconclusive, "", "ftrace cannot see part of this chain (" + hidden_text + ")"};
        ChainMatch m = match_chain(ctx, visible, phase, scope);
        if (m.complete)
            return {Outcome::fail,
                    fmt::format("seen {} time(s){}: {}", m.complete, phase_text(phase), path_text(m.example)), ""};
        if (auto lost = ctx.missing_for(kCalls, phase))
            return {Outcome::inconclusive, "not seen", "data was lost (" + *lost + "), so absence proves nothing"};
        for (const auto& s : visible)
            if (!ctx.functions_seen.count(s.function))
                return {Outcome::inconclusive, "not seen",
                        fmt::format("{} appears nowhere in this report, so its absence does not show it was not "
                                    "called (is it traced?)",
                                    s.function)};
        std::size_t n = calls_in(ctx, phase);
        if (n == 0)
            return {
                Outcome::inconclusive, "not seen",
                fmt::format("no call at all was traced{}: nothing to tell absence from no tracing", phase_text(phase))};
        return {Outcome::pass, fmt::format("not among the {} calls{}", n, phase_text(phase)), ""};
    }

    if (visible.empty())
        return {Outcome::inconclusive, "", "ftrace cannot see any function of this chain (" + hidden_text + ")"};
    ChainMatch m = match_chain(ctx, visible, phase, scope);
    if (m.complete) {
        std::string ev = fmt::format("{}{}", path_text(m.example),
                                     m.complete > 1 ? fmt::format(" ({} times)", m.complete) : std::string());
        if (!hidden_why.empty())
            return {Outcome::inconclusive, "the visible part is there: " + ev, "ftrace cannot see " + hidden_text};
        return {Outcome::pass, ev, ""};
    }
    // Not found: the nearest evidence.
    std::string ev;
    if (!m.example.empty()) {
        const Call* last = m.example.back();
        std::vector<std::string> kids;
        if (auto it = ctx.children.find(last->id); it != ctx.children.end())
            for (const Call* k : it->second)
                if (std::find(kids.begin(), kids.end(), k->function) == kids.end()) kids.push_back(k->function);
        ev = fmt::format("closest: {}; no {} {} it{}", path_text(m.example), visible[m.example.size()].function,
                         visible[m.example.size()].direct ? "directly below" : "anywhere below",
                         kids.empty() ? std::string(" (it has no traced children)")
                                      : fmt::format(" (its children: {})", join_limited(kids)));
    } else {
        std::size_t elsewhere = 0;
        std::set<std::string> phases;
        for (const Call& c : ctx.report.calls)
            if (ctx.base(c) == visible[0].function) {
                ++elsewhere;
                phases.insert(c.phase.value_or("(no phase)"));
            }
        if (elsewhere)
            ev = fmt::format("{} is not called{}, but {} time(s) in {}", visible[0].function, phase_text(phase),
                             elsewhere, join_limited({phases.begin(), phases.end()}));
        else
            ev = fmt::format("{} is never called{}; functions traced there: {}", visible[0].function, phase_text(phase),
                             join_limited(distinct_functions(ctx, phase)));
        if (calls_in(ctx, phase) == 0) ev = fmt::format("no call at all was traced{}", phase_text(phase));
    }
    if (auto lost = ctx.missing_for(kCalls, phase))
        return {Outcome::inconclusive, ev, "not seen, but data was lost (" + *lost + ")"};
    return {Outcome::fail, ev, ""};
}

// ---- ioctls ----------------------------------------------------------------------------------------------

bool has_ioctl_data(const Context& ctx) {
    return ctx.live || !ctx.report.ioctls.empty();
}

bool ioctl_named(const IoctlRecord& io, const std::string& name) {
    if (io.name && *io.name == name) return true;
    auto n = number(name);
    return n && *n == io.cmd;
}

std::string ioctl_label(const IoctlRecord& io) {
    return io.name.value_or(fmt::format("0x{:x}", io.cmd));
}

bool subtree_has(const Context& ctx, std::uint64_t root, const std::string& fn) {
    std::vector<std::uint64_t> stack{root};
    while (!stack.empty()) {
        std::uint64_t id = stack.back();
        stack.pop_back();
        if (auto it = ctx.by_id.find(id); it != ctx.by_id.end() && ctx.base(*it->second) == fn) return true;
        if (auto it = ctx.children.find(id); it != ctx.children.end())
            for (const Call* k : it->second)
                stack.push_back(k->id);
    }
    return false;
}

// yes: every field matches; no: one known field differs; unknown: the rest match, some field is not recorded.
Tri ioctl_fields_match(const Context& ctx, const IoctlRecord& io, const Fact& f, std::vector<std::string>& seen,
                       std::vector<std::string>& unknown) {
    Tri out = Tri::yes;
    for (const auto& [key, want] : f.fields) {
        std::optional<bool> ok;
        std::string actual;
        if (key == "hclass") {
            if (io.hclass) {
                actual = fmt::format("0x{:x}", *io.hclass);
                auto w = number(want);
                if (!w)
                    if (const auto* c = rm_class_by_name(want)) w = c->hclass;
                ok = w && *w == *io.hclass;
            }
        } else if (key == "status") {
            if (io.status) {
                actual = *io.status;
                auto w = status_value(want), a = status_value(*io.status);
                ok = (w && a) ? *w == *a : same_value(want, *io.status);
            }
        } else if (key == "ret") {
            if (io.ret) {
                actual = fmt::format("{}", *io.ret);
                auto w = errno_value(want);
                ok = w && *w == *io.ret;
            }
        } else if (key == "fd") {
            if (io.fd_path) {
                actual = *io.fd_path;
                ok = io.fd_path->rfind(want, 0) == 0;
            }
        } else if (key == "calls") {
            if (!ctx.report.calls.empty()) {
                bool found = false;
                const std::string fn = normalise_symbol(want);  // any clone of it
                for (auto id : io.calls)
                    found = found || subtree_has(ctx, id, fn);
                ok = found;
                actual = found ? want : fmt::format("{} root call(s) without {}", io.calls.size(), want);
            }
        }
        if (!ok) {
            unknown.push_back(key);
            if (out == Tri::yes) out = Tri::unknown;
        } else {
            seen.push_back(fmt::format("{}={}", key, actual));
            if (!*ok) out = Tri::no;
        }
    }
    return out;
}

FactResult eval_ioctl(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    if (!has_ioctl_data(ctx)) return {Outcome::inconclusive, "", "the report has no ioctl data (not a live capture)"};
    const std::string& name = f.names[0];
    std::size_t matched = 0, unknown_n = 0, named = 0;
    std::string first_match, first_other, missing_fields;
    std::set<std::string> missing_keys;  // of every ioctl whose match is unknown
    const std::optional<ApiScope> scope = api_scope(ctx, f);
    if (auto early = api_scope_outcome(ctx, f, scope)) return *early;
    for (const auto& io : ctx.report.ioctls) {
        if (!in_phase(io.phase, phase) || !ioctl_named(io, name)) continue;
        if (scope && !scope->ioctls.count(static_cast<std::uint64_t>(&io - ctx.report.ioctls.data()))) continue;
        ++named;
        std::vector<std::string> seen, unknown;
        Tri t = ioctl_fields_match(ctx, io, f, seen, unknown);
        std::string desc = fmt::format("{} at {}{}{}", ioctl_label(io),
                                       io.enter_ns ? fmt::format("{} ns", *io.enter_ns) : "an unknown time",
                                       seen.empty() ? "" : " ", fmt::join(seen, " "));
        if (t == Tri::yes) {
            if (matched++ == 0) first_match = desc;
        } else if (t == Tri::unknown) {
            ++unknown_n;
            if (missing_fields.empty()) missing_fields = fmt::format("{}", fmt::join(unknown, ", "));
            missing_keys.insert(unknown.begin(), unknown.end());
            if (first_other.empty()) first_other = desc;
        } else if (first_other.empty()) {
            first_other = desc;
        }
    }
    // Why each missing field is missing: its own cause, never another field's.
    std::vector<std::string> causes;
    if (missing_keys.count("status") || missing_keys.count("hclass"))
        causes.emplace_back("the RM status and hClass need user-side decoding");
    if (missing_keys.count("ret"))
        causes.emplace_back(
            "ret needs the ioctl's exit, which was not recorded (events lost around it, or the trace ends inside it)");
    if (missing_keys.count("fd"))
        causes.emplace_back("fd needs the file the fd named, which is unknown (fd_path_unknown)");
    if (missing_keys.count("calls")) causes.emplace_back("calls= needs function_graph");
    std::string unknown_why = fmt::format("{} {} ioctl(s) lack {} in this report ({})", unknown_n, name, missing_fields,
                                          fmt::join(causes, "; "));
    if (f.absent) {
        if (matched)
            return {Outcome::fail, fmt::format("{} matching ioctl(s){}: {}", matched, phase_text(phase), first_match),
                    ""};
        if (unknown_n) return {Outcome::inconclusive, first_other, unknown_why};
        if (auto lost = ctx.missing_for(kIoctls, phase))
            return {Outcome::inconclusive, "not seen", "data was lost (" + *lost + ")"};
        return {Outcome::pass, fmt::format("no matching ioctl among {} {}{}", named, name, phase_text(phase)), ""};
    }
    if (matched)
        return {Outcome::pass, matched > 1 ? fmt::format("{} ({} matching)", first_match, matched) : first_match, ""};
    if (unknown_n) return {Outcome::inconclusive, first_other, unknown_why};
    std::string ev;
    if (named)
        ev = fmt::format("{} {} ioctl(s){}, none matching; first: {}", named, name, phase_text(phase), first_other);
    else {
        std::vector<std::string> names;
        for (const auto& io : ctx.report.ioctls)
            if (in_phase(io.phase, phase) && std::find(names.begin(), names.end(), ioctl_label(io)) == names.end())
                names.push_back(ioctl_label(io));
        ev = names.empty() ? fmt::format("no ioctl at all{}", phase_text(phase))
                           : fmt::format("no {}{}; ioctls seen: {}", name, phase_text(phase), join_limited(names));
    }
    if (auto lost = ctx.missing_for(kIoctls, phase))
        return {Outcome::inconclusive, ev, "not seen, but data was lost (" + *lost + ")"};
    return {Outcome::fail, ev, ""};
}

FactResult eval_ioctls(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    if (!has_ioctl_data(ctx)) return {Outcome::inconclusive, "", "the report has no ioctl data (not a live capture)"};
    std::size_t want = 0;
    std::vector<std::string> at;
    std::vector<std::string> seen;
    std::size_t pos = 0;
    for (const auto& io : ctx.report.ioctls) {
        if (!in_phase(io.phase, phase)) continue;
        ++pos;
        if (seen.empty() || seen.back() != ioctl_label(io)) seen.push_back(ioctl_label(io));
        if (want < f.names.size() && ioctl_named(io, f.names[want])) {
            at.push_back(fmt::format("{}@{}", f.names[want], pos));
            ++want;
        }
    }
    if (want == f.names.size()) return {Outcome::pass, fmt::format("{}", fmt::join(at, ", ")), ""};
    std::string ev = fmt::format("{}no {}{} after that; ioctls in order: {}",
                                 at.empty() ? std::string() : fmt::format("found {}; ", fmt::join(at, ", ")),
                                 f.names[want], phase_text(phase), seen.empty() ? "none" : join_limited(seen, 16));
    if (auto lost = ctx.missing_for(kIoctls, phase))
        return {Outcome::inconclusive, ev, "not seen, but data was lost (" + *lost + ")"};
    return {Outcome::fail, ev, ""};
}

// ---- kernel log ------------------------------------------------------------------------------------------

// A message is of `kind` when it has that kind, or when it is an Xid that took in a line of that kind: the
// `GPU ...: GPU has fallen off the bus.` line printed with an Xid 79 is joined to it (docs/dmesg.md, kind `xid`,
// field fallen_off_bus=true) and is no message of its own, yet the GPU fell off the bus.
bool is_of_kind(const KernelLogMessage& m, const std::string& kind) {
    if (m.kind == kind) return true;
    if (kind != "fallen_off_bus" || m.kind != "xid") return false;
    auto it = m.fields.find("fallen_off_bus");
    return it != m.fields.end() && it->second == "true";
}

FactResult eval_log(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    // A kernel log was read when the run read /dev/kmsg, `report --kmsg FILE` read one, or the input was one: then
    // an empty kernel_log is evidence (no message), else there is nothing to tell absence from not reading it.
    const ReportSource& src = ctx.report.source;
    if (!ctx.live && ctx.report.kernel_log.empty() && !src.kmsg && src.format != "kernel-log")
        return {Outcome::inconclusive, "", "the report has no kernel log (not a live capture, no --kmsg)"};
    const std::string& kind = f.names[0];
    std::size_t matched = 0, of_kind = 0, user_written = 0;
    std::string first_match, first_other, first_user;
    std::vector<std::string> kinds;
    for (const auto& m : ctx.report.kernel_log) {
        // A message tied to a call has that call's phase; others cannot be placed and always count.
        if (phase && m.call)
            if (auto it = ctx.by_id.find(*m.call); it != ctx.by_id.end() && !in_phase(it->second->phase, phase))
                continue;
        if (std::find(kinds.begin(), kinds.end(), m.kind) == kinds.end()) kinds.push_back(m.kind);
        if (!is_of_kind(m, kind)) continue;
        // A driver's line written from user space (echo into /dev/kmsg, another program's syslog line) is no
        // evidence that the driver printed it (kernel_log.hpp, field text_source); nor is a driver's message of a
        // kmsg facility other than 0 (field facility), which only a saved report edited by hand can hold.
        if (m.fields.count("text_source") || (m.fields.count("facility") && m.source != "user")) {
            if (user_written++ == 0) first_user = m.text.substr(0, m.text.find('\n'));
            continue;
        }
        ++of_kind;
        // `pci=` and `device=` compare with the most specific address the message names: an Xid's `device`, the full
        // address of the `GPU ...: GPU has fallen off the bus.` line joined to it (0000:b3:00.0), over its own `pci`,
        // the bus and device its line names (0000:b3:00). Either key: on an Xid without that line, `device=` failed
        // though the line names the device, and on one with it `pci=...:00.1` passed through the Xid's own `pci`.
        const std::string* address = nullptr;
        for (const char* key : {"device", "pci"})
            if (auto it = m.fields.find(key); !address && it != m.fields.end()) address = &it->second;
        auto has = [&m, address](const std::string& k, const std::string& v) {
            if (k == "pci" || k == "device") return address && same_pci(v, *address);
            auto it = m.fields.find(k);
            return it != m.fields.end() && same_value(v, it->second);
        };
        bool ok = true;
        for (const auto& [k, v] : f.fields)
            ok = ok && has(k, v);
        std::string text = m.text.substr(0, m.text.find('\n'));
        if (ok) {
            if (matched++ == 0) first_match = text;
        } else if (first_other.empty()) {
            std::vector<std::string> fs;
            for (const auto& [k, v] : m.fields)
                fs.push_back(k + "=" + v);
            first_other = fmt::format("{} [{}]", text, fmt::join(fs, " "));
        }
    }
    const std::string not_counted = user_written
                                        ? fmt::format(" ({} {} line(s) written from user space not counted, first: {})",
                                                      user_written, kind, first_user)
                                        : std::string();
    if (f.absent) {
        if (matched) return {Outcome::fail, fmt::format("{} message(s): {}", matched, first_match), ""};
        if (auto lost = ctx.missing_for(kLog, std::nullopt))
            return {Outcome::inconclusive, "not seen" + not_counted, "data was lost (" + *lost + ")"};
        return {Outcome::pass,
                fmt::format("none among {} kernel-log message(s){}", ctx.report.kernel_log.size(), not_counted), ""};
    }
    if (matched) return {Outcome::pass, first_match, ""};
    std::string ev =
        (of_kind ? fmt::format("{} {} message(s), none with these fields; first: {}", of_kind, kind, first_other)
                 : fmt::format("no {} message; kinds seen: {}", kind, kinds.empty() ? "none" : join_limited(kinds))) +
        not_counted;
    if (auto lost = ctx.missing_for(kLog, std::nullopt))
        return {Outcome::inconclusive, ev, "not seen, but data was lost (" + *lost + ")"};
    return {Outcome::fail, ev, ""};
}

// ---- markers: results and phases --------------------------------------------------------------------------

FactResult eval_result(const Context& ctx, const Fact& f) {
    const std::string& key = f.names[0];
    const std::string& want = f.fields[0].second;
    std::optional<std::string> got;
    for (const auto& m : ctx.report.markers) {
        if (m.text.rfind(kResultMarker, 0) != 0) continue;
        std::string_view kv = std::string_view(m.text).substr(kResultMarker.size());
        while (!kv.empty() && (kv.back() == '\n' || kv.back() == ' '))
            kv.remove_suffix(1);
        auto eq = kv.find('=');
        if (eq != std::string_view::npos && kv.substr(0, eq) == key) got = std::string(kv.substr(eq + 1));
    }
    if (!got)
        return {Outcome::inconclusive, "",
                fmt::format("the program wrote no \"nvtrace-result: {}=...\" marker ({} markers in the report)", key,
                            ctx.report.markers.size())};
    if (*got == want) return {Outcome::pass, fmt::format("{}={}", key, *got), ""};
    return {Outcome::fail, fmt::format("{}={}", key, *got), ""};
}

// The phases the markers begin, in marker order.
std::vector<std::string> phase_markers(const Context& ctx) {
    std::vector<std::string> out;
    for (const auto& m : ctx.report.markers)
        detail::for_each_phase_line(m.text, [&](const detail::PhaseLine& p) {
            if (p.kind == detail::PhaseLine::begin) out.emplace_back(p.name);
        });
    return out;
}

FactResult eval_phases(const Context& ctx, const Fact& f) {
    auto seen = phase_markers(ctx);
    if (seen.empty())
        return {Outcome::inconclusive, "",
                "the report has no phase markers (the program wrote none, or markers were not recorded)"};
    std::size_t want = 0;
    for (const auto& p : seen)
        if (want < f.names.size() && p == f.names[want]) ++want;
    if (want == f.names.size()) return {Outcome::pass, fmt::format("{}", fmt::join(f.names, ", ")), ""};
    std::string ev = fmt::format("no phase {} in order; phases seen: {}", f.names[want], join_limited(seen, 16));
    if (auto lost = ctx.missing_for(kMarkers, std::nullopt))
        return {Outcome::inconclusive, ev, "not seen, but data was lost (" + *lost + ")"};
    return {Outcome::fail, ev, ""};
}

// "api F [= RESULT]": an API call F of report.api_calls (with that result: a name compared with result_name, a
// number with result). Inconclusive when no API calls were recorded, or when the calls that could match have no
// known result, or (absent) when API events were lost.
FactResult eval_api(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    const auto& calls = ctx.report.api_calls;
    if (calls.empty())
        return {
            Outcome::inconclusive, "",
            "the report has no API calls (no uprobes were recorded: nvtrace run --api cuda or --uprobe, docs/api.md)"};
    const std::string& fn = f.names[0];
    const std::optional<std::string> want = f.fields.empty() ? std::nullopt : std::optional(f.fields[0].second);
    std::optional<std::int64_t> want_number;
    if (want) {
        std::string_view d = *want;
        const bool neg = !d.empty() && d.front() == '-';
        if (neg) d.remove_prefix(1);
        if (auto n = check_values::number(d))
            want_number = neg ? -static_cast<std::int64_t>(*n) : static_cast<std::int64_t>(*n);
    }
    std::size_t named = 0, matched = 0, unknown = 0;
    std::string first_match, first_other, unknown_why;
    for (const ApiCall& a : calls) {
        if (a.function != fn || !in_phase(a.phase, phase)) continue;
        ++named;
        std::string desc = fmt::format("{}#{} = {} at {} ns (pid {})", a.function, a.id,
                                       a.result_name != "unknown" ? a.result_name
                                       : a.result                 ? std::to_string(*a.result)
                                                                  : std::string("unknown"),
                                       a.entry_ns, a.pid);
        bool is = !want;
        if (want && want_number) {
            if (!a.result) {
                ++unknown;
                if (unknown_why.empty()) unknown_why = a.result_unknown.value_or("no result recorded");
                if (first_other.empty()) first_other = desc;
                continue;
            }
            // The low 32 bits: CUresult and cudaError_t are int enums (an untyped $retval reads all of %ax).
            is = *a.result == *want_number ||
                 static_cast<std::int32_t>(static_cast<std::uint32_t>(*a.result)) == *want_number;
        } else if (want) {
            if (a.result_name == "unknown") {
                ++unknown;
                if (unknown_why.empty()) unknown_why = a.result_unknown.value_or("no result name");
                if (first_other.empty()) first_other = desc;
                continue;
            }
            is = a.result_name == *want;
        }
        if (is) {
            if (matched++ == 0) first_match = desc;
        } else if (first_other.empty()) {
            first_other = desc;
        }
    }
    const std::string what = want ? fmt::format("{} = {}", fn, *want) : fn;
    auto unknown_text = [&] {
        return fmt::format("{} call(s) of {} have no known result ({})", unknown, fn, unknown_why);
    };
    const std::uint64_t lost_entries = ctx.report.completeness.diagnostic_count(Diag::api_return_without_entry);
    if (f.absent) {
        if (matched)
            return {Outcome::fail,
                    fmt::format("{} matching API call(s){}: {}", matched, phase_text(phase), first_match), ""};
        if (unknown) return {Outcome::inconclusive, first_other, unknown_text()};
        if (lost_entries)
            return {Outcome::inconclusive, "not seen",
                    fmt::format("{} API return(s) without their entry: calls were lost", lost_entries)};
        return {Outcome::pass, fmt::format("no {} among {} API calls{}", what, calls.size(), phase_text(phase)), ""};
    }
    if (matched)
        return {Outcome::pass, matched > 1 ? fmt::format("{} ({} matching)", first_match, matched) : first_match, ""};
    if (unknown) return {Outcome::inconclusive, first_other, unknown_text()};
    std::string ev =
        named ? fmt::format("{} call(s) of {}{}, none {}; first: {}", named, fn, phase_text(phase),
                            want ? "with that result" : "", first_other)
              : fmt::format("{} is never called{} ({} API calls recorded)", fn, phase_text(phase), calls.size());
    if (lost_entries)
        return {Outcome::inconclusive, ev,
                fmt::format("not seen, but {} API return(s) came without their entry: calls were lost", lost_entries)};
    return {Outcome::fail, ev, ""};
}

FactResult eval_fact(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    switch (f.kind) {
        case Fact::Kind::chain:
            return eval_chain(ctx, f, phase);
        case Fact::Kind::ioctl:
            return eval_ioctl(ctx, f, phase);
        case Fact::Kind::ioctls:
            return eval_ioctls(ctx, f, phase);
        case Fact::Kind::log:
            return eval_log(ctx, f, phase);
        case Fact::Kind::result:
            return eval_result(ctx, f);
        case Fact::Kind::phases:
            return eval_phases(ctx, f);
        case Fact::Kind::api:
            return eval_api(ctx, f, phase);
    }
    return {};
}

// A fact with its own "when": not applicable -> nullopt (skipped); unknown condition turns a fail into
// inconclusive.
std::optional<FactResult> eval_conditional(const Context& ctx, const Fact& f, const std::optional<std::string>& phase) {
    Tri t = all_hold(f.when, ctx.env);
    if (t == Tri::no) return std::nullopt;
    FactResult r = eval_fact(ctx, f, phase);
    if (t == Tri::unknown && r.outcome == Outcome::fail) {
        r.outcome = Outcome::inconclusive;
        r.missing = fmt::format("it applies only when {}, and this report does not say ({})", conditions_text(f.when),
                                describe_env(f.when, ctx.env));
    }
    return r;
}

std::string fact_label(const Fact& f) {
    return fmt::format("line {}: {}", f.line, f.text);
}

Check run_check(const Context& ctx, const Expectation& e) {
    Check out;
    out.id = e.id;
    std::string sources = e.sources.empty() ? std::string() : fmt::format(" [source: {}]", fmt::join(e.sources, "; "));
    std::string title = e.title.empty() ? e.id : e.title;
    Tri applies = all_hold(e.when, ctx.env);
    if (applies == Tri::no) {
        out.result = "inconclusive";
        out.why = fmt::format("{}: applies when {}; this run has {}{}", title, conditions_text(e.when),
                              describe_env(e.when, ctx.env), sources);
        return out;
    }
    if (e.phase) {
        auto phases = phase_markers(ctx);
        // Without phase markers, the top API calls name the phases (ReportBuilder: a record's phase is the function
        // of the top API call it ran inside).
        if (phases.empty())
            for (const ApiCall& a : ctx.report.api_calls)
                if (!a.parent && std::find(phases.begin(), phases.end(), a.function) == phases.end())
                    phases.push_back(a.function);
        if (std::find(phases.begin(), phases.end(), *e.phase) == phases.end()) {
            out.result = "inconclusive";
            out.evidence =
                phases.empty() ? "no phase markers" : fmt::format("phases seen: {}", join_limited(phases, 16));
            out.why = fmt::format(
                "{}: phase {} was never marked (the program did not reach it, or its marker was "
                "not recorded){}",
                title, *e.phase, sources);
            return out;
        }
    }
    // Groups: a fact and the "or" facts after it.
    Outcome worst = Outcome::pass;
    std::vector<std::string> evidence, why;
    for (std::size_t i = 0; i < e.facts.size();) {
        std::size_t j = i + 1;
        while (j < e.facts.size() && e.facts[j].alternative)
            ++j;
        std::optional<FactResult> best;
        std::vector<std::string> group_ev, group_missing;
        std::size_t applicable = 0;
        for (std::size_t k = i; k < j; ++k) {
            auto r = eval_conditional(ctx, e.facts[k], e.phase);
            if (!r) continue;
            ++applicable;
            if (!r->evidence.empty())
                group_ev.push_back(j - i > 1 ? fmt::format("({}) {}", e.facts[k].text, r->evidence) : r->evidence);
            if (r->outcome == Outcome::inconclusive) group_missing.push_back(r->missing);
            if (r->outcome == Outcome::fail) group_missing.push_back("expected " + fact_label(e.facts[k]));
            if (!best || r->outcome < best->outcome) best = r;
        }
        Outcome o = Outcome::inconclusive;
        if (!applicable) {
            std::vector<std::string> conds;
            for (std::size_t k = i; k < j; ++k)
                conds.push_back(conditions_text(e.facts[k].when));
            why.push_back(fmt::format("no alternative of line {} applies to this run ({}; alternatives for: {})",
                                      e.facts[i].line, describe_env(e.facts[i].when, ctx.env),
                                      fmt::join(conds, " | ")));
        } else {
            o = best->outcome;
            if (o == Outcome::pass) {
                evidence.push_back(best->evidence);  // only the alternative that passed matters
            } else {
                for (const auto& m : group_missing)  // what each applicable alternative lacked
                    if (!m.empty()) why.push_back(m);
                evidence.insert(evidence.end(), group_ev.begin(), group_ev.end());
            }
        }
        worst = std::max(worst, o);
        i = j;
    }
    out.result = worst == Outcome::pass ? "pass" : worst == Outcome::fail ? "fail" : "inconclusive";
    out.evidence = fmt::format("{}", fmt::join(evidence, "; "));
    if (worst == Outcome::pass)
        out.why = title + sources;
    else
        out.why = fmt::format("{}: {}{}", title, fmt::join(why, "; "), sources);
    if (worst != Outcome::pass && applies == Tri::unknown && worst == Outcome::fail) {
        out.result = "inconclusive";
        out.why += fmt::format("; the check applies only when {}, and this report does not say ({})",
                               conditions_text(e.when), describe_env(e.when, ctx.env));
    }
    return out;
}

}  // namespace

CheckEnvironment check_environment(const Report& report) {
    CheckEnvironment env;
    const ReportEnvironment& e = report.environment;
    if (e.kernel) env.kernel = leading_version(*e.kernel);
    if (e.nvidia_driver_version) env.driver = parse_driver_version(*e.nvidia_driver_version);
    if (!env.driver && e.modules)
        if (auto nv = e.modules->find("nvidia"); nv != e.modules->end() && nv->second.version)
            env.driver = parse_driver_version(*nv->second.version);
    if (!env.driver && e.nvidia_driver_banner && *e.nvidia_driver_banner)
        env.driver = banner_version(**e.nvidia_driver_banner);
    if (e.nvidia_driver_flavour) env.flavour = *e.nvidia_driver_flavour;
    return env;
}

std::vector<Check> check_report(const Report& report, const ExpectFile& expectations) {
    Context ctx(report, expectations);
    std::vector<Check> out;
    out.reserve(expectations.checks.size());
    for (const auto& e : expectations.checks)
        out.push_back(run_check(ctx, e));
    return out;
}

CheckSummary summarize(const std::vector<Check>& checks) {
    CheckSummary s;
    for (const auto& c : checks) {
        if (c.result == "pass")
            ++s.pass;
        else if (c.result == "fail")
            ++s.fail;
        else
            ++s.inconclusive;
    }
    return s;
}

}  // namespace nvtrace
