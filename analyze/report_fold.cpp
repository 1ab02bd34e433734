// ReportFold (include/nvtrace/report_fold.hpp).
#include "nvtrace/report_fold.hpp"

#include "raw_event_decoder.hpp"

#include <event-parse.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace nvtrace {

namespace {

// A record whose decoding was left to the fold thread (ReportFold::add of a record).
struct Deferred {
    const RawEventDecoder* decoder;
    const RawEventDecoder::Fields* fields;
    std::uint64_t ts;
    int cpu;
    std::uint32_t size;
    std::size_t offset;  // its bytes in Batch::bytes (a batch of 4,096 records of 1 MiB sub-buffers passes 4 GiB)
};

// One item: an event (index into `events`) or a record (index into `records`), in the order added.
struct Batch {
    std::vector<std::pair<int, std::string>> comms;  // pids first seen in this batch, given before its items
    std::vector<Event> events;
    std::vector<Deferred> records;
    std::string bytes;
    std::vector<std::uint32_t> order;  // per item: index, with kRecordBit set for a record
    void clear() {
        comms.clear();
        events.clear();
        records.clear();
        bytes.clear();
        order.clear();
    }
};
constexpr std::uint32_t kRecordBit = 1u << 31;

// 1,024 events of about 200 bytes: the queue, the batch being filled, the one being folded and the emptied ones
// kept for reuse hold about 1.5 MB (8 MB with batches of 4,096), while a hand-over (a lock and a wake-up) every
// 1,024 events costs nothing measurable.
constexpr std::size_t kBatch = 1024, kQueued = 4;

// Whether `ev` owns no heap memory (every string in it fits the string's own buffer). Such an event is copied into
// the report's sorter (ReportStream::add(const Event&): one assignment); any other is swapped into it
// (add(Event&&): its buffers change hands instead of being copied, and the slot's older ones come back).
bool owns_no_heap(const Event& ev) {
    constexpr std::size_t kSso = 15;  // the longest string libstdc++ keeps inline
    if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) return e->fd_path.size() <= kSso;
    if (const auto* x = std::get_if<IoctlExit>(&ev.body))
        return x->errno_name.size() <= kSso && x->errno_text.size() <= kSso;
    return std::holds_alternative<LostEvents>(ev.body);
}

// The sorter's slot for the event is filled with one copy when that is cheaper than a swap (three moves of the
// 200-byte Event, each of which rebuilds the variant when its alternative changes).
void give(ReportStream& report, Event& ev) {
    if (owns_no_heap(ev))
        report.add(static_cast<const Event&>(ev));
    else
        report.add(std::move(ev));
}

}  // namespace

struct ReportFold::Impl {
    ReportStream& report;
    CommOf comm_of;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Batch> queue;               // guarded by mu
    std::vector<Batch> spare;              // folded batches, emptied, for the producer to fill again; guarded by mu
    bool done = false;                     // guarded by mu
    std::uint64_t handed = 0, folded = 0;  // batches handed over and done with; guarded by mu
    bool finished = false;                 // finish() was called
    Batch cur;
    std::vector<bool> seen;    // pids whose comm was asked for (below PID_MAX_LIMIT, 4M)
    std::set<int> seen_above;  // and any other (a damaged record's)
    std::thread folder;
    Event scratch;  // the fold thread's: each deferred record decoded into it

    Impl(ReportStream& r, CommOf c) : report(r), comm_of(std::move(c)) {
        folder = std::thread([this] { fold(); });
    }

    void fold() {
        for (;;) {
            Batch b;
            {
                std::unique_lock lock(mu);
                cv.wait(lock, [&] { return !queue.empty() || done; });
                if (queue.empty()) return;
                b = std::move(queue.front());
                queue.pop_front();
            }
            cv.notify_all();
            for (auto& [pid, comm] : b.comms)
                report.side().comms.emplace(pid, std::move(comm));
            for (std::uint32_t item : b.order) {
                if (item & kRecordBit) {
                    const Deferred& d = b.records[item & ~kRecordBit];
                    tep_record rec{};
                    rec.ts = d.ts;
                    rec.cpu = d.cpu;
                    rec.size = static_cast<int>(d.size);
                    rec.data = b.bytes.data() + d.offset;
                    d.decoder->fill(rec, *d.fields, scratch);
                    give(report, scratch);  // swapped or copied: `scratch`'s buffers are reused either way
                } else {
                    give(report, b.events[item]);
                }
            }
            // The batch's memory goes back to the producer, which fills it again without allocating.
            b.clear();
            {
                std::lock_guard lock(mu);
                spare.push_back(std::move(b));
                ++folded;
            }
            cv.notify_all();
        }
    }

    void added() {
        if (cur.order.size() == kBatch) hand_over();
    }

    void hand_over() {
        {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return queue.size() < kQueued; });
            queue.push_back(std::move(cur));
            ++handed;
            cur = Batch{};
            if (!spare.empty()) {
                cur = std::move(spare.back());
                spare.pop_back();
            }
        }
        cv.notify_all();
    }

    void note_pid(int pid) {
        if (comm_of && pid >= 0 && first_sight(pid))
            if (auto c = comm_of(pid)) cur.comms.emplace_back(pid, std::move(*c));
    }

    bool first_sight(int pid) {
        if (auto p = static_cast<std::size_t>(pid); p < (std::size_t{1} << 22)) {
            if (p >= seen.size()) seen.resize(std::max(p + 1, 2 * seen.size()), false);
            if (seen[p]) return false;
            seen[p] = true;
            return true;
        }
        return seen_above.insert(pid).second;
    }
};

ReportFold::ReportFold(ReportStream& report, CommOf comm_of)
    : impl_(std::make_unique<Impl>(report, std::move(comm_of))) {}

ReportFold::~ReportFold() {
    finish();
}

void ReportFold::add(Event&& ev) {
    Impl& s = *impl_;
    if (s.finished) return;
    s.note_pid(ev.pid);
    s.cur.order.push_back(static_cast<std::uint32_t>(s.cur.events.size()));
    s.cur.events.push_back(std::move(ev));
    s.added();
}

void ReportFold::add(const RawRecord& r) {
    const auto& [decoder, fields, rec] = r;
    Impl& s = *impl_;
    if (s.finished) return;
    s.note_pid(decoder.pid(rec));
    const auto size = static_cast<std::uint32_t>(std::max(rec.size, 0));
    s.cur.order.push_back(static_cast<std::uint32_t>(s.cur.records.size()) | kRecordBit);
    // Each record's bytes start 8-byte aligned, as libtraceevent's readers may load its fields directly.
    s.cur.bytes.resize((s.cur.bytes.size() + 7) & ~std::size_t{7});
    s.cur.records.push_back({&decoder, &fields, rec.ts, rec.cpu, size, s.cur.bytes.size()});
    s.cur.bytes.append(static_cast<const char*>(rec.data), size);
    s.added();
}

void ReportFold::sync() {
    Impl& s = *impl_;
    if (s.finished) return;
    if (!s.cur.order.empty() || !s.cur.comms.empty()) s.hand_over();
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, [&] { return s.folded == s.handed; });
}

void ReportFold::finish() {
    Impl& s = *impl_;
    if (s.finished) return;
    s.finished = true;
    if (!s.cur.order.empty() || !s.cur.comms.empty()) s.hand_over();
    {
        std::lock_guard lock(s.mu);
        s.done = true;
    }
    s.cv.notify_all();
    s.folder.join();
}

}  // namespace nvtrace
