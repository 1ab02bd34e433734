// SortOrder (sorter.hpp).
#include "sorter.hpp"

#include <algorithm>
#include <cstdint>

namespace nvtrace {

void SortOrder::grow() {
    // Twice the room, up to the most ever held; the held items move to the start of the new ring, in order.
    const std::size_t most = window_.max_events < SIZE_MAX ? window_.max_events + 1 : SIZE_MAX;
    std::vector<Held> bigger(std::min(most, std::max<std::size_t>(16, 2 * ring_.size())));
    for (std::size_t i = 0; i < size_; ++i)
        bigger[i] = held_at(i);
    ring_ = std::move(bigger);
    head_ = 0;
}

void SortOrder::insert_held(Held h) {
    // The first held item newer than h (upper bound by time), then everything from there moves back one place.
    std::size_t lo = 0, hi = size_;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (h.ts < held_at(mid).ts)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (std::size_t i = size_; i > lo; --i)
        held_at(i) = held_at(i - 1);
    held_at(lo) = h;
    ++size_;
}

}  // namespace nvtrace
