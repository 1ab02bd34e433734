// record_fields.hpp: the one table of each per-record array of report.json (private to analyze). Each field
// of Call (calls[]), IoctlRecord (ioctls[]), IoctlStat (ioctl_stats[]), GraphNode (graph[]), KernelLogMessage
// (kernel_log[]), MarkerEntry (markers[]), EventRecord (events[]) and ApiCall (api_calls[]) is named here once: its
// JSON key, its C++ member (whose type is the field's type: an integer, bool, std::string, a vector or map of them, or
// std::optional of one for a field that may be null), its unit, whether a reader needs it, and how an empty value is
// written.
//
// Everything that writes or reads these records goes through the table: the direct writers of
// import/json_write.cpp (report.json's arrays, `--calls-jsonl`), the DOM writer to_json() (report_json.cpp),
// both readers of export/report_from_json.cpp (DOM and SAX), the calls CSV (export/export.cpp), and the test
// that holds the table to docs/report.schema.json (tests/analyze/test_record_fields.cpp). Adding a field is one
// line here plus its property in the schema and docs/report-format.md.
//
// Order: a table lists its fields in the order a reader checks them (the first wrong field is the one an
// error names) and the CSV prints its columns; JSON objects are written with their keys sorted (nlohmann's
// std::map order), whatever the table's order.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::fields {

// The unit of an integer field (docs/report-format.md: every time and duration is integer nanoseconds on the
// trace clock).
enum class Unit : std::uint8_t { none, ns };

// A reader's rule for a key that is missing or null: `defaulted` keeps the value of RecordFields<R>::blank();
// `required` makes it an error ("calls[3].id: missing"; null: "expected an unsigned integer").
enum class Need : std::uint8_t { defaulted, required };

// How a writer writes an empty value: `as_is`: an unset optional as null, an empty string, array or object as
// itself; `null`: an empty array as null (EventRecord::stack); `none`: an empty string as "none"
// (KernelLogMessage::attached outside a report); `omit`: an unset optional leaves its key out, so that reports
// written before the field existed read and write back unchanged (IoctlRecord::fd_path_unknown).
enum class Empty : std::uint8_t { as_is, null, none, omit };

template <class R, class M>
struct Field {
    using Record = R;
    using Member = M;

    std::string_view key;
    M R::*member;
    Unit unit;
    Need need;
    Empty empty;

    constexpr Field(std::string_view k, M R::*m, Unit u = Unit::none, Need n = Need::defaulted, Empty e = Empty::as_is)
        : key(k), member(m), unit(u), need(n), empty(e) {}
};

inline constexpr Unit ns = Unit::ns;
inline constexpr Need required = Need::required;

// RecordFields<R>: `section` (the report.json key of R's array), `fields` (a std::tuple of Field<R, ...>) and
// blank() (what a reader starts from: the value of every key that is missing).
template <class R>
struct RecordFields;

template <>
struct RecordFields<Call> {
    static constexpr std::string_view section = "calls";
    static constexpr auto fields = std::tuple{
        Field{"id", &Call::id, Unit::none, required},
        Field{"parent", &Call::parent},
        Field{"cpu", &Call::cpu},
        Field{"pid", &Call::pid},
        Field{"comm", &Call::comm},
        Field{"depth", &Call::depth},
        Field{"function", &Call::function, Unit::none, required},
        Field{"module", &Call::module},
        Field{"entry_ns", &Call::entry_ns, ns},
        Field{"duration_ns", &Call::duration_ns, ns},
        Field{"retval", &Call::retval},
        Field{"irq", &Call::irq},
        Field{"entry_seen", &Call::entry_seen},
        Field{"exit_seen", &Call::exit_seen},
        Field{"phase", &Call::phase},
        Field{"kernel_depth", &Call::kernel_depth},
        Field{"args", &Call::args},
        Field{"retaddr", &Call::retaddr},
    };
    static Call blank() { return {}; }
};

template <>
struct RecordFields<GraphNode> {
    static constexpr std::string_view section = "graph";
    static constexpr auto fields = std::tuple{
        Field{"path", &GraphNode::path, Unit::none, required},
        Field{"count", &GraphNode::count, Unit::none, required},
        Field{"total_ns", &GraphNode::total_ns, ns},
        Field{"self_ns", &GraphNode::self_ns, ns},
        Field{"min_ns", &GraphNode::min_ns, ns},
        Field{"max_ns", &GraphNode::max_ns, ns},
    };
    static GraphNode blank() { return {}; }
};

template <>
struct RecordFields<IoctlRecord> {
    static constexpr std::string_view section = "ioctls";
    static constexpr auto fields = std::tuple{
        Field{"pid", &IoctlRecord::pid},
        Field{"comm", &IoctlRecord::comm},
        Field{"fd", &IoctlRecord::fd},
        Field{"fd_path", &IoctlRecord::fd_path},
        Field{"fd_path_unknown", &IoctlRecord::fd_path_unknown, Unit::none, Need::defaulted, Empty::omit},
        Field{"cmd", &IoctlRecord::cmd, Unit::none, required},
        Field{"name", &IoctlRecord::name},
        Field{"hclass", &IoctlRecord::hclass},
        Field{"status", &IoctlRecord::status},
        Field{"ctrl", &IoctlRecord::ctrl},
        Field{"ctrl_class", &IoctlRecord::ctrl_class},
        Field{"ret", &IoctlRecord::ret},
        Field{"errno_name", &IoctlRecord::errno_name},
        Field{"errno_text", &IoctlRecord::errno_text},
        Field{"enter_ns", &IoctlRecord::enter_ns, ns},
        Field{"exit_ns", &IoctlRecord::exit_ns, ns},
        Field{"duration_ns", &IoctlRecord::duration_ns, ns},
        Field{"arg", &IoctlRecord::arg},
        Field{"call", &IoctlRecord::call},
        Field{"calls", &IoctlRecord::calls},
        Field{"phase", &IoctlRecord::phase},
    };
    static IoctlRecord blank() { return {}; }
};

template <>
struct RecordFields<IoctlStat> {
    static constexpr std::string_view section = "ioctl_stats";
    static constexpr auto fields = std::tuple{
        Field{"device", &IoctlStat::device},
        Field{"fd", &IoctlStat::fd},
        Field{"cmd", &IoctlStat::cmd, Unit::none, required},
        Field{"name", &IoctlStat::name},
        Field{"pid", &IoctlStat::pid},
        Field{"comm", &IoctlStat::comm},
        Field{"count", &IoctlStat::count, Unit::none, required},
        Field{"errors", &IoctlStat::errors},
        Field{"errors_by_name", &IoctlStat::errors_by_name},
        Field{"unfinished", &IoctlStat::unfinished},
        Field{"latency_unknown", &IoctlStat::latency_unknown},
        Field{"total_ns", &IoctlStat::total_ns, ns},
        Field{"mean_ns", &IoctlStat::mean_ns, ns},
        Field{"min_ns", &IoctlStat::min_ns, ns},
        Field{"max_ns", &IoctlStat::max_ns, ns},
    };
    static IoctlStat blank() { return {}; }
};

template <>
struct RecordFields<KernelLogMessage> {
    static constexpr std::string_view section = "kernel_log";
    // level_known, wall_time, host and line are the text reader's, not the report's.
    static constexpr auto fields = std::tuple{
        Field{"ts", &KernelLogMessage::ts_ns, ns},
        Field{"level", &KernelLogMessage::level},
        Field{"source", &KernelLogMessage::source},
        Field{"kind", &KernelLogMessage::kind},
        Field{"fields", &KernelLogMessage::fields},
        Field{"text", &KernelLogMessage::text},
        Field{"seq", &KernelLogMessage::seq},
        Field{"call", &KernelLogMessage::call},
        Field{"attached", &KernelLogMessage::attached, Unit::none, Need::defaulted, Empty::none},
        Field{"trace_ts", &KernelLogMessage::trace_ts_ns, ns},
    };
    static KernelLogMessage blank() {
        KernelLogMessage m;
        m.kind = "other";
        return m;
    }
};

template <>
struct RecordFields<MarkerEntry> {
    static constexpr std::string_view section = "markers";
    static constexpr auto fields = std::tuple{
        Field{"ts", &MarkerEntry::ts_ns, ns},
        Field{"pid", &MarkerEntry::pid},
        Field{"text", &MarkerEntry::text, Unit::none, required},
    };
    static MarkerEntry blank() { return {}; }
};

template <>
struct RecordFields<EventRecord> {
    static constexpr std::string_view section = "events";
    static constexpr auto fields = std::tuple{
        Field{"name", &EventRecord::name, Unit::none, required},
        Field{"ts", &EventRecord::ts_ns, ns},
        Field{"cpu", &EventRecord::cpu},
        Field{"pid", &EventRecord::pid},
        Field{"comm", &EventRecord::comm},
        Field{"fields", &EventRecord::fields},
        Field{"text", &EventRecord::text},
        Field{"stack", &EventRecord::stack, Unit::none, Need::defaulted, Empty::null},
        Field{"user_stack", &EventRecord::user_stack, Unit::none, Need::defaulted, Empty::null},
        Field{"line", &EventRecord::line},
    };
    static EventRecord blank() { return {}; }
};

template <>
struct RecordFields<ApiCall> {
    static constexpr std::string_view section = "api_calls";
    static constexpr auto fields = std::tuple{
        Field{"id", &ApiCall::id, Unit::none, required},
        Field{"parent", &ApiCall::parent},
        Field{"depth", &ApiCall::depth},
        Field{"cpu", &ApiCall::cpu},
        Field{"pid", &ApiCall::pid},
        Field{"comm", &ApiCall::comm},
        Field{"function", &ApiCall::function, Unit::none, required},
        Field{"group", &ApiCall::group},
        Field{"library", &ApiCall::library},
        Field{"api", &ApiCall::api},
        Field{"args", &ApiCall::args},
        Field{"arg_kinds", &ApiCall::arg_kinds},
        Field{"args_decoded", &ApiCall::args_decoded},
        Field{"result", &ApiCall::result},
        Field{"result_name", &ApiCall::result_name},
        Field{"result_unknown", &ApiCall::result_unknown},
        Field{"entry_ns", &ApiCall::entry_ns, ns, required},
        Field{"exit_ns", &ApiCall::exit_ns, ns},
        Field{"exit_unknown", &ApiCall::exit_unknown},
        Field{"ioctls", &ApiCall::ioctls},
        Field{"ioctl_names", &ApiCall::ioctl_names},
        Field{"calls", &ApiCall::calls},
        Field{"phase", &ApiCall::phase},
    };
    static ApiCall blank() { return {}; }
};

template <class R>
inline constexpr std::size_t field_count = std::tuple_size_v<std::decay_t<decltype(RecordFields<R>::fields)>>;

// The I-th field of R's table (a constant expression: its key and rules can be template arguments).
template <class R, std::size_t I>
constexpr const auto& field() {
    return std::get<I>(RecordFields<R>::fields);
}

// f(field) for each field of R, in the table's order.
template <class R, class F>
constexpr void for_each_field(F&& f) {
    std::apply([&](const auto&... fs) { (f(fs), ...); }, RecordFields<R>::fields);
}

// f(std::integral_constant<std::size_t, I>{}) for each field index I of R, in the table's order: for code that
// needs the field as a constant (`constexpr auto& fd = field<R, decltype(i)::value>();`).
template <class R, class F>
constexpr void for_each_index(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (f(std::integral_constant<std::size_t, I>{}), ...);
    }
    (std::make_index_sequence<field_count<R>>{});
}

template <class R>
constexpr std::array<std::string_view, field_count<R>> keys() {
    return std::apply([](const auto&... fs) { return std::array<std::string_view, field_count<R>>{fs.key...}; },
                      RecordFields<R>::fields);
}

// The field indexes of R in the order of their keys (std::less on the bytes: nlohmann's object order).
template <class R>
constexpr std::array<std::size_t, field_count<R>> key_order() {
    constexpr auto k = keys<R>();
    std::array<std::size_t, field_count<R>> order{};
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return k[a] < k[b]; });
    return order;
}

template <class R>
constexpr bool keys_are_unique() {
    constexpr auto order = key_order<R>();
    constexpr auto k = keys<R>();
    for (std::size_t i = 1; i < order.size(); ++i)
        if (k[order[i - 1]] == k[order[i]]) return false;
    return true;
}
static_assert(keys_are_unique<Call>() && keys_are_unique<GraphNode>() && keys_are_unique<IoctlRecord>() &&
              keys_are_unique<IoctlStat>() && keys_are_unique<KernelLogMessage>() && keys_are_unique<MarkerEntry>() &&
              keys_are_unique<EventRecord>() && keys_are_unique<ApiCall>());

// The index of `key` in R's table; field_count<R> when R has no such field. Fixed-size compares the compiler
// inlines (the SAX reader looks up every key of every call).
template <class R>
std::size_t index_of(std::string_view key) {
    std::size_t found = field_count<R>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((key.size() == field<R, I>().key.size() &&
                std::memcmp(key.data(), field<R, I>().key.data(), field<R, I>().key.size()) == 0 &&
                (found = I, true)) ||
               ...);
    }
    (std::make_index_sequence<field_count<R>>{});
    return found;
}

}  // namespace nvtrace::fields
