#include <ostream>

#include "import/json_write.hpp"
#include "nvtrace/report.hpp"

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
    return {{"complete", c.complete},
            {"lost_events", c.lost_events},
            {"orphan_returns", c.orphan_returns},
            {"unclosed_calls", c.unclosed_calls},
            {"overruns", c.overruns},
            {"dropped_events", c.dropped_events},
            {"graph_overruns", c.graph_overruns},
            {"reasons", c.reasons},
            {"diagnostics", diags}};
}

json call_json(const Call& k) {
    return {{"id", k.id},
            {"parent", opt(k.parent)},
            {"cpu", k.cpu},
            {"pid", k.pid},
            {"comm", k.comm},
            {"depth", k.depth},
            {"function", k.function},
            {"module", opt(k.module)},
            {"entry_ns", opt(k.entry_ns)},
            {"duration_ns", opt(k.duration_ns)},
            {"retval", opt(k.retval)},
            {"irq", k.irq},
            {"entry_seen", k.entry_seen},
            {"exit_seen", k.exit_seen},
            {"phase", opt(k.phase)}};
}

json graph_json(const GraphNode& n) {
    return {{"path", n.path},       {"count", n.count},   {"total_ns", n.total_ns},
            {"self_ns", n.self_ns}, {"min_ns", n.min_ns}, {"max_ns", n.max_ns}};
}

json log_json(const KernelLogMessage& m) {
    return {{"ts", opt(m.ts_ns)},
            {"level", m.level},
            {"source", m.source},
            {"kind", m.kind},
            {"fields", m.fields},
            {"text", m.text},
            {"seq", opt(m.seq)},
            {"call", opt(m.call)},
            {"attached", m.attached.empty() ? std::string("none") : m.attached},
            {"trace_ts", opt(m.trace_ts_ns)}};
}

json ioctl_json(const IoctlRecord& i) {
    return {{"pid", i.pid},
            {"comm", i.comm},
            {"fd", i.fd},
            {"fd_path", opt(i.fd_path)},
            {"cmd", i.cmd},
            {"name", opt(i.name)},
            {"hclass", opt(i.hclass)},
            {"status", opt(i.status)},
            {"ctrl", opt(i.ctrl)},
            {"ctrl_class", opt(i.ctrl_class)},
            {"ret", opt(i.ret)},
            {"enter_ns", i.enter_ns},
            {"exit_ns", opt(i.exit_ns)},
            {"call", opt(i.call)},
            {"calls", i.calls},
            {"phase", opt(i.phase)}};
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

json marker_json(const MarkerEntry& m) {
    return {{"ts", opt(m.ts_ns)}, {"pid", m.pid}, {"text", m.text}};
}

json event_json(const EventRecord& e) {
    return {{"name", e.name},
            {"ts", opt(e.ts_ns)},
            {"cpu", e.cpu},
            {"pid", e.pid},
            {"comm", e.comm},
            {"fields", opt(e.fields)},
            {"text", e.text},
            {"stack", e.stack.empty() ? json(nullptr) : json(e.stack)},
            {"user_stack", e.user_stack.empty() ? json(nullptr) : json(e.user_stack)},
            {"line", opt(e.line)}};
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

// Writes `"key": [` then one element per line, so that only one element's DOM exists at a time.
template <class T, class F>
void stream_array(std::ostream& out, const char* key, const std::vector<T>& v, F f, bool last) {
    out << " \"" << key << "\": [";
    for (std::size_t i = 0; i < v.size(); ++i)
        out << (i ? ",\n  " : "\n  ") << f(v[i]).dump(-1, ' ', false, json::error_handler_t::replace);
    out << (v.empty() ? "]" : "\n ]") << (last ? "\n" : ",\n");
}

}  // namespace

json to_json(const Report& r) {
    json j;
    j["schema"] = kReportSchema;
    j["source"] = r.source;
    j["environment"] = r.environment;
    j["completeness"] = completeness_json(r.completeness);
    j["calls"] = array_of(r.calls, call_json);
    j["graph"] = array_of(r.graph, graph_json);
    j["kernel_log"] = array_of(r.kernel_log, log_json);
    j["ioctls"] = array_of(r.ioctls, ioctl_json);
    j["markers"] = array_of(r.markers, marker_json);
    j["events"] = array_of(r.events, event_json);
    j["kmsg_clock"] = kmsg_clock_json(r.kmsg_clock);
    j["source_links"] = source_links_json(r.source_links);
    j["checks"] = array_of(r.checks, check_json);
    return j;
}

void write_json(const Report& r, std::ostream& out) {
    // Keys in the order nlohmann::json uses for to_json(), so both spellings list the same way.
    out << "{\n";
    import::write_calls_array(out, r.calls);  // the largest array: written directly, not through a DOM
    stream_array(out, "checks", r.checks, check_json, false);
    out << " \"completeness\": "
        << completeness_json(r.completeness).dump(-1, ' ', false, json::error_handler_t::replace) << ",\n";
    out << " \"environment\": " << r.environment.dump(-1, ' ', false, json::error_handler_t::replace) << ",\n";
    stream_array(out, "events", r.events, event_json, false);
    stream_array(out, "graph", r.graph, graph_json, false);
    stream_array(out, "ioctls", r.ioctls, ioctl_json, false);
    stream_array(out, "kernel_log", r.kernel_log, log_json, false);
    out << " \"kmsg_clock\": " << kmsg_clock_json(r.kmsg_clock).dump(-1, ' ', false, json::error_handler_t::replace)
        << ",\n";
    stream_array(out, "markers", r.markers, marker_json, false);
    out << " \"schema\": " << json(kReportSchema).dump(-1, ' ', false, json::error_handler_t::replace) << ",\n";
    out << " \"source\": " << r.source.dump(-1, ' ', false, json::error_handler_t::replace) << ",\n";
    out << " \"source_links\": "
        << source_links_json(r.source_links).dump(-1, ' ', false, json::error_handler_t::replace) << "\n}\n";
}

}  // namespace nvtrace
