// nvtrace/report_builder.hpp: the report built one event at a time, the one analyzer of every route to a report
// (build_report of nvtrace/report.hpp is this builder fed a whole stream; nvtrace/report_stream.hpp writes a
// report this way without holding its records).
//
// Units: ns on the trace clock, as in report.hpp. Thread-safety: see the class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/call_graph.hpp"
#include "nvtrace/call_stream.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

namespace detail {
class Phases;
class ApiCalls;
}  // namespace detail

// build_report one event at a time, for a stream too large to hold (nvtrace/report_stream.hpp): build_report is
// a ReportBuilder fed every event of the stream, so both give the same report. `side` is the stream without its
// events: comms, fd paths, kmsg, buffer stats, diagnostics and file name; read as the events come and in
// finish(), so it must outlive the builder (comms may grow between add() calls: a pid's comm must be in it
// before that pid's first event).
// API calls (Report::api_calls): uprobe entry/return events paired per thread (analyze/api_calls.hpp); each
// ioctl and root call goes under the innermost API call of its thread open at its entry. Without phase markers
// (none seen yet), a record's phase is the function of the top API call holding it on its thread.
// Calls: the builder reads the function-graph entries and exits itself (CallStream, nvtrace/call_stream.hpp,
// the rules of call_graph.hpp) and puts each kernel-log line printed inside a call into that call.
// With a sink, the records of that section are handed to it as they complete, and the report's vector stays
// empty: ioctls in the order the report lists them once nothing later can change them (IoctlCollector in
// nvtrace/ioctl.hpp) and no root call can still join them (link_ioctl_calls: an ioctl is held while its task
// has a call open that may be one of its roots); calls in the order they end (a call before its parent), with
// their phase from the phase markers before them; without one they are kept in the report, calls by id.
// With a call sink the builder keeps, for the /dev/kmsg lines placed by time (attach_kernel_log_by_time), only
// the calls that overlap one of their windows, and for the ioctl links the root calls of tasks that made ioctls
// until their ioctl is handed over: memory does not grow with the calls.
// Thread-safety: one thread.
class ReportBuilder {
public:
    struct Sinks {
        std::function<void(IoctlRecord&&)> ioctl;   // phase, call and calls set
        std::function<void(EventRecord&&)> event;   // with the stacks recorded after it
        std::function<void(MarkerEntry&&)> marker;  // not the preload library's lines
        std::function<void(Call&&)> call;           // phase set
    };
    ReportBuilder(const EventStream& side, Sinks sinks);
    ~ReportBuilder();
    ReportBuilder(const ReportBuilder&) = delete;
    ReportBuilder& operator=(const ReportBuilder&) = delete;

    // One event, in stream order (by ts_ns: build_call_graph's rule for the calls).
    void add(const Event& ev);
    // The same for a FuncEntry / FuncExit whose names the caller holds elsewhere (CallStream::add): `function`
    // and `module` (null: none) stand for the event's own, and need to live only during the call.
    void add(const Event& ev, std::string_view function, const std::string_view* module);
    // After the last event: the report (graph and completeness included). Call once.
    Report finish();
    // Calls created so far (the largest id).
    std::uint64_t calls() const;

private:
    struct Linker;
    static std::vector<FdPath> fd_paths_of(const EventStream& side);
    void take_ioctl(IoctlRecord&& io);
    void take_call(Call&& c);
    void add_other(const Event& ev, const OtherEvent& o);
    void flush_event();

    const EventStream& side_;
    Sinks sinks_;
    std::vector<FdPath> fd_paths_;
    IoctlCollector ioctls_;
    IoctlStats ioctl_stats_;  // of every ioctl taken, whether kept or handed to a sink
    std::unique_ptr<detail::Phases> phases_;
    std::unique_ptr<detail::ApiCalls> api_;  // uprobe pairs (Report::api_calls)
    std::uint64_t ioctls_handed_ = 0;        // with an ioctl sink: the index of the next ioctl in report.ioctls
    std::optional<std::string> phase_at(int pid, std::uint64_t ts) const;
    Report r_;
    std::vector<Call> calls_by_id_;  // without a call sink
    std::unique_ptr<CallStream> calls_;
    std::unique_ptr<Linker> linker_;            // with a call sink
    std::optional<EventRecord> pending_event_;  // the last event, until the next one says no stack follows it
    std::uint64_t unknown_loss_marks_ = 0;
    std::string first_loss_;
    // The time of the last event of each CPU and of any CPU (ns): where a loss mark's lost events may begin.
    void note_time(const Event& ev);
    std::vector<std::uint64_t> cpu_last_ns_;
    std::uint64_t last_ns_ = 0;
};

}  // namespace nvtrace
