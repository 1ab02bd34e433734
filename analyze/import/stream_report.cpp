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
#include <optional>

#include <fmt/format.h>

#include "calls_jsonl.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report_stream.hpp"
#include "stream_builder.hpp"
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream* calls_out, const std::string& temp_dir,
                                        ReportStream::Options options,
                                        std::function<void(const IoctlRecord&)> on_ioctl) {
    // Standard input or a pipe is copied into an unlinked file in temp_dir (on disk, not in memory) and read from
    // there: its calls then stream as a file's do (open_input's spool_dir).
    auto in = open_input(path, OpenOptions{forced, temp_dir, false});
    if (!in) return fail(in.error());
    return report_streaming(*in, calls_out, temp_dir, std::move(options), std::move(on_ioctl));
}

Result<StreamedReport> report_streaming(const Input& in, std::ostream* calls_out, const std::string& temp_dir,
                                        ReportStream::Options options,
                                        std::function<void(const IoctlRecord&)> on_ioctl) {
    StreamedReport out;
    // A saved report: the same answer whether given by name or piped in.
    if (in.kind == InputKind::saved_report)
        return fail(Error::usage("--calls-jsonl takes a trace file, not a saved report"));
    const std::string& name = in.name;
    std::optional<CallsJsonlWriter> w;
    if (calls_out) w.emplace(*calls_out);
    if (in.kind != InputKind::text || in.format != TraceFormat::fgraph_text) {
        // Read whole; import_input says what is wrong with the input, if anything.
        auto r = import_input(in);
        if (!r) return fail(r.error());
        out.format = r->format;
        out.report = build_report(r->stream);
        out.kernel_log = std::move(r->kernel_log);
        out.calls = out.report.calls.size();
        if (!w) return out;
        for (const Call& c : out.report.calls)
            w->write(c);
        w->flush();
        out.report.calls.clear();
        out.report.calls.shrink_to_fit();
        return out;
    }

    std::string_view text = in.bytes();
    // Every event goes to a ReportStream as it comes (in file order): calls, events, markers and ioctls are written
    // to its files (the calls to calls_out instead, when given), not held.
    EventStream side;
    side.file_name = name;
    ReportStream::Options opts = options;
    opts.time_order = false;  // file order, as the whole-file report of a text trace
    if (w) opts.calls = [&w](Call&& c) { w->write(c); };
    auto rs = ReportStream::open(temp_dir, std::move(side), std::move(opts));
    if (!rs) return fail(rs.error());
    ReportStream& records = **rs;
    if (on_ioctl) records.on_ioctl(std::move(on_ioctl));
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
        [&](Event&& ev, std::size_t, const FuncNames& names) {
            // The comm known for the pid at this point of the file.
            const auto& comms = b.stream().comms;
            if (auto it = comms.find(ev.pid); it != comms.end())
                if (auto& known = records.side().comms[ev.pid]; known != it->second) known = it->second;
            if (names.viewed)
                records.add(ev, names.function, names.has_module ? &names.module : nullptr);
            else
                records.add(ev);
        },
        consumed);
    auto s = read_fgraph_text_into(text, b);
    if (!s) return fail(s.error());
    records.side().diagnostics = std::move(s->diagnostics);
    records.side().file_name = s->file_name;
    if (auto f = records.finish(); !f) return fail(f.error());
    if (w) w->flush();
    out.calls = records.calls();
    out.records = std::move(*rs);
    out.streamed = true;
    out.format = TraceFormat::fgraph_text;
    return out;
}

}  // namespace nvtrace
