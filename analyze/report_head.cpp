// The "source" and "environment" objects of report.json and meta.json (analyze/report_head.hpp): each struct names
// its keys once (fields()), and the same list writes the JSON and reads it back.
#include "report_head.hpp"

#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "member_traits.hpp"

namespace nvtrace {

namespace {

using json = nlohmann::json;

template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, ReportSource> {
    f("kind", m.kind), f("path", m.path), f("format", m.format), f("command", m.command), f("pid", m.pid);
    f("tracer_mode", m.tracer_mode), f("modules", m.modules), f("filters", m.filters), f("scenario", m.scenario);
    f("expectations", m.expectations), f("cannot_run", m.cannot_run), f("kmsg", m.kmsg);
    f("calls_jsonl", m.calls_jsonl), f("calls_count", m.calls_count);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, ModuleInfo> {
    f("loaded", m.loaded), f("version", m.version), f("srcversion", m.srcversion), f("taint", m.taint);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, ReportEnvironment> {
    f("kernel", m.kernel), f("kernel_version", m.kernel_version), f("machine", m.machine), f("modules", m.modules);
    f("nvidia_driver_banner", m.nvidia_driver_banner), f("nvidia_driver_flavour", m.nvidia_driver_flavour);
    f("nvidia_driver_version", m.nvidia_driver_version), f("function_graph", m.function_graph);
    f("not_traceable", m.not_traceable), f("host", m.host), f("slurm", m.slurm);
}
template <class T>
concept Object = requires(T& t) {
    fields(t, [](const char*, auto&) {});
};

using namespace member_traits;

// A member's value (never an unset top-level optional: those are left out).
template <class T>
json write(const T& v) {
    if constexpr (Object<T>) {
        json j = json::object();
        fields(v, [&](const char* key, const auto& x) {
            if (x) j[key] = write(*x);
        });
        for (const auto& [key, text] : v.other)
            j[key] = json::parse(text);
        return j;
    } else if constexpr (IsOptional<T>::value) {  // a nullable value
        return v ? write(*v) : json(nullptr);
    } else if constexpr (IsVariant<T>::value) {
        return std::visit([](const auto& x) { return write(x); }, v);
    } else if constexpr (IsVector<T>::value) {
        json a = json::array();
        for (const auto& e : v)
            a.push_back(write(e));
        return a;
    } else if constexpr (IsMap<T>::value) {
        json o = json::object();
        for (const auto& [k, e] : v)
            o[k] = write(e);
        return o;
    } else {
        return json(v);
    }
}

// Whether `v` reads into `out` (left unspecified when not).
template <class T>
bool read(const json& v, T& out);
template <std::size_t I, class V>
bool read_alternative(const json& v, V& out) {
    if constexpr (I == std::variant_size_v<V>) {
        return false;
    } else {
        if (read(v, out.template emplace<I>())) return true;
        return read_alternative<I + 1>(v, out);
    }
}
template <class T>
bool read(const json& v, T& out) {
    if constexpr (Object<T>) {
        if (!v.is_object()) return false;
        for (auto it = v.begin(); it != v.end(); ++it) {
            bool known = false;
            fields(out, [&](const char* key, auto& x) {
                if (known || it.key() != key) return;
                known = read(*it, x.emplace());
                if (!known) x.reset();
            });
            if (!known) out.other[it.key()] = it->dump(-1, ' ', false, json::error_handler_t::replace);
        }
        return true;
    } else if constexpr (IsOptional<T>::value) {
        if (v.is_null()) return out.reset(), true;
        return read(v, out.emplace());
    } else if constexpr (IsVariant<T>::value) {  // the first alternative that reads
        return read_alternative<0>(v, out);
    } else if constexpr (IsVector<T>::value) {
        if (!v.is_array()) return false;
        for (const auto& e : v)
            if (!read(e, out.emplace_back())) return false;
        return true;
    } else if constexpr (IsMap<T>::value) {
        if (!v.is_object()) return false;
        for (auto it = v.begin(); it != v.end(); ++it)
            if (!read(*it, out[it.key()])) return false;
        return true;
    } else if constexpr (std::is_same_v<T, std::string>) {
        return v.is_string() && (out = v.get<std::string>(), true);
    } else if constexpr (std::is_same_v<T, bool>) {
        return v.is_boolean() && (out = v.get<bool>(), true);
    } else if constexpr (std::is_unsigned_v<T>) {
        return v.is_number_unsigned() && (out = v.get<T>(), true);
    } else {
        static_assert(std::is_same_v<T, int>);
        return v.is_number_integer() && v.get<std::int64_t>() >= INT32_MIN && v.get<std::int64_t>() <= INT32_MAX &&
               (out = v.get<int>(), true);
    }
}

}  // namespace

std::string command_text(const ReportSource& s) {
    if (!s.command) return "";
    if (const auto* line = std::get_if<std::string>(&*s.command)) return *line;
    std::string out;
    for (const auto& a : std::get<std::vector<std::string>>(*s.command))
        out += (out.empty() ? "" : " ") + a;
    return out;
}

std::optional<std::string> calls_written_elsewhere(const ReportSource& s, std::uint64_t calls_in_report) {
    if (calls_in_report != 0 || !s.calls_jsonl || !s.calls_count || *s.calls_count == 0) return std::nullopt;
    return fmt::format("its {} calls were written to {} (--calls-jsonl), not into the report", *s.calls_count,
                       *s.calls_jsonl);
}

json to_json(const ReportSource& s) {
    return write(s);
}
json to_json(const ReportEnvironment& e) {
    return write(e);
}

ReportSource report_source_from_json(const json& j) {
    ReportSource s;
    read(j, s);
    return s;
}
ReportEnvironment report_environment_from_json(const json& j) {
    ReportEnvironment e;
    read(j, e);
    return e;
}

}  // namespace nvtrace
