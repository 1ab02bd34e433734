// The field tables of analyze/record_fields.hpp: every record with every field set goes through each writer
// and both readers unchanged, the direct writers print the DOM writer's bytes, the calls CSV has the table's
// columns, and docs/report.schema.json describes exactly the table's fields (a field added to a table and not
// to the schema, or the other way round, fails here).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../analyze/import/calls_jsonl.hpp"
#include "../../analyze/import/json_write.hpp"
#include "../../analyze/json_values.hpp"
#include "../../analyze/record_fields.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/report_io.hpp"

using namespace nvtrace;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// A value unlike the blank record's (distinct per field: `n`), with bytes that need escaping in strings.
template <class T>
void set_value(T& v, std::size_t n) {
    if constexpr (is_optional<T>::value) {
        set_value(v.emplace(), n);
    } else if constexpr (std::is_same_v<T, bool>) {
        v = !v;
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        v = -static_cast<T>(1000 + n);
    } else if constexpr (std::is_integral_v<T>) {
        v = static_cast<T>(std::numeric_limits<T>::max() - n);
    } else if constexpr (std::is_same_v<T, std::string>) {
        v = "f" + std::to_string(n) + " \"q\" \\ \x01 caf\xc3\xa9";
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        v = {"a+0x1/0x2", "b\t" + std::to_string(n)};
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>>) {
        v = {n + 1, UINT64_MAX};
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::uint64_t>>) {
        v = {{"E" + std::to_string(n), n}, {"NV_ERR_\"x\"", UINT64_MAX}};
    } else {
        static_assert(std::is_same_v<T, std::map<std::string, std::string>>);
        v = {{"k" + std::to_string(n), "v\n"}, {"a", ""}};
    }
}

template <class R>
R every_field_set() {
    R r = fields::RecordFields<R>::blank();
    std::size_t n = 0;
    fields::for_each_field<R>([&](const auto& f) { set_value(r.*(f.member), ++n); });
    return r;
}

template <class R>
std::vector<R>& records(Report& r) {
    if constexpr (std::is_same_v<R, Call>)
        return r.calls;
    else if constexpr (std::is_same_v<R, IoctlRecord>)
        return r.ioctls;
    else if constexpr (std::is_same_v<R, IoctlStat>)
        return r.ioctl_stats;
    else if constexpr (std::is_same_v<R, GraphNode>)
        return r.graph;
    else if constexpr (std::is_same_v<R, KernelLogMessage>)
        return r.kernel_log;
    else if constexpr (std::is_same_v<R, MarkerEntry>)
        return r.markers;
    else if constexpr (std::is_same_v<R, ApiCall>)
        return r.api_calls;
    else
        return r.events;
}

template <class R>
void append_direct(std::string& out, const R& r) {
    if constexpr (std::is_same_v<R, Call>)
        import::append_call_json(out, r);
    else if constexpr (std::is_same_v<R, IoctlRecord>)
        import::append_ioctl_json(out, r);
    else if constexpr (std::is_same_v<R, IoctlStat>)
        import::append_ioctl_stat_json(out, r);
    else if constexpr (std::is_same_v<R, GraphNode>)
        import::append_graph_json(out, r);
    else if constexpr (std::is_same_v<R, KernelLogMessage>)
        import::append_log_json(out, r);
    else if constexpr (std::is_same_v<R, MarkerEntry>)
        import::append_marker_json(out, r);
    else if constexpr (std::is_same_v<R, ApiCall>)
        import::append_api_call_json(out, r);
    else
        import::append_event_json(out, r);
}

template <class R>
void expect_same_fields(const R& want, const R& got) {
    fields::for_each_field<R>([&](const auto& f) { EXPECT_TRUE(want.*(f.member) == got.*(f.member)) << f.key; });
}

// The record as written and read back: a record with the blank values (the required fields given, "function" and
// "name" must not be empty for the schema; the readers do not mind), and every field set. In that order: calls are
// listed by id, and the blank call's id (0) is the smaller.
template <class R>
void round_trip() {
    SCOPED_TRACE(std::string(fields::RecordFields<R>::section));
    const std::vector<R> originals = {fields::RecordFields<R>::blank(), every_field_set<R>()};
    Report report;
    records<R>(report) = originals;
    std::ostringstream text;
    write_json(report, text);

    auto dom = report_from_json(json::parse(text.str()));
    ASSERT_TRUE(dom) << dom.error().message;
    fs::path file = fs::temp_directory_path() / ("nvtrace-record-fields-" + std::to_string(::getpid()) + ".json");
    std::ofstream(file, std::ios::binary) << text.str();
    auto sax = read_report_file(file.string());
    fs::remove(file);
    ASSERT_TRUE(sax) << sax.error().message;
    for (const Report* back : {&*dom, &*sax}) {
        ASSERT_EQ(records<R>(*const_cast<Report*>(back)).size(), originals.size());
        for (std::size_t i = 0; i < originals.size(); ++i) {
            SCOPED_TRACE(i);
            expect_same_fields(originals[i], records<R>(*const_cast<Report*>(back))[i]);
        }
    }
    // KernelLogMessage::attached "" is written "none" and reads back as "none": the one field whose empty
    // value is not kept, by its Empty rule.
}

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

template <class R>
void direct_writer_matches_dom_writer() {
    SCOPED_TRACE(std::string(fields::RecordFields<R>::section));
    Report report;
    records<R>(report) = {every_field_set<R>(), fields::RecordFields<R>::blank()};
    const json dom = to_json(report)[std::string(fields::RecordFields<R>::section)];
    ASSERT_EQ(dom.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        std::string got = "before";
        append_direct(got, records<R>(report)[i]);
        EXPECT_EQ(got, "before" + dump(dom[i]));
        // Every key of the table is written, except a field whose rule leaves an unset value out.
        std::size_t written = 0;
        fields::for_each_field<R>([&](const auto& f) {
            if (dom[i].contains(std::string(f.key))) ++written;
        });
        EXPECT_EQ(written, dom[i].size());
    }
}

}  // namespace

TEST(RecordFields, EveryFieldSurvivesWriterAndBothReaders) {
    round_trip<Call>();
    round_trip<IoctlRecord>();
    round_trip<IoctlStat>();
    round_trip<GraphNode>();
    round_trip<MarkerEntry>();
    round_trip<EventRecord>();
    round_trip<ApiCall>();
    // attached "" becomes "none" in a report: the blank message reads back with it.
    Report report;
    report.kernel_log = {every_field_set<KernelLogMessage>(), fields::RecordFields<KernelLogMessage>::blank()};
    std::ostringstream text;
    write_json(report, text);
    auto back = report_from_json(json::parse(text.str()));
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->kernel_log.size(), 2u);
    expect_same_fields(report.kernel_log[0], back->kernel_log[0]);
    EXPECT_EQ(back->kernel_log[1].attached, "none");
    back->kernel_log[1].attached.clear();
    expect_same_fields(report.kernel_log[1], back->kernel_log[1]);
}

TEST(RecordFields, DirectWritersPrintTheDomWritersBytes) {
    direct_writer_matches_dom_writer<Call>();
    direct_writer_matches_dom_writer<IoctlRecord>();
    direct_writer_matches_dom_writer<IoctlStat>();
    direct_writer_matches_dom_writer<GraphNode>();
    direct_writer_matches_dom_writer<KernelLogMessage>();
    direct_writer_matches_dom_writer<MarkerEntry>();
    direct_writer_matches_dom_writer<EventRecord>();
    direct_writer_matches_dom_writer<ApiCall>();

    // The --calls-jsonl writer: the same object, one a line.
    const Call c = every_field_set<Call>();
    std::ostringstream lines;
    {
        import::CallsJsonlWriter w(lines);
        w.write(c);
        w.write(Call{});
    }
    Report report;
    report.calls = {c, Call{}};
    const json dom = to_json(report)["calls"];
    EXPECT_EQ(lines.str(), dump(dom[0]) + "\n" + dump(dom[1]) + "\n");
}

TEST(RecordFields, IoctlFdPathUnknownIsLeftOutWhenUnset) {
    IoctlRecord i;
    std::string s;
    import::append_ioctl_json(s, i);
    EXPECT_EQ(s.find("fd_path_unknown"), std::string::npos) << s;
    i.fd_path_unknown = "unknown: opened before the run";
    s.clear();
    import::append_ioctl_json(s, i);
    EXPECT_NE(s.find("\"fd_path_unknown\":\"unknown: opened before the run\""), std::string::npos) << s;
}

TEST(RecordFields, CallsCsvHasTheTablesColumns) {
    Report r;
    r.calls = {every_field_set<Call>(), Call{}};
    r.calls[0].comm = "plain";
    std::ostringstream out;
    write_calls_csv(r, out);
    std::istringstream in(out.str());
    std::string header;
    std::getline(in, header);
    std::string want;
    fields::for_each_field<Call>([&](const auto& f) { want += (want.empty() ? "" : ",") + std::string(f.key); });
    EXPECT_EQ(header, want);
    // The columns of before the table, in their place (readers that index columns keep working).
    EXPECT_EQ(header.rfind("id,parent,cpu,pid,comm,depth,function,module,entry_ns,duration_ns,retval,irq,entry_seen,"
                           "exit_seen,phase",
                           0),
              0u);
    std::string first_row, blank_row, more;
    ASSERT_TRUE(std::getline(in, first_row));
    ASSERT_TRUE(std::getline(in, blank_row));
    EXPECT_FALSE(std::getline(in, more));
    // Call{}: id 0, null parent, cpu -1, pid -1, empty comm, depth 0, empty function, nulls, false/true/true.
    EXPECT_EQ(blank_row, "0,,-1,-1,,0,,,,,,false,true,true,,,,");
}

// ---- docs/report.schema.json against the tables ----

namespace {

json schema() {
    std::ifstream in(std::string(NVTRACE_TEST_DATA) + "/../../docs/report.schema.json");
    return json::parse(in);
}

// The property with a $ref resolved.
json resolve(const json& root, json p) {
    if (p.contains("$ref")) {
        std::string ref = p["$ref"];
        EXPECT_EQ(ref.rfind("#/$defs/", 0), 0u) << ref;
        json def = root["$defs"][ref.substr(8)];
        p.erase("$ref");
        def.update(p);
        return def;
    }
    return p;
}

std::set<std::string> type_set(const json& p) {
    std::set<std::string> out;
    if (!p.contains("type")) return out;
    if (p["type"].is_string())
        out.insert(p["type"].get<std::string>());
    else
        for (const auto& t : p["type"])
            out.insert(t.get<std::string>());
    return out;
}

template <class T>
std::set<std::string> json_types(fields::Empty e) {
    std::set<std::string> out;
    if constexpr (is_optional<T>::value) {
        out = json_types<typename T::value_type>(fields::Empty::as_is);
        out.insert("null");
    } else if constexpr (std::is_same_v<T, bool>) {
        out.insert("boolean");
    } else if constexpr (std::is_integral_v<T>) {
        out.insert("integer");
    } else if constexpr (std::is_same_v<T, std::string>) {
        out.insert("string");
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>> ||
                         std::is_same_v<T, std::map<std::string, std::uint64_t>>) {
        out.insert("object");
    } else {
        out.insert("array");
    }
    if (e == fields::Empty::null) out.insert("null");
    return out;
}

template <class R>
void schema_matches_table(const json& root) {
    const std::string section(fields::RecordFields<R>::section);
    SCOPED_TRACE(section);
    const json& items = root["properties"][section]["items"];
    ASSERT_TRUE(items.is_object());
    std::set<std::string> in_schema, in_table;
    for (const auto& [k, v] : items["properties"].items())
        in_schema.insert(k);
    std::set<std::string> schema_required;
    for (const auto& k : items.value("required", json::array()))
        schema_required.insert(k.get<std::string>());
    fields::for_each_field<R>([&](const auto& f) {
        const std::string key(f.key);
        SCOPED_TRACE(key);
        in_table.insert(key);
        if (!items["properties"].contains(key)) return;  // reported below, with the other differences
        const json p = resolve(root, items["properties"][key]);
        using M = std::decay_t<decltype(std::declval<R>().*(f.member))>;
        // The JSON types the writer can give ("enum" properties name their values instead).
        if (p.contains("type")) {
            EXPECT_EQ(type_set(p), json_types<M>(f.empty));
        }
        // A time or duration in ns is a non-negative integer; an optional_ns property is one.
        if (f.unit == fields::Unit::ns) {
            EXPECT_EQ(p.value("minimum", -1), 0);
        }
        if (items["properties"][key].value("$ref", "") == "#/$defs/optional_ns") {
            EXPECT_EQ(f.unit, fields::Unit::ns);
        }
        // What the schema requires is always written; what a reader needs, the schema requires.
        if (schema_required.count(key)) {
            EXPECT_NE(f.empty, fields::Empty::omit);
        }
        if (f.need == fields::Need::required) {
            EXPECT_TRUE(schema_required.count(key));
        }
    });
    EXPECT_EQ(in_schema, in_table);
    for (const auto& k : schema_required)
        EXPECT_TRUE(in_table.count(k)) << k;
}

}  // namespace

TEST(RecordFields, SchemaPropertiesAreTheTablesFields) {
    const json root = schema();
    schema_matches_table<Call>(root);
    schema_matches_table<IoctlRecord>(root);
    schema_matches_table<IoctlStat>(root);
    schema_matches_table<GraphNode>(root);
    schema_matches_table<KernelLogMessage>(root);
    schema_matches_table<MarkerEntry>(root);
    schema_matches_table<EventRecord>(root);
    schema_matches_table<ApiCall>(root);
}
