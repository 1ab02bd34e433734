// meta.json of a capture directory, read and written in one place (include/nvtrace/capture_meta.hpp): each
// struct names its keys once (fields()), and the same list writes the JSON and reads it back.
#include "nvtrace/capture_meta.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "../json_values.hpp"
#include "../member_traits.hpp"
#include "../report_head.hpp"
#include "nvtrace/capture_dir.hpp"

namespace nvtrace {

namespace {

using json = nlohmann::json;

// The keys of each struct, in one list for writing (M const) and reading.
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, KmsgClockOffset> {
    f("trace_clock", m.trace_clock), f("offset_ns", m.offset_ns), f("uncertainty_ns", m.uncertainty_ns);
    f("basis", m.basis);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, CpuBufferStats> {
    f("cpu", m.cpu), f("buffer", m.buffer), f("overrun", m.overrun), f("dropped_events", m.dropped_events);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, EndedProcess> {
    f("pid", m.pid), f("comm", m.comm), f("signal", m.signal);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, CaptureBuffer> {
    f("name", m.name), f("page_size", m.page_size), f("cpus", m.cpus), f("pages", m.pages);
    f("records", m.records);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, CaptureRaw> {
    f("long_size", m.long_size), f("endianness", m.endianness), f("page_size", m.page_size);
    f("buffers", m.buffers), f("drained_while_running", m.drained_while_running);
    f("write_error", m.write_error), f("decode_error", m.decode_error);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, CaptureUprobe> {
    f("group", m.group), f("event", m.event), f("return_event", m.return_event), f("library", m.library);
    f("symbol", m.symbol), f("offset", m.offset), f("api", m.api);
    f("late_pid", m.late_pid), f("armed_after_ns", m.armed_after_ns), f("armed_ns", m.armed_ns);
}
template <class M, class F>
void fields(M& m, F&& f) requires std::is_same_v<std::remove_const_t<M>, CaptureMeta> {
    f("capture_format", m.capture_format), f("raw", m.raw), f("event_formats", m.event_formats);
    f("command", m.command), f("pid", m.pid), f("run_as_uid", m.run_as_uid), f("tty", m.tty);
    f("preload", m.preload), f("started_utc", m.started_utc), f("duration_ns", m.duration_ns);
    f("exit_code", m.exit_code), f("signal", m.signal), f("interrupted_by", m.interrupted_by);
    f("timed_out", m.timed_out), f("stopped_on_terminal", m.stopped_on_terminal);
    f("descendants_ended", m.descendants_ended), f("descendants_left", m.descendants_left);
    f("modules", m.modules), f("filters", m.filters), f("notrace", m.notrace);
    f("graph_functions", m.graph_functions), f("events", m.events), f("max_depth", m.max_depth);
    f("filter_counts", m.filter_counts), f("filter_functions", m.filter_functions);
    f("tracer_mode", m.tracer_mode), f("tracing_dir", m.tracing_dir), f("instance", m.instance);
    f("clock", m.clock), f("buffer_size_kb", m.buffer_size_kb), f("kept_events", m.kept_events);
    f("fd_events", m.fd_events), f("printk_console", m.printk_console), f("kmsg_clock", m.kmsg_clock);
    f("kmsg_overwritten", m.kmsg_overwritten), f("kmsg_records", m.kmsg_records);
    f("buffer_stats", m.buffer_stats), f("undecodable_records", m.undecodable_records);
    f("unresolved_functions", m.unresolved_functions), f("instance_left", m.instance_left);
    f("trace_dat", m.trace_dat), f("report_source", m.report_source), f("environment", m.environment);
    f("uprobes", m.uprobes), f("expectations_copy", m.expectations_copy), f("working_dir", m.working_dir);
}
template <class T>
concept Record = requires(T& t) {
    fields(t, [](const char*, auto&) {});
};

using namespace member_traits;

template <class T>
json write(const T& v) {
    if constexpr (Record<T>) {
        json j = json::object();
        fields(v, [&](const char* key, const auto& x) {
            if constexpr (IsOmitted<std::remove_cvref_t<decltype(x)>>::value) {
                if (x) j[key] = *x;
            } else {
                j[key] = write(x);
            }
        });
        return j;
    } else if constexpr (IsOptional<T>::value) {
        return v ? write(*v) : json(nullptr);
    } else if constexpr (std::is_same_v<T, ReportSource> || std::is_same_v<T, ReportEnvironment>) {
        return to_json(v);
    } else if constexpr (IsVector<T>::value) {
        json a = json::array();
        for (const auto& e : v)
            a.push_back(write(e));
        return a;
    } else {
        return json(v);
    }
}

// Reads JSON into T; the first problem is kept, as "FILE: PATH: expected WHAT".
struct Reader {
    std::string file;
    std::set<std::string>* absent = nullptr;  // optional keys not there (top level and raw only)
    std::optional<Error> error;

    void problem(const std::string& path, const std::string& what) {
        if (!error) error = Error::usage(fmt::format("{}: {}: {}", file, path, what));
    }
    template <class T>
    static std::string what() {
        if constexpr (Record<T>)
            return "an object";
        else if constexpr (IsOptional<T>::value)
            return what<typename T::value_type>() + " or null";
        else if constexpr (IsVector<T>::value) {
            using E = typename T::value_type;
            return std::is_same_v<E, std::string> ? "an array of strings"
                   : Record<E>                    ? "an array of objects"
                                                  : "an array of integers";
        } else if constexpr (std::is_same_v<T, std::string>)
            return "a string";
        else if constexpr (std::is_same_v<T, bool>)
            return "true or false";
        else if constexpr (std::is_same_v<T, ReportSource> || std::is_same_v<T, ReportEnvironment>)
            return "an object";
        else if constexpr (std::is_same_v<T, std::map<std::string, std::uint64_t>>)
            return "an object of non-negative integers";
        else if constexpr (std::is_unsigned_v<T>)
            return "a non-negative integer";
        else
            return "an integer";
    }
    template <class T>
    void read(const json& v, const std::string& path, T& out, const std::string& expected = what<T>()) {
        if (error) return;
        if constexpr (Record<T>) {
            if (!v.is_object()) return problem(path, "expected " + what<T>());
            std::set<std::string>* keep = absent;
            if (!path.empty() && path != "raw") absent = nullptr;  // older captures lack keys only at these two
            fields(out, [&](const char* key, auto& x) {
                using X = std::remove_cvref_t<decltype(x)>;
                const std::string sub = path.empty() ? key : path + "." + key;
                if (auto it = v.find(key); it != v.end()) return read(*it, sub, x);
                if (IsOmitted<X>::value) return;
                if (!absent) return problem(sub, "missing, expected " + what<X>());
                absent->insert(sub);
            });
            absent = keep;
        } else if constexpr (IsOptional<T>::value) {
            if (v.is_null()) return out.reset();
            read(v, path, out.emplace(), expected);
        } else if constexpr (IsVector<T>::value) {
            if (!v.is_array()) return problem(path, "expected " + what<T>());
            out.clear();
            for (const auto& e : v)
                read(e, path + "[]", out.emplace_back());
        } else if constexpr (std::is_same_v<T, ReportSource>) {
            if (!v.is_object()) return problem(path, "expected " + what<T>());
            out = report_source_from_json(v);
        } else if constexpr (std::is_same_v<T, ReportEnvironment>) {
            if (!v.is_object()) return problem(path, "expected " + what<T>());
            out = report_environment_from_json(v);
        } else if constexpr (std::is_same_v<T, std::map<std::string, std::uint64_t>>) {
            for (auto it = v.begin(); v.is_object() && it != v.end(); ++it)
                if (it->is_number_unsigned()) out[it.key()] = it->get<std::uint64_t>();
            if (!v.is_object() || out.size() != v.size()) return problem(path, "expected " + what<T>());
        } else {
            bool fits = std::is_same_v<T, std::string> ? v.is_string()
                        : std::is_same_v<T, bool>      ? v.is_boolean()
                        : std::is_unsigned_v<T>        ? v.is_number_unsigned()
                                                       : v.is_number_integer();
            if constexpr (std::is_same_v<T, int>)
                fits = fits && v.get<std::int64_t>() >= INT32_MIN && v.get<std::int64_t>() <= INT32_MAX;
            if (!fits) return problem(path, "expected " + expected);
            out = v.get<T>();
        }
    }
};

// What the offline reader needs beyond the types: a known format version, a page layout it can decode.
Result<void> check(const json& j, const std::string& file, const CaptureMeta& m, const std::optional<Error>& typed) {
    auto bad = [&](const std::string& what) { return fail(Error::usage(fmt::format("{}: {}", file, what))); };
    if (!j.is_object() || !j.contains("capture_format"))
        return bad("no \"capture_format\": not a raw capture directory (written before format 1?)");
    if (!j["capture_format"].is_number_integer() || j["capture_format"].get<int>() != kCaptureDirFormat)
        return bad(fmt::format("capture_format {} is not {} (the version this nvtrace reads)",
                               j["capture_format"].dump(), kCaptureDirFormat));
    if (!j.contains("raw") || !j["raw"].is_object()) return bad("expected an object \"raw\"");
    for (const char* key : {"long_size", "endianness", "buffers"})
        if (!j["raw"].contains(key)) return bad(fmt::format("raw.{}: missing", key));
    if (!j.contains("event_formats")) return bad("event_formats: missing, expected an array of strings");
    if (typed) return fail(*typed);
    if (m.raw.long_size != 4 && m.raw.long_size != 8) return bad("raw.long_size must be 4 or 8");
    if (m.raw.endianness != "little" && m.raw.endianness != "big")
        return bad("raw.endianness must be \"little\" or \"big\"");
    for (const auto& b : m.raw.buffers) {
        if (b.name != "instance" && b.name != "top")
            return bad(fmt::format("raw.buffers: unknown buffer '{}'", b.name));
        if (b.page_size < 16 || b.page_size > (1u << 24))
            return bad(fmt::format("raw.buffers: page_size {}", b.page_size));
        for (int cpu : b.cpus)
            if (cpu < 0 || cpu > 65535) return bad("raw.buffers cpus must be CPU numbers");
    }
    if (m.raw.buffers.empty()) return bad("raw.buffers lists no buffer: nothing to decode");
    return {};
}

}  // namespace

json to_json(const CaptureMeta& m) {
    json j = write(m);
    for (const auto& key : m.absent_keys)
        if (key.rfind("raw.", 0) == 0)
            j["raw"].erase(key.substr(4));
        else
            j.erase(key);
    return j;
}

std::string dump_capture_meta(const CaptureMeta& m) {
    return to_json(m).dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<CaptureMeta> capture_meta_from_json(const json& j, const std::string& file) {
    CaptureMeta m;
    Reader r{file, &m.absent_keys, std::nullopt};
    if (j.is_object()) r.read(j, "", m);
    if (auto ok = check(j, file, m, r.error); !ok) return fail(ok.error());
    return m;
}

}  // namespace nvtrace
