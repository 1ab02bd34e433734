// The aggregated call-path tree (nvtrace/tree.hpp, docs/tree.md).
#include "nvtrace/tree.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "nvtrace/ioctl.hpp"
#include "nvtrace/symbol_name.hpp"
#include "nvtrace/visible_text.hpp"

namespace nvtrace {

std::optional<TreeGroupBy> parse_tree_group_by(std::string_view name) {
    if (name == "none") return TreeGroupBy::none;
    if (name == "phase") return TreeGroupBy::phase;
    if (name == "api") return TreeGroupBy::api;
    if (name == "ioctl") return TreeGroupBy::ioctl;
    if (name == "thread") return TreeGroupBy::thread;
    return std::nullopt;
}

std::string_view to_string(TreeGroupBy g) {
    switch (g) {
        case TreeGroupBy::none:
            return "none";
        case TreeGroupBy::phase:
            return "phase";
        case TreeGroupBy::api:
            return "api";
        case TreeGroupBy::ioctl:
            return "ioctl";
        case TreeGroupBy::thread:
            return "thread";
    }
    return "none";
}

std::string tree_us(std::uint64_t ns) {
    return fmt::format("{}.{:03}", thousands(ns / 1000), ns % 1000);
}

std::optional<std::uint64_t> parse_duration_ns(std::string_view text) {
    std::size_t unit_at = 0;
    while (unit_at < text.size() && ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.'))
        ++unit_at;
    std::string_view number = text.substr(0, unit_at), unit = text.substr(unit_at);
    if (number.empty() || number == ".") return std::nullopt;
    double scale = 0;
    if (unit.empty() || unit == "us")
        scale = 1e3;
    else if (unit == "ns")
        scale = 1;
    else if (unit == "ms")
        scale = 1e6;
    else if (unit == "s")
        scale = 1e9;
    else
        return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
    double ns = std::round(v * scale);
    if (!(ns >= 0) || ns >= 1.8e19) return std::nullopt;
    return static_cast<std::uint64_t>(ns);
}

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// acc += d, saturating: a sum past 2^64-1 ns stays there with `over` set (a damaged report's durations; it never
// wraps into a small number).
void add_sat(std::uint64_t& acc, std::uint64_t d, bool& over) {
    if (d > std::numeric_limits<std::uint64_t>::max() - acc) {
        acc = std::numeric_limits<std::uint64_t>::max();
        over = true;
    } else {
        acc += d;
    }
}

std::string normalise_module(std::string_view m) {
    if (m.size() >= 2 && m.front() == '[' && m.back() == ']') m = m.substr(1, m.size() - 2);
    std::string s(m);
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

std::string call_label(const Call& c) {
    return c.module ? fmt::format("{} [{}]", c.function, *c.module) : c.function;
}

// Counts by key in first-seen order: the notes' "NV_OK x2, NV_ERR_INVALID_ADDRESS x1".
class Tally {
public:
    void add(const std::string& key, std::uint64_t n = 1) {
        auto [it, fresh] = index_.try_emplace(key, items_.size());
        if (fresh) items_.emplace_back(key, 0);
        items_[it->second].second += n;
    }
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    // "a x2, b x1" with the most frequent first; past `max_items`, "and N more".
    std::string text(std::size_t max_items = 4) const {
        auto sorted = items_;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        std::string s;
        for (std::size_t i = 0; i < sorted.size() && i < max_items; ++i)
            s += fmt::format("{}{} x{}", i ? ", " : "", sorted[i].first, thousands(sorted[i].second));
        if (sorted.size() > max_items) s += fmt::format(" and {} more", sorted.size() - max_items);
        return s;
    }

private:
    std::vector<std::pair<std::string, std::uint64_t>> items_;
    std::unordered_map<std::string, std::size_t> index_;
};

// What an ioctl returned, for the notes: its error's name (ioctl_error_name: errno, ret = -errno, or an RM/UVM
// status other than NV_OK), else the status or ret of a success, else "no exit".
std::pair<std::string, bool> ioctl_outcome(const IoctlRecord& io) {
    if (auto e = ioctl_error_name(io)) return {*e, true};
    if (!io.ret) return {"no exit", false};
    if (io.status) return {*io.status, false};
    return {fmt::format("ret={}", *io.ret), false};
}

std::string request_label(const IoctlRecord& io) {
    return io.name ? *io.name : fmt::format("ioctl 0x{:x}", io.cmd);
}

std::string device_label(const IoctlRecord& io) {
    if (io.fd_path) return *io.fd_path;
    return fmt::format("fd {} (path {})", io.fd, io.fd_path_unknown ? *io.fd_path_unknown : std::string("unknown"));
}

// "comm-pid" as ftrace prints a task; the parts the source did not record are said to be unknown.
std::string thread_label(const std::string& comm, int pid) {
    if (pid < 0) return comm.empty() ? std::string("thread unknown") : comm + "-(pid unknown)";
    return fmt::format("{}-{}", comm.empty() ? std::string("(comm unknown)") : comm, pid);
}

std::string first_line(const std::string& text, std::size_t max_chars = 100) {
    std::string s = text.substr(0, text.find('\n'));
    if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
    return s;
}

// The API span path of each api_calls entry ("cudaMalloc > cuMemAlloc_v2"), outermost first.
std::vector<std::string> api_paths(const Report& r) {
    std::unordered_map<std::uint64_t, std::size_t> by_id;
    for (std::size_t i = 0; i < r.api_calls.size(); ++i)
        by_id.emplace(r.api_calls[i].id, i);
    std::vector<std::string> paths(r.api_calls.size());
    for (std::size_t i = 0; i < r.api_calls.size(); ++i) {
        std::vector<const std::string*> chain{&r.api_calls[i].function};
        std::optional<std::uint64_t> up = r.api_calls[i].parent;
        // Bounded: a damaged report whose parents loop ends here too.
        for (std::size_t guard = 0; up && guard < r.api_calls.size(); ++guard) {
            auto it = by_id.find(*up);
            if (it == by_id.end()) break;
            chain.push_back(&r.api_calls[it->second].function);
            up = r.api_calls[it->second].parent;
        }
        for (auto p = chain.rbegin(); p != chain.rend(); ++p)
            paths[i] += (paths[i].empty() ? "" : " > ") + **p;
    }
    return paths;
}

// Per top node: what its calls ran under, turned into notes at the end.
struct TopFacts {
    Tally requests, outcomes, phases, apis;
    bool error = false;
};

class Builder {
public:
    Builder(const Report& r, const TreeOptions& o) : r_(r), o_(o) {}

    TreeView build() {
        if (!r_.calls.empty()) {
            from_calls();
        } else if (!r_.graph.empty()) {
            from_graph();
        } else {
            from_ioctls();
        }
        finish();
        return std::move(v_);
    }

private:
    // The child of `parent` (kNone: a top) labelled `label`, made when new.
    std::uint32_t child(std::uint32_t parent, const std::string& label, TreeNode::Kind kind) {
        auto& index = parent == kNone ? top_index_ : kid_index_[parent];
        if (auto it = index.find(label); it != index.end()) return it->second;
        auto n = static_cast<std::uint32_t>(v_.nodes.size());
        index.emplace(label, n);  // before kid_index_ grows: `index` may be one of its elements
        v_.nodes.push_back(TreeNode{});
        v_.nodes.back().kind = kind;
        v_.nodes.back().label = label;
        kid_index_.emplace_back();
        facts_.emplace_back();
        logs_.emplace_back();
        (parent == kNone ? v_.tops : v_.nodes[parent].children).push_back(n);
        return n;
    }

    // Whether (node, ioctl) is new: an ioctl is counted once per node, however many of its root calls are there.
    bool first_time(std::uint32_t node, std::uint32_t ioctl) {
        return seen_.insert((std::uint64_t(node) << 32) | ioctl).second;
    }

    static void add_time(TreeNode& n, const std::optional<std::uint64_t>& d) {
        ++n.count;
        if (!d) return;
        ++n.timed;
        add_sat(n.total_ns, *d, n.overflow);
        n.max_ns = std::max(n.max_ns, *d);
    }

    // ---- from calls -------------------------------------------------------------------------------------

    // The node a top call `c` goes under: kNone, or its --group-by group (made when new, the top's time added).
    // `io`: the ioctl its root call ran inside (kNone: none); `api`: the API span path, when any.
    std::uint32_t top_parent(const Call& c, std::uint32_t io, const std::string* api) {
        std::string group;
        switch (o_.group_by) {
            case TreeGroupBy::none:
                return kNone;
            case TreeGroupBy::phase:
                group = c.phase ? "phase " + *c.phase : std::string("no phase");
                break;
            case TreeGroupBy::api:
                group = api ? "api " + *api : std::string("no API call");
                break;
            case TreeGroupBy::ioctl:
                // With no ioctl in the report at all, whether a call ran inside one is not known (function_graph
                // text records no syscall events), so the group does not say it ran outside one.
                group = io != kNone         ? request_label(r_.ioctls[io])
                        : r_.ioctls.empty() ? std::string("no ioctl recorded")
                                            : std::string("not inside an ioctl");
                break;
            case TreeGroupBy::thread:
                group = thread_label(c.comm, c.pid);
                break;
        }
        std::uint32_t g = child(kNone, group, TreeNode::Kind::group);
        add_time(v_.nodes[g], c.duration_ns);
        if (o_.group_by == TreeGroupBy::ioctl && io != kNone && first_time(g, io)) {
            auto [text, err] = ioctl_outcome(r_.ioctls[io]);
            facts_[g].outcomes.add(text);
            facts_[g].error |= err;
            ++requests_[g];
        }
        return g;
    }

    void from_calls() {
        const auto& calls = r_.calls;
        std::unordered_map<std::uint64_t, std::uint32_t> by_id;
        by_id.reserve(calls.size());
        for (std::size_t i = 0; i < calls.size(); ++i)
            by_id.emplace(calls[i].id, static_cast<std::uint32_t>(i));
        // Children in report order (by id: entry order); a parent id that names no call makes a root.
        std::vector<std::vector<std::uint32_t>> kids(calls.size());
        std::vector<std::uint32_t> roots;
        for (std::size_t i = 0; i < calls.size(); ++i) {
            auto p = calls[i].parent ? by_id.find(*calls[i].parent) : by_id.end();
            if (p == by_id.end() || p->second == i)
                roots.push_back(static_cast<std::uint32_t>(i));
            else
                kids[p->second].push_back(static_cast<std::uint32_t>(i));
        }
        // Kernel-log lines by the call they were printed in.
        std::vector<std::vector<std::uint32_t>> logs(calls.size());
        for (std::size_t m = 0; m < r_.kernel_log.size(); ++m)
            if (auto c = r_.kernel_log[m].call)
                if (auto it = by_id.find(*c); it != by_id.end())
                    logs[it->second].push_back(static_cast<std::uint32_t>(m));
        // The ioctl and the API span each root call ran inside.
        std::unordered_map<std::uint64_t, std::uint32_t> ioctl_of_root, api_of_root;
        for (std::size_t i = 0; i < r_.ioctls.size(); ++i) {
            const auto& io = r_.ioctls[i];
            for (auto id : io.calls)
                ioctl_of_root.emplace(id, static_cast<std::uint32_t>(i));
            if (io.call) ioctl_of_root.emplace(*io.call, static_cast<std::uint32_t>(i));
        }
        auto apis = api_paths(r_);
        for (std::size_t i = 0; i < r_.api_calls.size(); ++i)
            for (auto id : r_.api_calls[i].calls)
                api_of_root.emplace(id, static_cast<std::uint32_t>(i));

        const bool filtered = o_.focus || o_.module;
        const std::string module = o_.module ? normalise_module(*o_.module) : std::string();
        // --focus names a function as check and diff do: by its base name, clone suffixes (.isra.0, .constprop.0,
        // .part.0, .cold) left out on both sides, so rm_ioctl finds rm_ioctl.isra.0.
        const std::string focus = o_.focus ? normalise_symbol(*o_.focus) : std::string();
        auto is_top = [&](const Call& c) {
            if (o_.focus && c.function != *o_.focus && normalise_symbol(c.function) != focus) return false;
            if (o_.module && (!c.module || normalise_module(*c.module) != module)) return false;
            return true;
        };
        Tally callers;  // --focus: the paths that lead to it
        std::uint64_t tops = 0;
        std::uint64_t no_duration = 0, no_exit = 0;

        // Depth-first from each root with an explicit stack (a damaged report may nest deeper than the C++
        // stack): each entry is a call and the tree node of its parent (kNone above the tops).
        struct Item {
            std::uint32_t call;
            std::uint32_t parent_node;
            std::uint32_t depth;
        };
        std::vector<Item> stack;
        std::vector<const std::string*> chain;  // function names from the root down to the current call's parent
        for (std::uint32_t root : roots) {
            std::uint32_t io = kNone;
            if (auto it = ioctl_of_root.find(calls[root].id); it != ioctl_of_root.end()) io = it->second;
            const std::string* api = nullptr;
            if (auto it = api_of_root.find(calls[root].id); it != api_of_root.end()) api = &apis[it->second];
            stack.clear();
            stack.push_back({root, kNone, 0});
            while (!stack.empty()) {
                Item it = stack.back();
                stack.pop_back();
                const Call& c = calls[it.call];
                chain.resize(it.depth);
                std::uint32_t node = kNone;
                bool inside = it.parent_node != kNone;
                if (inside || !filtered || is_top(c)) {
                    std::uint32_t parent = inside ? it.parent_node : top_parent(c, io, api);
                    if (!inside) {
                        ++tops;
                        if (o_.focus) {
                            std::string path;
                            for (auto* f : chain)
                                path += (path.empty() ? "" : " > ") + *f;
                            callers.add(path.empty() ? std::string("(a root call)") : path);
                        }
                    }
                    node = child(parent, call_label(c), TreeNode::Kind::path);
                    TreeNode& n = v_.nodes[node];
                    add_time(n, c.duration_ns);
                    if (!c.duration_ns) {
                        ++no_duration;
                        no_exit += c.exit_seen ? 0 : 1;
                    }
                    // Self time is known when the call's own duration and every direct child's is.
                    if (c.duration_ns) {
                        std::uint64_t kids_ns = 0;
                        bool known = true, kids_over = false;
                        for (auto k : kids[it.call]) {
                            if (!calls[k].duration_ns) {
                                known = false;
                                break;
                            }
                            add_sat(kids_ns, *calls[k].duration_ns, kids_over);
                        }
                        if (known) {
                            ++n.self_timed;
                            if (*c.duration_ns < kids_ns || kids_over) ++n.self_clamped;
                            add_sat(n.self_ns, *c.duration_ns > kids_ns ? *c.duration_ns - kids_ns : 0, n.overflow);
                        }
                    }
                    for (auto m : logs[it.call])
                        if (logs_[node].count++ == 0) logs_[node].first = m;
                    if (!inside) {
                        // What the top ran under, unless its group already says it.
                        TopFacts& f = facts_[node];
                        if (io != kNone && o_.group_by != TreeGroupBy::ioctl && first_time(node, io)) {
                            f.requests.add(request_label(r_.ioctls[io]));
                            auto [text, err] = ioctl_outcome(r_.ioctls[io]);
                            f.outcomes.add(text);
                            f.error |= err;
                        }
                        if (c.phase && o_.group_by != TreeGroupBy::phase) f.phases.add(*c.phase);
                        if (api && o_.group_by != TreeGroupBy::api) f.apis.add(*api);
                    }
                    ++v_.calls;
                }
                chain.push_back(&c.function);
                // Pushed in reverse so that children are visited in report order (the first caller path first).
                for (auto k = kids[it.call].rbegin(); k != kids[it.call].rend(); ++k)
                    stack.push_back({*k, node, it.depth + 1});
            }
        }

        if (filtered) {
            std::string what = o_.focus && o_.module ? fmt::format("{} [{}]", *o_.focus, *o_.module)
                               : o_.focus            ? *o_.focus
                                                     : "module " + *o_.module;
            if (tops == 0) {
                v_.before.push_back(
                    fmt::format("no call of {} among the report's {} calls", what, thousands(calls.size())));
            } else if (o_.focus) {
                v_.before.push_back(fmt::format("{}: {} outermost call{}, from {} caller path{}:", what,
                                                thousands(tops), tops == 1 ? "" : "s", callers.size(),
                                                callers.size() == 1 ? "" : "s"));
                // One line per caller path, most calls first (uftrace graph's backtraces).
                for (const auto& line : caller_lines(callers))
                    v_.before.push_back(line);
            } else {
                v_.before.push_back(fmt::format("{}: {} outermost call{} (the driver's entry points)", what,
                                                thousands(tops), tops == 1 ? "" : "s"));
            }
        }
        if (no_duration) {
            std::string why = no_exit == no_duration ? "no exit recorded: the trace ended, or lost events, inside them"
                              : no_exit == 0         ? "the source records none: function tracer hits"
                                                     : fmt::format(
                                                           "{} without an exit recorded; {} whose source records "
                                                                   "no duration",
                                                           thousands(no_exit), thousands(no_duration - no_exit));
            v_.after.push_back(fmt::format("unknown: {} of the {} calls shown have no duration ({})",
                                           thousands(no_duration), thousands(v_.calls), why));
        }
    }

    static std::vector<std::string> caller_lines(const Tally& callers) {
        std::vector<std::string> lines;
        std::string all = callers.text(std::numeric_limits<std::size_t>::max());
        // Tally::text joins with ", "; the paths themselves hold none (" > " separates functions).
        std::size_t at = 0;
        while (at < all.size()) {
            std::size_t comma = all.find(", ", at);
            std::string item = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            std::size_t x = item.rfind(" x");
            lines.push_back(fmt::format("  {:>8}x  {}", item.substr(x + 2), item.substr(0, x)));
            if (comma == std::string::npos) break;
            at = comma + 2;
        }
        return lines;
    }

    // ---- from graph rows (the calls went to a JSON Lines file) -------------------------------------------

    void from_graph() {
        v_.from_graph = true;
        v_.before.push_back(
            "the report's calls are not in it (written to their own file): drawn from its graph rows, without "
            "ioctl, kernel-log or grouping annotations");
        if (o_.module) v_.after.push_back("--module not applied: the graph rows do not name modules");
        if (o_.group_by != TreeGroupBy::none)
            v_.after.push_back(fmt::format("--group-by {} not applied: it needs the calls", to_string(o_.group_by)));
        std::uint64_t tops = 0;
        for (const auto& g : r_.graph) {
            std::vector<std::string_view> parts;
            std::string_view p = g.path;
            for (std::size_t at; (at = p.find(" > ")) != std::string_view::npos; p.remove_prefix(at + 3))
                parts.push_back(p.substr(0, at));
            parts.push_back(p);
            std::size_t start = 0;
            if (o_.focus) {
                const std::string focus = normalise_symbol(*o_.focus);
                auto f = std::find_if(parts.begin(), parts.end(), [&](std::string_view part) {
                    return part == *o_.focus || normalise_symbol(part) == focus;
                });
                if (f == parts.end()) continue;
                start = static_cast<std::size_t>(f - parts.begin());
            }
            std::uint32_t node = kNone;
            for (std::size_t i = start; i < parts.size(); ++i)
                node = child(node, std::string(parts[i]), TreeNode::Kind::path);
            TreeNode& n = v_.nodes[node];
            // A row holds sums only: a row with no time at all is taken as unknown, not as 0 ns.
            bool timed = g.total_ns != 0 || g.max_ns != 0;
            n.count += g.count;
            n.timed += timed ? g.count : 0;
            add_sat(n.total_ns, g.total_ns, n.overflow);
            n.max_ns = std::max(n.max_ns, g.max_ns);
            n.self_timed += timed ? g.count : 0;
            add_sat(n.self_ns, g.self_ns, n.overflow);
            v_.calls += g.count;
            if (start + 1 == parts.size()) tops += g.count;
        }
        if (o_.focus && tops == 0) v_.before.push_back(fmt::format("no call of {} in the report's graph", *o_.focus));
    }

    // ---- from ioctls (no function tracing) --------------------------------------------------------------

    void from_ioctls() {
        v_.from_ioctls = true;
        std::string why;
        if (r_.source.tracer_mode)
            why = fmt::format(" (tracer: {})", *r_.source.tracer_mode);
        else if (r_.source.format)
            why = fmt::format(" (input: {})", *r_.source.format);
        if (r_.ioctls.empty()) {
            v_.before.push_back(fmt::format("no calls and no ioctls in the report{}: nothing to draw", why));
            return;
        }
        v_.before.push_back(fmt::format("no calls in the report{}: its {} ioctl{} by request, latency enter -> exit",
                                        why, thousands(r_.ioctls.size()), r_.ioctls.size() == 1 ? "" : "s"));
        if (o_.focus || o_.module)
            v_.after.push_back(fmt::format("--{} not applied: the report has no calls", o_.focus ? "focus" : "module"));
        auto apis = api_paths(r_);
        std::vector<const std::string*> api_of(r_.ioctls.size(), nullptr);
        for (std::size_t i = 0; i < r_.api_calls.size(); ++i)
            for (auto k : r_.api_calls[i].ioctls)
                if (k < api_of.size()) api_of[k] = &apis[i];
        std::uint64_t no_latency = 0;
        std::vector<Tally> devices;  // by node, for requests not grouped by device
        for (std::size_t i = 0; i < r_.ioctls.size(); ++i) {
            const IoctlRecord& io = r_.ioctls[i];
            std::string group;
            switch (o_.group_by) {
                case TreeGroupBy::none:
                    group = device_label(io);
                    break;
                case TreeGroupBy::phase:
                    group = io.phase ? "phase " + *io.phase : std::string("no phase");
                    break;
                case TreeGroupBy::api:
                    group = api_of[i] ? "api " + *api_of[i] : std::string("no API call");
                    break;
                case TreeGroupBy::ioctl:
                    break;
                case TreeGroupBy::thread:
                    group = thread_label(io.comm, io.pid);
                    break;
            }
            std::uint32_t parent = kNone;
            if (!group.empty()) {
                parent = child(kNone, group, TreeNode::Kind::group);
                add_time(v_.nodes[parent], io.duration_ns);
            }
            std::uint32_t leaf = child(parent, request_label(io), TreeNode::Kind::request);
            TreeNode& n = v_.nodes[leaf];
            add_time(n, io.duration_ns);
            if (io.duration_ns) {
                ++n.self_timed;
                add_sat(n.self_ns, *io.duration_ns, n.overflow);
            } else {
                ++no_latency;
            }
            auto [text, err] = ioctl_outcome(io);
            facts_[leaf].outcomes.add(text);
            facts_[leaf].error |= err;
            if (o_.group_by != TreeGroupBy::none) {
                if (devices.size() <= leaf) devices.resize(leaf + 1);
                devices[leaf].add(device_label(io));
            }
            ++v_.calls;
        }
        for (std::size_t n = 0; n < devices.size(); ++n)
            if (!devices[n].empty()) v_.nodes[n].notes.push_back("on " + devices[n].text(2));
        if (no_latency)
            v_.after.push_back(
                fmt::format("unknown: {} of the {} ioctls have no latency (exit not seen, or the source "
                            "printed no time)",
                            thousands(no_latency), thousands(r_.ioctls.size())));
    }

    // ---- notes and order --------------------------------------------------------------------------------

    void finish() {
        std::uint64_t overflowed = 0;
        for (const TreeNode& n : v_.nodes)
            overflowed += n.overflow;
        if (overflowed)
            v_.after.push_back(fmt::format(
                "overflow: the durations of {} line{} sum past 2^64-1 ns (584 years, no real duration: a damaged "
                "report): shown as 'overflow'",
                thousands(overflowed), overflowed == 1 ? "" : "s"));
        for (std::size_t i = 0; i < v_.nodes.size(); ++i) {
            TreeNode& n = v_.nodes[i];
            const TopFacts& f = facts_[i];
            if (n.kind == TreeNode::Kind::request || n.kind == TreeNode::Kind::group) {
                auto r = requests_.find(static_cast<std::uint32_t>(i));
                if (r != requests_.end())
                    n.notes.insert(n.notes.begin(), fmt::format("{} ioctl{}: {}", thousands(r->second),
                                                                r->second == 1 ? "" : "s", f.outcomes.text()));
                else if (!f.outcomes.empty())
                    n.notes.insert(n.notes.begin(), f.outcomes.text());
            } else {
                if (!f.requests.empty())
                    n.notes.push_back(fmt::format("ioctl {}: {}", f.requests.text(3), f.outcomes.text(3)));
                if (!f.phases.empty()) n.notes.push_back("phase " + f.phases.text(3));
                if (!f.apis.empty()) n.notes.push_back("api " + f.apis.text(3));
            }
            n.error = n.error || f.error;
            if (logs_[i].count) {
                const KernelLogMessage& m = r_.kernel_log[logs_[i].first];
                n.notes.push_back(
                    fmt::format("log x{} [{}] \"{}\"", thousands(logs_[i].count), m.kind, first_line(m.text)));
                n.error = n.error || m.level <= 3;
            }
        }
        auto order = [this](std::uint32_t a, std::uint32_t b) {
            const TreeNode &x = v_.nodes[a], &y = v_.nodes[b];
            // Known totals first, most first; then those whose total is unknown, most calls first.
            if ((x.timed != 0) != (y.timed != 0)) return x.timed != 0;
            if (x.total_ns != y.total_ns) return x.total_ns > y.total_ns;
            if (x.count != y.count) return x.count > y.count;
            return x.label < y.label;
        };
        std::sort(v_.tops.begin(), v_.tops.end(), order);
        for (auto& n : v_.nodes)
            std::sort(n.children.begin(), n.children.end(), order);
    }

    struct Logs {
        std::uint64_t count = 0;
        std::uint32_t first = 0;
    };

    const Report& r_;
    const TreeOptions& o_;
    TreeView v_;
    std::unordered_map<std::string, std::uint32_t> top_index_;
    std::vector<std::unordered_map<std::string, std::uint32_t>> kid_index_;  // by node
    std::vector<TopFacts> facts_;                                            // by node
    std::vector<Logs> logs_;                                                 // by node
    std::unordered_set<std::uint64_t> seen_;                                 // first_time()
    std::unordered_map<std::uint32_t, std::uint64_t> requests_;              // --group-by ioctl: ioctls per group
};

// ---- rendering ------------------------------------------------------------------------------------------

struct Paint {
    bool on;
    std::string operator()(std::string_view text, std::string_view sgr) const {
        if (!on || text.empty()) return std::string(text);
        return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
    }
};

constexpr int kCol = 12;  // width of each time column
// Levels drawn with branches; deeper lines are marked "[depth N]". Far above the call depth of a kernel stack,
// which function_graph's per-task return stack bounds (FTRACE_RETFUNC_DEPTH, reference/ftrace-formats.md).
constexpr std::uint32_t kDrawnDepth = 100;

class Renderer {
public:
    Renderer(const TreeView& v, const TreeOptions& o, std::ostream& out) : v_(v), o_(o), out_(out), paint_{o.color} {}

    void run(const Report& r) {
        for (const auto& line : v_.before)
            out_ << visible(line) << '\n';
        if (!v_.tops.empty()) {
            out_ << paint_(fmt::format("{:>{}} {:>{}} {:>{}} {:>9}  {}", "TOTAL us", kCol, "SELF us", kCol, "MAX us",
                                       kCol, "CALLS", v_.from_ioctls ? "IOCTL REQUEST" : "CALL PATH"),
                           "1")
                 << '\n';
            tree();
        }
        for (const auto& line : v_.after)
            out_ << paint_(visible(line), "33") << '\n';
        out_ << visible(completeness_line(r.completeness)) << '\n';
    }

private:
    std::string cell(std::uint64_t timed, std::uint64_t ns, bool overflow = false) const {
        if (timed == 0) return paint_(fmt::format("{:>{}}", "unknown", kCol), "33");
        if (overflow) return paint_(fmt::format("{:>{}}", "overflow", kCol), "33");
        return fmt::format("{:>{}}", tree_us(ns), kCol);
    }

    // Paths in the subtree of `n` (itself included).
    std::uint64_t paths(std::uint32_t n) const {
        std::uint64_t count = 0;
        std::vector<std::uint32_t> todo{n};
        while (!todo.empty()) {
            std::uint32_t k = todo.back();
            todo.pop_back();
            ++count;
            for (auto c : v_.nodes[k].children)
                todo.push_back(c);
        }
        return count;
    }

    bool folded(const TreeNode& n) const { return o_.min_time_ns && n.timed != 0 && n.total_ns < *o_.min_time_ns; }

    // One level being printed: its shown siblings, the next to print, and what --min-time folded.
    struct Level {
        std::vector<std::uint32_t> shown;
        std::size_t next = 0;
        std::string prefix;  // the branches of the levels above
        std::uint32_t depth = 1;
        std::uint64_t folded_paths = 0, folded_calls = 0, folded_ns = 0, folded_max = 0;
        bool folded_overflow = false;
    };

    Level make_level(const std::vector<std::uint32_t>& siblings, std::string prefix, std::uint32_t depth) const {
        Level l;
        l.prefix = std::move(prefix);
        l.depth = depth;
        for (auto s : siblings) {
            const TreeNode& n = v_.nodes[s];
            if (!folded(n)) {
                l.shown.push_back(s);
                continue;
            }
            l.folded_paths += paths(s);
            l.folded_calls += n.count;
            add_sat(l.folded_ns, n.total_ns, l.folded_overflow);
            l.folded_overflow |= n.overflow;
            l.folded_max = std::max(l.folded_max, n.max_ns);
        }
        return l;
    }

    // Depth first with an explicit stack of levels: a deep tree (a damaged report) cannot overflow the C++ stack.
    void tree() {
        std::vector<Level> levels;
        levels.push_back(make_level(v_.tops, "", 1));
        while (!levels.empty()) {
            Level& l = levels.back();
            bool top = l.depth == 1;
            bool fold_line = l.folded_paths != 0;
            if (l.next == l.shown.size()) {
                if (fold_line) {
                    std::string label = fmt::format("... {} path{} below {} us", thousands(l.folded_paths),
                                                    l.folded_paths == 1 ? "" : "s", tree_us(*o_.min_time_ns));
                    out_ << fmt::format("{} {:>{}} {} {:>8}x  {}{}\n", cell(1, l.folded_ns, l.folded_overflow), "",
                                        kCol, cell(1, l.folded_max), thousands(l.folded_calls),
                                        l.prefix + (top ? "" : "`- "), paint_(label, "2"));
                }
                levels.pop_back();
                continue;
            }
            std::uint32_t id = l.shown[l.next++];
            const TreeNode& n = v_.nodes[id];
            bool last = l.next == l.shown.size() && !fold_line;
            // Past kDrawnDepth levels the branches stop growing (a damaged report nested a million deep would
            // print a terabyte of them) and the line says its depth instead.
            std::string deep = l.depth > kDrawnDepth ? fmt::format("[depth {}] ", l.depth) : std::string();
            line(n, l.prefix + deep + (top ? "" : last ? "`- " : "|- "), l.depth);
            bool deeper = !o_.max_depth || l.depth < *o_.max_depth;
            if (deeper && !n.children.empty()) {
                std::string prefix = top || l.depth >= kDrawnDepth ? l.prefix : l.prefix + (last ? "   " : "|  ");
                std::uint32_t depth = l.depth + 1;
                levels.push_back(make_level(n.children, std::move(prefix), depth));  // `l` is not used after this
            }
        }
    }

    void line(const TreeNode& n, const std::string& branch, std::uint32_t depth) {
        std::string self = n.kind == TreeNode::Kind::group ? fmt::format("{:>{}}", "-", kCol)
                                                           : cell(n.self_timed, n.self_ns, n.overflow);
        // Labels and notes hold the report's names and kernel-log text: control bytes as \xNN.
        std::string label = n.kind == TreeNode::Kind::group ? paint_("[" + visible(n.label) + "]", "1;36")
                            : depth == 1                    ? paint_(visible(n.label), "1")
                                                            : visible(n.label);
        std::vector<std::string> notes = n.notes;
        if (n.timed != 0 && n.timed < n.count)
            notes.push_back(fmt::format("{} without a duration", thousands(n.count - n.timed)));
        if (n.kind != TreeNode::Kind::group && n.timed != 0 && n.self_timed < n.timed)
            notes.push_back(fmt::format("self of {} unknown", thousands(n.count - n.self_timed)));
        if (n.self_clamped)
            notes.push_back(fmt::format("{} shorter than {} children: self taken as 0", thousands(n.self_clamped),
                                        n.self_clamped == 1 ? "its" : "their"));
        if (o_.max_depth && depth >= *o_.max_depth && !n.children.empty()) {
            std::uint64_t below = 0;
            for (auto c : n.children)
                below += paths(c);
            notes.push_back(
                fmt::format("+{} path{} below --depth {}", thousands(below), below == 1 ? "" : "s", *o_.max_depth));
        }
        std::string tail;
        for (const auto& note : notes)
            tail += "  " + paint_("(" + visible(note) + ")", n.error ? "31" : "2");
        out_ << fmt::format("{} {} {} {:>8}x  {}{}{}\n", cell(n.timed, n.total_ns, n.overflow), self,
                            cell(n.timed, n.max_ns), thousands(n.count), branch, label, tail);
    }

    const TreeView& v_;
    const TreeOptions& o_;
    std::ostream& out_;
    Paint paint_;
};

}  // namespace

TreeView build_tree(const Report& report, const TreeOptions& options) {
    return Builder(report, options).build();
}

void write_tree(const TreeView& view, const Report& report, const TreeOptions& options, std::ostream& out) {
    Renderer(view, options, out).run(report);
}

}  // namespace nvtrace
