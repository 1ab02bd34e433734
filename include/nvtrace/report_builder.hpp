// nvtrace/report_builder.hpp: the report built one event at a time (build_report of nvtrace/report.hpp is this
// builder fed a whole stream; nvtrace/report_stream.hpp writes a report this way without holding its records).
//
// Units: ns on the trace clock, as in report.hpp. Thread-safety: see the class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nvtrace/call_graph.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

namespace detail {
class Phases;
}

// build_report one event at a time, for a stream too large to hold (nvtrace/report_stream.hpp): build_report is
// a ReportBuilder fed every event of the stream, so both give the same report. `side` is the stream without its
// events: comms, fd paths, kmsg, buffer stats, diagnostics and file name; read as the events come and in
// finish(), so it must outlive the builder (comms may grow between add() calls: a pid's comm must be in it
// before that pid's first event). With a sink, the records of that section are handed to it as they complete,
// in the order the report lists them (ioctls once nothing later can change them: IoctlCollector in
// nvtrace/ioctl.hpp), and the report's vector stays empty; without one they are kept in the report.
// Thread-safety: one thread.
class ReportBuilder {
public:
    struct Sinks {
        std::function<void(IoctlRecord&&)> ioctl;   // phase set; call/calls empty (the calls are not held)
        std::function<void(EventRecord&&)> event;   // with the stacks recorded after it
        std::function<void(MarkerEntry&&)> marker;  // not the preload library's lines
    };
    ReportBuilder(const EventStream& side, Sinks sinks);
    ~ReportBuilder();
    ReportBuilder(const ReportBuilder&) = delete;
    ReportBuilder& operator=(const ReportBuilder&) = delete;

    // One event, in stream order. Function-graph entries and exits are not read here: the call graph is built
    // from the whole stream and given to finish(). `open_call`: for a ConsoleLine, the id of the innermost call
    // open on its task at that point (CallGraph::open_call_at), if any.
    void add(const Event& ev, std::optional<std::uint64_t> open_call = std::nullopt);
    // After the last event: the report with `g`'s calls and graph (an empty CallGraph without function
    // tracing). Call once. With an ioctl sink the ioctls are not linked to calls (link_ioctl_calls).
    Report finish(CallGraph&& g);

private:
    static std::vector<FdPath> fd_paths_of(const EventStream& side);
    void take_ioctl(IoctlRecord&& io);
    void add_other(const Event& ev, const OtherEvent& o);
    void flush_event();

    const EventStream& side_;
    Sinks sinks_;
    std::vector<FdPath> fd_paths_;
    IoctlCollector ioctls_;
    std::unique_ptr<detail::Phases> phases_;
    Report r_;
    std::optional<EventRecord> pending_event_;  // the last event, until the next one says no stack follows it
    std::uint64_t unknown_loss_marks_ = 0;
    std::string first_loss_;
};

}  // namespace nvtrace
