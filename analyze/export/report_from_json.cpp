#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "nvtrace/import.hpp"
#include "nvtrace/report_io.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

// A field of the wrong type: thrown inside this file only, turned into an Error at the section boundary.
struct FieldError {
    std::string where;
};

const json* field(const json& o, const char* key) {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &*it;
}

template <class T>
T need(const json& o, const char* key, const std::string& where) {
    const json* v = field(o, key);
    if (!v) throw FieldError{fmt::format("{}.{}: missing", where, key)};
    if constexpr (std::is_same_v<T, bool>) {
        if (!v->is_boolean()) throw FieldError{fmt::format("{}.{}: expected a boolean", where, key)};
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v->is_string()) throw FieldError{fmt::format("{}.{}: expected a string", where, key)};
    } else if constexpr (std::is_unsigned_v<T>) {
        if (!v->is_number_unsigned()) throw FieldError{fmt::format("{}.{}: expected an unsigned integer", where, key)};
    } else {
        if (!v->is_number_integer()) throw FieldError{fmt::format("{}.{}: expected an integer", where, key)};
    }
    return v->get<T>();
}

// Missing or null -> nullopt.
template <class T>
std::optional<T> maybe(const json& o, const char* key, const std::string& where) {
    const json* v = field(o, key);
    if (!v || v->is_null()) return std::nullopt;
    return need<T>(o, key, where);
}

template <class T>
T value_or(const json& o, const char* key, const std::string& where, T fallback) {
    return maybe<T>(o, key, where).value_or(std::move(fallback));
}

Call call_from(const json& o, const std::string& w) {
    Call c;
    c.id = need<std::uint64_t>(o, "id", w);
    c.parent = maybe<std::uint64_t>(o, "parent", w);
    c.cpu = value_or<int>(o, "cpu", w, -1);
    c.pid = value_or<int>(o, "pid", w, -1);
    c.comm = value_or<std::string>(o, "comm", w, "");
    c.depth = value_or<int>(o, "depth", w, 0);
    c.function = need<std::string>(o, "function", w);
    c.module = maybe<std::string>(o, "module", w);
    c.entry_ns = maybe<std::uint64_t>(o, "entry_ns", w);
    c.duration_ns = maybe<std::uint64_t>(o, "duration_ns", w);
    c.retval = maybe<std::int64_t>(o, "retval", w);
    c.irq = value_or<bool>(o, "irq", w, false);
    c.entry_seen = value_or<bool>(o, "entry_seen", w, true);
    c.exit_seen = value_or<bool>(o, "exit_seen", w, true);
    c.phase = maybe<std::string>(o, "phase", w);
    return c;
}

GraphNode graph_from(const json& o, const std::string& w) {
    GraphNode n;
    n.path = need<std::string>(o, "path", w);
    n.count = need<std::uint64_t>(o, "count", w);
    n.total_ns = value_or<std::uint64_t>(o, "total_ns", w, 0);
    n.self_ns = value_or<std::uint64_t>(o, "self_ns", w, 0);
    n.min_ns = value_or<std::uint64_t>(o, "min_ns", w, 0);
    n.max_ns = value_or<std::uint64_t>(o, "max_ns", w, 0);
    return n;
}

KernelLogMessage log_from(const json& o, const std::string& w) {
    KernelLogMessage m;
    m.ts_ns = maybe<std::uint64_t>(o, "ts", w);
    m.level = value_or<int>(o, "level", w, 6);
    m.source = value_or<std::string>(o, "source", w, "");
    m.kind = value_or<std::string>(o, "kind", w, "other");
    if (const json* f = field(o, "fields"); f && f->is_object())
        for (const auto& [k, v] : f->items())
            m.fields[k] = v.is_string() ? v.get<std::string>() : v.dump();
    m.text = value_or<std::string>(o, "text", w, "");
    m.seq = maybe<std::uint64_t>(o, "seq", w);
    m.call = maybe<std::uint64_t>(o, "call", w);
    m.attached = value_or<std::string>(o, "attached", w, "");
    m.trace_ts_ns = maybe<std::uint64_t>(o, "trace_ts", w);
    return m;
}

IoctlRecord ioctl_from(const json& o, const std::string& w) {
    IoctlRecord i;
    i.pid = value_or<int>(o, "pid", w, -1);
    i.comm = value_or<std::string>(o, "comm", w, "");
    i.fd = value_or<int>(o, "fd", w, -1);
    i.fd_path = maybe<std::string>(o, "fd_path", w);
    i.cmd = need<std::uint64_t>(o, "cmd", w);
    i.name = maybe<std::string>(o, "name", w);
    i.hclass = maybe<std::uint32_t>(o, "hclass", w);
    i.status = maybe<std::string>(o, "status", w);
    i.ctrl = maybe<std::uint32_t>(o, "ctrl", w);
    i.ctrl_class = maybe<std::string>(o, "ctrl_class", w);
    i.ret = maybe<std::int64_t>(o, "ret", w);
    i.enter_ns = need<std::uint64_t>(o, "enter_ns", w);
    i.exit_ns = maybe<std::uint64_t>(o, "exit_ns", w);
    i.call = maybe<std::uint64_t>(o, "call", w);
    if (const json* cs = field(o, "calls"); cs && cs->is_array())
        for (std::size_t k = 0; k < cs->size(); ++k) {
            if (!(*cs)[k].is_number_unsigned())
                throw FieldError{fmt::format("{}.calls[{}]: expected an unsigned integer", w, k)};
            i.calls.push_back((*cs)[k].get<std::uint64_t>());
        }
    i.phase = maybe<std::string>(o, "phase", w);
    return i;
}

MarkerEntry marker_from(const json& o, const std::string& w) {
    return {maybe<std::uint64_t>(o, "ts", w), value_or<int>(o, "pid", w, -1), need<std::string>(o, "text", w)};
}

std::vector<std::string> strings_of(const json& o, const char* key, const std::string& w) {
    std::vector<std::string> out;
    const json* a = field(o, key);
    if (!a || a->is_null()) return out;
    if (!a->is_array()) throw FieldError{fmt::format("{}.{}: expected an array or null", w, key)};
    for (std::size_t k = 0; k < a->size(); ++k) {
        if (!(*a)[k].is_string()) throw FieldError{fmt::format("{}.{}[{}]: expected a string", w, key, k)};
        out.push_back((*a)[k].get<std::string>());
    }
    return out;
}

EventRecord event_from(const json& o, const std::string& w) {
    EventRecord e;
    e.name = need<std::string>(o, "name", w);
    e.ts_ns = maybe<std::uint64_t>(o, "ts", w);
    e.cpu = value_or<int>(o, "cpu", w, -1);
    e.pid = value_or<int>(o, "pid", w, -1);
    e.comm = value_or<std::string>(o, "comm", w, "");
    if (const json* f = field(o, "fields"); f && !f->is_null()) {
        if (!f->is_object()) throw FieldError{w + ".fields: expected an object or null"};
        std::map<std::string, std::string> m;
        for (const auto& [k, v] : f->items()) {
            if (!v.is_string()) throw FieldError{fmt::format("{}.fields.{}: expected a string", w, k)};
            m[k] = v.get<std::string>();
        }
        e.fields = std::move(m);
    }
    e.text = value_or<std::string>(o, "text", w, "");
    e.stack = strings_of(o, "stack", w);
    e.user_stack = strings_of(o, "user_stack", w);
    e.line = maybe<std::uint32_t>(o, "line", w);
    return e;
}

Check check_from(const json& o, const std::string& w) {
    return {need<std::string>(o, "id", w), need<std::string>(o, "result", w),
            value_or<std::string>(o, "evidence", w, ""), value_or<std::string>(o, "why", w, "")};
}

// The array sections: key -> how one element lands in the Report.
using AddElement = void (*)(Report&, const json&, const std::string&);
struct Section {
    const char* key;
    AddElement add;
};
constexpr Section kSections[] = {
    {"calls", [](Report& r, const json& o, const std::string& w) { r.calls.push_back(call_from(o, w)); }},
    {"graph", [](Report& r, const json& o, const std::string& w) { r.graph.push_back(graph_from(o, w)); }},
    {"kernel_log", [](Report& r, const json& o, const std::string& w) { r.kernel_log.push_back(log_from(o, w)); }},
    {"ioctls", [](Report& r, const json& o, const std::string& w) { r.ioctls.push_back(ioctl_from(o, w)); }},
    {"markers", [](Report& r, const json& o, const std::string& w) { r.markers.push_back(marker_from(o, w)); }},
    {"events", [](Report& r, const json& o, const std::string& w) { r.events.push_back(event_from(o, w)); }},
    {"checks", [](Report& r, const json& o, const std::string& w) { r.checks.push_back(check_from(o, w)); }},
};

const Section* section(std::string_view key) {
    for (const auto& s : kSections)
        if (key == s.key) return &s;
    return nullptr;
}

void add_element(Report& r, const Section& s, const json& o, std::size_t index) {
    std::string where = fmt::format("{}[{}]", s.key, index);
    if (!o.is_object()) throw FieldError{where + ": expected an object"};
    s.add(r, o, where);
}

// Everything but the array sections: schema, source, environment, completeness.
void fill_head(Report& r, const json& j) {
    if (!j.is_object()) throw FieldError{"(top): expected a JSON object"};
    const json* schema = field(j, "schema");
    if (!schema || !schema->is_string() || schema->get<std::string>() != kReportSchema)
        throw FieldError{fmt::format("schema: expected \"{}\", found {}", kReportSchema,
                                     schema ? schema->dump() : std::string("nothing"))};
    if (const json* s = field(j, "source"); s && s->is_object()) r.source = *s;
    if (const json* e = field(j, "environment"); e && e->is_object()) r.environment = *e;
    if (const json* k = field(j, "kmsg_clock"); k && k->is_object()) {
        const std::string w = "kmsg_clock";
        r.kmsg_clock = KmsgClockOffset{
            value_or<std::string>(*k, "trace_clock", w, ""), maybe<std::int64_t>(*k, "offset_ns", w),
            value_or<std::uint64_t>(*k, "uncertainty_ns", w, 0), value_or<std::string>(*k, "basis", w, "unknown")};
    }
    if (const json* sl = field(j, "source_links"); sl && sl->is_object()) {
        const std::string w = "source_links";
        SourceLinks links;
        links.root = value_or<std::string>(*sl, "root", w, "");
        links.files_scanned = value_or<std::uint64_t>(*sl, "files_scanned", w, 0);
        if (const json* f = field(*sl, "found"); f && f->is_array())
            for (const auto& x : *f)
                links.found.push_back(
                    {need<std::string>(x, "function", w + ".found"),
                     value_or<std::string>(x, "lookup", w + ".found", ""),
                     {{need<std::string>(x, "file", w + ".found"), need<std::uint32_t>(x, "line", w + ".found")}}});
        if (const json* a = field(*sl, "ambiguous"); a && a->is_array())
            for (const auto& x : *a) {
                SourceLink l{need<std::string>(x, "function", w + ".ambiguous"),
                             value_or<std::string>(x, "lookup", w + ".ambiguous", ""),
                             {}};
                if (const json* cs = field(x, "candidates"); cs && cs->is_array())
                    for (const auto& c : *cs)
                        l.candidates.push_back({need<std::string>(c, "file", w + ".ambiguous"),
                                                need<std::uint32_t>(c, "line", w + ".ambiguous")});
                links.ambiguous.push_back(std::move(l));
            }
        if (const json* m = field(*sl, "missing"); m && m->is_array())
            for (const auto& x : *m)
                if (x.is_string()) links.missing.push_back(x.get<std::string>());
        r.source_links = std::move(links);
    }
    const json* c = field(j, "completeness");
    if (!c || !c->is_object()) throw FieldError{"completeness: missing"};
    Completeness& cm = r.completeness;
    const std::string w = "completeness";
    cm.complete = need<bool>(*c, "complete", w);
    cm.lost_events = value_or<std::uint64_t>(*c, "lost_events", w, 0);
    cm.orphan_returns = value_or<std::uint64_t>(*c, "orphan_returns", w, 0);
    cm.unclosed_calls = value_or<std::uint64_t>(*c, "unclosed_calls", w, 0);
    cm.overruns = value_or<std::uint64_t>(*c, "overruns", w, 0);
    cm.dropped_events = value_or<std::uint64_t>(*c, "dropped_events", w, 0);
    cm.graph_overruns = value_or<std::uint64_t>(*c, "graph_overruns", w, 0);
    if (const json* rs = field(*c, "reasons"); rs && rs->is_array())
        for (const auto& x : *rs)
            if (x.is_string()) cm.reasons.push_back(x.get<std::string>());
    if (const json* ds = field(*c, "diagnostics"); ds && ds->is_array())
        for (std::size_t k = 0; k < ds->size(); ++k) {
            std::string dw = fmt::format("completeness.diagnostics[{}]", k);
            const json& d = (*ds)[k];
            cm.diagnostics.push_back(
                {need<std::string>(d, "name", dw), value_or<std::string>(d, "severity", dw, "info"),
                 value_or<std::uint64_t>(d, "count", dw, 0), value_or<std::string>(d, "first_example", dw, "")});
        }
}

}  // namespace

Result<Report> report_from_json(const json& j) {
    Report r;
    try {
        fill_head(r, j);
        for (const auto& s : kSections) {
            const json* a = field(j, s.key);
            if (!a) continue;
            if (!a->is_array()) throw FieldError{fmt::format("{}: expected an array", s.key)};
            for (std::size_t k = 0; k < a->size(); ++k)
                add_element(r, s, (*a)[k], k);
        }
    } catch (const FieldError& e) {
        return fail(Error::usage(e.where));
    }
    return r;
}

Result<Report> read_report_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    Report r;
    std::optional<std::string> error;
    const Section* current = nullptr;  // the top-level array being read
    std::size_t index = 0;
    // Depth 1 events are the top-level keys and values; a depth 2 object_end inside an array section is one
    // finished element: convert it and tell the parser to drop it.
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
        if (depth == 1 && ev == json::parse_event_t::key) {
            current = section(parsed.get_ref<const std::string&>());
            index = 0;
        } else if (depth == 1 && ev == json::parse_event_t::array_end) {
            current = nullptr;
        } else if (depth == 2 && current && ev == json::parse_event_t::object_end) {
            if (!error) try {
                    add_element(r, *current, parsed, index);
                } catch (const FieldError& e) {
                    error = e.where;
                }
            ++index;
            return false;
        }
        return true;
    };
    json head;
    try {
        head = json::parse(in, cb);
    } catch (const json::parse_error& e) {
        return fail(Error::usage(fmt::format("{}: not valid JSON: {}", path, e.what())));
    }
    if (error) return fail(Error::usage(fmt::format("{}: {}", path, *error)));
    try {
        fill_head(r, head);
        for (const auto& s : kSections) {
            const json* a = field(head, s.key);
            if (!a) continue;
            if (!a->is_array()) throw FieldError{fmt::format("{}: expected an array", s.key)};
            // Elements that are not objects were kept by the callback: they are errors.
            if (!a->empty()) throw FieldError{fmt::format("{}: expected an array of objects", s.key)};
        }
    } catch (const FieldError& e) {
        return fail(Error::usage(fmt::format("{}: {}", path, e.where)));
    }
    return r;
}

Result<Report> load_report_input(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        fs::path rep = fs::path(path) / "report.json";
        if (!fs::exists(rep, ec))
            return fail(Error::usage(fmt::format("{}: not a capture directory (no report.json in it)", path)));
        return read_report_file(rep.string());
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    char ch = 0;
    while (in.get(ch) && (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')) {
    }
    in.close();
    if (ch == '{') return read_report_file(path);
    auto imported = import_file(path);
    if (!imported) return fail(imported.error());
    Report r = build_report(imported->stream);
    for (auto& m : imported->kernel_log)
        r.kernel_log.push_back(std::move(m));
    r.source = {{"kind", "file"}, {"path", path}, {"format", std::string(format_name(imported->format))}};
    return r;
}

}  // namespace nvtrace
