// nvtrace/report_stream.hpp: a report written without holding its ioctls, events and markers
// (docs/performance.md): a capture of a million ioctls holds about 4,100 ioctl records instead of all of them.
//
// The events are fed one at a time to a ReportBuilder (nvtrace/report_builder.hpp), through a sorter
// (analyze/sorter.hpp) that puts them in time order. Its ioctl records are written, as they complete, straight
// into a temporary report file (report.json lists `calls`, empty here, and `ioctls` first for this); its
// `events` and `markers` go to two more temporary files, copied in (in the kernel where it can:
// copy_file_range) when the rest of the report is written after the last event. The bytes are those of
// write_json(build_report(stream)) for the same events stably sorted by ts_ns
// (tests/analyze/test_report_stream.cpp compares them on every test trace and capture directory).
//
// Time order (Options::time_order). An event whose ts_ns goes back is put in its place when it arrives within
// the sorter's window (kSortWindow: 16,384 events or 100 ms, whichever is reached first; equal times keep
// arrival order). One older than an event already handed to the builder ("late") is never refused, dropped or
// read again: it is folded at once, in arrival order, and counted in the report's diagnostics, added by
// finish():
//  - late_event (info): events[] (or a gap) out of time order there; nothing is missing;
//  - late_ioctl_or_marker (data_loss, the report is incomplete): a late ioctl entry or exit, or marker, may
//    have been paired or placed with the wrong partner (the builder pairs and places those by time order).
// The first example names the CPU, the ts_ns and how many ns behind the last event handed on it was.
//
// What cannot be streamed: function-graph entries and exits (the call graph is built from the whole stream and
// linked to the ioctls). add() refuses them, and nothing else; the caller then builds the whole report with
// build_report instead.
//
// Memory: the window's events (kSortWindow) besides the builder's. Units: ns on the trace clock. Errors:
// Error::environment with the system's reason (temporary file, disk full). Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "nvtrace/call_graph.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

// Where report.json's bytes go while a ReportStream builds the report.
enum class ReportJson {
    temp_file,  // a temporary file in temp_dir: write_to() names it, write() copies it (`nvtrace run`, -o)
    direct,     // straight into `direct_fd` (stdout), the rest by write(direct_fd) after finish(); no write_to()
    none,       // nowhere: the records are only counted and handed to on_ioctl() (a summary alone)
};
struct ReportStreamOptions {
    // The events go through the sorter (a source whose whole report sorts its events: capture directories,
    // trace.dat); false for a source read in file order either way (function_graph text): folded as added.
    bool time_order = true;
    ReportJson json = ReportJson::temp_file;
    int direct_fd = -1;  // ReportJson::direct: not closed
};

class ReportStream {
public:
    using Json = ReportJson;
    using Options = ReportStreamOptions;
    static Result<std::unique_ptr<ReportStream>> open(const std::string& temp_dir, EventStream side,
                                                      Options options = {});
    ~ReportStream();
    ReportStream(const ReportStream&) = delete;
    ReportStream& operator=(const ReportStream&) = delete;

    EventStream& side();
    // Called with every ioctl record as it is written (e.g. IoctlSummary::add for the run's summary).
    void on_ioctl(std::function<void(const IoctlRecord&)> f);

    // One event in arrival order; any ts_ns is taken (see "Time order" above). false, and nothing taken, only for
    // a FuncEntry/FuncExit: this stream needs build_report. `open_call`: for a ConsoleLine, the call open on its
    // task there (CallGraph::open_call_at of a CallStream the caller feeds the calls to).
    bool add(const Event& ev, std::optional<std::uint64_t> open_call = std::nullopt);
    // The same, taking the event's contents: `ev` is left holding an earlier event (valid, unspecified), whose
    // buffers the caller may reuse for its next event.
    bool add(Event&& ev, std::optional<std::uint64_t> open_call = std::nullopt);
    // After the last event: the events still in the sorter are folded, the late ones counted. `calls`: the counters and
    // first places of the calls the caller built (a CallStream's summary(), its `calls` empty), for completeness; empty
    // without function tracing. Error when a temporary file could not be written (the report cannot be written).
    Result<void> finish(CallGraph&& calls = {});
    // After finish(): the report without its ioctls, events and markers (their vectors are empty; the caller
    // may set source, environment, checks, source_links). Counts of what was written:
    Report& report();
    std::uint64_t ioctls() const;
    std::uint64_t markers() const;
    const std::map<std::string, std::uint64_t>& event_names() const;  // events[] by name
    std::uint64_t events() const;

    // report.json: the bytes write_json would write for report() with every record (errors: the system's reason).
    // write_to() gives the temporary file holding them the name `path` when nothing has that name (a link: `path` must
    // be in the directory given to open(), or on its file system); an existing `path` is written into instead, as an
    // output file (a regular file keeps its inode, a device or symbolic link is never replaced). write() copies
    // them to `fd` (a file or a pipe); either may follow the other. With Json::direct,
    // write(direct_fd) writes what follows the ioctls into it, and nothing else is allowed; with Json::none,
    // neither (Error::internal). report() is read by the first of them and not after.
    Result<void> write_to(const std::string& path);
    Result<void> write(int fd);

private:
    Result<void> complete();  // writes the part after the ioctls, once
    struct Impl;
    explicit ReportStream(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace nvtrace
