// nvtrace/capture_dir.hpp: the raw data of an `nvtrace run` capture directory, and its offline reader.
//
// The directory layout (format version kCaptureDirFormat) is described file by file in docs/formats.md,
// "Capture directory". The raw data are the kernel's ring-buffer sub-buffers ("pages") exactly as
// per_cpu/cpuN/trace_pipe_raw returned them (kernel/trace/ring_buffer.c: a u64 timestamp, a `local_t`
// commit word whose low 27 bits are the data length and whose bits 31/30 flag missed events, then the
// events; layout in events/header_page). Both the live capture (tracer/capture.cpp) and the reader below
// decode pages with PageDecoder, so a capture and its re-analysis build the same EventStream.
//
// Errors: Error::usage naming the file (and the byte offset for page data); never a crash on truncated,
// missing or garbage files. Thread-safety: a PageDecoder is used by one thread; read_capture_dir is pure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nvtrace/capture_meta.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

struct tep_handle;
struct tep_record;
struct kbuffer;

namespace nvtrace {

class RawEventDecoder;  // analyze/raw_event_decoder.hpp

// Version of the capture directory layout, meta.json "capture_format". 1: raw pages + formats.
inline constexpr int kCaptureDirFormat = 1;

// Decodes ring-buffer sub-buffers with libtraceevent's kbuffer into Events, field layouts from the event formats.
// The tep_handle (opaque here) must have parsed events/header_page (long size, endianness) and the event formats,
// and outlive the decoder. `other_events`: the "system:event" names kept as OtherEvent (RawEventDecoder).
class PageDecoder {
public:
    explicit PageDecoder(tep_handle* tep, std::vector<std::string> other_events = {});
    ~PageDecoder();
    PageDecoder(const PageDecoder&) = delete;
    PageDecoder& operator=(const PageDecoder&) = delete;

    // Decodes one sub-buffer of `size` bytes recorded on `cpu` and appends its events to `out`. A page
    // whose header says the kernel lost events before it first appends a LostEvents (count when the kernel
    // stored it, else nullopt). Fails, naming the byte offset inside the page, when the commit length or
    // an event runs past the page or an event header is impossible: then nothing of that page is appended
    // (the event chain is checked before kbuffer reads it: kbuffer loops forever on some bad headers).
    // `page` must be readable for `size` + kPageSlack bytes (kbuffer reads an event header before it
    // knows the length; the slack keeps a garbage page from reading past the allocation).
    Result<void> decode(const unsigned char* page, std::size_t size, int cpu, std::vector<Event>& out);

    // Records seen so far (every event type, kept or not) and the event type ids they had.
    std::uint64_t records() const { return records_; }
    std::set<int> types_seen() const;
    // Records of a kept type too short for the fields read (only in damaged data): skipped.
    std::uint64_t undecodable() const;

    static constexpr std::size_t kPageSlack = 64;

    // For a reader that needs, in the same pass, fields of records nvtrace does not decode (the live capture's fd
    // syscalls): the records of the event type ids in `types` of each page decoded without error are handed to
    // `records` in page order, after decode() appended the page's events, with the source set by set_source()
    // (decode_page_files and decode_page_files_merged set the file's index). A record's data lies in the page: valid
    // during the call only. An empty `types` stops it.
    using RecordObserver = std::function<void(std::size_t source, const tep_record& record)>;
    void observe(const std::vector<int>& types, RecordObserver records);
    void set_source(std::size_t source) { source_ = source; }

    // What decode() appends. kEvery: every event nvtrace keeps. kMarkersAndFunctions, for a pass that reads from the
    // events only their markers (ftrace:print, printk:console), lost-event marks and function addresses (the live
    // capture's own decoding, before the report decodes the pages again): ioctl and OtherEvent records are checked as
    // for kEvery (undecodable() counts the same) but appended as no Event, and the common_pid of each is put in pids().
    // Decoding an ioctl record into an Event costs about as much as the rest of the pass (docs/performance.md).
    enum class Appends { kEvery, kMarkersAndFunctions };
    void set_appends(Appends a) { appends_ = a; }
    // kMarkersAndFunctions: the pids (common_pid) of the records not appended, since set_appends.
    const std::set<int>& pids() const { return pids_; }

private:
    tep_handle* tep_;
    std::unique_ptr<RawEventDecoder> decoder_;
    kbuffer* kbuf_ = nullptr;
    int long_size_ = 8;
    bool big_endian_ = false;
    std::uint64_t records_ = 0;
    std::vector<std::uint8_t> seen_;      // indexed by the 16-bit event type id
    std::vector<std::uint8_t> observed_;  // indexed by the type id: handed to observer_; empty: none
    RecordObserver observer_;
    std::size_t source_ = 0;
    Appends appends_ = Appends::kEvery;
    std::set<int> pids_;
    int last_pid_ = -1;  // the pid last put in pids_ (records of one task come in runs)
    struct Pending {     // an observed record of the page being decoded
        unsigned long long ts = 0;
        void* data = nullptr;
        int size = 0;
        int record_size = 0;
        int cpu = -1;
    };
    std::vector<Pending> pending_;
};

// The first_example of the "damaged_page" diagnostic (severity data_loss) that the live capture and
// read_capture_dir both give for a page PageDecoder refused: "raw/<buffer>/cpu<cpu>: page at offset <byte
// offset of the page in its file>, <PageDecoder's message>; the events of this page are lost". The other
// pages are still read.
std::string damaged_page_example(std::string_view buffer, int cpu, std::uint64_t page_offset, std::string_view message);

// The events of several sources (buffer x CPU, in a fixed order) decoded into one vector, as one stream in time
// order: the stable sort by ts_ns of the sources concatenated (equal times keep source order, then read order).
// `starts` are the indexes where each source begins (in source order; an index past the end or before the previous
// start makes an empty source). Sorted sources are merged in place (std::inplace_merge: a buffer of at most the shorter
// half of a merge, no second copy of every event); any source out of time order gives the stable sort of the whole
// vector.
void merge_segments(std::vector<Event>& events, std::vector<std::size_t> starts);

// One page file of a capture (raw/<buffer>/cpuN: whole sub-buffers as trace_pipe_raw gave them) and what decoding
// it found. Sources are decoded in a fixed order (buffer, then CPU): the order of equal times.
struct PageFile {
    std::string buffer;  // "instance" or "top"
    int cpu = -1;
    std::string path;
    std::size_t page_size = 0;  // bytes per sub-buffer (events/header_page)
    std::uint64_t pages = 0;    // decoded: whole pages read
    std::uint64_t records = 0;  // decoded: records in them (PageDecoder::records())
    std::uint64_t damaged = 0;  // decoded: pages the decoder refused (counted in `pages`)
};
// What went wrong while decoding page files: `first` is the first problem, `io` whether it was reading the file
// (cannot open, read error, bytes after the last whole page) rather than a damaged page; `diagnostics` holds
// one "damaged_page" data_loss diagnostic per refused page (damaged_page_example), counted.
struct PageFileProblems {
    std::string first;
    bool io = false;
    std::vector<Diagnostic> diagnostics;
};

// Every event of `files`, in the order of merge_segments over the files' events laid end to end (a file that
// cannot be opened, read or ends in a partial page is noted in `problems` and its whole pages are kept).
// `expected_events`: how many the capture wrote, when known (the vector is reserved for it; 0: from the sizes).
std::vector<Event> decode_page_files(PageDecoder& dec, std::vector<PageFile>& files, PageFileProblems& problems,
                                     std::uint64_t expected_events = 0);
// The same events handed to `sink` one at a time, in that order when every file is in time order (the ring
// buffer of one CPU is), a page of each file decoded at a time: memory holds a page's events per file. Stops
// and returns false as soon as `sink` does (then decode again with decode_page_files, from fresh counters).
// The sink may move from the event.
bool decode_page_files_merged(PageDecoder& dec, std::vector<PageFile>& files, const std::function<bool(Event&)>& sink,
                              PageFileProblems& problems);

// Per-CPU counter deltas (after - before, matched by cpu and buffer; a counter that went down gives 0).
std::vector<CpuBufferStats> buffer_stats_delta(const std::vector<CpuBufferStats>& before,
                                               const std::vector<CpuBufferStats>& after);

// Everything a capture directory holds, re-analysed: `stream` equals the EventStream the live capture
// produced (events sorted, functions resolved from the saved kallsyms subset, comms, kmsg records, fd
// paths, buffer-stat deltas); `meta` is meta.json as read (nvtrace/capture_meta.hpp).
struct CaptureDirData {
    EventStream stream;
    CaptureMeta meta;
    std::uint64_t undecodable_records = 0;  // ioctl / funcgraph records whose format nvtrace cannot read
    std::size_t unresolved_functions = 0;   // function addresses not in the saved kallsyms
};

// A capture directory opened for reading: meta.json, the event formats, the page files (present, whole pages)
// and everything but the events (comms, fd paths, buffer stats, kmsg, kmsg clock) read and checked; the pages
// are then decoded once, whole (read_all) or one event at a time (stream). Errors as read_capture_dir's.
// Thread-safety: one thread.
class CaptureDirReader {
public:
    static Result<CaptureDirReader> open(const std::string& dir);
    CaptureDirReader(CaptureDirReader&&) noexcept;
    CaptureDirReader& operator=(CaptureDirReader&&) noexcept;
    ~CaptureDirReader();

    const CaptureMeta& meta() const;
    // True when the capture saved kallsyms (function_graph ran): its funcgraph records are named from it.
    bool has_function_graph() const;
    // The stream without its events, as read_capture_dir gives it; its diagnostics (damaged pages, pages not
    // saved, reused fds) are complete once the pages are decoded. A streaming caller may change it (comms).
    EventStream& side();

    // read_capture_dir's result.
    Result<CaptureDirData> read_all();
    // The events one at a time, in read_all's order (decode_page_files_merged), funcgraph entries and exits
    // named from the saved kallsyms as read_all names them, to `sink`; the side's diagnostics are set after the
    // last one. false when `sink` refused an event. Error when the page files do not hold what meta.json says
    // (after the events were handed out: the caller drops what it built).
    Result<bool> stream(const std::function<bool(Event&)>& sink);

private:
    struct Impl;
    explicit CaptureDirReader(std::unique_ptr<Impl> impl);
    Result<void> after_pages(PageFileProblems& problems);
    std::unique_ptr<Impl> impl_;
};

// True when `dir` holds a meta.json with "capture_format" (a raw capture directory).
bool is_raw_capture_dir(const std::string& dir);

// Reads and re-decodes a raw capture directory. Error::usage naming the file (and offset) on anything
// missing, truncated or malformed, except a page whose events cannot be decoded: that page gives the
// "damaged_page" data_loss diagnostic (damaged_page_example) in stream.diagnostics, and reading goes on.
Result<CaptureDirData> read_capture_dir(const std::string& dir);

}  // namespace nvtrace
