// nvtrace/report_fold.hpp: ReportStream::add on a second thread, so that a report is folded and written while
// the next events are decoded (docs/performance.md). Used by `nvtrace run`'s report stage and by the
// streamed `nvtrace report` of a trace.dat and of a capture directory.
//
// The producer (the thread that decodes) add()s events; they are handed over in batches of 1,024, through a
// queue of at most four batches, to a thread that gives them to the ReportStream in the same order (the
// ReportStream's sorter then orders them by time). The report it writes is byte for byte the one the producer
// would write by calling ReportStream::add itself.
//
// Comms: the ReportBuilder reads report.side().comms while folding, so the producer must not write them. The
// `comm_of` given to the constructor is asked, on the producer thread, for every pid >= 0 the first time an
// event of that pid is added; the comm it returns is put into report.side().comms (an existing entry stays)
// before that event is folded.
//
// Memory: at most six batches of 1,024 events or records in flight, and as many emptied ones kept for reuse
// (each record's bytes are copied into its batch). Errors: none. Events out of time order are taken (the
// ReportStream sorts them, or counts them as late); function-graph entries and exits are taken like any other
// (named by the producer: a RawRecord is never one, nvtrace/import.hpp).
// Thread-safety: add(), sync() and finish() from one thread (the producer); `report` must not be used elsewhere
// until finish() returned (the destructor calls finish()), except between sync() and the next add(), when the
// fold thread waits.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "nvtrace/event.hpp"
#include "nvtrace/report_stream.hpp"

namespace nvtrace {

struct RawRecord;  // a record left undecoded (nvtrace/import.hpp)

class ReportFold {
public:
    using CommOf = std::function<std::optional<std::string>(int pid)>;
    explicit ReportFold(ReportStream& report, CommOf comm_of = {});
    ~ReportFold();
    ReportFold(const ReportFold&) = delete;
    ReportFold& operator=(const ReportFold&) = delete;

    // One event, moved from.
    void add(Event&& ev);
    // A record left undecoded: its bytes are copied here and decoded on the fold thread, which keeps the
    // decoding off this thread. What it refers to (its decoder) must stay valid until the next sync() or
    // finish(); its bytes are read during the call only.
    void add(const RawRecord& rec);
    // Hands over what was added and waits until it is folded: after it, the decoders of the records added so
    // far are no longer used (a reader that frees them between buffers calls it first).
    void sync();
    // Hands over the last batch and waits for the fold thread. Further calls do nothing.
    void finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace nvtrace
