// stream_builder.hpp: turns tokenized lines into Events (private to analyze/import). Shared by the
// function_graph text reader and the trace-cmd report reader, so both rebuild calls the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph_line.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

namespace nvtrace::import {

// Where one line's events happened.
struct LineCtx {
    std::uint64_t ts_ns = 0;
    bool ts_known = false;
    int cpu = -1;
    int pid = -1;
    bool irq = false;  // from latency flags
    std::uint32_t line = 0;
};

// Streaming only: the names of a FuncEntry / FuncExit. When `viewed`, they are views into the text (which
// must stay mapped until finish()) and the event's own function and module are left empty (no string per
// event); otherwise the event holds them (names that needed cleaning, the whole-file path, other events).
struct FuncNames {
    std::string_view function;
    std::string_view module;
    bool has_module = false;
    bool viewed = false;
};

class StreamBuilder {
public:
    // `text` sizes the event vector up front (about one event per line, leaves two): growing a vector of
    // 1e6+ events by doubling costs more than parsing them.
    StreamBuilder(std::string_view file_name, std::string_view text);

    // Entry, leaf, exit, comment or irq marker. Comments become events (comment_event).
    void graph(const LineCtx& ctx, const GraphBody& body);
    void push(const LineCtx& ctx, EventBody body, const FuncNames& names = {});
    // A FuncEntry{inferred} at `depth` named `function` (empty: unknown), opened on ctx's task.
    void inferred_entry(const LineCtx& ctx, std::string_view function, int depth);
    // Whether nothing is open on ctx's task (an entry there has no parent in the data).
    bool nothing_open(const LineCtx& ctx) { return task(ctx).open.empty(); }
    void lost(const LineCtx& ctx, std::optional<std::uint64_t> count, LostEvents::Kind kind = LostEvents::Kind::lost);
    // "(Overruns: N)" after a return line: belongs to the last FuncExit.
    bool overruns(std::uint64_t n);
    void malformed(std::uint32_t line, std::string_view expected, std::string_view found);
    // After the last line: when it was malformed and the text does not end with a newline, it was cut off
    // (a copy or a capture that stopped mid-line): the data_loss diagnostic "truncated_last_line".
    void check_last_line(std::string_view text, std::uint32_t last_line);
    // The "# entries-in-buffer/entries-written: A/B" header, when `header` (the text after '#') is one.
    void header(std::string_view header);
    void comm(int pid, std::string_view comm);

    EventStream& stream() { return stream_; }
    // How many times comm() has written stream().comms so far: while it is unchanged, the comm of a pid
    // a caller copied from there is still the one there.
    std::uint64_t comms_written() const { return comms_written_; }
    // Events pushed so far, drained ones included: the index the next event will have.
    std::size_t size() const { return base_ + (drain_ ? pending_.size() : stream_.events.size()); }
    // Index of the first event not drained yet (events before it were drained).
    std::size_t base() const { return base_; }
    // Gives the events from index `from` on (not drained yet) that ran on `cpu` with no known pid the pid
    // `pid` (a context-switch banner names the task they ran as).
    void backfill_pid(std::size_t from, int cpu, int pid);

    // Streaming: events are handed to `sink` (with their index) by drain() and finish() instead of being
    // kept. Events are then not sorted: one that goes back in time is counted (unsorted_timestamps).
    // The names of a FuncEntry / FuncExit come as `names` (FuncNames above). Events not drained yet are
    // held inside the builder (stream().events stays empty); a FuncEntry / FuncExit with viewed names is
    // handed over as an event the builder reuses for the next one, valid only during the call.
    using Drain = std::function<void(Event&&, std::size_t index, const FuncNames& names)>;
    // `consumed(p)`: the text before p is read and referenced by nothing kept (the caller may drop its pages).
    void set_drain(Drain sink, std::function<void(const char*)> consumed = {});
    // The reader is past `p`: tells the caller the text before p, or before the first name an event not yet
    // drained still views, is done with.
    void consumed(const char* p) {
        if (!consumed_) return;
        for (std::size_t i = 0; i < pending_.size(); ++i)
            if (const Pending& e = pending_[i];
                e.names.viewed && !e.names.function.empty() && e.names.function.data() < p)
                p = e.names.function.data();
        consumed_(p);
    }
    bool draining() const { return static_cast<bool>(drain_); }
    // Hands over the events before index `upto` (never the last FuncExit, which "(Overruns: N)" may still
    // change).
    void drain(std::size_t upto);

    // Sorts by timestamp when the text had them and was out of order (counted), fails when nothing usable
    // was read: `what` names the lines that were expected.
    Result<EventStream> finish(std::string_view what);

private:
    struct TaskState {
        std::vector<int> open;  // depths of the open entries
        int irq_floor = -1;     // depth of an interrupt entered with no marker, while it runs
    };
    TaskState& task(const LineCtx& ctx);
    template <class Body>  // push() of a FuncEntry / FuncExit: the event built member by member
    void emplace(const LineCtx& ctx, Body&& body, const FuncNames& names);
    bool in_irq(const LineCtx& ctx, TaskState& t, int depth, bool entering);
    // Streaming: an event not drained yet. A FuncEntry / FuncExit whose names are views is kept as these
    // few fields (no Event built and destroyed per line); any other event waits whole in others_, in order.
    struct Pending {
        enum class Kind : std::uint8_t { other, entry, exit };
        std::uint64_t ts_ns = 0;
        std::uint64_t duration_ns = 0;
        std::int64_t retval = 0;
        std::uint64_t overrun = 0;
        FuncNames names;
        std::string_view args, retaddr;  // an entry's funcgraph-args and -retaddr text, views like names
        int cpu = -1;
        int pid = -1;
        std::uint32_t line = 0;
        int depth = 0;
        Kind kind = Kind::other;
        bool irq = false;
        bool ts_known = false;
        bool has_duration = false;
        bool has_retval = false;
    };
    void pend(const LineCtx& ctx, bool irq, Pending::Kind kind, int depth, const GraphBody* b, const FuncNames& names);
    // The pending records, in chunks of kChunk: a slot is zeroed once, when its chunk is made, and then reused,
    // every field written by pend(). Drained chunks go to the back for reuse. (A vector grown by doubling zeroed each
    // new slot and copied the held ones at each growth: with a CPU holding kBackfillMax events for a banner, that
    // was a quarter of `report --json`'s time on the recursion benchmark, most of it first touches of new pages.)
    class PendingBuf {
    public:
        static constexpr std::size_t kChunk = 4096;
        std::size_t size() const { return n_; }
        Pending& operator[](std::size_t i) {
            const std::size_t at = head_ + i;
            return chunks_[at / kChunk][at % kChunk];
        }
        Pending& add() {
            const std::size_t at = head_ + n_;
            if (at / kChunk == chunks_.size()) chunks_.push_back(std::make_unique<Pending[]>(kChunk));
            ++n_;
            return chunks_[at / kChunk][at % kChunk];
        }
        void erase_front(std::size_t n) {  // drained
            head_ += n;
            n_ -= n;
            const std::size_t done = head_ / kChunk;
            if (done == 0) return;
            std::rotate(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(done), chunks_.end());
            head_ -= done * kChunk;
        }
        void reset() {
            chunks_ = decltype(chunks_)();
            head_ = n_ = 0;
        }

    private:
        std::vector<std::unique_ptr<Pending[]>> chunks_;
        std::size_t head_ = 0, n_ = 0;  // the first pending record is chunks_[0][head_]
    };

    std::string file_;
    EventStream stream_;
    std::unordered_map<std::int64_t, TaskState> tasks_;
    std::unordered_map<int, int> irq_markers_;  // cpu -> open "==========>" scopes
    int& irq_marks(int cpu) {
        if (!last_irq_ || cpu != last_irq_cpu_) {
            last_irq_ = &irq_markers_[cpu];
            last_irq_cpu_ = cpu;
        }
        return *last_irq_;
    }
    int* last_irq_ = nullptr;  // the entry of last_irq_cpu_
    int last_irq_cpu_ = 0;
    TaskState* last_task_ = nullptr;  // tasks_[last_task_key_]
    std::int64_t last_task_key_ = 0;
    // comm(): the pid it was last given and the size of stream_.comms[that pid] then (only comm() writes
    // stream_.comms while lines are read), so that a run of lines of one task skips the map.
    int last_comm_pid_ = -1;
    std::size_t last_comm_size_ = 0;
    std::uint64_t comms_written_ = 0;
    PendingBuf pending_;                    // streaming: the events not drained yet
    std::deque<Event> others_;              // streaming: the Pending::Kind::other events, in order
    Event entry_ev_, exit_ev_;              // streaming: what a pending entry / exit is handed over as
    std::optional<std::size_t> last_exit_;  // index (drained events included)
    Drain drain_;
    std::function<void(const char*)> consumed_;
    std::size_t base_ = 0;
    std::uint64_t drained_ts_ = 0;  // ts of the last drained event
    std::uint32_t first_unsorted_line_ = 0;
    std::uint32_t first_malformed_line_ = 0;
    std::uint32_t last_malformed_line_ = 0;
    std::string first_malformed_;
};

// A function_graph comment ("/* console: ... */", "/* irq_handler_entry: irq=17 ... */", trace_printk text).
EventBody comment_event(std::string_view text);

// read_fgraph_text on a builder the caller set up (StreamBuilder::set_drain for streaming).
Result<EventStream> read_fgraph_text_into(std::string_view text, StreamBuilder& b);

}  // namespace nvtrace::import
