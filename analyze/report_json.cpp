#include "nvtrace/report.hpp"

namespace nvtrace {

namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const Report& r) {
    using nlohmann::json;
    json j;
    j["schema"] = kReportSchema;
    j["source"] = r.source;
    j["environment"] = r.environment;

    const Completeness& c = r.completeness;
    json diags = json::array();
    for (const auto& d : c.diagnostics)
        diags.push_back(
            {{"name", d.name}, {"severity", d.severity}, {"count", d.count}, {"first_example", d.first_example}});
    j["completeness"] = {{"complete", c.complete},
                         {"lost_events", c.lost_events},
                         {"orphan_returns", c.orphan_returns},
                         {"unclosed_calls", c.unclosed_calls},
                         {"overruns", c.overruns},
                         {"dropped_events", c.dropped_events},
                         {"graph_overruns", c.graph_overruns},
                         {"reasons", c.reasons},
                         {"diagnostics", diags}};

    json calls = json::array();
    for (const Call& k : r.calls) {
        calls.push_back({{"id", k.id},
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
                         {"phase", opt(k.phase)}});
    }
    j["calls"] = std::move(calls);

    json graph = json::array();
    for (const GraphNode& n : r.graph)
        graph.push_back({{"path", n.path},
                         {"count", n.count},
                         {"total_ns", n.total_ns},
                         {"self_ns", n.self_ns},
                         {"min_ns", n.min_ns},
                         {"max_ns", n.max_ns}});
    j["graph"] = std::move(graph);

    json log = json::array();
    for (const KernelLogMessage& m : r.kernel_log)
        log.push_back({{"ts", opt(m.ts_ns)},
                       {"level", m.level},
                       {"source", m.source},
                       {"kind", m.kind},
                       {"fields", m.fields},
                       {"text", m.text},
                       {"seq", opt(m.seq)},
                       {"call", opt(m.call)}});
    j["kernel_log"] = std::move(log);

    json ioctls = json::array();
    for (const IoctlRecord& i : r.ioctls)
        ioctls.push_back({{"pid", i.pid},
                          {"comm", i.comm},
                          {"fd", i.fd},
                          {"fd_path", opt(i.fd_path)},
                          {"cmd", i.cmd},
                          {"name", opt(i.name)},
                          {"hclass", opt(i.hclass)},
                          {"status", opt(i.status)},
                          {"ret", opt(i.ret)},
                          {"enter_ns", i.enter_ns},
                          {"exit_ns", opt(i.exit_ns)},
                          {"call", opt(i.call)},
                          {"calls", i.calls},
                          {"phase", opt(i.phase)}});
    j["ioctls"] = std::move(ioctls);

    json markers = json::array();
    for (const MarkerEntry& m : r.markers)
        markers.push_back({{"ts", m.ts_ns}, {"pid", m.pid}, {"text", m.text}});
    j["markers"] = std::move(markers);

    json checks = json::array();
    for (const Check& k : r.checks)
        checks.push_back({{"id", k.id}, {"result", k.result}, {"evidence", k.evidence}, {"why", k.why}});
    j["checks"] = std::move(checks);
    return j;
}

}  // namespace nvtrace
