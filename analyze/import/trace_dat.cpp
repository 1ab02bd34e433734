// trace.dat (trace-cmd's file, v6 and v7) through libtracecmd (ftrace-formats.md section 4).
// Built only where libtracecmd is found and the build is not static (NVTRACE_HAVE_TRACECMD).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "../raw_event_decoder.hpp"
#include "nvtrace/import.hpp"

#ifdef NVTRACE_HAVE_TRACECMD
#include <event-parse.h>
// trace-cmd.h includes libtracefs 1.6.4's tracefs.h, which has no extern "C" guard and passes an int where
// enum tracefs_hist_command is expected in an inline function (g++ rejects it): the same workaround as
// tracer/tracefs_cxx.h (../shared/reference/ci-environment.md section 6.1), which analyze/ cannot include.
struct tracefs_instance;
struct tracefs_hist;
static inline int tracefs_hist_command(struct tracefs_instance*, struct tracefs_hist*, int);
extern "C" {
#include <tracefs.h>
}
static inline int tracefs_hist_command(struct tracefs_instance* i, struct tracefs_hist* h, int c) {
    return tracefs_hist_command(i, h, static_cast<enum tracefs_hist_command>(c));
}
#include <trace-cmd/trace-cmd.h>

#include "library_crash_guard.hpp"
#include "nvtrace/capture_dir.hpp"
#include "temp_copy.hpp"
#endif

namespace nvtrace {

#ifndef NVTRACE_HAVE_TRACECMD

bool trace_dat_supported() {
    return false;
}

Result<EventStream> read_trace_dat(const std::string& path, std::vector<std::string> /*other_events*/) {
    return fail(Error::environment(
        fmt::format("{}: reading trace.dat needs libtracecmd, and this nvtrace was built without it "
                    "(static build); convert it with `trace-cmd report {} > trace.txt` and read that",
                    path, path)));
}

Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& /*side*/, const TraceDatEach& /*each*/,
                                          std::vector<std::string> other_events) {
    return fail(read_trace_dat(path, std::move(other_events)).error());
}

Result<EventStream> read_trace_dat_bytes(std::string_view /*bytes*/, const std::string& name,
                                         std::vector<std::string> other_events) {
    return read_trace_dat(name, std::move(other_events));
}

Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& /*side*/, TraceDatSink& /*sink*/,
                                          std::vector<std::string> other_events) {
    return fail(read_trace_dat(path, std::move(other_events)).error());
}

#else

bool trace_dat_supported() {
    return true;
}

namespace {

void close_in_library(tracecmd_input* h) {
    import::InLibrary lib;
    tracecmd_close(h);
}

struct IterateCtx {
    RawEventDecoder* decoder;
    tep_handle* tep;
    EventStream* stream;      // comms are filled here
    std::vector<Event>* out;  // the decoded events are appended here
    TraceDatSink* sink;       // streamed: `out` is handed to it after each record, then emptied
    TraceDatStreamed* state;  // streamed: `stopped` ends the reading
    // Pids whose comm was already looked up (found or not): one tep look-up per pid, not per record.
    std::vector<bool> pid_checked;
    std::map<int, bool> pid_checked_big;  // pids past the flat table (pid_max is at most 4M)
};

// Names come from the kallsyms the file carries (tep_find_function). libtraceevent 1.7 parses the module
// part of kallsyms lines but has no public call returning it, so `module` stays null here.
void name_function(tep_handle* tep, std::uint64_t addr, std::string& name) {
    if (!name.empty()) return;
    if (const char* f = tep_find_function(tep, addr))
        name = f;
    else
        name = fmt::format("0x{:x}", addr);
}

// True the first time `pid` is seen by this reader.
bool first_sight(IterateCtx& ctx, int pid) {
    constexpr int kFlat = 1 << 22;
    if (pid < kFlat) {
        auto p = static_cast<std::size_t>(pid);
        if (p >= ctx.pid_checked.size()) ctx.pid_checked.resize(std::max(p + 1, 2 * ctx.pid_checked.size()), false);
        if (ctx.pid_checked[p]) return false;
        ctx.pid_checked[p] = true;
        return true;
    }
    return ctx.pid_checked_big.emplace(pid, true).second;
}

// Streamed: the record's decoded events to the sink, in order. -1 stops libtracecmd's iteration.
int hand_over(IterateCtx& ctx) {
    int ret = 0;
    for (Event& ev : *ctx.out) {
        if (!ctx.sink->event(ev)) {
            *ctx.state = TraceDatStreamed::stopped;
            ret = -1;
            break;
        }
    }
    ctx.out->clear();
    return ret;
}

// The comms of the file's saved cmdlines do not change while reading: each pid is looked up once.
void note_comm(IterateCtx& ctx, int pid) {
    if (pid >= 0 && first_sight(ctx, pid) && !ctx.stream->comms.count(pid) && tep_is_pid_registered(ctx.tep, pid))
        if (const char* comm = tep_data_comm_from_pid(ctx.tep, pid)) ctx.stream->comms[pid] = comm;
}

int on_record(tracecmd_input* /*handle*/, tep_record* rec, int cpu, void* data) {
    import::OutOfLibrary ours;  // nvtrace's code: a crash here is not the library's
    auto* ctx = static_cast<IterateCtx*>(data);
    auto& events = *ctx->out;
    if (rec->missed_events != 0) {
        Event& lost = events.emplace_back();
        lost.ts_ns = rec->ts;
        lost.cpu = cpu;
        lost.body = LostEvents{rec->missed_events > 0
                                   ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(rec->missed_events))
                                   : std::nullopt};
    }
    const RawEventDecoder::Fields* f = ctx->decoder->check(rec);
    using Kind = RawEventDecoder::Kind;
    if (f && ctx->sink && ctx->decoder->plain(*f) && f->kind != Kind::func_entry && f->kind != Kind::func_exit) {
        // Streamed, and decodable from its bytes alone: handed over undecoded (TraceDatSink::record).
        note_comm(*ctx, ctx->decoder->pid(*rec));
        if (hand_over(*ctx) != 0) return -1;
        if (!ctx->sink->record(RawRecord{*ctx->decoder, *f, *rec})) {
            *ctx->state = TraceDatStreamed::stopped;
            return -1;
        }
        return 0;
    }
    if (f) {
        Event& ev = events.emplace_back();
        ctx->decoder->fill(*rec, *f, ev);
        if (auto* e = std::get_if<FuncEntry>(&ev.body)) name_function(ctx->tep, e->func_addr, e->function);
        if (auto* x = std::get_if<FuncExit>(&ev.body)) name_function(ctx->tep, x->func_addr, x->function);
        note_comm(*ctx, ev.pid);
    }
    return ctx->sink ? hand_over(*ctx) : 0;
}

// Streamed: every buffer read at once (tracecmd_iterate_events_multi), each record to its buffer's context.
struct MultiCtx {
    std::vector<std::pair<tracecmd_input*, IterateCtx*> > by_handle;
};
int on_record_multi(tracecmd_input* handle, tep_record* rec, int cpu, void* data) {
    for (auto [h, ctx] : static_cast<MultiCtx*>(data)->by_handle)
        if (h == handle) return on_record(handle, rec, cpu, ctx);
    return -1;  // a handle not given to the iteration: cannot happen
}

// Both readers: every handle of the file (the top buffer, then the instance buffers), comms and diagnostics
// into `stream`. Whole (`sink` null): the handles one after the other, the events appended to stream.events,
// where each handle's start is pushed to `segment_starts`. Streamed: all handles at once, by time, through
// `sink`, one record at a time, until `state` is `stopped`.
// `fd` >= 0: read from it (libtracecmd takes it and closes it), `path` only naming it in messages.
Result<void> read_handles(const std::string& path, const std::vector<std::string>& other_events, EventStream& stream,
                          std::vector<std::size_t>* segment_starts, TraceDatSink* sink, TraceDatStreamed* state,
                          int fd = -1) {
    // Without a list every event of the file is kept: its recording chose them (`trace-cmd record -e`, `nvtrace
    // run --event`), and one dropped here would be missing from the report with nothing said.
    const std::vector<std::string> every{"*:*"};
    const std::vector<std::string>& kept = other_events.empty() ? every : other_events;
    tracecmd_set_loglevel(TEP_LOG_NONE);
    import::LibraryCrashGuard guard(
        fmt::format("nvtrace: {}: libtracecmd crashed reading it (a damaged trace.dat; "
                    "trace-cmd report crashes on such a file too); nothing was written",
                    path));
    std::unique_ptr<tracecmd_input, void (*)(tracecmd_input*)> top(nullptr, close_in_library);
    {
        import::InLibrary lib;
        top.reset(fd >= 0 ? tracecmd_open_fd(fd, 0) : tracecmd_open(path.c_str(), 0));
    }
    if (!top && fd >= 0) ::close(fd);  // a failed tracecmd_open_fd leaves it open
    if (!top)
        return fail(
            Error::usage(fmt::format("{}: libtracecmd cannot open it (expected a trace-cmd trace.dat, "
                                     "file version 6 or 7)",
                                     path)));
    std::uint64_t undecodable = 0;
    // Instance buffers (trace-cmd record -B) live only in their own handles; one that cannot be opened is counted.
    std::vector<std::unique_ptr<tracecmd_input, void (*)(tracecmd_input*)> > instances;
    const int nr_instances = tracecmd_buffer_instances(top.get());
    for (int i = 0; i < nr_instances; ++i) {
        tracecmd_input* ih = nullptr;
        {
            import::InLibrary lib;
            ih = tracecmd_buffer_instance_handle(top.get(), i);
        }
        if (!ih) {
            const char* name = tracecmd_buffer_instance_name(top.get(), i);
            count_diagnostic(stream.diagnostics, Diag::unreadable_instance,
                             fmt::format("{}: buffer instance '{}' could not be opened", path, name ? name : "?"));
            continue;
        }
        instances.emplace_back(ih, close_in_library);
    }
    std::vector<tracecmd_input*> handles{top.get()};
    for (auto& ih : instances)
        handles.push_back(ih.get());
    if (!sink) {
        // Whole: one handle after the other, each a segment of stream.events (merged by time afterwards).
        for (tracecmd_input* h : handles) {
            tep_handle* tep = tracecmd_get_tep(h);
            if (!tep) continue;
            RawEventDecoder decoder(tep, kept);
            IterateCtx ctx{&decoder, tep, &stream, &stream.events, nullptr, state, {}, {}};
            if (segment_starts) segment_starts->push_back(stream.events.size());
            {
                import::InLibrary lib;
                tracecmd_iterate_events(h, nullptr, 0, on_record, &ctx);
            }
            undecodable += decoder.undecodable();
        }
    } else {
        // Streamed: every buffer at once, by time (tracecmd_iterate_events_multi takes the record of least ts
        // among every CPU of every handle, ties to the earlier handle and CPU): the order of the whole reader's
        // merge whenever each buffer is in time order. What is left out of order (a CPU whose stamps step back)
        // is the receiver's to sort (ReportStream's sorter).
        std::vector<Event> scratch;  // one record's events
        std::vector<std::unique_ptr<RawEventDecoder> > decoders;
        std::vector<std::unique_ptr<IterateCtx> > ctxs;
        MultiCtx multi;
        std::vector<tracecmd_input*> readable;
        for (tracecmd_input* h : handles) {
            tep_handle* tep = tracecmd_get_tep(h);
            if (!tep) continue;
            auto& decoder = decoders.emplace_back(std::make_unique<RawEventDecoder>(tep, kept));
            auto& ctx = ctxs.emplace_back(
                std::make_unique<IterateCtx>(IterateCtx{decoder.get(), tep, &stream, &scratch, sink, state, {}, {}}));
            multi.by_handle.emplace_back(h, ctx.get());
            readable.push_back(h);
        }
        if (!readable.empty()) {
            import::InLibrary lib;
            tracecmd_iterate_events_multi(readable.data(), static_cast<int>(readable.size()), on_record_multi, &multi);
        }
        sink->handle_done();  // records handed over undecoded may need the decoders
        for (const auto& d : decoders)
            undecodable += d->undecodable();
    }
    if (undecodable)
        count_diagnostic(stream.diagnostics, Diag::undecodable_record,
                         fmt::format("{}: funcgraph/ioctl records whose format nvtrace does not understand", path),
                         undecodable);
    return {};
}

}  // namespace

namespace {

Result<EventStream> read_whole(const std::string& path, const std::vector<std::string>& other_events, int fd) {
    EventStream stream;
    // Where each handle's events start in stream.events: tracecmd_iterate_events hands them over by time
    // across that handle's CPUs (ties: lower CPU first), so each segment is normally sorted already.
    std::vector<std::size_t> segment_starts;
    TraceDatStreamed state = TraceDatStreamed::done;
    if (auto r = read_handles(path, other_events, stream, &segment_starts, nullptr, &state, fd); !r)
        return fail(r.error());
    // The order is that of a stable sort by ts_ns of the handles' events concatenated (top first, then the
    // instances in file order; within a handle, the order libtracecmd gave). merge_segments gives it
    // without a sort when every handle's events are already in time order (capture_dir.hpp).
    merge_segments(stream.events, std::move(segment_starts));
    return stream;
}

}  // namespace

Result<EventStream> read_trace_dat(const std::string& path, std::vector<std::string> other_events) {
    return read_whole(path, other_events, -1);
}

Result<EventStream> read_trace_dat_bytes(std::string_view bytes, const std::string& name,
                                         std::vector<std::string> other_events) {
    // libtracecmd seeks in the file: the bytes go to an unlinked file in $TMPDIR (temp_copy.hpp).
    std::error_code ec;
    std::string dir = std::filesystem::temp_directory_path(ec).string();
    if (ec) dir = "/tmp";
    auto fd = import::temp_copy(bytes, dir, name);
    if (!fd) return fail(fd.error());
    return read_whole(name, other_events, *fd);
}

Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& side, TraceDatSink& sink,
                                          std::vector<std::string> other_events) {
    TraceDatStreamed state = TraceDatStreamed::done;
    if (auto r = read_handles(path, other_events, side, nullptr, &sink, &state); !r) return fail(r.error());
    return state;
}

Result<TraceDatStreamed> stream_trace_dat(const std::string& path, EventStream& side, const TraceDatEach& each,
                                          std::vector<std::string> other_events) {
    struct EachSink : TraceDatSink {
        const TraceDatEach& each;
        explicit EachSink(const TraceDatEach& e) : each(e) {}
        bool event(Event& ev) override { return each(ev); }
    } sink(each);
    return stream_trace_dat(path, side, sink, std::move(other_events));
}

#endif

bool TraceDatSink::record(const RawRecord& r) {
    Event ev;
    r.decoder.fill(r.rec, r.fields, ev);
    return event(ev);
}

}  // namespace nvtrace
