// The API-call part of a diff (include/nvtrace/diff.hpp, docs/diff.md "API calls"): two reports' api_calls
// aligned by (api, function), with their results, latency and the ioctls made inside them.
#include "api_diff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace nvtrace {

namespace {

using nlohmann::json;
using Key = std::pair<std::string, std::string>;  // (api, function)

// What a call's result is, as a class that stays the same between two runs of the same program: the CUresult /
// cudaError_t name the report gave it; for a result without a name, 0, an errno, or "other" (a --uprobe's
// return is often a pid, a pointer or a length: different every run); "unknown" when no return was seen.
std::string result_class(const ApiCall& c) {
    if (c.result_name != "unknown") return c.result_name;
    if (!c.result) return "unknown";
    const std::int64_t v = *c.result;
    if (v == 0) return "0";
    if (v < 0 && v >= -4095) {
        const char* name = strerrorname_np(static_cast<int>(-v));
        return name ? fmt::format("{} ({})", v, name) : std::to_string(v);
    }
    return "other";
}

bool is_success(const std::string& cls) {
    return cls == "CUDA_SUCCESS" || cls == "cudaSuccess" || cls == "0";
}

std::int64_t signed_delta(std::uint64_t a, std::uint64_t b) {
    return b >= a ? static_cast<std::int64_t>(b - a) : -static_cast<std::int64_t>(a - b);
}

struct Acc {
    ApiDiffSide side;
    std::optional<std::string> library;
};

std::map<Key, Acc> accumulate(const std::vector<ApiCall>& calls, const DiffOptions& o) {
    std::map<Key, Acc> out;
    for (const ApiCall& c : calls) {
        if (o.phase && c.phase != o.phase) continue;
        Acc& acc = out[Key{c.api, c.function}];
        ApiDiffSide& s = acc.side;
        if (!acc.library) acc.library = c.library;
        ++s.count;
        if (c.exit_ns && *c.exit_ns >= c.entry_ns) {
            const std::uint64_t d = *c.exit_ns - c.entry_ns;
            s.total_ns += d;
            s.max_ns = std::max(s.max_ns.value_or(0), d);
        } else {
            ++s.unknown_durations;
        }
        ++s.results[result_class(c)];
        for (const std::string& label : c.ioctl_names)
            ++s.ioctls[label];
    }
    return out;
}

// The threshold of the call tree's time changes (DiffThreshold), on one pair of values.
bool past(std::int64_t delta, std::optional<double> rel, const DiffThreshold& t) {
    const auto abs_delta = static_cast<std::uint64_t>(std::llabs(delta));
    return abs_delta > 0 && abs_delta >= t.min_abs_ns && (!rel || std::abs(*rel) >= t.min_rel);
}

// Results changed: a class is in one side only, or a class other than success has another count (a count change
// of successful calls alone is a count change, not a result change).
bool results_differ(const ApiDiffSide& a, const ApiDiffSide& b) {
    std::set<std::string> classes;
    for (const auto& [k, n] : a.results)
        classes.insert(k);
    for (const auto& [k, n] : b.results)
        classes.insert(k);
    for (const std::string& k : classes) {
        auto ia = a.results.find(k), ib = b.results.find(k);
        if (ia == a.results.end() || ib == b.results.end()) return true;
        if (!is_success(k) && ia->second != ib->second) return true;
    }
    return false;
}

std::string fmt_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

std::string fmt_delta_ns(std::int64_t d, std::optional<double> rel) {
    std::string s = (d < 0 ? "-" : "+") + fmt_ns(static_cast<std::uint64_t>(std::llabs(d)));
    if (rel) s += fmt::format(" ({:+.1f}%)", *rel * 100.0);
    return s;
}

std::string fmt_counts(const std::map<std::string, std::uint64_t>& m) {
    std::vector<std::string> parts;
    for (const auto& [k, n] : m)
        parts.push_back(fmt::format("{} x{}", k, n));
    return parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", "));
}

json opt_json(const std::optional<std::uint64_t>& v) {
    return v ? json(*v) : json(nullptr);
}

json side_json(const std::optional<ApiDiffSide>& s) {
    if (!s) return nullptr;
    return {{"count", s->count},
            {"total_ns", s->total_ns},
            {"max_ns", opt_json(s->max_ns)},
            {"unknown_durations", s->unknown_durations},
            {"results", s->results},
            {"ioctls", s->ioctls}};
}

std::vector<std::string> changes_of(const ApiDiffRow& r) {
    std::vector<std::string> c;
    if (r.status == DiffStatus::added) c.push_back("added");
    if (r.status == DiffStatus::removed) c.push_back("removed");
    if (r.count_changed) c.push_back("count");
    if (r.results_changed) c.push_back("results");
    if (r.total_changed) c.push_back("total");
    if (r.max_changed) c.push_back("max");
    if (r.a && r.b && !r.ioctl_changes.empty()) c.push_back("ioctls");
    return c;
}

}  // namespace

std::vector<ApiDiffRow> diff_api_calls(const std::vector<ApiCall>& a, const std::vector<ApiCall>& b,
                                       const DiffOptions& o, ApiDiffSummary& sum) {
    const auto ra = accumulate(a, o), rb = accumulate(b, o);
    std::map<Key, std::pair<const Acc*, const Acc*>> both;
    for (const auto& [k, acc] : ra)
        both[k].first = &acc;
    for (const auto& [k, acc] : rb)
        both[k].second = &acc;
    std::vector<ApiDiffRow> out;
    for (const auto& [k, p] : both) {
        const Acc* sa = p.first;
        const Acc* sb = p.second;
        ApiDiffRow d;
        d.api = k.first;
        d.function = k.second;
        d.library = sb && sb->library ? sb->library : sa ? sa->library : std::nullopt;
        if (sa) d.a = sa->side;
        if (sb) d.b = sb->side;
        d.delta_count = signed_delta(sa ? sa->side.count : 0, sb ? sb->side.count : 0);
        std::set<std::string> labels;
        for (const Acc* s : {sa, sb})
            if (s)
                for (const auto& [label, n] : s->side.ioctls)
                    labels.insert(label);
        for (const std::string& label : labels) {
            auto count = [&](const Acc* s) -> std::uint64_t {
                if (!s) return 0;
                auto it = s->side.ioctls.find(label);
                return it == s->side.ioctls.end() ? 0 : it->second;
            };
            if (count(sa) != count(sb)) d.ioctl_changes.push_back({label, count(sa), count(sb)});
        }
        if (sa && sb) {
            const ApiDiffSide& x = sa->side;
            const ApiDiffSide& y = sb->side;
            d.count_changed = x.count != y.count;
            d.results_changed = results_differ(x, y);
            if (x.max_ns && y.max_ns) {
                d.delta_total_ns = signed_delta(x.total_ns, y.total_ns);
                if (x.total_ns > 0)
                    d.rel_total = static_cast<double>(*d.delta_total_ns) / static_cast<double>(x.total_ns);
                d.total_changed = past(*d.delta_total_ns, d.rel_total, o.threshold);
                d.delta_max_ns = signed_delta(*x.max_ns, *y.max_ns);
                if (*x.max_ns > 0) d.rel_max = static_cast<double>(*d.delta_max_ns) / static_cast<double>(*x.max_ns);
                d.max_changed = past(*d.delta_max_ns, d.rel_max, o.threshold);
            }
            if (d.count_changed || d.results_changed || d.total_changed || d.max_changed || !d.ioctl_changes.empty())
                d.status = DiffStatus::changed;
        } else {
            d.status = sa ? DiffStatus::removed : DiffStatus::added;
        }
        sum.added += d.status == DiffStatus::added;
        sum.removed += d.status == DiffStatus::removed;
        sum.count_changes += d.count_changed;
        sum.result_changes += d.results_changed;
        sum.latency_changes += d.total_changed || d.max_changed;
        sum.ioctl_changes += sa && sb && !d.ioctl_changes.empty();
        if (d.status != DiffStatus::same || o.keep_unchanged) out.push_back(std::move(d));
    }
    auto rank = [](const ApiDiffRow& r) {
        return r.status == DiffStatus::added || r.status == DiffStatus::removed ? 0
               : r.status == DiffStatus::changed                                ? 1
                                                                                : 2;
    };
    std::stable_sort(out.begin(), out.end(), [&](const ApiDiffRow& x, const ApiDiffRow& y) {
        if (rank(x) != rank(y)) return rank(x) < rank(y);
        return (x.b ? x.b->count : x.a->count) > (y.b ? y.b->count : y.a->count);
    });
    return out;
}

namespace detail {

json api_calls_json(const DiffResult& d) {
    json rows = json::array();
    for (const ApiDiffRow& r : d.api_calls) {
        json ioctls = json::array();
        for (const ApiIoctlChange& c : r.ioctl_changes)
            ioctls.push_back({{"ioctl", c.ioctl}, {"a", c.a}, {"b", c.b}});
        rows.push_back({{"api", r.api},
                        {"function", r.function},
                        {"library", r.library ? json(*r.library) : json(nullptr)},
                        {"status", std::string(to_string(r.status))},
                        {"changes", changes_of(r)},
                        {"a", side_json(r.a)},
                        {"b", side_json(r.b)},
                        {"delta_count", r.delta_count},
                        {"delta_total_ns", r.delta_total_ns ? json(*r.delta_total_ns) : json(nullptr)},
                        {"total_rel", r.rel_total ? json(*r.rel_total) : json(nullptr)},
                        {"delta_max_ns", r.delta_max_ns ? json(*r.delta_max_ns) : json(nullptr)},
                        {"max_rel", r.rel_max ? json(*r.rel_max) : json(nullptr)},
                        {"ioctl_changes", std::move(ioctls)}});
    }
    const ApiDiffSummary& s = d.api_summary;
    return {{"compared", d.api_compared},
            {"summary",
             {{"added", s.added},
              {"removed", s.removed},
              {"count_changes", s.count_changes},
              {"result_changes", s.result_changes},
              {"latency_changes", s.latency_changes},
              {"ioctl_changes", s.ioctl_changes},
              {"any_change", s.any()}}},
            {"rows", std::move(rows)}};
}

void api_calls_text(const DiffResult& d, bool colour, std::string& out) {
    if (!d.api_compared) return;
    const ApiDiffSummary& s = d.api_summary;
    out += "#\n";
    out += fmt::format(
        "# API calls by (api, function){}; latency changes need |delta| >= {} and >= {:.0f}% of A, of the total or "
        "the max\n",
        d.options.phase ? fmt::format(", phase {}", *d.options.phase) : std::string(),
        fmt_ns(d.options.threshold.min_abs_ns), d.options.threshold.min_rel * 100.0);
    out += fmt::format(
        "#  {} added function(s), {} removed function(s), {} count change(s), {} result change(s), {} latency "
        "change(s), {} with ioctl changes\n",
        s.added, s.removed, s.count_changes, s.result_changes, s.latency_changes, s.ioctl_changes);
    if (d.api_calls.empty()) {
        out += s.any() ? "" : "#  no API call change\n";
        return;
    }
    out += fmt::format("# {:^16} {:>12} {:>12} {:>22}  {}\n", "calls A -> B", "total A", "total B", "delta total",
                       "function (+ added, - removed, ~ changed)");
    const std::string indent(2 + 16 + 1 + 12 + 1 + 12 + 1 + 22 + 2 + 2, ' ');
    for (const ApiDiffRow& r : d.api_calls) {
        char mark = ' ';
        std::string_view code;
        if (r.status == DiffStatus::added) mark = '+', code = "32";
        if (r.status == DiffStatus::removed) mark = '-', code = "31";
        if (r.status == DiffStatus::changed) mark = '~', code = "33";
        auto total = [](const std::optional<ApiDiffSide>& x) {
            return !x ? std::string("-") : x->max_ns ? fmt_ns(x->total_ns) : std::string("unknown");
        };
        const std::string delta = r.delta_total_ns ? fmt_delta_ns(*r.delta_total_ns, r.rel_total) : "-";
        std::vector<std::string> tags;
        if (r.count_changed) tags.push_back(fmt::format("calls {:+}", r.delta_count));
        if (r.results_changed) tags.push_back("results");
        if (r.total_changed) tags.push_back("total");
        if (r.max_changed) tags.push_back("max");
        if (r.a && r.b && !r.ioctl_changes.empty()) tags.push_back("ioctls");
        std::string name = fmt::format("{} ({})", r.function, r.api);
        if (!tags.empty()) name += "  [" + fmt::format("{}", fmt::join(tags, ", ")) + "]";
        const std::string counts = fmt::format("{:>6} -> {:<6}", r.a ? std::to_string(r.a->count) : std::string("-"),
                                               r.b ? std::to_string(r.b->count) : std::string("-"));
        std::string line =
            fmt::format("{} {} {:>12} {:>12} {:>22}  {}", mark, counts, total(r.a), total(r.b), delta, name);
        out += colour && !code.empty() ? fmt::format("\x1b[{}m{}\x1b[0m", code, line) : line;
        out += '\n';
        if (r.a && r.b) {
            if (r.results_changed)
                out += fmt::format("{}results: {} -> {}\n", indent, fmt_counts(r.a->results), fmt_counts(r.b->results));
            if (r.max_changed && r.delta_max_ns)
                out += fmt::format("{}max: {} -> {}: {}\n", indent, fmt_ns(*r.a->max_ns), fmt_ns(*r.b->max_ns),
                                   fmt_delta_ns(*r.delta_max_ns, r.rel_max));
        } else {
            out += fmt::format("{}results: {}\n", indent, fmt_counts((r.a ? r.a : r.b)->results));
        }
        if (!r.ioctl_changes.empty()) {
            std::vector<std::string> parts;
            for (const ApiIoctlChange& c : r.ioctl_changes)
                parts.push_back(fmt::format("{} x{} -> x{}", c.ioctl, c.a, c.b));
            out += fmt::format("{}ioctls: {}\n", indent, fmt::join(parts, "; "));
        }
    }
}

}  // namespace detail

}  // namespace nvtrace
