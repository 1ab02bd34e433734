// The structural call-tree diff (include/nvtrace/diff.hpp, docs/diff.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <unordered_map>

#include <fnmatch.h>

#include <fmt/format.h>

#include "../phases.hpp"
#include "nvtrace/diff.hpp"

namespace nvtrace {

namespace {

// Return values fall into classes that are stable between runs: a pointer differs every time, an errno or an
// NV_STATUS (a positive 32-bit value) does not. An int-sized error read back as 64 bits (0xffffffea: the upper
// half of the register is zero, bit 31 set) is the errno it encodes, as the kernel decides in
// print_graph_retval: funcgraph-retval prints it as -22, funcgraph-retval-hex as 0xffffffea
// (/work/shared/reference/ftrace-formats.md 1.5), and the two must not differ.
std::string retval_class(std::int64_t v) {
    if (v == 0) return "0";
    if (v > 0 && v <= 0xffffffffLL && (v & 0x80000000LL)) {
        std::int64_t s = static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
        if (s >= -4095) v = s;
    }
    if (v < 0 && v >= -4095) {
        const char* name = strerrorname_np(static_cast<int>(-v));
        return name ? fmt::format("{} ({})", v, name) : std::to_string(v);
    }
    if (v > 0 && v < (std::int64_t{1} << 32)) return v < 10 ? std::to_string(v) : fmt::format("{} (0x{:x})", v, v);
    return "pointer";
}

// Adds `d` to the sum `acc`; past kDiffMaxTotalNs the sum stays there and `overflow` is set (never wraps).
void add_ns(std::uint64_t& acc, std::uint64_t d, bool& overflow) {
    if (d > kDiffMaxTotalNs - acc) {
        acc = kDiffMaxTotalNs;
        overflow = true;
    } else {
        acc += d;
    }
}

struct Acc {
    std::uint64_t count = 0;
    std::uint64_t total_ns = 0;  // of the known durations
    std::uint64_t self_ns = 0;   // of the known self times
    std::uint64_t min_ns = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t max_ns = 0;
    std::uint64_t unknown = 0;       // calls without a duration
    std::uint64_t no_exit = 0;       // of those, exit not seen
    std::uint64_t self_unknown = 0;  // calls whose self time is unknown (own or a direct child's duration)
    bool overflow = false;           // total_ns passed kDiffMaxTotalNs
    bool self_overflow = false;      // self_ns passed it
    std::map<std::string, std::uint64_t> retvals;
    std::set<std::string> names;
};

struct TrieNode {
    std::string name;
    std::map<std::string, std::size_t> children;
    Acc acc;
    std::size_t depth = 0;  // the virtual root's children are 1
};

struct Trie {
    std::vector<TrieNode> nodes{TrieNode{}};  // 0: the virtual root
    std::size_t max_depth = 0;
    std::size_t child(std::size_t parent, const std::string& name) {
        auto it = nodes[parent].children.find(name);
        if (it != nodes[parent].children.end()) return it->second;
        const std::size_t depth = nodes[parent].depth + 1;
        max_depth = std::max(max_depth, depth);
        nodes.push_back(TrieNode{name, {}, {}, depth});
        std::size_t id = nodes.size() - 1;
        nodes[parent].children.emplace(name, id);
        return id;
    }
};

bool ignored(const std::string& name, const std::vector<std::string>& globs) {
    for (const auto& g : globs)
        if (fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
    return false;
}

}  // namespace

// One side's trie, folded call by call (nvtrace/diff.hpp). Per call, until finish: its trie node (kNone = left
// out), the call whose frame its time counts under (for that call's self time), its duration and the sum of its
// children's. Positions are 32-bit: 4,294,967,295 calls would be a report of more than a terabyte.
struct DiffCalls::Impl {
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    enum Flag : std::uint8_t { dropped = 1, collapsed = 2, irq = 4, has_duration = 8, child_unknown = 16 };
    struct PerCall {
        std::uint64_t duration_ns = 0;
        std::uint64_t child_ns = 0;  // known durations of the calls whose time counts under this one (saturated)
        std::uint32_t node = kNone;
        std::uint32_t owner = kNone;
        std::uint8_t flags = 0;
    };

    DiffOptions o;
    Trie t;
    DiffInput info;
    std::vector<PerCall> calls;
    // Id -> position. A report nvtrace writes lists its calls by id, 1..N, so a position is id - 1; the map (about
    // 40 MB for 1,000,000 calls) is built only once a call's id is not its position + 1, from the calls so far.
    bool dense = true;
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    std::set<std::string> phases;
    const std::string* last_phase = nullptr;  // calls of one phase come in runs

    explicit Impl(const DiffOptions& options) : o(options) {}

    void add(const Call& c) {
        const std::uint32_t i = static_cast<std::uint32_t>(calls.size());
        PerCall& pc = calls.emplace_back();
        if (dense && c.id != std::uint64_t{i} + 1) {
            dense = false;
            index.reserve(calls.size() * 2);
            for (std::uint32_t k = 0; k < i; ++k)
                index.emplace(std::uint64_t{k} + 1, k);
        }
        if (!dense) index.emplace(c.id, i);
        if (c.phase && (!last_phase || *last_phase != *c.phase)) last_phase = &*phases.insert(*c.phase).first;
        if (c.retval) info.has_retvals = true;
        if (c.irq) pc.flags |= irq;
        // The parent among the calls so far (its own parent, refused by the reader, is taken as none here).
        std::optional<std::uint32_t> p;
        if (c.parent) {
            if (dense) {
                if (*c.parent >= 1 && *c.parent - 1 < i) p = static_cast<std::uint32_t>(*c.parent - 1);
            } else if (auto it = index.find(*c.parent); it != index.end() && it->second != i) {
                p = it->second;
            }
        }
        const PerCall* parent = p ? &calls[*p] : nullptr;
        if (parent && (parent->flags & dropped)) {
            pc.flags |= dropped;
            return;
        }
        std::string name = normalise_symbol(c.function);
        if (auto rn = o.renames.find(name); rn != o.renames.end()) name = rn->second;
        if ((o.phase && c.phase != o.phase) || (!name.empty() && ignored(name, o.ignore))) {
            // Left out with its subtree. (A call outside the phase whose child is inside it cannot happen:
            // phases are assigned by entry time and a child enters after its parent.)
            pc.flags |= dropped;
            return;
        }
        std::size_t parent_node = parent ? parent->node : 0;
        std::uint32_t parent_owner = parent ? ((parent->flags & collapsed) ? parent->owner : *p) : kNone;
        bool parent_irq = parent && (parent->flags & irq);
        if (c.irq && !parent_irq && !o.keep_irq_nesting) {
            parent_node = t.child(0, kIrqRoot);
            parent_owner = kNone;  // the interrupted call's self time keeps the interrupt, as the kernel measured
        }
        ++info.calls;
        pc.owner = parent_owner;
        if (name.empty()) {
            pc.flags |= collapsed;
            pc.node = static_cast<std::uint32_t>(parent_node);
            return;
        }
        pc.node = static_cast<std::uint32_t>(t.child(parent_node, name));
        if (parent_owner != kNone) {
            // The owner's self time needs every duration that counts under it: one unknown makes it unknown.
            PerCall& owner = calls[parent_owner];
            if (!c.duration_ns) {
                owner.flags |= child_unknown;
            } else {
                bool over = false;
                add_ns(owner.child_ns, *c.duration_ns, over);
            }
        }
        Acc& a = t.nodes[pc.node].acc;
        ++a.count;
        if (c.duration_ns) {
            std::uint64_t d = *c.duration_ns;
            pc.duration_ns = d;
            pc.flags |= has_duration;
            add_ns(a.total_ns, d, a.overflow);
            a.min_ns = std::min(a.min_ns, d);
            a.max_ns = std::max(a.max_ns, d);
        } else {
            ++a.unknown;
            a.no_exit += c.exit_seen ? 0 : 1;
        }
        if (c.retval) ++a.retvals[retval_class(*c.retval)];
        if (a.names.size() < 8) a.names.insert(c.function);
    }

    // The self times (every child is in now) and the phases of the report's other sections.
    void finish(const Report& r) {
        for (const PerCall& pc : calls) {
            if (pc.flags & (dropped | collapsed)) continue;
            Acc& a = t.nodes[pc.node].acc;
            if ((pc.flags & (has_duration | child_unknown)) != has_duration)
                ++a.self_unknown;
            else
                add_ns(a.self_ns, pc.duration_ns > pc.child_ns ? pc.duration_ns - pc.child_ns : 0, a.self_overflow);
        }
        info.report_calls = calls.size();
        std::vector<PerCall>().swap(calls);
        decltype(index)().swap(index);
        info.call_phases.assign(phases.begin(), phases.end());
        // Calls are not the only sections with phases: a run without function_graph has ioctls and markers only.
        for (const auto& io : r.ioctls)
            if (io.phase) phases.insert(*io.phase);
        for (const auto& m : r.markers)
            detail::for_each_phase_line(m.text, [&](const detail::PhaseLine& p) {
                if (p.kind == detail::PhaseLine::begin) phases.insert(std::string(p.name));
            });
        info.phases.assign(phases.begin(), phases.end());
    }
};

DiffCalls::DiffCalls(const DiffOptions& options) : impl_(std::make_unique<Impl>(options)) {}
DiffCalls::DiffCalls(DiffCalls&&) noexcept = default;
DiffCalls& DiffCalls::operator=(DiffCalls&&) noexcept = default;
DiffCalls::~DiffCalls() = default;
void DiffCalls::add(const Call& call) {
    impl_->add(call);
}
std::uint64_t DiffCalls::report_calls() const {
    return impl_->calls.size();
}
std::size_t DiffCalls::depth() const {
    return impl_->t.max_depth;
}

namespace {

DiffSide side_of(const Acc& a) {
    DiffSide s;
    s.count = a.count;
    s.known_total_ns = a.total_ns;
    s.unknown_durations = a.unknown;
    s.exit_not_seen = a.no_exit;
    s.overflow = a.overflow || a.self_overflow;
    if (a.unknown == 0) {
        if (!a.overflow) s.total_ns = a.total_ns;
        s.min_ns = a.count ? a.min_ns : 0;
        s.max_ns = a.max_ns;
    }
    if (a.self_unknown == 0 && !a.self_overflow && !a.overflow) s.self_ns = a.self_ns;
    s.retvals = a.retvals;
    s.names.assign(a.names.begin(), a.names.end());
    return s;
}

// a and b are at most kDiffMaxTotalNs: the difference fits.
std::int64_t signed_delta(std::uint64_t a, std::uint64_t b) {
    return b >= a ? static_cast<std::int64_t>(b - a) : -static_cast<std::int64_t>(a - b);
}

std::optional<std::int64_t> signed_delta(const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
    if (!a || !b) return std::nullopt;
    return signed_delta(*a, *b);
}

bool retval_sets_differ(const DiffSide& a, const DiffSide& b) {
    if (a.retvals.empty() || b.retvals.empty()) return false;
    if (a.retvals.size() != b.retvals.size()) return true;
    for (auto ia = a.retvals.begin(), ib = b.retvals.begin(); ia != a.retvals.end(); ++ia, ++ib)
        if (ia->first != ib->first) return true;
    return false;
}

struct Merger {
    const Trie& ta;
    const Trie& tb;
    const DiffOptions& o;
    bool compare_retvals;
    DiffSummary& sum;

    // ia / ib: trie nodes (kNone where that side lacks the path).
    static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

    DiffNode merge(std::size_t ia, std::size_t ib, const std::string& parent_path, bool irq, bool inside_change) {
        const TrieNode* na = ia == kNone ? nullptr : &ta.nodes[ia];
        const TrieNode* nb = ib == kNone ? nullptr : &tb.nodes[ib];
        DiffNode d;
        d.function = na ? na->name : nb->name;
        d.path = parent_path.empty() ? d.function : parent_path + " > " + d.function;
        d.irq = irq || d.function == kIrqRoot;
        if (na) d.a = side_of(na->acc);
        if (nb) d.b = side_of(nb->acc);
        const bool pseudo = d.function == kIrqRoot && parent_path.empty();
        if (na && nb) {
            d.delta_count = signed_delta(d.a->count, d.b->count);
            d.delta_total_ns = signed_delta(d.a->total_ns, d.b->total_ns);
            d.delta_self_ns = signed_delta(d.a->self_ns, d.b->self_ns);
            if (d.delta_total_ns && *d.a->total_ns > 0)
                d.rel_total = static_cast<double>(*d.delta_total_ns) / static_cast<double>(*d.a->total_ns);
            std::uint64_t abs_delta =
                d.delta_total_ns ? static_cast<std::uint64_t>(std::abs(*d.delta_total_ns)) : std::uint64_t{0};
            if (!pseudo) {
                d.count_changed = d.delta_count != 0;
                d.retval_changed = compare_retvals && retval_sets_differ(*d.a, *d.b);
                d.time_changed = abs_delta >= o.threshold.min_abs_ns && abs_delta > 0 &&
                                 (!d.rel_total || std::abs(*d.rel_total) >= o.threshold.min_rel);
                if (!d.delta_total_ns) {
                    std::vector<std::string> why;
                    for (auto [side, s] : {std::pair{"A", &*d.a}, std::pair{"B", &*d.b}})
                        if (auto w = why_time_unknown(*s); !w.empty()) why.push_back(fmt::format("{}: {}", side, w));
                    d.time_unknown = fmt::format("{}", fmt::join(why, "; "));
                    ++sum.time_unknown;
                }
            }
            d.impact_ns = abs_delta;
            if (d.count_changed || d.retval_changed || d.time_changed) d.status = DiffStatus::changed;
            sum.count_changes += d.count_changed;
            sum.retval_changes += d.retval_changed;
            sum.time_changes += d.time_changed;
            if (d.irq && (d.count_changed || d.retval_changed || d.time_changed)) ++sum.irq_changes;
        } else {
            d.status = na ? DiffStatus::removed : DiffStatus::added;
            const DiffSide& s = na ? *d.a : *d.b;
            d.impact_ns = s.known_total_ns;
            d.delta_count = na ? -static_cast<std::int64_t>(s.count) : static_cast<std::int64_t>(s.count);
            const std::optional<std::uint64_t> zero = 0;
            d.delta_total_ns = na ? signed_delta(s.total_ns, zero) : signed_delta(zero, s.total_ns);
            d.delta_self_ns = na ? signed_delta(s.self_ns, zero) : signed_delta(zero, s.self_ns);
            if (na) {
                sum.removed_nodes += !pseudo;
                sum.removed_calls += pseudo ? 0 : s.count;
                if (!inside_change && !pseudo) {
                    ++sum.removed_paths;
                    sum.irq_changes += d.irq;
                }
            } else {
                sum.added_nodes += !pseudo;
                sum.added_calls += pseudo ? 0 : s.count;
                if (!inside_change && !pseudo) {
                    ++sum.added_paths;
                    sum.irq_changes += d.irq;
                }
            }
            // The pseudo-root itself is never a change; its children are.
            if (pseudo) d.status = DiffStatus::same;
        }
        bool structural_here = (d.status == DiffStatus::added || d.status == DiffStatus::removed);
        std::set<std::string> names;
        if (na)
            for (const auto& [n, _] : na->children)
                names.insert(n);
        if (nb)
            for (const auto& [n, _] : nb->children)
                names.insert(n);
        for (const auto& n : names) {
            std::size_t ca = kNone, cb = kNone;
            if (na)
                if (auto it = na->children.find(n); it != na->children.end()) ca = it->second;
            if (nb)
                if (auto it = nb->children.find(n); it != nb->children.end()) cb = it->second;
            DiffNode child = merge(ca, cb, d.path, d.irq, inside_change || structural_here);
            bool keep = o.keep_unchanged || child.status != DiffStatus::same || child.time_unknown;
            if (!keep) continue;
            d.impact_ns = std::max(d.impact_ns, child.impact_ns);
            if (d.status == DiffStatus::same && (child.status != DiffStatus::same || child.time_unknown))
                d.status = DiffStatus::context;
            d.children.push_back(std::move(child));
        }
        sort_by_impact(d.children);
        return d;
    }

    static void sort_by_impact(std::vector<DiffNode>& v) {
        auto rank = [](const DiffNode& n) {
            switch (n.status) {
                case DiffStatus::added:
                case DiffStatus::removed:
                    return 0;
                case DiffStatus::changed:
                    return 1;
                case DiffStatus::context:
                    return 2;
                case DiffStatus::same:
                    return 3;
            }
            return 3;
        };
        std::stable_sort(v.begin(), v.end(), [&](const DiffNode& x, const DiffNode& y) {
            if (x.impact_ns != y.impact_ns) return x.impact_ns > y.impact_ns;
            if (rank(x) != rank(y)) return rank(x) < rank(y);
            return x.function < y.function;
        });
    }
};

DiffInput input_of(const Report& r) {
    DiffInput in;
    in.source = r.source;
    in.environment = r.environment;
    in.complete = r.completeness.complete;
    in.reasons = r.completeness.reasons;
    return in;
}

}  // namespace

std::string_view to_string(DiffStatus s) {
    switch (s) {
        case DiffStatus::same:
            return "same";
        case DiffStatus::context:
            return "context";
        case DiffStatus::changed:
            return "changed";
        case DiffStatus::added:
            return "added";
        case DiffStatus::removed:
            return "removed";
    }
    return "same";
}

std::string why_time_unknown(const DiffSide& s) {
    if (s.unknown_durations) {
        std::string why = s.exit_not_seen == s.unknown_durations ? "exit not seen"
                          : s.exit_not_seen == 0                 ? "no duration recorded"
                                                 : fmt::format("{} with the exit not seen", s.exit_not_seen);
        return fmt::format("{} of {} call{} without a duration ({})", s.unknown_durations, s.count,
                           s.count == 1 ? "" : "s", why);
    }
    if (s.overflow && !s.total_ns) return "the durations sum past 2^63-1 ns (292 years): not a real duration";
    return "";
}

std::string why_no_call_graph(const DiffInput& in) {
    const ReportSource& s = in.source;
    if (s.tracer_mode) return fmt::format("it was traced with tracer {} (no function_graph)", *s.tracer_mode);
    if (s.format) return fmt::format("its input ({}) records no calls", *s.format);
    return "it has no calls";
}

bool records_ioctls(const Report& r) {
    if (!r.ioctls.empty() || !r.ioctl_stats.empty()) return true;
    const ReportSource& s = r.source;
    return s.kind == "live" || s.format == "strace";
}

std::string why_no_ioctls(const DiffInput& in) {
    return fmt::format(
        "its input ({}) recorded no ioctl and need not record syscalls: whether ioctls were made is "
        "unknown",
        in.source.format.value_or(in.source.kind.value_or("unknown")));
}

std::string describe_empty_phase(const DiffInput& in, const std::string& phase) {
    auto list = [](const std::vector<std::string>& v) {
        return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, ", "));
    };
    if (in.report_calls == 0)
        return fmt::format(
            "{}: no calls in phase '{}' (the report has no calls: function_graph was not traced; "
            "phases of its markers and ioctls: {})",
            in.label, phase, list(in.phases));
    if (std::find(in.phases.begin(), in.phases.end(), phase) == in.phases.end())
        return fmt::format("{}: no phase '{}' in the report (phases: {})", in.label, phase, list(in.phases));
    return fmt::format("{}: no calls in phase '{}' (phases: {}; with calls: {})", in.label, phase, list(in.phases),
                       list(in.call_phases));
}

DiffResult diff_reports(const Report& a, const Report& b, const DiffOptions& options) {
    // The two sides are independent: B's is folded on another thread.
    DiffCalls ca(options), cb(options);
    std::thread other([&] {
        for (const Call& c : b.calls)
            cb.add(c);
    });
    for (const Call& c : a.calls)
        ca.add(c);
    other.join();
    return diff_reports(a, std::move(ca), b, std::move(cb), options);
}

DiffResult diff_reports(const Report& a, DiffCalls a_calls, const Report& b, DiffCalls b_calls,
                        const DiffOptions& options) {
    DiffResult d;
    d.options = options;
    d.a = input_of(a);
    d.b = input_of(b);
    DiffCalls::Impl& sa = *a_calls.impl_;
    DiffCalls::Impl& sb = *b_calls.impl_;
    sa.finish(a);
    sb.finish(b);
    for (auto [in, side] : {std::pair{&d.a, &sa}, std::pair{&d.b, &sb}}) {
        in->calls = side->info.calls;
        in->has_retvals = side->info.has_retvals;
        in->phases = std::move(side->info.phases);
        in->call_phases = std::move(side->info.call_phases);
        in->report_calls = side->info.report_calls;
    }
    d.retvals_compared = d.a.has_retvals && d.b.has_retvals;
    d.calls_compared = (d.a.report_calls == 0) == (d.b.report_calls == 0);
    if (d.calls_compared) {
        Merger m{sa.t, sb.t, options, d.retvals_compared, d.summary};
        // The virtual roots (node 0 of each trie) align by definition; their children are the root paths.
        DiffNode top = m.merge(0, 0, "", false, false);
        d.roots = std::move(top.children);
    }
    d.ioctls_compared = !a.ioctl_stats.empty() || !b.ioctl_stats.empty();
    if (d.ioctls_compared && !records_ioctls(a)) d.ioctls_unrecorded = 'a';
    if (d.ioctls_compared && !records_ioctls(b)) d.ioctls_unrecorded = 'b';
    if (d.ioctls_unrecorded) d.ioctls_compared = false;
    if (d.ioctls_compared)
        d.ioctls =
            diff_ioctl_stats(a.ioctl_stats, b.ioctl_stats, options.threshold, options.keep_unchanged, d.ioctl_summary);
    d.api_compared = !a.api_calls.empty() || !b.api_calls.empty();
    if (d.api_compared) d.api_calls = diff_api_calls(a.api_calls, b.api_calls, options, d.api_summary);
    return d;
}

}  // namespace nvtrace
