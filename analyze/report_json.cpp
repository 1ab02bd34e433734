#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <type_traits>
#include <vector>

#include "import/json_write.hpp"
#include "json_values.hpp"
#include "nvtrace/report.hpp"
#include "record_fields.hpp"
#include "report_head.hpp"
#include "report_write.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

template <class T>
json opt(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

json completeness_json(const Completeness& c) {
    json diags = json::array();
    for (const auto& d : c.diagnostics)
        diags.push_back(
            {{"name", d.name}, {"severity", d.severity}, {"count", d.count}, {"first_example", d.first_example}});
    json gaps = json::array();
    for (const auto& g : c.gaps)
        gaps.push_back({{"kind", g.kind},
                        {"cpu", g.cpu},
                        {"count", opt(g.count)},
                        {"ts_ns", opt(g.ts_ns)},
                        {"line", opt(g.line)}});
    return {{"complete", c.complete},
            {"entries_in_buffer", opt(c.entries_in_buffer)},
            {"entries_written", opt(c.entries_written)},
            {"elided_spans", c.elided_spans()},
            {"unreadable_lines", c.unreadable_lines()},
            {"gaps", gaps},
            {"lost_events", c.lost_events},
            {"orphan_returns", c.orphan_returns()},
            {"unclosed_calls", c.unclosed_calls()},
            {"overruns", c.overruns},
            {"dropped_events", c.dropped_events},
            {"graph_overruns", c.graph_overruns},
            {"reasons", c.reasons},
            {"diagnostics", diags}};
}

// A field's value by its Empty rule (record_fields.hpp).
template <class T>
json value_json(const T& v, fields::Empty e) {
    if constexpr (requires { v.has_value(); }) {
        return v ? value_json(*v, fields::Empty::as_is) : json(nullptr);
    } else {
        if constexpr (requires { v.empty(); })
            if (v.empty() && e == fields::Empty::null) return nullptr;
        if constexpr (std::is_same_v<T, std::string>)
            if (v.empty() && e == fields::Empty::none) return "none";
        return v;
    }
}

// A record of record_fields.hpp's table as its JSON object.
template <class R>
json record_json(const R& r) {
    json j = json::object();
    fields::for_each_field<R>([&](const auto& f) {
        const auto& v = r.*(f.member);
        if constexpr (requires { v.has_value(); })
            if (!v && f.empty == fields::Empty::omit) return;
        j[std::string(f.key)] = value_json(v, f.empty);
    });
    return j;
}

json kmsg_clock_json(const std::optional<KmsgClockOffset>& c) {
    if (!c) return nullptr;
    return {{"trace_clock", c->trace_clock},
            {"offset_ns", opt(c->offset_ns)},
            {"uncertainty_ns", c->uncertainty_ns},
            {"basis", c->basis}};
}

json source_link_json(const SourceLink& l) {
    json cands = json::array();
    for (const auto& c : l.candidates)
        cands.push_back({{"file", c.file}, {"line", c.line}});
    return {{"function", l.function}, {"lookup", l.lookup}, {"candidates", cands}};
}

json source_links_json(const std::optional<SourceLinks>& s) {
    if (!s) return nullptr;
    json found = json::array(), ambiguous = json::array();
    for (const auto& l : s->found) {
        json j = source_link_json(l);
        j["file"] = l.candidates.empty() ? json(nullptr) : json(l.candidates[0].file);
        j["line"] = l.candidates.empty() ? json(nullptr) : json(l.candidates[0].line);
        j.erase("candidates");
        found.push_back(std::move(j));
    }
    for (const auto& l : s->ambiguous)
        ambiguous.push_back(source_link_json(l));
    return {{"root", s->root},
            {"files_scanned", s->files_scanned},
            {"found", found},
            {"ambiguous", ambiguous},
            {"missing", s->missing}};
}

json check_json(const Check& k) {
    return {{"id", k.id}, {"result", k.result}, {"evidence", k.evidence}, {"why", k.why}};
}

template <class T, class F>
json array_of(const std::vector<T>& v, F f) {
    json a = json::array();
    for (const auto& x : v)
        a.push_back(f(x));
    return a;
}

}  // namespace

json to_json(const Report& r) {
    json j;
    j["schema"] = kReportSchema;
    j["source"] = to_json(r.source);
    j["environment"] = to_json(r.environment);
    j["completeness"] = completeness_json(r.completeness);
    j["calls"] = array_of(r.calls, record_json<Call>);
    j["graph"] = array_of(r.graph, record_json<GraphNode>);
    j["kernel_log"] = array_of(r.kernel_log, record_json<KernelLogMessage>);
    j["ioctls"] = array_of(r.ioctls, record_json<IoctlRecord>);
    j["ioctl_stats"] = array_of(r.ioctl_stats, record_json<IoctlStat>);
    j["markers"] = array_of(r.markers, record_json<MarkerEntry>);
    j["events"] = array_of(r.events, record_json<EventRecord>);
    j["api_calls"] = array_of(r.api_calls, record_json<ApiCall>);
    j["kmsg_clock"] = kmsg_clock_json(r.kmsg_clock);
    j["source_links"] = source_links_json(r.source_links);
    j["checks"] = array_of(r.checks, check_json);
    return j;
}

namespace {

// The start of every report.json up to its first call: what a ReportStream writes before the calls it streams.
constexpr std::string_view kStreamedHead = "{\n \"calls\": [";

// write_json's layout, to any `Out` with write(const char*, std::streamsize) and copy(fd, bytes) (an array
// written elsewhere: StreamedArrays). Keys: calls and ioctls first (the arrays a report streams: a streamed
// report writes its calls straight into report.json), then the others in nlohmann's (sorted) order. The
// per-record arrays are written directly (import/json_write.cpp: the same bytes as their DOM's dump), in 1 MiB
// writes. With `streamed`, the output already holds kStreamedHead and `streamed->calls`' elements, and the
// ioctls, events and markers are copied from their files.
template <class Out>
void write_report(const Report& r, Out& out, const detail::StreamedArrays* streamed) {
    auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
    std::string buf;
    buf.reserve(1 << 20);
    // An array whose elements are in a file (each with its separator, as write_array writes them).
    auto copied = [&](std::string_view key, const detail::StreamedArray& a) {
        buf += " \"";
        buf += key;
        buf += "\": [";
        import::flush_buffer(out, buf, true);
        out.copy(a.fd, a.bytes);
        buf += a.count == 0 ? "]" : "\n ]";
        buf += ",\n";
    };
    auto check_json_text = [&](std::string& b, const Check& k) { b += dump(check_json(k)); };
    if (streamed) {
        buf += streamed->calls.count == 0 ? "]" : "\n ]";
        buf += ",\n";
        copied("ioctls", streamed->ioctls);
    } else {
        buf += "{\n";
        import::write_array(out, buf, "calls", r.calls, import::append_call_json, false);
        import::write_array(out, buf, "ioctls", r.ioctls, import::append_ioctl_json, false);
    }
    import::write_array(out, buf, "api_calls", r.api_calls, import::append_api_call_json, false);
    import::write_array(out, buf, "checks", r.checks, check_json_text, false);
    buf += " \"completeness\": " + dump(completeness_json(r.completeness)) + ",\n";
    buf += " \"environment\": " + dump(to_json(r.environment)) + ",\n";
    if (streamed)
        copied("events", streamed->events);
    else
        import::write_array(out, buf, "events", r.events, import::append_event_json, false);
    import::write_array(out, buf, "graph", r.graph, import::append_graph_json, false);
    import::write_array(out, buf, "ioctl_stats", r.ioctl_stats, import::append_ioctl_stat_json, false);
    import::write_array(out, buf, "kernel_log", r.kernel_log, import::append_log_json, false);
    buf += " \"kmsg_clock\": " + dump(kmsg_clock_json(r.kmsg_clock)) + ",\n";
    if (streamed)
        copied("markers", streamed->markers);
    else
        import::write_array(out, buf, "markers", r.markers, import::append_marker_json, false);
    buf += " \"schema\": " + dump(json(kReportSchema)) + ",\n";
    buf += " \"source\": " + dump(to_json(r.source)) + ",\n";
    buf += " \"source_links\": " + dump(source_links_json(r.source_links)) + "\n}\n";
    import::flush_buffer(out, buf, true);
}

struct OstreamOut {
    std::ostream& os;
    void write(const char* p, std::streamsize n) { os.write(p, n); }
    void copy(int, std::uint64_t) {}  // write_json streams nothing
};

// A file descriptor; the first error is kept and later writes are skipped.
struct FdOut {
    int fd;
    std::string error;

    void write(const char* p, std::streamsize n) {
        if (error.empty()) detail::write_all(fd, p, static_cast<std::size_t>(n), error);
    }
    // `bytes` from the start of `in`: copy_file_range (in the kernel, no copy through user space), else sendfile
    // (a pipe), else read/write.
    void copy(int in, std::uint64_t bytes) {
        if (!error.empty()) return;
        off_t off = 0;
        bool kernel_copy = true, send = true;
        std::vector<char> chunk;
        while (static_cast<std::uint64_t>(off) < bytes && error.empty()) {
            const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - off, 1u << 30));
            ssize_t n = -1;
            if (kernel_copy) {
                n = ::copy_file_range(in, &off, fd, nullptr, want, 0);
                if (n < 0 && errno != EINTR &&
                    (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF)) {
                    kernel_copy = false;
                    continue;
                }
            } else if (send) {
                n = ::sendfile(fd, in, &off, want);
                if (n < 0 && errno != EINTR && (errno == EINVAL || errno == ENOSYS)) {
                    send = false;
                    continue;
                }
            } else {
                chunk.resize(1u << 20);
                n = ::pread(in, chunk.data(), std::min(want, chunk.size()), off);
                if (n > 0) {
                    write(chunk.data(), n);
                    off += n;
                }
            }
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) error = n < 0 ? std::strerror(errno) : "the streamed section file ended early";
        }
    }
};

}  // namespace

void write_json(const Report& r, std::ostream& out) {
    OstreamOut o{out};
    write_report(r, o, nullptr);
}

namespace detail {

std::size_t write_all(int fd, const char* p, std::size_t n, std::string& error) {
    std::size_t done = 0;
    while (done < n) {
        ssize_t w = ::write(fd, p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            error = std::strerror(w < 0 ? errno : EIO);
            break;
        }
        done += static_cast<std::size_t>(w);
    }
    return done;
}

std::string_view streamed_report_head() {
    return kStreamedHead;
}

Result<void> write_report_fd(const Report& r, int fd) {
    FdOut o{fd, {}};
    write_report(r, o, nullptr);
    if (!o.error.empty()) return fail(Error::environment(o.error));
    return {};
}

Result<void> write_report_tail(const Report& r, const StreamedArrays& streamed, int fd) {
    FdOut o{fd, {}};
    write_report(r, o, &streamed);
    if (!o.error.empty()) return fail(Error::environment(o.error));
    return {};
}

Result<void> copy_fd(int from, std::uint64_t bytes, int to) {
    FdOut o{to, {}};
    o.copy(from, bytes);
    if (!o.error.empty()) return fail(Error::environment(o.error));
    return {};
}

}  // namespace detail

}  // namespace nvtrace
