// report_input (include/nvtrace/stream_report.hpp): the one route from an input to its report.
#include "nvtrace/stream_report.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

#include "calls_jsonl.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/report_fold.hpp"
#include "stream_builder.hpp"
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

namespace {

using Stream = std::unique_ptr<ReportStream>;

Result<Stream> open_stream(const ReportRequest& req, EventStream side, bool time_order,
                           std::optional<CallsJsonlWriter>& w) {
    ReportStream::Options opts = req.out;
    opts.time_order = time_order;
    if (req.calls_jsonl) {
        w.emplace(*req.calls_jsonl);
        opts.calls = [&w](Call&& c) { w->write(c); };
    }
    side.events.clear();
    auto rs = ReportStream::open(req.temp_dir, std::move(side), std::move(opts));
    if (!rs) return fail(rs.error());
    if (req.on_ioctl) (*rs)->on_ioctl(req.on_ioctl);
    if (req.on_call) (*rs)->on_call(req.on_call);
    return std::move(*rs);
}

// The request's diagnostics after the reader's, then the last events out of the sorter.
Result<void> finish(ReportStream& rs, const ReportRequest& req, std::optional<CallsJsonlWriter>& w) {
    for (const auto& d : req.diagnostics)
        rs.side().diagnostics.push_back(d);
    if (auto f = rs.finish(); !f) return f;
    if (w) w->flush();
    return {};
}

// A capture directory (nvtrace run's): its pages decoded here, folded on the fold thread.
Result<InputReport> capture_dir(const Input& in, ReportRequest& req) {
    auto reader = CaptureDirReader::open(in.path);
    if (!reader) return fail(reader.error());
    if (req.hold_if) req.out.hold = req.hold_if(&reader->meta());
    std::optional<CallsJsonlWriter> w;
    auto rs = open_stream(req, reader->side(), true, w);
    if (!rs) return fail(rs.error());
    Result<bool> st = false;
    {
        ReportFold fold(**rs);  // the comms are the side's, given to the stream when it was opened
        st = reader->stream([&fold](Event& ev) { return fold.add(std::move(ev)), true; });
    }
    if (!st) return fail(Error::usage(fmt::format("{}: {}", in.path, st.error().message)));
    (*rs)->side().diagnostics = reader->side().diagnostics;  // complete once the pages are decoded
    if (auto f = finish(**rs, req, w); !f) return fail(f.error());
    InputReport out;
    out.meta = reader->meta();
    Report& r = (*rs)->report();
    r.source = out.meta->report_source;
    r.environment = out.meta->environment;
    out.stream = std::move(*rs);
    return out;
}

// A trace.dat by name: decoded by libtracecmd here, records left undecoded folded on the fold thread.
Result<Stream> trace_dat(const Input& in, const ReportRequest& req, std::optional<CallsJsonlWriter>& w) {
    auto rs = open_stream(req, EventStream{}, true, w);
    if (!rs) return fail(rs.error());
    // The comms stream_trace_dat finds are this thread's until handed over with the first event of their pid.
    EventStream side;
    Result<TraceDatStreamed> st = TraceDatStreamed::done;
    {
        ReportFold fold(**rs, [&side](int pid) -> std::optional<std::string> {
            auto it = side.comms.find(pid);
            return it == side.comms.end() ? std::nullopt : std::optional<std::string>(it->second);
        });
        struct Sink : TraceDatSink {
            ReportFold& fold;
            explicit Sink(ReportFold& f) : fold(f) {}
            bool event(Event& ev) override { return fold.add(std::move(ev)), true; }
            bool record(const RawRecord& rec) override { return fold.add(rec), true; }  // decoded on the fold thread
            void handle_done() override { fold.sync(); }
        } sink(fold);
        st = stream_trace_dat(in.path, side, sink);
    }
    if (!st) return fail(st.error());
    for (auto& d : side.diagnostics)
        (*rs)->side().diagnostics.push_back(std::move(d));
    if (auto f = finish(**rs, req, w); !f) return fail(f.error());
    return std::move(*rs);
}

// function_graph text, in one pass and in file order: every event handed over as it is read.
Result<Stream> fgraph_text(const Input& in, const ReportRequest& req, std::optional<CallsJsonlWriter>& w) {
    const std::string& name = in.name;
    std::string_view text = in.bytes();
    EventStream side;
    side.file_name = name;
    auto rs = open_stream(req, std::move(side), false, w);
    if (!rs) return fail(rs.error());
    ReportStream& records = **rs;
    StreamBuilder b(name, std::string_view());
    // Pages already read leave the mapping (they stay in the page cache): resident memory stays bounded.
    std::size_t released = 0;
    std::uint64_t good_lines = 0;
    std::uint32_t last_line = 0;
    int synced_pid = -1;  // the pid whose comm the drain copied last, when the reader had written synced_comms
    std::uint64_t synced_comms = std::uint64_t(-1);
    auto consumed = [&](const char* p) {
        if (!in.mapped()) return;  // bytes read into memory are the Input's, not a mapping to drop
        auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        std::size_t upto = static_cast<std::size_t>(p - text.data()) / page * page;
        if (upto >= released + (std::size_t(4) << 20)) {
            ::madvise(const_cast<char*>(text.data()) + released, upto - released, MADV_DONTNEED);
            released = upto;
        }
    };
    b.set_drain(
        [&](Event&& ev, std::size_t, const FuncNames& names) {
            if (ev.line != last_line || ev.line == 0) ++good_lines;  // unusable_text's count
            last_line = ev.line;
            // The comm known for the pid at this point of the file; looked up only when the pid or the
            // reader's comms changed since the last event (events of one task come in runs).
            if (ev.pid != synced_pid || b.comms_written() != synced_comms) {
                const auto& comms = b.stream().comms;
                if (auto it = comms.find(ev.pid); it != comms.end())
                    if (auto& known = records.side().comms[ev.pid]; known != it->second) known = it->second;
                synced_pid = ev.pid;
                synced_comms = b.comms_written();
            }
            if (names.viewed)
                records.add(ev, names.function, names.has_module ? &names.module : nullptr);
            else
                records.add(ev);
        },
        consumed);
    auto s = read_fgraph_text_into(text, b);
    if (!s) return fail(s.error());
    if (auto bad = unusable_text(good_lines, s->diagnostics, name, TraceFormat::fgraph_text)) return fail(*bad);
    // Everything the reader found beside the events (the comms went over with the events above).
    EventStream& found = records.side();
    found.diagnostics = std::move(s->diagnostics);
    found.file_name = s->file_name;
    found.entries_in_buffer = s->entries_in_buffer;  // the `trace` file header: B - A overwritten
    found.entries_written = s->entries_written;
    if (auto f = finish(records, req, w); !f) return fail(f.error());
    return std::move(*rs);
}

// Any other format, and a trace.dat read once: read whole, its events handed over in order.
Result<Stream> whole(const ImportResult& imported, const ReportRequest& req, std::optional<CallsJsonlWriter>& w) {
    auto rs = open_stream(req, imported.stream, false, w);
    if (!rs) return fail(rs.error());
    for (const Event& ev : imported.stream.events)
        (*rs)->add(ev);
    if (auto f = finish(**rs, req, w); !f) return fail(f.error());
    return std::move(*rs);
}

}  // namespace

Result<InputReport> report_input(const Input& in, ReportRequest req) {
    if (in.kind == InputKind::capture_dir) return capture_dir(in, req);
    if (req.hold_if) req.out.hold = req.hold_if(nullptr);
    std::optional<CallsJsonlWriter> w;
    InputReport out;
    Result<Stream> rs = fail(Error::internal("report_input: no reader"));
    if (in.kind == InputKind::trace_dat && in.reopenable()) {
        out.format = TraceFormat::trace_dat;
        rs = trace_dat(in, req, w);
    } else if (in.kind == InputKind::text && in.format == TraceFormat::fgraph_text) {
        out.format = TraceFormat::fgraph_text;
        rs = fgraph_text(in, req, w);
    } else {
        // import_input says what is wrong with the input (a saved report, no format), if anything.
        auto imported = import_input(in);
        if (!imported) return fail(imported.error());
        out.format = imported->format;
        rs = whole(*imported, req, w);
        if (rs)
            for (auto& m : imported->kernel_log)
                (*rs)->report().kernel_log.push_back(std::move(m));
    }
    if (!rs) return fail(rs.error());
    out.stream = std::move(*rs);
    ReportSource& source = out.stream->report().source;
    source = {};
    source.kind = "file", source.path = in.path, source.format = std::string(format_name(out.format));
    return out;
}

Result<InputReport> report_input(const std::string& path, std::optional<TraceFormat> forced, ReportRequest request) {
    auto in = open_input(path, OpenOptions{forced, request.temp_dir, false});
    if (!in) return fail(in.error());
    return report_input(*in, std::move(request));
}

}  // namespace nvtrace
