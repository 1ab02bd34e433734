#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>
#if NVTRACE_SIMDJSON
#include <simdjson.h>
#endif

#include "../json_values.hpp"
#include "../record_fields.hpp"
#include "../report_head.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/stream_report.hpp"

namespace nvtrace {

namespace {

using nlohmann::json;

// A field of the wrong type: thrown inside this file only, turned into an Error at the section boundary.
struct FieldError {
    std::string where;
};

const json* field(const json& o, std::string_view key) {
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

// The JSON type of a value as nlohmann's DOM would hold it (non-negative integers are "unsigned").
enum class Kind : std::uint8_t { missing, null, boolean, integer, unsigned_, floating, string, structured };

// One key's value as a reader has it: from a DOM object, or recorded from the SAX events (read_report_file).
struct Value {
    Kind kind = Kind::missing;
    bool boolean = false;
    std::int64_t integer = 0;
    std::uint64_t unsigned_ = 0;
    const json* node = nullptr;  // the DOM value (a string, array or object); null in the SAX reader
};

Value dom_value(const json* v) {
    Value out;
    out.node = v;
    if (!v) return out;
    switch (v->type()) {
        case json::value_t::null:
            out.kind = Kind::null;
            break;
        case json::value_t::boolean:
            out.kind = Kind::boolean;
            out.boolean = v->get<bool>();
            break;
        case json::value_t::number_integer:
            out.kind = Kind::integer;
            out.integer = v->get<std::int64_t>();
            break;
        case json::value_t::number_unsigned:
            out.kind = Kind::unsigned_;
            out.unsigned_ = v->get<std::uint64_t>();
            break;
        case json::value_t::number_float:
            out.kind = Kind::floating;
            break;
        case json::value_t::string:
            out.kind = Kind::string;
            break;
        default:
            out.kind = Kind::structured;
            break;
    }
    return out;
}

// Where a record is ("calls", 3), formatted only for an error: "calls[3].KEY: WHAT".
struct Where {
    std::string_view section;
    std::size_t index;
};
[[noreturn]] void wrong(const Where& w, std::string_view key, const char* what) {
    throw FieldError{fmt::format("{}[{}].{}: {}", w.section, w.index, key, what)};
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// `v` into `dst` by dst's type (record_fields.hpp); `take(dst)` moves a string value in; `fail(what)` throws.
template <class T, class Take, class Fail>
void read_value(T& dst, const Value& v, Take&& take, Fail&& fail) {
    if constexpr (is_optional<T>::value) {
        read_value(dst.emplace(), v, take, fail);
    } else if constexpr (std::is_same_v<T, bool>) {
        if (v.kind != Kind::boolean) fail("expected a boolean");
        dst = v.boolean;
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
        if (v.kind != Kind::unsigned_) fail("expected an unsigned integer");
        dst = static_cast<T>(v.unsigned_);
    } else if constexpr (std::is_integral_v<T>) {
        if (v.kind == Kind::unsigned_)
            dst = static_cast<T>(v.unsigned_);
        else if (v.kind == Kind::integer)
            dst = static_cast<T>(v.integer);
        else
            fail("expected an integer");
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (v.kind != Kind::string) fail("expected a string");
        take(dst);
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
        if (!v.node || !v.node->is_object()) fail("expected an object or null");
        for (const auto& [k, x] : v.node->items()) {
            if (!x.is_string()) throw FieldError{fmt::format("{}: expected a string", fail.sub("." + k))};
            dst[k] = x.template get<std::string>();
        }
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::uint64_t>>) {
        if (!v.node || !v.node->is_object()) fail("expected an object or null");
        for (const auto& [k, x] : v.node->items()) {
            if (!x.is_number_unsigned())
                throw FieldError{fmt::format("{}: expected an unsigned integer", fail.sub("." + k))};
            dst[k] = x.template get<std::uint64_t>();
        }
    } else {
        if (!v.node || !v.node->is_array()) fail("expected an array or null");
        for (std::size_t k = 0; k < v.node->size(); ++k) {
            const Value e = dom_value(&(*v.node)[k]);
            read_value(
                dst.emplace_back(), e, [&](std::string& d) { d = e.node->template get<std::string>(); },
                [&](const char* what) -> void {
                    throw FieldError{fmt::format("{}: {}", fail.sub(fmt::format("[{}]", k)), what)};
                });
        }
    }
}

// The error callback of one field: fail(what) throws "calls[3].KEY: WHAT"; sub(s) names a part of the value.
struct FieldFail {
    const Where& w;
    std::string_view key;
    [[noreturn]] void operator()(const char* what) const { wrong(w, key, what); }
    std::string sub(const std::string& s) const { return fmt::format("{}[{}].{}{}", w.section, w.index, key, s); }
};

// R's field I from `src` (DomSource or the SAX reader's recorded values) by the table's rules.
template <class R, std::size_t I, class Src>
void read_field(R& r, Src& src, const Where& w) {
    constexpr auto& f = fields::field<R, I>();
    const Value v = src.value(I);
    const FieldFail fail{w, f.key};
    if (v.kind == Kind::missing && f.need == fields::Need::required) fail("missing");
    if ((v.kind == Kind::missing || v.kind == Kind::null) && f.need != fields::Need::required) return;
    read_value(
        r.*(f.member), v, [&](std::string& d) { src.take_string(I, v, d); }, fail);
}

template <class R, class Src>
R read_record(Src& src, const Where& w) {
    R r = fields::RecordFields<R>::blank();
    fields::for_each_index<R>([&](auto i) { read_field<R, decltype(i)::value>(r, src, w); });
    return r;
}

// A record's values in a DOM object.
template <class R>
struct DomSource {
    const json& o;
    Value value(std::size_t i) const {
        auto it = o.find(fields::keys<R>()[i]);
        return dom_value(it == o.end() ? nullptr : &*it);
    }
    void take_string(std::size_t, const Value& v, std::string& d) const { d = v.node->get<std::string>(); }
};

template <class R>
R dom_record(const json& o, const Where& w) {
    DomSource<R> src{o};
    return read_record<R>(src, w);
}

Check check_from(const json& o, const std::string& w) {
    return {need<std::string>(o, "id", w), need<std::string>(o, "result", w),
            value_or<std::string>(o, "evidence", w, ""), value_or<std::string>(o, "why", w, "")};
}

// The array sections: key -> how one element lands in the Report.
using AddElement = void (*)(Report&, const json&, const Where&);
struct Section {
    std::string_view key;
    AddElement add;
};
template <class R, std::vector<R> Report::*Records>
void add_record(Report& r, const json& o, const Where& w) {
    (r.*Records).push_back(dom_record<R>(o, w));
}
template <class R, std::vector<R> Report::*Records>
constexpr Section section_of() {
    return {fields::RecordFields<R>::section, add_record<R, Records>};
}
constexpr Section kSections[] = {
    section_of<Call, &Report::calls>(),
    section_of<GraphNode, &Report::graph>(),
    section_of<KernelLogMessage, &Report::kernel_log>(),
    {"ioctls",
     [](Report& r, const json& o, const Where& w) {
         IoctlRecord io = dom_record<IoctlRecord>(o, w);
         // Reports written before duration_ns: the difference of the times, as the builder computes it.
         // An old strace report wrote 0 for both times it did not have: no real call takes 0 ns.
         if (!io.duration_ns && io.enter_ns && io.exit_ns && *io.exit_ns > *io.enter_ns)
             io.duration_ns = *io.exit_ns - *io.enter_ns;
         r.ioctls.push_back(std::move(io));
     }},
    section_of<IoctlStat, &Report::ioctl_stats>(),
    section_of<MarkerEntry, &Report::markers>(),
    section_of<EventRecord, &Report::events>(),
    section_of<ApiCall, &Report::api_calls>(),
    {"checks", [](Report& r, const json& o,
                  const Where& w) { r.checks.push_back(check_from(o, fmt::format("{}[{}]", w.section, w.index))); }},
};

const Section* section(std::string_view key) {
    for (const auto& s : kSections)
        if (key == s.key) return &s;
    return nullptr;
}

void add_element(Report& r, const Section& s, const json& o, std::size_t index) {
    const Where where{s.key, index};
    if (!o.is_object())
        throw FieldError{fmt::format("{}[{}]: expected an object, found {}", s.key, index, o.type_name())};
    s.add(r, o, where);
}

// Everything but the array sections: schema, source, environment, completeness.
void fill_head(Report& r, const json& j) {
    if (!j.is_object()) throw FieldError{"(top): expected a JSON object"};
    const json* schema = field(j, "schema");
    if (!schema || !schema->is_string() || schema->get<std::string>() != kReportSchema)
        throw FieldError{fmt::format("schema: expected \"{}\", found {}", kReportSchema,
                                     schema ? schema->dump() : std::string("nothing"))};
    for (const char* key : {"source", "environment"})
        if (const json* o = field(j, key); o && !o->is_object())
            throw FieldError{fmt::format("{}: expected an object, found {}", key, o->type_name())};
    if (const json* s = field(j, "source")) r.source = report_source_from_json(*s);
    if (const json* e = field(j, "environment")) r.environment = report_environment_from_json(*e);
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
    cm.overruns = value_or<std::uint64_t>(*c, "overruns", w, 0);
    cm.dropped_events = value_or<std::uint64_t>(*c, "dropped_events", w, 0);
    cm.graph_overruns = value_or<std::uint64_t>(*c, "graph_overruns", w, 0);
    cm.entries_in_buffer = maybe<std::uint64_t>(*c, "entries_in_buffer", w);
    cm.entries_written = maybe<std::uint64_t>(*c, "entries_written", w);
    if (const json* gs = field(*c, "gaps"); gs && gs->is_array())
        for (std::size_t k = 0; k < gs->size(); ++k) {
            std::string gw = fmt::format("completeness.gaps[{}]", k);
            const json& g = (*gs)[k];
            cm.gaps.push_back({need<std::string>(g, "kind", gw), value_or<int>(g, "cpu", gw, -1),
                               maybe<std::uint64_t>(g, "count", gw), maybe<std::uint64_t>(g, "ts_ns", gw),
                               maybe<std::uint32_t>(g, "line", gw)});
        }
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
    // "complete": true beside counts that say data is missing (a report edited by hand, another producer's) is not
    // believed: the summary printed "complete: yes" under the data_loss diagnostics it listed, while check treated
    // the same data as lost. The report is incomplete, with a reason for each count, as the builder gives them.
    if (cm.complete) {
        const std::string said = " (the saved report said complete)";
        for (const auto& [n, what] : {std::pair<std::uint64_t, const char*>{cm.lost_events, "events lost"},
                                      {cm.overruns, "events overwritten in the ring buffer (overrun)"},
                                      {cm.dropped_events, "events dropped"},
                                      {cm.graph_overruns, "graph return-stack overruns"}})
            if (n) cm.reasons.push_back(fmt::format("{} {}{}", n, what, said));
        for (const Diagnostic& d : cm.diagnostics) {
            const DiagnosticInfo* info = find_diagnostic(d.name);
            bool loses = info ? makes_incomplete(*info) : d.severity == "data_loss";
            if (loses && d.count)
                cm.reasons.push_back(fmt::format("{}: {} ({}){}", d.name, d.count, d.first_example, said));
        }
        // The counts report.json derives from the diagnostics, written beside them: a count the diagnostics read
        // back do not hold (they were left out) is still data missing.
        for (const auto& [key, derived, what] :
             {std::tuple<const char*, std::uint64_t, const char*>{"unreadable_lines", cm.unreadable_lines(),
                                                                  "lines could not be read"},
              {"elided_spans", cm.elided_spans(), "elided spans"},
              {"orphan_returns", cm.orphan_returns(), "returns without their entry"},
              {"unclosed_calls", cm.unclosed_calls(), "calls without their return"}})
            if (const std::uint64_t n = value_or<std::uint64_t>(*c, key, w, 0); n && !derived)
                cm.reasons.push_back(fmt::format("{} {}{}", n, what, said));
        if (!cm.gaps.empty())
            cm.reasons.push_back(fmt::format("{} place{} where data is missing (completeness.gaps){}", cm.gaps.size(),
                                             cm.gaps.size() == 1 ? "" : "s", said));
        cm.complete = cm.reasons.empty();
    }
}

// A report written before `ioctl_stats` existed: the statistics of its ioctls, as the builder makes them.
void fill_ioctl_stats(Report& r, const json& head) {
    if (!field(head, fields::RecordFields<IoctlStat>::section) && !r.ioctls.empty())
        r.ioctl_stats = ioctl_stats(r.ioctls);
}

// The calls as nvtrace writes them: unique ids, and a parent entered before its children, so with a smaller id. A
// call that is its own parent, or parents in a cycle (one of its links then points to a larger id), would send
// every walk up the tree (check's chains, diff's tries) round forever. A parent not in the report is allowed (the
// call heads its own tree, as in ioctl_kernel_costs).
//
// Checked call by call, so that a reader that does not keep the calls (read_report_file with a sink) refuses the
// same files with the same messages: the first call id listed twice, else the first call (by position) that is its
// own parent or has a parent with a larger id that is in the report.
class CallTreeCheck {
public:
    void add(const Call& c) {
        if (!c.exit_seen && unclosed_++ == 0) first_unclosed_ = c.id;
        if (!c.entry_seen && unentered_++ == 0) first_unentered_ = c.id;
        add(c.id, c.parent);
    }
    // A report that says it is complete while calls in it never returned or were never entered (exit_seen or
    // entry_seen false: the builder counts each as unclosed_call or orphan_return, data_loss) is not believed,
    // like fill_head's counts.
    void believe_unclosed(Completeness& cm) const {
        if (!cm.complete || (!unclosed_ && !unentered_)) return;
        auto reason = [&](std::uint64_t n, std::uint64_t first, const char* what, const char* field) {
            if (n)
                cm.reasons.push_back(
                    fmt::format("{} call{} without {} {} ({} false, first: call {}; the saved "
                                "report said complete)",
                                n, n == 1 ? "" : "s", n == 1 ? "its" : "their", what, field, first));
        };
        reason(unclosed_, first_unclosed_, "return", "exit_seen");
        reason(unentered_, first_unentered_, "entry", "entry_seen");
        cm.complete = false;
    }
    void add(std::uint64_t id, std::optional<std::uint64_t> parent) {
        const std::size_t i = n_++;
        if (twice_) return;
        if (dense_ && id != i + 1) {  // ids 1..N in order: what nvtrace writes; no set needed until one is not
            dense_ = false;
            for (std::size_t k = 1; k <= i; ++k)
                ids_.insert(k);
        }
        if (!dense_ && !ids_.insert(id).second) {
            twice_ = {i, fmt::format("calls[{}]: id {} appears twice", i, id)};
            return;
        }
        // report.json lists its calls by id (docs/report-format.md): the readers of the calls (the diff's fold, the
        // exports) find a parent among the calls before it, so a child listed before its parent would be a root.
        if (i > 0 && id < last_id_ && !out_of_order_)
            out_of_order_ = {i, fmt::format("calls[{}]: id {} after id {}: the calls must be listed by id, parents "
                                            "before their children",
                                            i, id, last_id_)};
        last_id_ = id;
        // Whether a larger parent is in the report is known at the end; after a call that is its own parent,
        // later calls cannot be the first error.
        if (parent && *parent >= id && !own_parent_) {
            suspects_.push_back({i, id, *parent});
            own_parent_ = *parent == id;
        }
    }
    // The first problem in the file's order.
    std::optional<std::string> result() const {
        std::optional<Problem> first = twice_;
        auto earlier = [&](const std::optional<Problem>& p) {
            if (p && (!first || p->index < first->index)) first = p;
        };
        earlier(out_of_order_);
        for (const auto& s : suspects_) {
            if (first && first->index < s.index) break;
            if (s.parent == s.id) {
                earlier(Problem{s.index, fmt::format("calls[{}]: call {} is its own parent", s.index, s.id)});
                break;
            }
            if (dense_ ? s.parent <= n_ : ids_.count(s.parent) > 0) {
                earlier(Problem{s.index, fmt::format("calls[{}]: parent {} of call {} has a larger id (a parent is "
                                                     "entered before its children: a cycle?)",
                                                     s.index, s.parent, s.id)});
                break;
            }
        }
        return first ? std::optional<std::string>(first->message) : std::nullopt;
    }

private:
    struct Suspect {
        std::size_t index;
        std::uint64_t id, parent;
    };
    std::size_t n_ = 0;
    std::uint64_t unclosed_ = 0, first_unclosed_ = 0, unentered_ = 0, first_unentered_ = 0;
    bool dense_ = true;
    bool own_parent_ = false;
    std::unordered_set<std::uint64_t> ids_;
    struct Problem {
        std::size_t index;
        std::string message;
    };
    std::optional<Problem> twice_, out_of_order_;
    std::uint64_t last_id_ = 0;
    std::vector<Suspect> suspects_;  // calls whose parent id is not smaller than their own, in order
};

std::optional<std::string> bad_call_tree(const std::vector<Call>& calls, Completeness& cm) {
    CallTreeCheck check;
    for (const Call& c : calls)
        check.add(c);
    check.believe_unclosed(cm);
    return check.result();
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
    if (auto bad = bad_call_tree(r.calls, r.completeness)) return fail(Error::usage(*bad));
    fill_ioctl_stats(r, j);
    return r;
}

namespace {

// ---- read_report_file: nlohmann's SAX parser over the file read in blocks ----
//
// A saved report is mostly `calls` (1,000,000 of them for a 245 MB file). Building a DOM object per call and
// looking its fields up cost more than the lexing itself, so a `calls` element is filled straight from the
// SAX events into a Call: each field's JSON type and value are recorded as they arrive and read at the
// element's end by read_record, the same function (record_fields.hpp's rules, order and messages) as the DOM
// reader's. Every other section element and the head are built as DOM values and converted by the same
// functions as report_from_json, so the two readers agree on everything.

// The file in blocks, as an input iterator for nlohmann's iterator_input_adapter: the file is never held
// whole (a report is as large as its calls) and not mapped (mapped pages count in the resident size).
class BlockReader {
public:
    explicit BlockReader(int fd) : fd_(fd), buf_(kBlock) { fill(); }
    // The unread bytes of the current block: p < lim, or p = lim = nullptr at end of file or on a read error
    // (then error() says why). Shared by the iterators and by the fast reader of `calls` (ReportSax).
    const char* p = nullptr;
    const char* lim = nullptr;
    // Next block into [p, lim); false at end of file or on a read error.
    bool fill() {
        for (;;) {
            ssize_t n = ::read(fd_, buf_.data(), buf_.size());
            if (n > 0) {
                p = buf_.data();
                lim = p + n;
                return true;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error_ = std::strerror(errno);
            p = lim = nullptr;
            return false;
        }
    }
    // Moves past [p, q) (q <= lim), reading the next block when the current one is used up.
    void advance(const char* q) {
        p = q;
        if (p == lim) fill();
    }
    const std::string& error() const { return error_; }

private:
    static constexpr std::size_t kBlock = 1 << 20;
    int fd_;
    std::vector<char> buf_;
    std::string error_;
};

class BlockIterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    BlockIterator() = default;  // the end
    explicit BlockIterator(BlockReader& r) : r_(&r) {}
    const char& operator*() const { return *r_->p; }
    BlockIterator& operator++() {
        if (++r_->p == r_->lim) r_->fill();
        return *this;
    }
    bool operator==(const BlockIterator& o) const { return at_end() == o.at_end(); }
    bool operator!=(const BlockIterator& o) const { return !(*this == o); }

private:
    bool at_end() const { return !r_ || !r_->p; }
    BlockReader* r_ = nullptr;
};

// A call field's index in record_fields.hpp's table; kUnknownField for a key that is none.
constexpr std::size_t kCallFields = fields::field_count<Call>;
constexpr std::size_t kUnknownField = kCallFields;

#if NVTRACE_SIMDJSON
// The bytes FastCalls' cut_element stops at: outside strings, a quote, a bracket or a minus sign ("-0"); inside, a
// quote, a backslash or a control character.
constexpr std::array<bool, 256> byte_class(bool in_string) {
    std::array<bool, 256> t{};
    if (in_string) {
        for (int c = 0; c < 0x20; ++c)
            t[c] = true;
        t['"'] = t['\\'] = true;
    } else {
        t['"'] = t['{'] = t['}'] = t['['] = t[']'] = t['-'] = true;
    }
    return t;
}
constexpr std::array<bool, 256> kStopOutside = byte_class(false), kStopInside = byte_class(true);

#endif

// "line L, column C" (from 1) of byte `n` of `in` (the last of those read when an error was met), as nlohmann's
// syntax errors say it. Read in blocks: only an error's path reads the file again.
std::string line_column(std::istream& in, std::size_t n) {
    std::size_t line = 1, col = 0;
    std::array<char, 1 << 16> buf{};
    while (n > 0 && in) {
        in.read(buf.data(), static_cast<std::streamsize>(std::min(n, buf.size())));
        const auto got = static_cast<std::size_t>(in.gcount());
        for (std::size_t i = 0; i < got; ++i) {
            if (buf[i] == '\n') {
                ++line;
                col = 0;
            } else {
                ++col;
            }
        }
        n -= std::min(n, got);
        if (got == 0) break;
    }
    return fmt::format("line {}, column {}", line, std::max<std::size_t>(col, 1));
}

class ReportSax {
public:
    // With `sink`, each call goes to it as it is read instead of into r.calls, but for the first `skip` calls
    // (given to it by an earlier read). With `fast` (and a sink), the elements of `calls` are read from `reader`
    // by FastCalls instead of nlohmann's lexer.
    ReportSax(Report& r, const CallSink* sink, std::size_t skip, BlockReader* fast)
        : r_(r), sink_(sink), skip_calls_(skip), fast_(fast) {}

    // FastCalls met something it does not read exactly as nlohmann's parser does (or bad JSON, or a bad field):
    // the file is to be read again without it, past the calls already given.
    bool fast_gave_up = false;
    std::size_t calls_given = 0;

    // The results: the first field error of a section element, a parse error, and the head (every top-level
    // key; an array section is there as an empty array).
    std::optional<std::string> field_error;
    std::optional<std::string> parse_error_text;
    std::size_t parse_error_at = 0;           // bytes read when it was met, the token included
    std::optional<std::string> out_of_range;  // the number, when that was the error
    json head;
    CallTreeCheck call_tree;  // of every call read

    void finish() {
        // The calls, gathered in blocks (no reallocation of a vector of 1,000,000 calls at twice its size),
        // moved into r.calls block by block, each block freed once moved.
        std::size_t n = 0;
        for (const auto& b : call_blocks_)
            n += b.size();
        r_.calls.reserve(r_.calls.size() + n);
        for (auto& b : call_blocks_) {
            std::move(b.begin(), b.end(), std::back_inserter(r_.calls));
            std::vector<Call>().swap(b);
        }
        call_blocks_.clear();
    }

    // The source of read_record for the call being read.
    Value value(std::size_t i) const { return values_[i]; }
    void take_string(std::size_t i, const Value&, std::string& d) { d.swap(strs_[i]); }

    // nlohmann's SAX interface.
    bool null() {
        return scalar(Kind::null, [] { return json(nullptr); });
    }
    bool boolean(bool v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            values_[field_].kind = Kind::boolean;
            values_[field_].boolean = v;
            return true;
        }
        return scalar(Kind::boolean, [v] { return json(v); });
    }
    bool number_integer(json::number_integer_t v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            values_[field_].kind = Kind::integer;
            values_[field_].integer = v;
            return true;
        }
        return scalar(Kind::integer, [v] { return json(v); });
    }
    bool number_unsigned(json::number_unsigned_t v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            values_[field_].kind = Kind::unsigned_;
            values_[field_].unsigned_ = v;
            return true;
        }
        return scalar(Kind::unsigned_, [v] { return json(v); });
    }
    bool number_float(json::number_float_t v, const json::string_t&) {
        return scalar(Kind::floating, [v] { return json(v); });
    }
    bool string(json::string_t& v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            values_[field_].kind = Kind::string;
            strs_[field_].assign(v);
            return true;
        }
        return scalar(Kind::string, [&v] { return json(v); });
    }
    bool binary(json::binary_t&) { return true; }  // not produced by the JSON parser

    bool start_object(std::size_t) {
        switch (state_) {
            case State::top:
                state_ = State::head;
                head = json::object();
                return true;
            case State::head:
                return dom_start(json::object(), Dest::head_key);
            case State::section:
                if (section_ == &kSections[0]) {
                    start_call();
                    return true;
                }
                return dom_start(json::object(), Dest::element);
            case State::call:
                return structured_in_call();
            case State::dom:
                return dom_open(json::object());
            case State::done:
                return true;
        }
        return true;
    }
    bool end_object() {
        switch (state_) {
            case State::head:
                state_ = State::done;
                return true;
            case State::call:
                if (skip_ > 0) {
                    --skip_;
                    return true;
                }
                end_call();
                state_ = State::section;
                return true;
            case State::dom:
                return dom_close();
            default:
                return true;
        }
    }
    bool start_array(std::size_t) {
        switch (state_) {
            case State::top:
                return dom_start(json::array(), Dest::top);
            case State::head:
                if (section_) {
                    head[key_] = json::array();
                    index_ = 0;
                    state_ = State::section;
#if NVTRACE_SIMDJSON
                    if (fast_ && section_ == &kSections[0]) return fast_calls();
#endif
                    return true;
                }
                return dom_start(json::array(), Dest::head_key);
            case State::section:
                return dom_start(json::array(), Dest::non_object);
            case State::call:
                return structured_in_call();
            case State::dom:
                return dom_open(json::array());
            case State::done:
                return true;
        }
        return true;
    }
    bool end_array() {
        switch (state_) {
            case State::section:
                state_ = State::head;
                section_ = nullptr;
                return true;
            case State::call:
                --skip_;
                return true;
            case State::dom:
                return dom_close();
            default:
                return true;
        }
    }
    bool key(json::string_t& k) {
        switch (state_) {
            case State::head:
                key_ = k;
                section_ = section(k);
                return true;
            case State::call:
                if (skip_ == 0) field_ = fields::index_of<Call>(k);
                return true;
            case State::dom:
                dom_key_ = k;
                return true;
            default:
                return true;
        }
    }
    bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
        parse_error_text = e.what();
        // A number out of range (out_of_range.406: "1e400", valid JSON that no double holds): nlohmann's text
        // names no position, a syntax error's does. The caller adds it.
        if (e.id == 406) out_of_range = token;
        parse_error_at = position;
        return false;
    }

private:
    enum class State { top, head, section, call, dom, done };
    // Where a DOM value goes once complete: the top (not an object), head[key], a section element to convert,
    // or a section element that is not an object (an error naming it).
    enum class Dest { top, head_key, element, non_object };

    Report& r_;
    const CallSink* sink_;
    std::size_t skip_calls_ = 0;
    BlockReader* fast_ = nullptr;
    State state_ = State::top;
    std::string key_;                   // the current top-level key
    const Section* section_ = nullptr;  // its section, if it is one
    std::size_t index_ = 0;             // of the current element in its section

    // The call being read: each field's value as recorded (a string's text in strs_).
    std::size_t field_ = kUnknownField;
    int skip_ = 0;  // depth inside an object or array value of a call field (skipped)
    std::array<Value, kCallFields> values_{};
    std::array<std::string, kCallFields> strs_;
    std::vector<std::vector<Call>> call_blocks_;

    // The DOM value being built.
    Dest dest_ = Dest::top;
    json dom_;
    std::vector<json*> open_;  // its open containers, innermost last
    std::string dom_key_;

    template <class Make>
    bool scalar(Kind kind, Make make) {
        switch (state_) {
            case State::top:
                dest_ = Dest::top;
                dom_ = make();
                return dom_done();
            case State::head:
                head[key_] = make();
                return true;
            case State::section:
                dest_ = Dest::non_object;
                dom_ = make();
                return dom_done();
            case State::call:
                // null or a float for a call field (its type is checked at the element's end); else an unknown
                // key's value, or something inside a skipped structure.
                if (skip_ == 0 && field_ != kUnknownField) values_[field_].kind = kind;
                return true;
            case State::dom:
                dom_put(make());
                return true;
            case State::done:
                return true;
        }
        return true;
    }

    bool structured_in_call() {
        if (skip_ == 0 && field_ != kUnknownField) values_[field_].kind = Kind::structured;
        ++skip_;
        return true;
    }

    void start_call() {
        state_ = State::call;
        field_ = kUnknownField;
        skip_ = 0;
        for (Value& v : values_)
            v.kind = Kind::missing;
    }

    void end_call() {
        std::size_t index = index_++;
        if (field_error) return;
        Call c;
        try {
            c = read_record<Call>(*this, Where{"calls", index});
        } catch (const FieldError& e) {
            field_error = e.where;
            return;
        }
        give(std::move(c));
    }

    void give(Call&& c) {
        call_tree.add(c);
        if (sink_) {
            if (calls_given++ >= skip_calls_) (*sink_)(std::move(c));
            return;
        }
        if (call_blocks_.empty() || call_blocks_.back().size() == kCallBlock) {
            call_blocks_.emplace_back();
            call_blocks_.back().reserve(kCallBlock);
        }
        call_blocks_.back().push_back(std::move(c));
    }

    static constexpr std::size_t kCallBlock = 4096;

#if NVTRACE_SIMDJSON
    // ---- FastCalls: the elements of `calls` through simdjson ----
    //
    // nlohmann's lexer takes about three quarters of a diff's time (docs/performance.md). The elements are cut out
    // of the file's blocks by their brackets and quotes, gathered into chunks of about 1 MiB ("[e1,e2,...]") and
    // parsed by simdjson's DOM parser (every value checked as it is parsed, by the kernels the library picks for
    // this CPU at run time); each element's fields are recorded as the SAX handlers record them and converted by
    // the same read_record. What the two parsers might read differently (a \u escape, "-0", an unescaped control
    // character in a string, a number simdjson refuses such as one above 2^64), and any error at all, end the fast
    // reading: the whole file is then read again by nlohmann (read_report_file), past the calls already given, so
    // that results and messages are nlohmann's.
    static constexpr std::size_t kChunk = 1 << 20;
    std::vector<char> chunk_;
    std::size_t chunk_elements_ = 0;
    std::optional<simdjson::dom::parser> parser_;

    bool give_up() {
        fast_gave_up = true;
        return false;  // stops nlohmann's parser
    }

    // Skips blanks; the next byte, or -1 at the end of the file.
    int skip_blanks() {
        BlockReader& r = *fast_;
        while (r.p) {
            const char* q = r.p;
            while (q < r.lim && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t'))
                ++q;
            const bool used_up = q == r.lim;
            r.advance(q);
            if (!used_up) return static_cast<unsigned char>(*r.p);
        }
        return -1;
    }

    // One element (an object) appended to chunk_; false where it is not one or something above is met.
    bool cut_element() {
        BlockReader& r = *fast_;
        if (!r.p || *r.p != '{') return false;
        int depth = 0;
        bool in_string = false, escape = false, minus = false;  // the last two: pending at a block's end
        auto at = [](const char* q) { return static_cast<unsigned char>(*q); };
        while (r.p) {
            const char* start = r.p;
            const char* q = start;
            const char* const lim = r.lim;
            bool done = false;
            if (escape) {
                if (*q == 'u') return false;
                escape = false;
                ++q;
            } else if (minus) {
                if (*q == '0') return false;
                minus = false;
            }
            while (q < lim) {
                if (in_string) {
                    while (q < lim && !kStopInside[at(q)])
                        ++q;
                    if (q == lim) break;
                    if (*q == '"') {
                        in_string = false;
                        ++q;
                    } else if (*q == '\\') {
                        if (q + 1 == lim) {
                            escape = true;
                            ++q;
                            break;
                        }
                        if (q[1] == 'u') return false;
                        q += 2;
                    } else {
                        return false;  // a control character
                    }
                } else {
                    while (q < lim && !kStopOutside[at(q)])
                        ++q;
                    if (q == lim) break;
                    const char ch = *q++;
                    if (ch == '"') {
                        in_string = true;
                    } else if (ch == '-') {
                        if (q == lim) {
                            minus = true;
                            break;
                        }
                        if (*q == '0') return false;
                    } else if (ch == '{' || ch == '[') {
                        ++depth;
                    } else if (--depth == 0) {
                        done = true;
                        break;
                    }
                }
            }
            chunk_.insert(chunk_.end(), start, q);
            r.advance(q);
            if (done) {
                chunk_.push_back(',');
                ++chunk_elements_;
                return true;
            }
        }
        return false;  // the file ends inside the element
    }

    // Called at the '[' of `calls`: reads its elements and leaves the reader at its ']' for nlohmann.
    bool fast_calls() {
        if (!parser_) parser_.emplace();
        chunk_.clear();
        chunk_.push_back('[');
        chunk_elements_ = 0;
        int c = skip_blanks();
        if (c == ']') return true;
        for (;;) {
            if (!cut_element()) return give_up();
            c = skip_blanks();
            if (chunk_.size() >= kChunk || c != ',')
                if (!parse_chunk()) return give_up();
            if (c == ']') return true;
            if (c != ',') return give_up();
            fast_->advance(fast_->p + 1);
            if (skip_blanks() == ']') return give_up();  // a trailing comma
        }
    }

    bool parse_chunk() {
        if (chunk_elements_ == 0) return true;
        chunk_.back() = ']';
        const std::size_t size = chunk_.size();
        chunk_.resize(size + simdjson::SIMDJSON_PADDING, ' ');
        bool ok = parse_elements(size);
        chunk_.clear();
        chunk_.push_back('[');
        chunk_elements_ = 0;
        return ok;
    }

    bool parse_elements(std::size_t size) {
        using namespace simdjson;
        dom::element doc;
        if (parser_->parse(chunk_.data(), size, false).get(doc)) return false;
        dom::array elements;
        if (doc.get_array().get(elements)) return false;
        std::size_t n = 0;
        for (dom::element element : elements) {
            dom::object o;
            if (element.get_object().get(o)) return false;
            for (Value& v : values_)
                v.kind = Kind::missing;
            for (dom::key_value_pair f : o) {
                const std::size_t i = fields::index_of<Call>(f.key);
                if (i != kUnknownField) record_value(f.value, values_[i], strs_[i]);
            }
            Call call;
            try {
                call = read_record<Call>(*this, Where{"calls", index_});
            } catch (const FieldError&) {
                return false;  // read again: nlohmann's reader names it
            }
            ++index_;
            ++n;
            give(std::move(call));
        }
        return n == chunk_elements_;
    }

    // A field's value, recorded as the SAX handlers record it. Kinds as nlohmann's DOM holds them: a number without
    // a fraction or an exponent is unsigned when it is not negative ("-0", an integer to nlohmann, is never here:
    // cut_element leaves it to nlohmann).
    static void record_value(simdjson::dom::element v, Value& dst, std::string& str) {
        using simdjson::dom::element_type;
        switch (v.type()) {
            case element_type::NULL_VALUE:
                dst.kind = Kind::null;
                break;
            case element_type::BOOL:
                dst.kind = Kind::boolean;
                dst.boolean = v.get_bool().value_unsafe();
                break;
            case element_type::INT64: {
                const std::int64_t x = v.get_int64().value_unsafe();
                if (x < 0) {
                    dst.kind = Kind::integer;
                    dst.integer = x;
                } else {
                    dst.kind = Kind::unsigned_;
                    dst.unsigned_ = static_cast<std::uint64_t>(x);
                }
                break;
            }
            case element_type::UINT64:
                dst.kind = Kind::unsigned_;
                dst.unsigned_ = v.get_uint64().value_unsafe();
                break;
            case element_type::DOUBLE:
                dst.kind = Kind::floating;
                break;
            case element_type::STRING:
                dst.kind = Kind::string;
                str.assign(v.get_string().value_unsafe());
                break;
            case element_type::ARRAY:
            case element_type::OBJECT:
                dst.kind = Kind::structured;
                break;
        }
    }
#endif  // NVTRACE_SIMDJSON

    // DOM building, for everything but calls.
    bool dom_start(json container, Dest dest) {
        dest_ = dest;
        dom_ = std::move(container);
        open_.assign(1, &dom_);
        state_ = State::dom;
        return true;
    }
    json* dom_put(json v) {
        json* top = open_.back();
        if (top->is_array()) {
            top->push_back(std::move(v));
            return &top->back();
        }
        json& slot = (*top)[dom_key_];
        slot = std::move(v);
        return &slot;
    }
    bool dom_open(json container) {
        open_.push_back(dom_put(std::move(container)));
        return true;
    }
    bool dom_close() {
        open_.pop_back();
        return open_.empty() ? dom_done() : true;
    }
    // A DOM value is complete: put it where it belongs.
    bool dom_done() {
        switch (dest_) {
            case Dest::top:
                head = std::move(dom_);
                state_ = State::done;
                return true;
            case Dest::head_key:
                head[key_] = std::move(dom_);
                state_ = State::head;
                return true;
            case Dest::element: {
                std::size_t index = index_++;
                if (!field_error) try {
                        add_element(r_, *section_, dom_, index);
                    } catch (const FieldError& e) {
                        field_error = e.where;
                    }
                state_ = State::section;
                return true;
            }
            case Dest::non_object:
                // Named here, in the order of the elements, as add_element names it for report_from_json.
                if (!field_error)
                    field_error = fmt::format("{}[{}]: expected an object, found {}", key_, index_, dom_.type_name());
                ++index_;
                state_ = State::section;
                return true;
        }
        return true;
    }
};

}  // namespace

namespace {

// One read of the file. `fast` (with a sink): `calls` through FastCalls; *gave_up then says whether it ended the
// fast reading (the result is then to be dropped) and *given how many calls the sink has had.
Result<Report> read_report_once(const std::string& path, const CallSink* sink, std::size_t skip, bool fast,
                                bool* gave_up, std::size_t* given) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Report r;
    BlockReader reader(fd);
    ReportSax sax(r, sink, skip, fast ? &reader : nullptr);
    (void)json::sax_parse(BlockIterator(reader), BlockIterator(), &sax);
    ::close(fd);
    if (fast) {
        *given = sax.calls_given;
        // Any error after a fast read is found again by nlohmann's reader: its positions (line, column) count the
        // bytes of `calls` that nlohmann did not see.
        *gave_up = sax.fast_gave_up || !reader.error().empty() || sax.parse_error_text || sax.field_error;
        if (*gave_up) return fail(Error::usage(""));
    }
    if (!reader.error().empty()) return fail(Error::usage(fmt::format("{}: cannot read: {}", path, reader.error())));
    if (sax.out_of_range) {
        std::ifstream again(path, std::ios::binary);
        return fail(
            Error::usage(fmt::format("{}: not valid JSON: the number {} at {} is out of the range of a double "
                                     "(numbers are read as 64-bit integers or doubles)",
                                     path, *sax.out_of_range, line_column(again, sax.parse_error_at))));
    }
    if (sax.parse_error_text)
        return fail(Error::usage(fmt::format("{}: not valid JSON: {}", path, *sax.parse_error_text)));
    if (sax.field_error) return fail(Error::usage(fmt::format("{}: {}", path, *sax.field_error)));
    sax.finish();
    try {
        fill_head(r, sax.head);
        for (const auto& s : kSections) {
            const json* a = field(sax.head, s.key);
            if (!a) continue;
            if (!a->is_array()) throw FieldError{fmt::format("{}: expected an array", s.key)};
        }
    } catch (const FieldError& e) {
        return fail(Error::usage(fmt::format("{}: {}", path, e.where)));
    }
    if (auto bad = sax.call_tree.result()) return fail(Error::usage(fmt::format("{}: {}", path, *bad)));
    sax.call_tree.believe_unclosed(r.completeness);
    fill_ioctl_stats(r, sax.head);
    return r;
}

}  // namespace

Result<Report> read_report_file(const std::string& path) {
    return read_report_once(path, nullptr, 0, false, nullptr, nullptr);
}

Result<Report> read_report_file(const std::string& path, const CallSink& calls) {
    bool gave_up = false;
    std::size_t given = 0;
    // Without simdjson (the static build: Debian ships no static libsimdjson) every byte goes through nlohmann.
    auto r = read_report_once(path, &calls, 0, NVTRACE_SIMDJSON != 0, &gave_up, &given);
    // An error of the checks after the parse (the head's fields, the call tree) does not depend on the reader.
    if (!gave_up) return r;
    return read_report_once(path, &calls, given, false, nullptr, nullptr);
}

bool is_saved_report_input(const std::string& path) {
    if (is_read_once(path)) return false;  // not opened here: load_report_input reads it, once
    auto in = open_input(path);
    return !in || (in->kind != InputKind::trace_dat && in->kind != InputKind::text);
}

std::optional<Result<Report>> saved_report_from_text(std::string_view text, const std::string& name) {
    // A UTF-8 byte order mark before the '{' is skipped, as by read_report_file (nlohmann's lexer skips it).
    const std::size_t bom = text.substr(0, 3) == "\xef\xbb\xbf" ? 3 : 0;
    auto first = text.find_first_not_of(" \t\r\n", bom);
    if (first == std::string_view::npos || text[first] != '{') return std::nullopt;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {  // parse_error names the line and column, as read_report_file's message
        return Result<Report>(fail(Error::usage(fmt::format("{}: not valid JSON: {}", name, e.what()))));
    }
    auto r = report_from_json(j);
    if (!r) return Result<Report>(fail(Error::usage(name + ": " + r.error().message)));
    return r;
}

namespace {

// The saved report file `in` names, if it is one that can be streamed: nullopt for what is built or read whole.
std::optional<Result<std::string>> saved_report_file(const Input& in) {
    switch (in.kind) {
        case InputKind::capture_dir:
        case InputKind::capture_dir_saved:
            if (!in.has_report_json)
                return Result<std::string>(
                    fail(Error::usage(fmt::format("{}: no report.json (the run did not write its report; `nvtrace "
                                                  "report {} -o FILE` re-analyses its raw pages)",
                                                  in.path, in.path))));
            return Result<std::string>((std::filesystem::path(in.path) / "report.json").string());
        case InputKind::saved_report:
            if (in.reopenable()) return Result<std::string>(in.path);
            break;
        case InputKind::trace_dat:
        case InputKind::text:
            break;
    }
    return std::nullopt;
}

}  // namespace

Result<Report> load_report(Input in, const CallSink& calls) {
    if (auto file = saved_report_file(in)) {
        if (!*file) return fail(file->error());
        return read_report_file(**file, calls);
    }
    auto r = load_report(std::move(in));
    if (!r) return r;
    for (Call& c : r->calls)
        calls(std::move(c));
    std::vector<Call>().swap(r->calls);
    return r;
}

Result<Report> load_report(Input in) {
    switch (in.kind) {
        case InputKind::capture_dir:
        case InputKind::capture_dir_saved:
            if (!in.has_report_json)
                return fail(
                    Error::usage(fmt::format("{}: no report.json (the run did not write its report; `nvtrace "
                                             "report {} -o FILE` re-analyses its raw pages)",
                                             in.path, in.path)));
            return read_report_file((std::filesystem::path(in.path) / "report.json").string());
        case InputKind::saved_report:
            // A file by name is parsed as it is read; what was read once (stdin, a FIFO, a socket) from memory.
            if (in.reopenable()) return read_report_file(in.path);
            if (auto saved = saved_report_from_text(in.bytes(), in.name)) return std::move(*saved);
            break;
        case InputKind::trace_dat:
        case InputKind::text:
            break;
    }
    // A trace: the one route (nvtrace/stream_report.hpp), the report held whole.
    ReportRequest req;
    req.out.hold = true;
    auto routed = report_input(in, std::move(req));
    if (!routed) return fail(routed.error());
    return std::move(routed->stream->report());
}

Result<Report> load_report_input(const std::string& path) {
    auto in = open_input(path);
    if (!in) return fail(in.error());
    return load_report(std::move(*in));
}

}  // namespace nvtrace
