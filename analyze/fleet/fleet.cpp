// Many nodes' reports: reading them one at a time into digests, grouping by signature, comparing each other group
// with the reference group (nvtrace/fleet.hpp, docs/fleet.md).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../json_values.hpp"
#include "../report_head.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/visible_text.hpp"

namespace nvtrace {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string group_id(std::size_t i) {
    std::string id;
    for (std::size_t n = i + 1; n > 0; n = (n - 1) / 26)
        id.insert(id.begin(), static_cast<char>('A' + (n - 1) % 26));
    return id;
}

// The meta.json beside a report.json: nullopt when there is none; an error when it is there but unreadable.
Result<std::optional<ProgramEnd>> read_meta_beside(const std::string& report) {
    fs::path meta = fs::path(report).parent_path() / "meta.json";
    std::error_code ec;
    if (!fs::is_regular_file(meta, ec)) return std::optional<ProgramEnd>();
    std::ifstream in(meta, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open", meta.string())));
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return fail(
            Error::usage(fmt::format("{}: not valid JSON (expected the capture's meta.json object)", meta.string())));
    ProgramEnd end;
    if (auto e = j.find("exit_code"); e != j.end() && e->is_number_integer()) end.exit_code = e->get<std::int64_t>();
    if (auto g = j.find("signal"); g != j.end() && g->is_number_integer()) end.signal = g->get<std::int64_t>();
    if (auto t = j.find("timed_out"); t != j.end() && t->is_boolean()) end.timed_out = t->get<bool>();
    return std::optional<ProgramEnd>(end);
}

std::string value_text(const json& v) {
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
    if (j.is_object() && !j.empty()) {
        for (const auto& [k, v] : j.items())
            flatten(v, prefix.empty() ? k : prefix + "." + k, out);
        return;
    }
    out[prefix] = j;
}

// The deepest call path, in calls (a root is 1). A saved report lists a parent before its children
// (read_report_file refuses one that does not); a parent not in the report makes its child a root.
std::size_t call_depth(const std::vector<Call>& calls) {
    std::unordered_map<std::uint64_t, std::size_t> depth_of;
    depth_of.reserve(calls.size());
    std::size_t deepest = 0;
    for (const Call& c : calls) {
        std::size_t d = 1;
        if (c.parent)
            if (auto it = depth_of.find(*c.parent); it != depth_of.end()) d = it->second + 1;
        depth_of[c.id] = d;
        deepest = std::max(deepest, d);
    }
    return deepest;
}

// A node's identity, not a difference between nodes.
bool identity_key(const std::string& key) {
    return key == "host" || key == "slurm" || key.rfind("slurm.", 0) == 0;
}

std::string counts_text(const std::map<std::string, std::uint64_t>& m, const char* prefix = "") {
    if (m.empty()) return "-";
    std::string s;
    for (const auto& [k, n] : m)
        s += fmt::format("{}{}{}x{}", s.empty() ? "" : " ", prefix, k, n);
    return s;
}

std::string driver_text(const NodeDigest& d) {
    std::string s = d.driver ? *d.driver : "unknown";
    if (d.flavour) s += " " + *d.flavour;
    return s;
}

// The node's requests for its row: the most frequent first, at most `max`, then "+N more".
std::string requests_text(const NodeDigest& d, std::size_t max) {
    std::vector<std::pair<std::string, const FleetIoctlStats*>> v;
    for (const auto& [k, st] : d.ioctl_requests)
        v.emplace_back(k, &st);
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < max; ++i) {
        if (!s.empty()) s += ", ";
        s += fmt::format("{} {}", v[i].first, v[i].second->count);
        if (v[i].second->errors) {
            std::string errs;
            for (const auto& [e, n] : v[i].second->by_error)
                errs += fmt::format("{}{} {}", errs.empty() ? "" : " ", e, n);
            s += fmt::format(" ({} err: {})", v[i].second->errors, errs);
        }
    }
    if (v.size() > max) s += fmt::format(", +{} more", v.size() - max);
    return s.empty() ? "-" : s;
}

json digest_json(const NodeDigest& d, const std::string& group) {
    json requests = json::array();
    for (const auto& [k, st] : d.ioctl_requests) {
        auto sp = k.find(' ');
        requests.push_back({{"request", k},
                            {"device", k.substr(0, sp)},
                            {"name", sp == std::string::npos ? std::string() : k.substr(sp + 1)},
                            {"count", st.count},
                            {"errors", st.errors},
                            {"by_error", st.by_error}});
    }
    auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
    return {{"node", d.node},
            {"node_from", d.node_from},
            {"report", d.report},
            {"group", group},
            {"driver", opt(d.driver)},
            {"flavour", opt(d.flavour)},
            {"kernel", opt(d.kernel)},
            {"result", d.result},
            {"checks",
             {{"from", d.checks_from_expect ? "expect" : "report"},
              {"pass", d.checks.pass},
              {"fail", d.checks.fail},
              {"inconclusive", d.checks.inconclusive},
              {"failed", d.failed_checks},
              {"inconclusive_ids", d.inconclusive_checks}}},
            {"xids", d.xids},
            {"nvrm_errors", d.nvrm_errors},
            {"ioctls", {{"total", d.ioctls}, {"errors", d.ioctl_errors}, {"by_request", requests}}},
            {"calls", d.calls},
            {"complete", d.complete},
            {"incomplete", d.incomplete},
            {"signature",
             {{"hash", fmt::format("{:016x}", d.signature.hash)},
              {"call_paths", d.signature.call_paths},
              {"calls", d.signature.calls},
              {"threads", d.signature.threads},
              {"ioctls", d.signature.ioctls}}},
            {"environment", to_json(d.environment)}};
}

}  // namespace

Result<std::vector<std::string>> find_fleet_reports(const std::vector<std::string>& paths) {
    std::set<std::string> found;
    for (const auto& p : paths) {
        std::error_code ec;
        auto st = fs::status(p, ec);
        if (ec || !fs::exists(st)) return fail(Error::usage(fmt::format("{}: no such file or directory", p)));
        if (fs::is_regular_file(st)) {
            found.insert(fs::path(p).lexically_normal().string());
            continue;
        }
        if (!fs::is_directory(st)) return fail(Error::usage(fmt::format("{}: not a regular file or directory", p)));
        std::size_t before = found.size();
        for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
            if (it->path().filename() == "report.json" && it->is_regular_file(ec))
                found.insert(it->path().lexically_normal().string());
        if (ec) return fail(Error::usage(fmt::format("{}: cannot read: {}", p, ec.message())));
        if (found.size() == before)
            return fail(
                Error::usage(fmt::format("{}: no report.json below it (nvtrace run writes DIR/report.json)", p)));
    }
    return std::vector<std::string>(found.begin(), found.end());
}

std::vector<EnvironmentChange> environment_changes(const ReportEnvironment& majority,
                                                   const ReportEnvironment& outlier) {
    std::map<std::string, json> a, b;
    flatten(to_json(majority), "", a);
    flatten(to_json(outlier), "", b);
    std::set<std::string> keys;
    for (const auto& [k, v] : a)
        keys.insert(k);
    for (const auto& [k, v] : b)
        keys.insert(k);
    std::vector<EnvironmentChange> out;
    for (const auto& k : keys) {
        if (k.empty() || identity_key(k)) continue;
        json va = a.count(k) ? a[k] : json(nullptr), vb = b.count(k) ? b[k] : json(nullptr);
        if (va != vb) out.push_back({k, value_text(va), value_text(vb)});
    }
    return out;
}

std::vector<IoctlChange> ioctl_changes(const NodeDigest& majority, const NodeDigest& outlier) {
    std::set<std::string> keys;
    for (const auto& [k, st] : majority.ioctl_requests)
        keys.insert(k);
    for (const auto& [k, st] : outlier.ioctl_requests)
        keys.insert(k);
    std::vector<IoctlChange> out;
    for (const auto& k : keys) {
        IoctlChange c{k};
        if (auto it = majority.ioctl_requests.find(k); it != majority.ioctl_requests.end()) {
            c.majority_count = it->second.count;
            c.majority_errors = it->second.errors;
        }
        if (auto it = outlier.ioctl_requests.find(k); it != outlier.ioctl_requests.end()) {
            c.outlier_count = it->second.count;
            c.outlier_errors = it->second.errors;
        }
        if (c.majority_count != c.outlier_count || c.majority_errors != c.outlier_errors) out.push_back(c);
    }
    return out;
}

FleetResult group_fleet(std::vector<NodeDigest> nodes) {
    FleetResult f;
    f.nodes = std::move(nodes);
    std::map<std::uint64_t, std::size_t> by_signature;
    for (std::size_t i = 0; i < f.nodes.size(); ++i) {
        auto [it, added] = by_signature.try_emplace(f.nodes[i].signature.hash, f.groups.size());
        if (added) f.groups.push_back({"", f.nodes[i].signature.hash, {}, i});
        f.groups[it->second].nodes.push_back(i);
        if (f.nodes[i].checks.fail) f.expect_failed = f.expect_failed || f.nodes[i].checks_from_expect;
    }
    // Largest first; of equal size, the group of the earlier node (groups were made in node order).
    std::stable_sort(f.groups.begin(), f.groups.end(),
                     [](const FleetGroup& a, const FleetGroup& b) { return a.nodes.size() > b.nodes.size(); });
    for (std::size_t g = 0; g < f.groups.size(); ++g)
        f.groups[g].id = group_id(g);
    if (!f.groups.empty() && (f.groups.size() == 1 || f.groups[0].nodes.size() > f.groups[1].nodes.size()))
        f.majority = 0;
    for (std::size_t g = 1; g < f.groups.size(); ++g) {
        const NodeDigest& ref = f.nodes[f.groups[0].representative];
        const NodeDigest& rep = f.nodes[f.groups[g].representative];
        OutlierComparison c;
        c.group = g;
        c.environment = environment_changes(ref.environment, rep.environment);
        c.ioctls = ioctl_changes(ref, rep);
        f.outliers.push_back(std::move(c));
    }
    return f;
}

Result<FleetResult> analyze_fleet(const std::vector<std::string>& reports, const FleetOptions& options) {
    if (reports.empty()) return fail(Error::usage("no reports to read"));
    std::vector<NodeDigest> nodes;
    nodes.reserve(reports.size());
    for (const auto& path : reports) {
        auto meta = read_meta_beside(path);
        if (!meta) return fail(meta.error());
        // One report at a time: it is dropped at the end of this block, once digested.
        auto r = read_report_file(path);
        if (!r) return fail(r.error());
        // The outlier comparison is nvtrace diff's, which walks the call paths recursively (nvtrace/diff.hpp).
        if (std::size_t depth = call_depth(r->calls); depth > kDiffMaxDepth)
            return fail(
                Error::usage(fmt::format("{}: its calls nest {} deep: nvtrace fleet compares call trees up to "
                                         "{} calls deep",
                                         path, depth, kDiffMaxDepth)));
        nodes.push_back(digest_report(*r, path, *meta ? &**meta : nullptr, options.expectations));
    }
    FleetResult f = group_fleet(std::move(nodes));
    for (auto& c : f.outliers) {
        const NodeDigest& ref = f.nodes[f.groups[0].representative];
        const NodeDigest& rep = f.nodes[f.groups[c.group].representative];
        if (ref.calls == 0 && rep.calls == 0) {
            c.diff_note =
                "not compared: neither report has calls (function_graph was not traced); the ioctl requests "
                "above are the comparison";
            continue;
        }
        auto a = read_report_file(ref.report);
        if (!a) return fail(a.error());
        auto b = read_report_file(rep.report);
        if (!b) return fail(b.error());
        c.diff = diff_reports(*a, *b, options.diff);
        c.diff->a.label = ref.report;
        c.diff->b.label = rep.report;
    }
    return f;
}

json to_json(const FleetResult& f) {
    std::vector<std::string> group_of(f.nodes.size());
    for (const auto& g : f.groups)
        for (std::size_t i : g.nodes)
            group_of[i] = g.id;
    json nodes = json::array();
    for (std::size_t i = 0; i < f.nodes.size(); ++i)
        nodes.push_back(digest_json(f.nodes[i], group_of[i]));
    json groups = json::array();
    for (std::size_t g = 0; g < f.groups.size(); ++g) {
        const FleetGroup& gr = f.groups[g];
        json names = json::array();
        for (std::size_t i : gr.nodes)
            names.push_back(f.nodes[i].node);
        groups.push_back({{"id", gr.id},
                          {"signature", fmt::format("{:016x}", gr.signature)},
                          {"size", gr.nodes.size()},
                          {"nodes", names},
                          {"representative", f.nodes[gr.representative].node},
                          {"representative_report", f.nodes[gr.representative].report},
                          {"role", g == 0 ? (f.majority ? "majority" : "reference") : "outlier"}});
    }
    json outliers = json::array();
    for (const auto& c : f.outliers) {
        json env = json::array();
        for (const auto& e : c.environment)
            env.push_back({{"key", e.key}, {"majority", json::parse(e.majority)}, {"outlier", json::parse(e.outlier)}});
        json io = json::array();
        for (const auto& x : c.ioctls)
            io.push_back({{"request", x.request},
                          {"majority_count", x.majority_count},
                          {"outlier_count", x.outlier_count},
                          {"majority_errors", x.majority_errors},
                          {"outlier_errors", x.outlier_errors}});
        outliers.push_back({{"group", f.groups[c.group].id},
                            {"against", f.groups[0].id},
                            {"representative", f.nodes[f.groups[c.group].representative].node},
                            {"reference", f.nodes[f.groups[0].representative].node},
                            {"environment", env},
                            {"ioctls", io},
                            {"diff", c.diff ? to_json(*c.diff) : json(nullptr)},
                            {"diff_note", c.diff ? json(nullptr) : json(c.diff_note)}});
    }
    return {{"schema", kFleetSchema},
            {"signature",
             "call paths of normalised frames with their counts (interrupts under [irq]); per-thread ioctl request "
             "sequences (DEVICE REQUEST[ hclass][ ctrl], run-length counted), the threads sorted; per-thread API "
             "call sequences (paths of API functions, run-length counted) when recorded; no timing, pids or return "
             "values"},
            {"nodes", nodes},
            {"groups", groups},
            {"majority", f.majority ? json(f.groups[*f.majority].id) : json(nullptr)},
            {"outliers", outliers},
            {"expect_failed", f.expect_failed}};
}

std::string to_json_text(const FleetResult& f) {
    return to_json(f).dump(1, ' ', false, json::error_handler_t::replace);
}

std::string format_fleet_text(const FleetResult& f, const FleetTextOptions& options) {
    std::string out;
    std::vector<std::string> group_of(f.nodes.size());
    for (const auto& g : f.groups)
        for (std::size_t i : g.nodes)
            group_of[i] = g.id;
    out += fmt::format("# nvtrace fleet: {} node(s), {} group(s) by signature\n", f.nodes.size(), f.groups.size());
    // The node table, columns as wide as their widest cell.
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"node", "group", "driver", "kernel", "result", "checks p/f/i", "xids", "nvrm errors", "ioctls",
                    "errors", "complete", "ioctls by request"});
    for (std::size_t i = 0; i < f.nodes.size(); ++i) {
        const NodeDigest& d = f.nodes[i];
        // Every cell but the counts comes from the reports (host names, driver strings, device paths, error
        // names): control bytes as \xNN, so that none starts a row of its own or drives the terminal.
        rows.push_back({visible(d.node), group_of[i], visible(driver_text(d)),
                        visible(d.kernel ? *d.kernel : "unknown"), visible(d.result),
                        fmt::format("{}/{}/{}", d.checks.pass, d.checks.fail, d.checks.inconclusive),
                        visible(counts_text(d.xids)), visible(counts_text(d.nvrm_errors)), std::to_string(d.ioctls),
                        std::to_string(d.ioctl_errors), d.complete ? "yes" : "no", visible(requests_text(d, 4))});
    }
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& r : rows)
        for (std::size_t c = 0; c + 1 < r.size(); ++c)
            width[c] = std::max(width[c], r[c].size());
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t c = 0; c < r.size(); ++c)
            line += c + 1 < r.size() ? fmt::format("{:<{}}  ", r[c], width[c]) : r[c];
        out += line + "\n";
    }
    bool any_incomplete = false;
    for (const auto& d : f.nodes)
        any_incomplete = any_incomplete || !d.complete;
    if (any_incomplete) {
        out += "\nincomplete reports (what is missing):\n";
        for (const auto& d : f.nodes)
            if (!d.complete)
                out += visible(fmt::format("  {}: {}", d.node,
                                           d.incomplete.empty() ? std::string("no reason given")
                                                                : fmt::format("{}", fmt::join(d.incomplete, "; ")))) +
                       "\n";
    }
    bool from_expect = !f.nodes.empty() && f.nodes[0].checks_from_expect;
    if (from_expect) {
        std::string failed;
        for (const auto& d : f.nodes)
            if (d.checks.fail)
                failed += fmt::format("{}{} ({})", failed.empty() ? "" : ", ", d.node, fmt::join(d.failed_checks, " "));
        out += fmt::format("\nchecks (--expect): {}\n",
                           failed.empty() ? "no node failed a check" : "failed on " + visible(failed));
    }
    out +=
        "\ngroups (signature: call paths with counts, per-thread ioctl request and API call sequences; no "
        "timing):\n";
    for (std::size_t g = 0; g < f.groups.size(); ++g) {
        const FleetGroup& gr = f.groups[g];
        std::string names;
        for (std::size_t k = 0; k < gr.nodes.size(); ++k) {
            if (k == 12) {
                names += fmt::format(", ... {} more", gr.nodes.size() - k);
                break;
            }
            names += (k ? ", " : "") + visible(f.nodes[gr.nodes[k]].node);
        }
        const char* role =
            g == 0 ? (f.majority ? "majority" : "reference (no majority: the largest groups tie)") : "outlier";
        const NodeSignature& s = f.nodes[gr.representative].signature;
        out += fmt::format(
            "  {}  {} node(s)  {}  signature {:016x} ({} call paths, {} calls, {} ioctls in {} thread(s)): {}\n", gr.id,
            gr.nodes.size(), role, gr.signature, s.call_paths, s.calls, s.ioctls, s.threads, names);
    }
    if (f.outliers.empty()) out += "\nno outliers: every node has the same signature\n";
    for (const auto& c : f.outliers) {
        const FleetGroup& gr = f.groups[c.group];
        const NodeDigest& rep = f.nodes[gr.representative];
        const NodeDigest& ref = f.nodes[f.groups[0].representative];
        out += fmt::format("\n## outlier group {} ({}) against {} ({}): {} vs {}\n", gr.id, visible(rep.node),
                           f.groups[0].id, visible(ref.node), visible(rep.report), visible(ref.report));
        if (c.environment.empty()) {
            out += "environment: no difference (host and slurm.* left out)\n";
        } else {
            out += "environment:\n";
            for (const auto& e : c.environment)
                out += fmt::format("  ~ {}: {} -> {}\n", visible(e.key), e.majority, e.outlier);
        }
        if (c.ioctls.empty()) {
            out += "ioctls: same requests and counts (the order differs)\n";
        } else {
            out += fmt::format("ioctls (calls {} -> {}):\n", visible(ref.node), visible(rep.node));
            for (const auto& x : c.ioctls) {
                char mark = x.majority_count == 0 ? '+' : x.outlier_count == 0 ? '-' : '~';
                std::string errs = x.majority_errors != x.outlier_errors
                                       ? fmt::format("  errors {} -> {}", x.majority_errors, x.outlier_errors)
                                       : "";
                out += fmt::format("  {} {}: {} -> {}{}\n", mark, visible(x.request), x.majority_count, x.outlier_count,
                                   errs);
            }
        }
        if (c.diff) {
            DiffTextOptions t;
            t.colour = options.colour;
            t.max_rows = options.max_diff_rows;
            out += "call tree (nvtrace diff " + visible(ref.report) + " " + visible(rep.report) + "):\n";
            std::string text = format_diff_text(*c.diff, t);
            // The diff's own "--max-rows N" hint is fleet's --max-diff-rows here.
            if (auto at = text.rfind("(--max-rows "); at != std::string::npos)
                text.replace(at, 12, "(--max-diff-rows ");
            out += text;
        } else {
            out += "call tree: " + c.diff_note + "\n";
        }
    }
    return out;
}

}  // namespace nvtrace
