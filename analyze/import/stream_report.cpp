// report_streaming (include/nvtrace/stream_report.hpp).
#include "nvtrace/stream_report.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "../phases.hpp"
#include "calls_jsonl.hpp"
#include "nvtrace/call_stream.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report_stream.hpp"
#include "stream_builder.hpp"
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream& calls_out, const std::string& temp_dir,
                                        ReportStream::Options options,
                                        std::function<void(const IoctlRecord&)> on_ioctl) {
    // Standard input or a pipe is copied into an unlinked file in temp_dir (on disk, not in memory) and read from
    // there: its calls then stream as a file's do (open_input's spool_dir).
    auto in = open_input(path, OpenOptions{forced, temp_dir, false});
    if (!in) return fail(in.error());
    return report_streaming(*in, calls_out, temp_dir, std::move(options), std::move(on_ioctl));
}

Result<StreamedReport> report_streaming(const Input& in, std::ostream& calls_out, const std::string& temp_dir,
                                        ReportStream::Options options,
                                        std::function<void(const IoctlRecord&)> on_ioctl) {
    StreamedReport out;
    // A saved report: the same answer whether given by name or piped in.
    if (in.kind == InputKind::saved_report)
        return fail(Error::usage("--calls-jsonl takes a trace file, not a saved report"));
    const std::string& name = in.name;
    if (in.kind != InputKind::text || in.format != TraceFormat::fgraph_text) {
        // Read whole; import_input says what is wrong with the input, if anything.
        auto r = import_input(in);
        if (!r) return fail(r.error());
        out.format = r->format;
        out.report = build_report(r->stream);
        out.kernel_log = std::move(r->kernel_log);
        CallsJsonlWriter w(calls_out);
        for (const Call& c : out.report.calls)
            w.write(c);
        w.flush();
        out.calls = w.count();
        out.report.calls.clear();
        out.report.calls.shrink_to_fit();
        return out;
    }

    std::string_view text = in.bytes();
    // Everything but the calls goes to a ReportStream as it comes (in file order): events, markers and ioctls are
    // written to its files, not held.
    EventStream side;
    side.file_name = name;
    ReportStream::Options opts = options;
    opts.time_order = false;  // file order, as the whole-file report of a text trace
    auto rs = ReportStream::open(temp_dir, std::move(side), opts);
    if (!rs) return fail(rs.error());
    ReportStream& records = **rs;
    if (on_ioctl) records.on_ioctl(std::move(on_ioctl));
    detail::Phases phases;
    CallsJsonlWriter w(calls_out);
    CallStream calls([&](Call&& c) {
        if (c.entry_ns) c.phase = phases.at(*c.entry_ns);
        w.write(c);
    });
    StreamBuilder b(name, std::string_view());
    // Pages already read leave the mapping (they stay in the page cache): resident memory stays bounded.
    std::size_t released = 0;
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
        [&](Event&& ev, std::size_t index, const FuncNames& names) {
            const auto& comms = b.stream().comms;
            if (std::holds_alternative<FuncEntry>(ev.body) || std::holds_alternative<FuncExit>(ev.body)) {
                if (names.viewed)
                    calls.add(ev, index, comms, names.function, names.has_module ? &names.module : nullptr);
                else
                    calls.add(ev, index, comms);
                return;
            }
            calls.add(static_cast<const Event&>(ev), index, comms);
            if (const auto* mk = std::get_if<Marker>(&ev.body)) phases.marker(ev.ts_ns, mk->text);
            std::optional<std::uint64_t> open_call;
            if (std::holds_alternative<ConsoleLine>(ev.body)) {
                const auto& at = calls.summary().open_call_at;
                if (auto it = at.find(index); it != at.end()) open_call = it->second;
            }
            // The comm known for the pid at this point of the file.
            if (auto it = comms.find(ev.pid); it != comms.end())
                if (auto& known = records.side().comms[ev.pid]; known != it->second) known = it->second;
            records.add(ev, open_call);
        },
        consumed);
    auto s = read_fgraph_text_into(text, b);
    if (!s) return fail(s.error());
    calls.finish();
    w.flush();
    records.side().diagnostics = std::move(s->diagnostics);
    records.side().file_name = s->file_name;

    // The call counters and first places for completeness (the calls themselves are in calls_out).
    CallGraph counters = calls.summary();
    counters.open_call_at.clear();  // used above, as the events came
    if (auto f = records.finish(std::move(counters)); !f) return fail(f.error());
    records.report().graph = calls.graph();
    add_graph_cap_diagnostic(records.report().completeness, calls.graph_stats());
    out.records = std::move(*rs);
    out.calls = w.count();
    out.streamed = true;
    out.format = TraceFormat::fgraph_text;
    return out;
}

}  // namespace nvtrace
