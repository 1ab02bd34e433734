// SortOrder (sorter.hpp).
#include "sorter.hpp"

#include <algorithm>

namespace nvtrace {

SortOrder::Admitted SortOrder::admit(std::optional<std::uint64_t> ts_ns) {
    ++pushed_;
    const std::uint64_t t = ts_ns ? *ts_ns : newest_;
    newest_ = std::max(newest_, t);
    std::uint32_t slot;
    if (!free_.empty()) {
        slot = free_.back();
        free_.pop_back();
    } else {
        slot = slots_++;
    }
    if (any_emitted_ && t < last_emitted_) {
        ++late_;
        ++emitted_;  // handed on by the caller at once
        return {slot, true};
    }
    // In-order input (the common case) appends; an earlier time goes after the held items of its time or
    // less (stable: equal times keep arrival order).
    if (held_.empty() || held_.back().ts <= t)
        held_.push_back({t, slot});
    else
        held_.insert(
            std::upper_bound(held_.begin(), held_.end(), t, [](std::uint64_t x, const Held& h) { return x < h.ts; }),
            Held{t, slot});
    return {slot, false};
}

std::optional<std::uint32_t> SortOrder::next(bool all) {
    if (!held_.empty()) {
        const Held front = held_.front();
        if (all || held_.size() > window_.max_events || newest_ - front.ts >= window_.span_ns) {
            held_.pop_front();
            last_emitted_ = front.ts;
            any_emitted_ = true;
            ++emitted_;
            return front.slot;
        }
    }
    max_buffered_ = std::max(max_buffered_, held_.size());
    return std::nullopt;
}

}  // namespace nvtrace
