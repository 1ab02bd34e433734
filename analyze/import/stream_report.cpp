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
#include "stream_builder.hpp"
#include "text_util.hpp"

namespace nvtrace {

using namespace import;

namespace {

// What build_report derives from the call graph, added to a report built from the non-call events.
// Mirrors report.cpp (reasons and diagnostics in the same order); tests/analyze/test_stream_report.cpp
// compares both on every test trace.
void add_call_summary(Completeness& cm, const CallGraph& g, std::string_view file_name) {
    cm.orphan_returns = g.orphan_returns;
    cm.unclosed_calls = g.unclosed_calls;
    cm.graph_overruns = g.graph_overruns;
    std::vector<std::string> reasons;
    auto r = cm.reasons.begin();
    for (; r != cm.reasons.end() && (starts_with(*r, "the kernel marked lost") || r->find("(overrun)") != r->npos ||
                                     r->find("dropped by the ring buffer") != r->npos);
         ++r)
        reasons.push_back(*r);
    if (g.orphan_returns) reasons.push_back(fmt::format("{} returns without their entry", g.orphan_returns));
    if (g.unclosed_calls) reasons.push_back(fmt::format("{} calls without their return", g.unclosed_calls));
    if (g.graph_overruns) reasons.push_back(fmt::format("{} calls not traced: return stack full", g.graph_overruns));
    if (r != cm.reasons.end() && *r == "kernel log records were overwritten before they were read")
        reasons.push_back(*r++);
    if (g.depth_gaps)
        reasons.push_back(fmt::format("{} calls whose parent entries are missing (depth gaps)", g.depth_gaps));
    reasons.insert(reasons.end(), r, cm.reasons.end());
    cm.reasons = std::move(reasons);

    std::vector<Diagnostic> diags;
    auto d = cm.diagnostics.begin();
    if (d != cm.diagnostics.end() && d->name == "lost_event_marks") diags.push_back(*d++);
    auto add = [&](const char* name, const char* severity, std::uint64_t count,
                   const std::optional<EventPlace>& first) {
        if (count) diags.push_back({name, severity, count, describe_place(first, file_name)});
    };
    add("orphan_return", "data_loss", g.orphan_returns, g.first_orphan_return);
    add("unclosed_call", "data_loss", g.unclosed_calls, g.first_unclosed_call);
    add("depth_gap", "data_loss", g.depth_gaps, g.first_depth_gap);
    add("starts_mid_tree", "info", g.starts_mid_tree, g.first_starts_mid_tree);
    diags.insert(diags.end(), d, cm.diagnostics.end());
    cm.diagnostics = std::move(diags);
    cm.complete = cm.reasons.empty();
}

struct Mapped {
    const char* data = nullptr;
    std::size_t size = 0;
    ~Mapped() { reset(); }
    void reset() {
        if (data) ::munmap(const_cast<char*>(data), size);
        data = nullptr;
    }
};

}  // namespace

Result<StreamedReport> report_streaming(const std::string& path, std::optional<TraceFormat> forced,
                                        std::ostream& calls_out) {
    StreamedReport out;
    std::optional<TraceFormat> fmt_ = forced;
    Mapped m;
    if (!fmt_ || *fmt_ == TraceFormat::fgraph_text) {
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            struct stat st {};
            if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
                void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
                if (p != MAP_FAILED) {
                    m.data = static_cast<const char*>(p);
                    m.size = static_cast<std::size_t>(st.st_size);
                    ::madvise(p, m.size, MADV_SEQUENTIAL);
                }
            }
            ::close(fd);
        }
        if (m.data && !fmt_) fmt_ = detect_format(std::string_view(m.data, std::min<std::size_t>(m.size, 256 * 1024)));
    }
    if (!m.data || !fmt_ || *fmt_ != TraceFormat::fgraph_text) {
        // Read whole; import_file says what is wrong with the file, if anything.
        auto in = import_file(path, forced);
        if (!in) return fail(in.error());
        out.format = in->format;
        out.report = build_report(in->stream);
        out.kernel_log = std::move(in->kernel_log);
        CallsJsonlWriter w(calls_out);
        for (const Call& c : out.report.calls)
            w.write(c);
        w.flush();
        out.calls = w.count();
        out.report.calls.clear();
        out.report.calls.shrink_to_fit();
        return out;
    }

    std::string_view text(m.data, m.size);
    EventStream rest;                        // everything but funcgraph entries and exits
    std::vector<std::size_t> console_index;  // stream index of each ConsoleLine kept in `rest`
    detail::Phases phases;
    CallsJsonlWriter w(calls_out);
    CallStream calls([&](Call&& c) {
        if (c.entry_ns) c.phase = phases.at(*c.entry_ns);
        w.write(c);
    });
    StreamBuilder b(path, std::string_view());
    // Pages already read leave the mapping (they stay in the page cache): resident memory stays bounded.
    std::size_t released = 0;
    auto consumed = [&](const char* p) {
        auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        std::size_t upto = static_cast<std::size_t>(p - m.data) / page * page;
        if (upto >= released + (std::size_t(4) << 20)) {
            ::madvise(const_cast<char*>(m.data) + released, upto - released, MADV_DONTNEED);
            released = upto;
        }
    };
    b.set_drain(
        [&](Event&& ev, std::size_t index, const FuncNames& names) {
            if (std::holds_alternative<FuncEntry>(ev.body) || std::holds_alternative<FuncExit>(ev.body)) {
                if (names.viewed)
                    calls.add(ev, index, b.stream().comms, names.function, names.has_module ? &names.module : nullptr);
                else
                    calls.add(ev, index, b.stream().comms);
                return;
            }
            calls.add(static_cast<const Event&>(ev), index, b.stream().comms);
            if (const auto* mk = std::get_if<Marker>(&ev.body)) phases.marker(ev.ts_ns, mk->text);
            if (std::holds_alternative<ConsoleLine>(ev.body)) console_index.push_back(index);
            rest.events.push_back(std::move(ev));
        },
        consumed);
    auto s = read_fgraph_text_into(text, b);
    if (!s) return fail(s.error());
    m.reset();  // every event is drained: nothing views the text any more
    calls.finish();
    w.flush();
    rest.comms = std::move(s->comms);
    rest.diagnostics = std::move(s->diagnostics);
    rest.file_name = s->file_name;

    out.report = build_report(rest);
    const CallGraph& g = calls.summary();
    for (std::size_t k = 0; k < console_index.size() && k < out.report.kernel_log.size(); ++k)
        if (auto it = g.open_call_at.find(console_index[k]); it != g.open_call_at.end()) {
            out.report.kernel_log[k].call = it->second;
            out.report.kernel_log[k].attached = "console";
        }
    add_call_summary(out.report.completeness, g, rest.file_name);
    out.report.graph = calls.graph();
    out.calls = w.count();
    out.streamed = true;
    out.format = TraceFormat::fgraph_text;
    return out;
}

}  // namespace nvtrace
