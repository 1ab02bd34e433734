// The ioctl part of a diff (include/nvtrace/diff.hpp, docs/diff.md "ioctls"): two reports' ioctl_stats aligned
// by (device, request).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "nvtrace/diff.hpp"

namespace nvtrace {

namespace {

using Key = std::tuple<std::optional<std::string>, int, std::uint64_t>;

Key key_of(const IoctlStat& s) {
    return {s.device, s.device ? -1 : s.fd.value_or(-1), s.cmd};
}

std::map<Key, const IoctlStat*> requests(const std::vector<IoctlStat>& rows) {
    std::map<Key, const IoctlStat*> out;
    for (const IoctlStat& s : rows)
        if (!s.pid) out.emplace(key_of(s), &s);  // the row of every task
    return out;
}

std::int64_t signed_delta(std::uint64_t a, std::uint64_t b) {
    return b >= a ? static_cast<std::int64_t>(b - a) : -static_cast<std::int64_t>(a - b);
}

}  // namespace

std::vector<IoctlDiffRow> diff_ioctl_stats(const std::vector<IoctlStat>& a, const std::vector<IoctlStat>& b,
                                           const DiffThreshold& threshold, bool keep_unchanged, IoctlDiffSummary& sum) {
    const auto ra = requests(a), rb = requests(b);
    std::map<Key, std::pair<const IoctlStat*, const IoctlStat*>> both;
    for (const auto& [k, s] : ra)
        both[k].first = s;
    for (const auto& [k, s] : rb)
        both[k].second = s;
    std::vector<IoctlDiffRow> out;
    for (const auto& [k, p] : both) {
        const auto [sa, sb] = p;
        IoctlDiffRow d;
        const IoctlStat& any = sa ? *sa : *sb;
        d.device = any.device;
        d.fd = any.fd;
        d.cmd = any.cmd;
        d.name = sb && sb->name ? sb->name : any.name;
        if (sa) d.a = *sa;
        if (sb) d.b = *sb;
        d.delta_count = signed_delta(sa ? sa->count : 0, sb ? sb->count : 0);
        if (sb)
            for (const auto& [name, n] : sb->errors_by_name)
                if (!sa || !sa->errors_by_name.count(name)) d.new_errors.push_back(name);
        if (sa && sb) {
            d.count_changed = sa->count != sb->count;
            if (sa->mean_ns && sb->mean_ns) {
                d.delta_mean_ns = signed_delta(*sa->mean_ns, *sb->mean_ns);
                if (*sa->mean_ns > 0)
                    d.rel_mean = static_cast<double>(*d.delta_mean_ns) / static_cast<double>(*sa->mean_ns);
                const auto abs_delta = static_cast<std::uint64_t>(std::llabs(*d.delta_mean_ns));
                d.latency_changed = abs_delta > 0 && abs_delta >= threshold.min_abs_ns &&
                                    (!d.rel_mean || std::abs(*d.rel_mean) >= threshold.min_rel);
            }
            if (d.count_changed || d.latency_changed || !d.new_errors.empty()) d.status = DiffStatus::changed;
        } else {
            d.status = sa ? DiffStatus::removed : DiffStatus::added;
        }
        sum.added += d.status == DiffStatus::added;
        sum.removed += d.status == DiffStatus::removed;
        sum.count_changes += d.count_changed;
        sum.latency_changes += d.latency_changed;
        sum.new_errors += !d.new_errors.empty();
        if (d.status != DiffStatus::same || keep_unchanged) out.push_back(std::move(d));
    }
    auto rank = [](const IoctlDiffRow& r) {
        return r.status == DiffStatus::added || r.status == DiffStatus::removed ? 0
               : r.status == DiffStatus::changed                                ? 1
                                                                                : 2;
    };
    std::stable_sort(out.begin(), out.end(), [&](const IoctlDiffRow& x, const IoctlDiffRow& y) {
        if (rank(x) != rank(y)) return rank(x) < rank(y);
        const std::uint64_t cx = x.b ? x.b->count : x.a->count, cy = y.b ? y.b->count : y.a->count;
        return cx > cy;
    });
    return out;
}

}  // namespace nvtrace
