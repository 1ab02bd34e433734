// nvtrace/capture_meta.hpp: meta.json of a capture directory (docs/formats.md "Capture directory") as one type.
//
// The live capture (tracer/capture.cpp, tracer/cmd/cmd_run.cpp) fills a CaptureMeta and writes it with
// dump_capture_meta; the offline reader (CaptureDirReader) and the capture summary read it back with
// capture_meta_from_json. The JSON is an object whose keys nlohmann writes sorted, so the bytes of a capture's
// meta.json depend only on the values. Units: ns for durations; buffer sizes in KiB (buffer_size_kb), page sizes
// in bytes.
//
// Keys that older captures do not have (e.g. "tty", "fd_events") read as their default and are named in
// `absent_keys`, so that such a file is written again byte for byte. Keys the reader needs ("capture_format",
// "raw", "event_formats") must be there. A key of the wrong type is an Error::usage "FILE: KEY: expected WHAT".
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/report_source.hpp"

namespace nvtrace {

// Omitted<T> (nvtrace/event.hpp): a value whose key is left out of meta.json when there is none.

// One page file set of meta.json "raw.buffers": the ring buffer ("instance": nvtrace's private instance,
// "top": the top level, where function_graph ran under the journal) and the counts the capture wrote.
struct CaptureBuffer {
    std::string name;
    std::uint64_t page_size = 0;            // bytes per sub-buffer (events/header_page)
    std::vector<int> cpus;                  // raw/<name>/cpuN, in the drain's order
    Omitted<std::uint64_t> pages, records;  // both or neither are used (an edited capture may leave them out)
};

// meta.json "raw": the layout of the saved pages (events/header_page of the capturing kernel).
struct CaptureRaw {
    std::uint64_t long_size = 8;        // 4 or 8
    std::string endianness = "little";  // or "big"
    std::int64_t page_size = 0;         // tep_get_sub_buffer_size at capture
    std::vector<CaptureBuffer> buffers;
    bool drained_while_running = true;
    std::optional<std::string> write_error;   // pages the drain could not read or write (null: none)
    std::optional<std::string> decode_error;  // page files the capture could not read back (null: none)
};

// A process the program left running, ended (or not) by nvtrace: "descendants_ended", "descendants_left".
struct EndedProcess {
    int pid = 0;
    std::string comm;
    std::string signal;  // "SIGTERM", "SIGKILL"; "none" for one left
};

struct CaptureMeta {
    int capture_format = 0;  // kCaptureDirFormat of the writer
    // The program and how it went.
    std::vector<std::string> command;  // argv, no shell
    std::optional<int> pid;            // null: unknown
    std::uint64_t run_as_uid = 0;
    bool tty = false;
    std::optional<std::string> preload;  // libnvtrace_preload.so injected, null: none
    std::string started_utc;             // "YYYY-MM-DDTHH:MM:SSZ"
    std::int64_t duration_ns = 0;        // from the program's release to the end of what it left running
    std::optional<int> exit_code, signal;
    std::optional<int> interrupted_by;  // the signal that stopped nvtrace while the program ran
    bool timed_out = false;
    std::optional<std::string> stopped_on_terminal;  // "SIGTTIN" or "SIGTTOU"
    std::vector<EndedProcess> descendants_ended, descendants_left;
    // What was traced.
    std::vector<std::string> modules, filters, notrace, graph_functions, events;
    std::optional<int> max_depth;
    std::map<std::string, std::uint64_t> filter_counts;  // "module:nvidia" -> functions it matched
    Omitted<std::uint64_t> filter_functions;             // set_ftrace_filter lines (function_graph only)
    std::string tracer_mode;                             // "events", "function_graph (instance)", "... (top level)"
    std::string tracing_dir, instance, clock;
    std::optional<std::int64_t> buffer_size_kb;                      // null: the kernel's default
    std::vector<std::string> kept_events, fd_events, event_formats;  // event_formats: "system:event" saved
    bool printk_console = false;
    std::vector<CaptureUprobe> uprobes;  // probed functions (older captures: none)
    // What was recorded.
    std::optional<KmsgClockOffset> kmsg_clock;
    bool kmsg_overwritten = false;
    std::vector<std::string> kmsg_records;
    std::vector<CpuBufferStats> buffer_stats;  // deltas over the run
    std::uint64_t undecodable_records = 0;
    Omitted<std::uint64_t> unresolved_functions;  // function_graph only
    CaptureRaw raw;
    std::optional<std::string> instance_left;  // why nvtrace-<pid> could not be removed
    std::vector<std::string> trace_dat;        // --trace-dat files written
    // The report's "source" and "environment" objects (docs/report.md), as the run made them.
    ReportSource report_source;
    ReportEnvironment environment;
    // The expectations the run checked, kept in the capture directory: their path relative to it ("expect/NAME",
    // the bytes read at the start of the run), so that `nvtrace report DIR` checks them wherever it is started
    // (report_source.expectations is the path as given). Absent: the run had none, or was made before the copy.
    Omitted<std::string> expectations_copy;
    Omitted<std::string> working_dir;  // the run's current directory (absolute), absent in older captures

    std::set<std::string> absent_keys;  // optional keys the file read did not have (left out when written)
};

// meta.json's bytes: the object indented by one space, invalid UTF-8 replaced, and a final newline. Read back by
// CaptureDirReader::open (nvtrace/capture_dir.hpp).
std::string dump_capture_meta(const CaptureMeta& m);

}  // namespace nvtrace
