// analyze/sorter.hpp: the stage between a source and the report that puts events in time order, and never
// refuses one. The model is Perfetto trace_processor's windowed sorter (src/trace_processor/sorter): items are held
// for a window, ordered there by time, and handed on as the window moves past them.
//
// Shapes. Each item has a time, ts_ns (ns on the trace clock). The order handed on is that of a stable sort by
// ts_ns of the items in arrival order (equal times keep arrival order, so one CPU's events stay in the order its
// ring buffer gave them), for every item that arrived inside the window.
//
// Window (SortWindow). An item is held until more than `max_events` items are held, or until an item
// `span_ns` or more newer than it has arrived; then the oldest held items are handed on. Memory is therefore
// at most max_events + 1 items (the one being pushed included: the pool never grows past that), whatever the
// stream's length; between pushes at most max_events are held.
//
// Late items. An item older than the last one handed on ("late": it arrived after the window moved past its
// time) cannot be put in its place any more. It is not dropped and nothing is read again: it is handed on at
// once, in arrival order, and counted (SortOrder::late()). Every item pushed is handed on exactly once:
// after flush(), emitted() == pushed().
//
// Items without a time (a source that has none for some events) take the time of the newest item seen so far,
// which keeps them after everything that arrived before them.
//
// Thread-safety: one thread. No errors: every call succeeds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace nvtrace {

struct SortWindow {
    std::uint64_t span_ns;
    std::size_t max_events;
};

// The window of the report pipeline (ReportStream, nvtrace/report_stream.hpp), and its reasons. What reaches the
// sorter is already merged by time across CPUs and buffers: capture directories by decode_page_files_merged (a
// k-way merge of the per-CPU page files), trace.dat by tracecmd_iterate_events_multi (every CPU of every buffer);
// each CPU's ring buffer is written in time order (kernel/trace/ring_buffer.c). What is left out of order is a
// CPU whose own stamps step back: an event written by an interrupt while another event's slot was being
// reserved (ring_buffer.c's before_stamp/write_stamp handling: a few events, microseconds), a clock adjusted
// under a `local`/`global` trace clock (up to milliseconds). 16,384 events cover several ms of the densest
// capture bench/run.sh makes (about a million events per second) and 100 ms covers a sparse stream's clock
// steps; a step back larger than both (a suspend, a VM migration, a TSC reset) is no reordering any window
// could fix: it is counted as late. Memory: 16,384 events of about 200 bytes each, a few MiB.
inline constexpr SortWindow kSortWindow{100'000'000, 16'384};

// The ordering, without the items: which slot goes next. Slots are small integers below max_events + 1, reused.
class SortOrder {
public:
    explicit SortOrder(SortWindow window) : window_(window) {}

    // Room for one item with time `ts_ns` (nullopt: no time). `late` is true when the item is older than the last
    // one handed on: the caller hands it on at once, then release()s its slot.
    struct Admitted {
        std::uint32_t slot;
        bool late;
    };
    Admitted admit(std::optional<std::uint64_t> ts_ns) {
        ++pushed_;
        const std::uint64_t t = ts_ns ? *ts_ns : newest_;
        if (t > newest_) newest_ = t;
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
        if (size_ == ring_.size()) grow();
        if (size_ == 0 || held_at(size_ - 1).ts <= t) {
            ring_[at(size_)] = {t, slot};
            ++size_;
        } else {
            insert_held({t, slot});
        }
        return {slot, false};
    }
    // The next slot to hand on because the window has moved past it (kNone when every held item is still
    // inside); with `all`, the oldest held slot whatever the window (the end of the stream). A plain integer, not
    // an optional: one is asked for per item, and an optional returned through memory stalls the load that reads
    // it (a 4-byte and a 1-byte store read back as 8 bytes).
    static constexpr std::uint32_t kNone = UINT32_MAX;
    std::uint32_t next(bool all = false) {
        if (size_ != 0) {
            const Held front = ring_[head_];
            if (all || size_ > window_.max_events || newest_ - front.ts >= window_.span_ns) {
                head_ = at(1);
                --size_;
                last_emitted_ = front.ts;
                any_emitted_ = true;
                ++emitted_;
                return front.slot;
            }
        }
        if (size_ > max_buffered_) max_buffered_ = size_;
        return kNone;
    }
    void release(std::uint32_t slot) { free_.push_back(slot); }

    std::uint64_t pushed() const { return pushed_; }
    std::uint64_t emitted() const { return emitted_; }
    std::uint64_t late() const { return late_; }
    std::size_t buffered() const { return size_; }
    std::size_t max_buffered() const { return max_buffered_; }  // held between pushes: at most max_events
    std::uint32_t slots() const { return slots_; }              // slots ever made: the pool's size
    // The last time handed on (0 before the first): a late item is this much minus its time behind.
    std::uint64_t last_emitted_ns() const { return last_emitted_; }
    SortWindow window() const { return window_; }

private:
    struct Held {
        std::uint64_t ts;
        std::uint32_t slot;
    };
    std::size_t at(std::size_t i) const {  // ring index of the i-th held item (i <= ring_.size())
        const std::size_t j = head_ + i;
        return j >= ring_.size() ? j - ring_.size() : j;
    }
    Held& held_at(std::size_t i) { return ring_[at(i)]; }
    void insert_held(Held h);  // an item older than the newest held one: into its place
    void grow();               // the ring is full: twice the room
    SortWindow window_;
    // The held items by (ts, arrival), oldest first: a ring of ring_.size() entries from head_ (at most
    // max_events + 1, the most ever held).
    // In-order input (nearly all of it) appends at the back and leaves from the front: no allocation once the
    // ring holds the window, and no per-item node bookkeeping as in a std::deque.
    std::vector<Held> ring_;
    std::size_t head_ = 0, size_ = 0;
    std::vector<std::uint32_t> free_;
    std::uint32_t slots_ = 0;
    std::uint64_t newest_ = 0, last_emitted_ = 0;
    bool any_emitted_ = false;
    std::uint64_t pushed_ = 0, emitted_ = 0, late_ = 0;
    std::size_t max_buffered_ = 0;
};

// SortOrder with the items: a pool of T reused slot by slot (assigning into a slot reuses its buffers: a steady
// stream allocates nothing once the pool is full).
template <class T>
class Sorter {
public:
    explicit Sorter(SortWindow window = kSortWindow) : order_(window) {}

    // One item: `fill(T&)` writes it into its slot (copy-assign or swap into it; the slot holds an earlier item's
    // leftovers). `emit(T&)` is called for each item handed on by this push, in order; a late item is handed on
    // before push returns. Returns true when the item was late.
    template <class Fill, class Emit>
    bool push(std::optional<std::uint64_t> ts_ns, Fill&& fill, Emit&& emit) {
        auto [slot, late] = order_.admit(ts_ns);
        if (slot >= pool_.size()) {
            // Room for the whole window at once (address space only: a slot's memory is touched when first used).
            // Grown by doubling instead, the vector would hold the old and the new copy of every slot at once
            // while it moves them: twice the window's memory at the peak.
            if (pool_.capacity() == 0)
                pool_.reserve(std::min<std::size_t>(order_.window().max_events + 1, kMaxReserve));
            pool_.resize(slot + 1);
        }
        fill(pool_[slot]);
        if (late) {
            emit(pool_[slot]);
            order_.release(slot);
        }
        drain(false, emit);
        return late;
    }
    // Hands on every held item (the end of the stream).
    template <class Emit>
    void flush(Emit&& emit) {
        drain(true, emit);
    }
    const SortOrder& order() const { return order_; }

private:
    template <class Emit>
    void drain(bool all, Emit& emit) {
        for (std::uint32_t s; (s = order_.next(all)) != SortOrder::kNone;) {
            emit(pool_[s]);
            order_.release(s);
        }
    }
    static constexpr std::size_t kMaxReserve = std::size_t{1} << 20;  // slots reserved at most up front
    SortOrder order_;
    std::vector<T> pool_;
};

}  // namespace nvtrace
