// The diff's JSON and text forms (include/nvtrace/diff.hpp, docs/diff.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "../json_values.hpp"
#include "../report_head.hpp"
#include "api_diff.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/visible_text.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

json opt_ns(const std::optional<std::uint64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

json opt_delta(const std::optional<std::int64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

json side_json(const DiffSide& s) {
    json j = {{"count", s.count},
              {"total_ns", opt_ns(s.total_ns)},
              {"self_ns", opt_ns(s.self_ns)},
              {"min_ns", opt_ns(s.min_ns)},
              {"max_ns", opt_ns(s.max_ns)},
              {"unknown_durations", s.unknown_durations},
              {"retvals", s.retvals},
              {"names", s.names}};
    // Only where a time is unknown, so that the diff of reports with every duration known is as it was.
    if (!s.total_ns) {
        j["known_total_ns"] = s.known_total_ns;
        j["time_unknown"] = why_time_unknown(s);
    }
    return j;
}

json changes_of(const DiffNode& n) {
    json c = json::array();
    if (n.status == DiffStatus::added) c.push_back("added");
    if (n.status == DiffStatus::removed) c.push_back("removed");
    if (n.count_changed) c.push_back("count");
    if (n.retval_changed) c.push_back("retval");
    if (n.time_changed) c.push_back("time");
    return c;
}

json node_json(const DiffNode& n) {
    json j = {{"function", n.function},
              {"path", n.path},
              {"status", std::string(to_string(n.status))},
              {"changes", changes_of(n)},
              {"irq", n.irq},
              {"a", n.a ? side_json(*n.a) : json(nullptr)},
              {"b", n.b ? side_json(*n.b) : json(nullptr)},
              {"delta",
               {{"count", n.delta_count},
                {"total_ns", opt_delta(n.delta_total_ns)},
                {"self_ns", opt_delta(n.delta_self_ns)},
                {"total_rel", n.rel_total ? json(*n.rel_total) : json(nullptr)}}},
              {"impact_ns", n.impact_ns}};
    if (n.time_unknown) j["delta"]["time_unknown"] = *n.time_unknown;
    json kids = json::array();
    for (const auto& c : n.children)
        kids.push_back(node_json(c));
    j["children"] = std::move(kids);
    return j;
}

void collect_changes(const DiffNode& n, bool inside_structural, std::vector<const DiffNode*>& out) {
    bool structural = n.status == DiffStatus::added || n.status == DiffStatus::removed;
    if ((structural && !inside_structural) || n.status == DiffStatus::changed) out.push_back(&n);
    for (const auto& c : n.children)
        collect_changes(c, inside_structural || structural, out);
}

json input_json(const DiffInput& in) {
    return {{"input", in.label},
            {"source", to_json(in.source)},
            {"environment", to_json(in.environment)},
            {"complete", in.complete},
            {"reasons", in.reasons},
            {"calls", in.calls},
            {"has_retvals", in.has_retvals},
            {"phases", in.phases}};
}

std::string fmt_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

std::string fmt_delta_ns(std::int64_t d) {
    std::string s = fmt_ns(static_cast<std::uint64_t>(std::llabs(d)));
    return (d < 0 ? "-" : "+") + s;
}

std::string fmt_retvals(const DiffSide& s) {
    std::vector<std::string> parts;
    for (const auto& [k, n] : s.retvals)
        parts.push_back(fmt::format("{} x{}", k, n));
    return "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
}

struct Painter {
    bool on;
    std::string paint(std::string_view s, std::string_view code) const {
        return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : std::string(s);
    }
};

struct TextWriter {
    explicit TextWriter(const DiffTextOptions& opts) : o(opts), p{opts.colour} {}
    const DiffTextOptions& o;
    Painter p;
    std::string out;
    std::size_t rows = 0;
    bool truncated = false;

    void row(const DiffNode& n, int depth) {
        if (o.max_rows && rows >= o.max_rows) {
            truncated = true;
            return;
        }
        ++rows;
        char mark = ' ';
        std::string_view colour;
        switch (n.status) {
            case DiffStatus::added:
                mark = '+', colour = "32";
                break;
            case DiffStatus::removed:
                mark = '-', colour = "31";
                break;
            case DiffStatus::changed:
                mark = '~', colour = "33";
                break;
            default:
                break;
        }
        std::string calls = fmt::format("{:>6} -> {:<6}", n.a ? std::to_string(n.a->count) : std::string("-"),
                                        n.b ? std::to_string(n.b->count) : std::string("-"));
        auto total = [](const std::optional<DiffSide>& s) {
            return !s ? std::string("-") : s->total_ns ? fmt_ns(*s->total_ns) : std::string("unknown");
        };
        std::string ta = total(n.a), tb = total(n.b);
        std::string delta = n.delta_total_ns ? fmt_delta_ns(*n.delta_total_ns) : std::string("unknown");
        if (n.rel_total && n.a && n.b) delta += fmt::format(" ({:+.1f}%)", *n.rel_total * 100.0);
        std::vector<std::string> tags;
        if (n.count_changed) tags.push_back(fmt::format("calls {:+}", n.delta_count));
        if (n.retval_changed) tags.push_back("retval");
        if (n.time_changed) tags.push_back("time");
        if (n.time_unknown) tags.push_back("time unknown: " + *n.time_unknown);
        // An added or removed path whose total is unknown says why (the other side is missing, not unknown).
        if (!n.time_unknown && (n.status == DiffStatus::added || n.status == DiffStatus::removed)) {
            const DiffSide& s = n.a ? *n.a : *n.b;
            if (!s.total_ns) tags.push_back("time unknown: " + why_time_unknown(s));
        }
        std::string name = std::string(static_cast<std::size_t>(depth) * 2, ' ') + visible(n.function);
        if (!tags.empty()) name += "  [" + fmt::format("{}", fmt::join(tags, ", ")) + "]";
        // The [irq] pseudo-root groups the interrupts; it is no call and has no count or time of its own (its rows
        // showed 0 calls and 0.000 us above children of 9 us).
        if (n.path == kIrqRoot) calls = fmt::format("{:>6} -> {:<6}", "-", "-"), ta = tb = delta = "-";
        std::string line = fmt::format("{} {} {:>12} {:>12} {:>22}  {}", mark, calls, ta, tb, delta, name);
        out += colour.empty() ? line : p.paint(line, colour);
        out += '\n';
        if (n.retval_changed && n.a && n.b)
            out += fmt::format("{:>{}}{}{}ret {} -> {}\n", "", 2 + 16 + 1 + 12 + 1 + 12 + 1 + 22 + 2,
                               std::string(static_cast<std::size_t>(depth) * 2, ' '), "  ", fmt_retvals(*n.a),
                               fmt_retvals(*n.b));
        for (const auto& c : n.children)
            row(c, depth + 1);
    }
};

std::string describe_input(const DiffInput& in) {
    std::vector<std::string> bits;
    const ReportEnvironment& env = in.environment;
    if (env.kernel && !env.kernel->empty()) bits.push_back("kernel " + *env.kernel);
    if (env.nvidia_driver_version && !env.nvidia_driver_version->empty())
        bits.push_back("driver " + *env.nvidia_driver_version);
    else if (env.nvidia_driver_banner && *env.nvidia_driver_banner && !(*env.nvidia_driver_banner)->empty())
        bits.push_back(**env.nvidia_driver_banner);
    if (auto c = command_text(in.source); !c.empty()) bits.push_back("command: " + c);
    bits.push_back(fmt::format("{} calls", in.calls));
    if (!in.complete) bits.push_back("INCOMPLETE");
    return visible(fmt::format("{}", fmt::join(bits, ", ")));
}

std::string request_text(const IoctlDiffRow& r) {
    std::string dev = r.device ? *r.device : fmt::format("fd{}", r.fd.value_or(-1));
    if (dev.rfind("/dev/", 0) == 0) dev.erase(0, 5);
    return visible(dev + " " + (r.name ? *r.name : fmt::format("0x{:x}", r.cmd)));
}

json opt_json(const std::optional<std::uint64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

json ioctl_side_json(const std::optional<IoctlStat>& s) {
    if (!s) return nullptr;
    return {{"count", s->count},
            {"errors", s->errors},
            {"errors_by_name", s->errors_by_name},
            {"unfinished", s->unfinished},
            {"latency_unknown", s->latency_unknown},
            {"total_ns", opt_json(s->total_ns)},
            {"mean_ns", opt_json(s->mean_ns)},
            {"max_ns", opt_json(s->max_ns)}};
}

// One report has ioctls, the other's input cannot show whether any were made (DiffResult::ioctls_unrecorded).
std::string ioctls_not_compared(const DiffResult& d) {
    const DiffInput& none = d.ioctls_unrecorded == 'a' ? d.a : d.b;
    return fmt::format("{} has no ioctls: {}", d.ioctls_unrecorded == 'a' ? "a" : "b", why_no_ioctls(none));
}

json ioctls_json(const DiffResult& d) {
    json rows = json::array();
    for (const IoctlDiffRow& r : d.ioctls) {
        json changes = json::array();
        if (r.status == DiffStatus::added) changes.push_back("added");
        if (r.status == DiffStatus::removed) changes.push_back("removed");
        if (r.count_changed) changes.push_back("count");
        if (r.latency_changed) changes.push_back("latency");
        if (!r.new_errors.empty()) changes.push_back("new_errors");
        rows.push_back({{"device", r.device ? json(*r.device) : json(nullptr)},
                        {"fd", r.fd ? json(*r.fd) : json(nullptr)},
                        {"cmd", r.cmd},
                        {"name", r.name ? json(*r.name) : json(nullptr)},
                        {"request", request_text(r)},
                        {"status", std::string(to_string(r.status))},
                        {"changes", changes},
                        {"a", ioctl_side_json(r.a)},
                        {"b", ioctl_side_json(r.b)},
                        {"delta_count", r.delta_count},
                        {"delta_mean_ns", r.delta_mean_ns ? json(*r.delta_mean_ns) : json(nullptr)},
                        {"mean_rel", r.rel_mean ? json(*r.rel_mean) : json(nullptr)},
                        {"new_errors", r.new_errors}});
    }
    const IoctlDiffSummary& s = d.ioctl_summary;
    json j = {{"compared", d.ioctls_compared},
              {"summary",
               {{"added", s.added},
                {"removed", s.removed},
                {"count_changes", s.count_changes},
                {"latency_changes", s.latency_changes},
                {"new_errors", s.new_errors},
                {"any_change", s.any()}}},
              {"rows", std::move(rows)}};
    if (d.ioctls_unrecorded) j["not_compared"] = ioctls_not_compared(d);
    return j;
}

void ioctls_not_compared_text(const DiffResult& d, std::string& out) {
    if (!d.ioctls_unrecorded) return;
    const DiffInput& none = d.ioctls_unrecorded == 'a' ? d.a : d.b;
    out += "#\n";
    out += visible(fmt::format("#  ioctls not compared: {} {} has none ({})", d.ioctls_unrecorded == 'a' ? "A" : "B",
                               none.label, why_no_ioctls(none)));
    out += '\n';
}

void ioctls_text(const DiffResult& d, const Painter& p, std::string& out) {
    const IoctlDiffSummary& s = d.ioctl_summary;
    out += "#\n";
    out += fmt::format(
        "# ioctls by (device, request), every task; latency changes need |delta mean| >= {} and >= {:.0f}% of A\n",
        fmt_ns(d.options.threshold.min_abs_ns), d.options.threshold.min_rel * 100.0);
    out += fmt::format(
        "#  {} added request(s), {} removed request(s), {} count change(s), {} latency change(s), {} with new "
        "errors\n",
        s.added, s.removed, s.count_changes, s.latency_changes, s.new_errors);
    if (d.ioctls.empty()) {
        out += s.any() ? "" : "#  no ioctl change\n";
        return;
    }
    out += fmt::format("# {:^16} {:>12} {:>12} {:>22}  {}\n", "count A -> B", "mean A", "mean B", "delta mean",
                       "request (+ added, - removed, ~ changed)");
    for (const IoctlDiffRow& r : d.ioctls) {
        char mark = ' ';
        std::string_view colour;
        if (r.status == DiffStatus::added) mark = '+', colour = "32";
        if (r.status == DiffStatus::removed) mark = '-', colour = "31";
        if (r.status == DiffStatus::changed) mark = '~', colour = "33";
        auto mean = [](const std::optional<IoctlStat>& x) {
            return !x ? std::string("-") : x->mean_ns ? fmt_ns(*x->mean_ns) : std::string("unknown");
        };
        std::string delta = "-";
        if (r.delta_mean_ns) {
            delta = fmt_delta_ns(*r.delta_mean_ns);
            if (r.rel_mean) delta += fmt::format(" ({:+.1f}%)", *r.rel_mean * 100.0);
        }
        std::vector<std::string> tags;
        if (r.count_changed) tags.push_back(fmt::format("count {:+}", r.delta_count));
        if (r.latency_changed) tags.push_back("latency");
        if (!r.new_errors.empty()) {
            std::vector<std::string> e;
            for (const auto& n : r.new_errors)
                e.push_back(fmt::format("{} x{}", n, r.b->errors_by_name.at(n)));
            tags.push_back("new errors: " + fmt::format("{}", fmt::join(e, ", ")));
        }
        std::string name = request_text(r);
        if (!tags.empty()) name += "  [" + fmt::format("{}", fmt::join(tags, "; ")) + "]";
        std::string counts = fmt::format("{:>6} -> {:<6}", r.a ? std::to_string(r.a->count) : std::string("-"),
                                         r.b ? std::to_string(r.b->count) : std::string("-"));
        std::string line =
            fmt::format("{} {} {:>12} {:>12} {:>22}  {}", mark, counts, mean(r.a), mean(r.b), delta, name);
        out += colour.empty() ? line : p.paint(line, colour);
        out += '\n';
    }
}

}  // namespace

json to_json(const DiffResult& d) {
    json renames = json::object();
    for (const auto& [from, to] : d.options.renames)
        renames[from] = to;
    json tree = json::array();
    for (const auto& n : d.roots)
        tree.push_back(node_json(n));
    std::vector<const DiffNode*> flat;
    for (const auto& n : d.roots)
        collect_changes(n, false, flat);
    std::stable_sort(flat.begin(), flat.end(), [](auto* x, auto* y) { return x->impact_ns > y->impact_ns; });
    json changes = json::array();
    for (const DiffNode* n : flat)
        changes.push_back({{"path", n->path},
                           {"status", std::string(to_string(n->status))},
                           {"changes", changes_of(*n)},
                           {"irq", n->irq},
                           {"delta_count", n->delta_count},
                           {"delta_total_ns", opt_delta(n->delta_total_ns)},
                           {"impact_ns", n->impact_ns}});
    const DiffSummary& s = d.summary;
    json j = {{"schema", kDiffSchema},
              {"a", input_json(d.a)},
              {"b", input_json(d.b)},
              {"options",
               {{"phase", d.options.phase ? json(*d.options.phase) : json(nullptr)},
                {"renames", renames},
                {"ignore", d.options.ignore},
                {"min_delta_ns", d.options.threshold.min_abs_ns},
                {"min_delta_rel", d.options.threshold.min_rel},
                {"irq", d.options.keep_irq_nesting ? "nested" : "hoisted"},
                {"keep_unchanged", d.options.keep_unchanged}}},
              {"retvals_compared", d.retvals_compared},
              {"summary",
               {{"added_paths", s.added_paths},
                {"added_nodes", s.added_nodes},
                {"added_calls", s.added_calls},
                {"removed_paths", s.removed_paths},
                {"removed_nodes", s.removed_nodes},
                {"removed_calls", s.removed_calls},
                {"count_changes", s.count_changes},
                {"retval_changes", s.retval_changes},
                {"time_changes", s.time_changes},
                {"irq_changes", s.irq_changes},
                {"structural_change", s.structural()},
                {"any_change", s.any()}}},
              {"tree", std::move(tree)},
              {"changes", std::move(changes)},
              {"ioctls", ioctls_json(d)},
              {"api_calls", detail::api_calls_json(d)}};
    if (s.time_unknown) j["summary"]["time_unknown"] = s.time_unknown;  // only then: see side_json
    if (!d.calls_compared) {
        const DiffInput& none = d.a.report_calls == 0 ? d.a : d.b;
        j["calls_compared"] = false;
        j["calls_not_compared"] =
            fmt::format("{} has no call graph: {}", &none == &d.a ? "a" : "b", why_no_call_graph(none));
    }
    return j;
}

std::string to_json_text(const DiffResult& d) {
    return to_json(d).dump(1, ' ', false, json::error_handler_t::replace);
}

std::string format_diff_text(const DiffResult& d, const DiffTextOptions& options) {
    TextWriter w(options);
    std::string& out = w.out;
    const DiffSummary& s = d.summary;
    out += "# nvtrace diff\n";
    out += fmt::format("#  [A] base: {}  ({})\n", d.a.label, describe_input(d.a));
    out += fmt::format("#  [B] new:  {}  ({})\n", d.b.label, describe_input(d.b));
    if (d.options.phase) out += fmt::format("#  phase: {}\n", *d.options.phase);
    out += "#  names: clone suffixes (.isra .constprop .part .cold ...) and [module] stripped";
    if (!d.options.renames.empty()) {
        std::vector<std::string> r;
        for (const auto& [from, to] : d.options.renames)
            r.push_back(to.empty() ? from + " collapsed" : from + " -> " + to);
        out += fmt::format("; renames: {}", fmt::join(r, ", "));
    }
    out += d.options.keep_irq_nesting ? "; interrupts nested where they arrived\n" : "; interrupts under [irq]\n";
    if (!d.options.ignore.empty()) out += fmt::format("#  ignored: {}\n", fmt::join(d.options.ignore, " "));
    out += fmt::format("#  time changes need |delta total| >= {} and >= {:.0f}% of A\n",
                       fmt_ns(d.options.threshold.min_abs_ns), d.options.threshold.min_rel * 100.0);
    if (!d.retvals_compared) out += "#  return values not compared (not recorded in both reports)\n";
    for (const auto* in : {&d.a, &d.b})
        if (!in->complete)
            out += fmt::format("#  WARNING: {} is incomplete ({}): removed or added paths may be lost data\n",
                               in->label, fmt::join(in->reasons, "; "));
    if (d.calls_compared)
        out += fmt::format(
            "#  {} added path(s) ({} calls), {} removed path(s) ({} calls), {} count change(s), {} retval change(s), "
            "{} time change(s){}{}\n",
            s.added_paths, s.added_calls, s.removed_paths, s.removed_calls, s.count_changes, s.retval_changes,
            s.time_changes, s.irq_changes ? fmt::format(" ({} under [irq])", s.irq_changes) : std::string(),
            s.time_unknown ? fmt::format(", {} path(s) whose time is unknown (a call without a duration: not compared)",
                                         s.time_unknown)
                           : std::string());
    if (d.roots.empty()) {
        if (!d.calls_compared) {
            const DiffInput& none = d.a.report_calls == 0 ? d.a : d.b;
            const DiffInput& some = d.a.report_calls == 0 ? d.b : d.a;
            out +=
                visible(fmt::format("#  call paths not compared: {} {} has no call graph ({}); {} {} has {} calls{}",
                                    &none == &d.a ? "A" : "B", none.label, why_no_call_graph(none),
                                    &some == &d.a ? "A" : "B", some.label, some.report_calls,
                                    d.ioctls_compared || d.api_compared
                                        ? fmt::format(": only the {} compared", d.ioctls_compared && d.api_compared
                                                                                    ? "ioctls and API calls are"
                                                                                : d.ioctls_compared ? "ioctls are"
                                                                                                    : "API calls are")
                                        : std::string()));
            out += '\n';
        } else if (d.a.report_calls == 0 && d.b.report_calls == 0)
            out += fmt::format(
                "#  neither report has calls (function_graph was not traced): only the ioctls{} are compared\n",
                d.api_compared ? " and API calls" : "");
        else
            out += s.any() ? "" : "#  no change\n";
        ioctls_not_compared_text(d, out);
        if (d.ioctls_compared) ioctls_text(d, w.p, out);
        detail::api_calls_text(d, options.colour, out);
        return out;
    }
    out += "#\n";
    out += fmt::format("# {:^16} {:>12} {:>12} {:>22}  {}\n", "calls A -> B", "total A", "total B", "delta total",
                       "function (+ added, - removed, ~ changed)");
    for (const auto& n : d.roots)
        w.row(n, 0);
    if (w.truncated) out += fmt::format("# ... more rows left out (--max-rows {})\n", options.max_rows);
    ioctls_not_compared_text(d, out);
    if (d.ioctls_compared) ioctls_text(d, w.p, out);
    detail::api_calls_text(d, options.colour, out);
    return out;
}

}  // namespace nvtrace
