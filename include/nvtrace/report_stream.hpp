// nvtrace/report_stream.hpp: a report written without holding its calls, ioctls, events and markers
// (docs/performance.md): a capture of a million ioctls holds about 4,100 ioctl records instead of all of them.
//
// The events are fed one at a time to a ReportBuilder (nvtrace/report_builder.hpp), through a sorter
// (analyze/sorter.hpp) that puts them in time order. Its calls are written, by id, straight into a temporary
// report file (report.json lists `calls` first for this), or handed to Options::calls instead; its `ioctls`,
// `events` and `markers` go to three more temporary files, copied in (in the kernel where it can:
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
// Memory: the window's events (kSortWindow) besides the builder's (report_builder.hpp), and the calls that ended
// while a call with a smaller id (entered before them) is still open, kept to be written by id: the first 65,536
// in memory, the JSON of the others in an unlinked spill file in temp_dir (24 bytes each in memory). Units: ns on the
// trace clock. Errors: Error::environment with the system's reason (temporary file, disk full). Thread-safety: one
// thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
    // Set: every call goes here as it ends (ReportBuilder's call sink: a call before its parent), and
    // report.json's `calls` stays empty (--calls-jsonl).
    std::function<void(Call&&)> calls;
    // Every record kept in report() (build_report's report: what checks, --source and a summary with calls
    // read), no temporary files; `json` and `direct_fd` are not used, write_to() and write() write report()
    // (write_json), and on_ioctl() is not called.
    bool hold = false;
    // Calls that end before a call with a smaller id wait for it (report.json lists calls by id): past the
    // first 65,536 of them, their JSON waits in memory up to this many bytes, then in an unlinked temporary file.
    std::size_t waiting_calls_memory = std::size_t(64) << 20;
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
    // Called with every ioctl record as it is written (e.g. IoctlSummary::add for the run's summary), and with
    // every call as it ends (a call before its parent; before the ioctl its root joins is written). Not called
    // for a report held whole (Options::hold).
    void on_ioctl(std::function<void(const IoctlRecord&)> f);
    void on_call(std::function<void(const Call&)> f);

    // One event in arrival order; any ts_ns is taken (see "Time order" above).
    void add(const Event& ev);
    // The same, taking the event's contents: `ev` is left holding an earlier event (valid, unspecified), whose
    // buffers the caller may reuse for its next event.
    void add(Event&& ev);
    // A FuncEntry / FuncExit whose names the caller holds (ReportBuilder::add), for a stream opened with
    // time_order false (the function_graph text reader's views into its text).
    void add(const Event& ev, std::string_view function, const std::string_view* module);
    // After the last event: the events still in the sorter are folded, the late ones counted. Error when a
    // temporary file could not be written (the report cannot be written).
    Result<void> finish();
    // Calls created so far (ids 1..calls()).
    std::uint64_t calls() const;
    // After finish(): the report without its calls, ioctls, events and markers (their vectors are empty; the caller
    // may set source, environment, checks, source_links); with Options::hold, the whole report. Counts of what
    // was written:
    Report& report();
    bool held() const;
    std::uint64_t ioctls() const;
    std::uint64_t markers() const;
    const std::map<std::string, std::uint64_t>& event_names() const;  // events[] by name
    std::uint64_t events() const;
    // Bytes of waiting calls' JSON read back from the temporary file so far (Options::waiting_calls_memory), in
    // 16 KiB blocks: what the read-back costs, for a bound in a test or a figure in bench/.
    std::uint64_t spill_bytes_read() const;

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
