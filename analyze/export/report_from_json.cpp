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
    c.kernel_depth = maybe<int>(o, "kernel_depth", w);
    c.args = maybe<std::string>(o, "args", w);
    c.retaddr = maybe<std::string>(o, "retaddr", w);
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
    i.fd_path_unknown = maybe<std::string>(o, "fd_path_unknown", w);
    i.cmd = need<std::uint64_t>(o, "cmd", w);
    i.name = maybe<std::string>(o, "name", w);
    i.hclass = maybe<std::uint32_t>(o, "hclass", w);
    i.status = maybe<std::string>(o, "status", w);
    i.ctrl = maybe<std::uint32_t>(o, "ctrl", w);
    i.ctrl_class = maybe<std::string>(o, "ctrl_class", w);
    i.ret = maybe<std::int64_t>(o, "ret", w);
    i.errno_name = maybe<std::string>(o, "errno_name", w);
    i.errno_text = maybe<std::string>(o, "errno_text", w);
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
    cm.entries_in_buffer = maybe<std::uint64_t>(*c, "entries_in_buffer", w);
    cm.entries_written = maybe<std::uint64_t>(*c, "entries_written", w);
    cm.elided_spans = value_or<std::uint64_t>(*c, "elided_spans", w, 0);
    cm.unreadable_lines = value_or<std::uint64_t>(*c, "unreadable_lines", w, 0);
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

namespace {

// ---- read_report_file: nlohmann's SAX parser over the file read in blocks ----
//
// A saved report is mostly `calls` (1,000,000 of them for a 245 MB file). Building a DOM object per call and
// looking its fields up cost more than the lexing itself, so a `calls` element is filled straight from the
// SAX events into a Call, with the same rules and messages as call_from (the field's JSON type is recorded as
// it arrives and checked at the element's end, in call_from's order). Every other section element and the
// head are built as DOM values and converted by the same functions as report_from_json, so the two readers
// agree on everything.

// The file in blocks, as an input iterator for nlohmann's iterator_input_adapter: the file is never held
// whole (a report is as large as its calls) and not mapped (mapped pages count in the resident size).
class BlockReader {
public:
    explicit BlockReader(int fd) : fd_(fd), buf_(kBlock) {}
    // Next block into [p, lim); p = lim = nullptr at end of file or on a read error (then error() says why).
    void next(const char*& p, const char*& lim) {
        for (;;) {
            ssize_t n = ::read(fd_, buf_.data(), buf_.size());
            if (n > 0) {
                p = buf_.data();
                lim = p + n;
                return;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error_ = std::strerror(errno);
            p = lim = nullptr;
            return;
        }
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
    explicit BlockIterator(BlockReader& r) : r_(&r) { r_->next(p_, lim_); }
    const char& operator*() const { return *p_; }
    BlockIterator& operator++() {
        if (++p_ == lim_) r_->next(p_, lim_);
        return *this;
    }
    bool operator==(const BlockIterator& o) const { return p_ == o.p_; }
    bool operator!=(const BlockIterator& o) const { return p_ != o.p_; }

private:
    BlockReader* r_ = nullptr;
    const char* p_ = nullptr;
    const char* lim_ = nullptr;
};

// The fields of a call, in call_from's order (which is also the order its errors are checked in).
enum CallField : std::uint8_t {
    kId,
    kParent,
    kCpu,
    kPid,
    kComm,
    kDepth,
    kFunction,
    kModule,
    kEntryNs,
    kDurationNs,
    kRetval,
    kKernelDepth,
    kArgs,
    kRetaddr,
    kIrq,
    kEntrySeen,
    kExitSeen,
    kPhase,
    kCallFields,
    kUnknownField = kCallFields,
};

// Whether k is the literal (a fixed-size compare the compiler inlines; a library memcmp per key was 5 % of a
// read).
template <std::size_t N>
bool is(std::string_view k, const char (&lit)[N]) {
    return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

CallField call_field(std::string_view k) {
    if (k.empty()) return kUnknownField;
    switch (k[0]) {
        case 'a':
            if (is(k, "args")) return kArgs;
            break;
        case 'c':
            if (is(k, "cpu")) return kCpu;
            if (is(k, "comm")) return kComm;
            break;
        case 'd':
            if (is(k, "depth")) return kDepth;
            if (is(k, "duration_ns")) return kDurationNs;
            break;
        case 'e':
            if (is(k, "entry_ns")) return kEntryNs;
            if (is(k, "entry_seen")) return kEntrySeen;
            if (is(k, "exit_seen")) return kExitSeen;
            break;
        case 'f':
            if (is(k, "function")) return kFunction;
            break;
        case 'i':
            if (is(k, "id")) return kId;
            if (is(k, "irq")) return kIrq;
            break;
        case 'k':
            if (is(k, "kernel_depth")) return kKernelDepth;
            break;
        case 'm':
            if (is(k, "module")) return kModule;
            break;
        case 'p':
            if (is(k, "parent")) return kParent;
            if (is(k, "phase")) return kPhase;
            if (is(k, "pid")) return kPid;
            break;
        case 'r':
            if (is(k, "retval")) return kRetval;
            if (is(k, "retaddr")) return kRetaddr;
            break;
        default:
            break;
    }
    return kUnknownField;
}

constexpr const char* kCallFieldNames[] = {
    "id",          "parent", "cpu",          "pid",  "comm",    "depth", "function",   "module",    "entry_ns",
    "duration_ns", "retval", "kernel_depth", "args", "retaddr", "irq",   "entry_seen", "exit_seen", "phase"};

// The JSON type of a value as nlohmann's DOM would hold it (non-negative integers are "unsigned").
enum class Kind : std::uint8_t { missing, null, boolean, integer, unsigned_, floating, string, structured };

class ReportSax {
public:
    explicit ReportSax(Report& r) : r_(r) {}

    // The results: the first field error of a section element, a parse error, and the head (every top-level
    // key but the array sections, which hold only their elements that are not objects).
    std::optional<std::string> field_error;
    std::optional<std::string> parse_error_text;
    json head;

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

    // nlohmann's SAX interface.
    bool null() {
        return scalar(Kind::null, [] { return json(nullptr); });
    }
    bool boolean(bool v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            kinds_[field_] = Kind::boolean;
            bools_[field_] = v;
            return true;
        }
        return scalar(Kind::boolean, [v] { return json(v); });
    }
    bool number_integer(json::number_integer_t v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            kinds_[field_] = Kind::integer;
            ints_[field_] = v;
            return true;
        }
        return scalar(Kind::integer, [v] { return json(v); });
    }
    bool number_unsigned(json::number_unsigned_t v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            kinds_[field_] = Kind::unsigned_;
            uints_[field_] = v;
            return true;
        }
        return scalar(Kind::unsigned_, [v] { return json(v); });
    }
    bool number_float(json::number_float_t v, const json::string_t&) {
        return scalar(Kind::floating, [v] { return json(v); });
    }
    bool string(json::string_t& v) {
        if (state_ == State::call && skip_ == 0 && field_ != kUnknownField) {
            kinds_[field_] = Kind::string;
            if (std::string* s = call_string(field_)) s->assign(v);
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
                if (skip_ == 0) field_ = call_field(k);
                return true;
            case State::dom:
                dom_key_ = k;
                return true;
            default:
                return true;
        }
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
        parse_error_text = e.what();
        return false;
    }

private:
    enum class State { top, head, section, call, dom, done };
    // Where a DOM value goes once complete: the top (not an object), head[key], a section element to convert,
    // or a section element that is not an object (kept in head[key] for the "array of objects" error).
    enum class Dest { top, head_key, element, non_object };

    Report& r_;
    State state_ = State::top;
    std::string key_;                   // the current top-level key
    const Section* section_ = nullptr;  // its section, if it is one
    std::size_t index_ = 0;             // of the current element in its section

    // The call being read.
    Call call_;
    CallField field_ = kUnknownField;
    int skip_ = 0;  // depth inside an object or array value of a call field (skipped)
    std::array<Kind, kCallFields> kinds_{};
    std::array<bool, kCallFields> bools_{};
    std::array<std::int64_t, kCallFields> ints_{};
    std::array<std::uint64_t, kCallFields> uints_{};
    std::vector<std::vector<Call>> call_blocks_;

    // The DOM value being built.
    Dest dest_ = Dest::top;
    json dom_;
    std::vector<json*> open_;  // its open containers, innermost last
    std::string dom_key_;

    std::string* call_string(CallField f) {
        switch (f) {
            case kComm:
                return &call_.comm;
            case kFunction:
                return &call_.function;
            case kModule:
                if (!call_.module) call_.module.emplace();
                return &*call_.module;
            case kPhase:
                if (!call_.phase) call_.phase.emplace();
                return &*call_.phase;
            case kArgs:
                if (!call_.args) call_.args.emplace();
                return &*call_.args;
            case kRetaddr:
                if (!call_.retaddr) call_.retaddr.emplace();
                return &*call_.retaddr;
            default:
                return nullptr;
        }
    }

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
                if (skip_ == 0 && field_ != kUnknownField) kinds_[field_] = kind;
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
        if (skip_ == 0 && field_ != kUnknownField) kinds_[field_] = Kind::structured;
        ++skip_;
        return true;
    }

    void start_call() {
        state_ = State::call;
        field_ = kUnknownField;
        skip_ = 0;
        kinds_.fill(Kind::missing);
    }

    void end_call() {
        std::size_t index = index_++;
        if (field_error) return;
        try {
            convert_call(index);
        } catch (const FieldError& e) {
            field_error = e.where;
            return;
        }
        if (call_blocks_.empty() || call_blocks_.back().size() == kCallBlock) {
            call_blocks_.emplace_back();
            call_blocks_.back().reserve(kCallBlock);
        }
        call_blocks_.back().push_back(std::move(call_));
        call_ = Call{};
    }

    static constexpr std::size_t kCallBlock = 4096;

    // call_from's rules, on the recorded kinds.
    [[noreturn]] void wrong(std::size_t index, CallField f, const char* what) const {
        throw FieldError{fmt::format("calls[{}].{}: {}", index, kCallFieldNames[f], what)};
    }
    bool absent(CallField f) const { return kinds_[f] == Kind::missing || kinds_[f] == Kind::null; }
    std::uint64_t need_unsigned(std::size_t index, CallField f) const {
        if (kinds_[f] == Kind::missing) wrong(index, f, "missing");
        if (kinds_[f] != Kind::unsigned_) wrong(index, f, "expected an unsigned integer");
        return uints_[f];
    }
    std::optional<std::uint64_t> maybe_unsigned(std::size_t index, CallField f) const {
        if (absent(f)) return std::nullopt;
        return need_unsigned(index, f);
    }
    template <class T>
    std::optional<T> maybe_integer(std::size_t index, CallField f) const {
        if (absent(f)) return std::nullopt;
        if (kinds_[f] == Kind::unsigned_) return static_cast<T>(uints_[f]);
        if (kinds_[f] == Kind::integer) return static_cast<T>(ints_[f]);
        wrong(index, f, "expected an integer");
    }
    bool bool_or(std::size_t index, CallField f, bool fallback) const {
        if (absent(f)) return fallback;
        if (kinds_[f] != Kind::boolean) wrong(index, f, "expected a boolean");
        return bools_[f];
    }
    // A string field: its value is already in place when it is a string.
    void string_or_empty(std::size_t index, CallField f, std::string& s) const {
        if (absent(f))
            s.clear();
        else if (kinds_[f] != Kind::string)
            wrong(index, f, "expected a string");
    }
    void maybe_string(std::size_t index, CallField f, std::optional<std::string>& s) const {
        if (absent(f))
            s.reset();
        else if (kinds_[f] != Kind::string)
            wrong(index, f, "expected a string");
    }

    void convert_call(std::size_t i) {
        Call& c = call_;
        c.id = need_unsigned(i, kId);
        c.parent = maybe_unsigned(i, kParent);
        c.cpu = maybe_integer<int>(i, kCpu).value_or(-1);
        c.pid = maybe_integer<int>(i, kPid).value_or(-1);
        string_or_empty(i, kComm, c.comm);
        c.depth = maybe_integer<int>(i, kDepth).value_or(0);
        if (kinds_[kFunction] == Kind::missing) wrong(i, kFunction, "missing");
        if (kinds_[kFunction] != Kind::string) wrong(i, kFunction, "expected a string");
        maybe_string(i, kModule, c.module);
        c.entry_ns = maybe_unsigned(i, kEntryNs);
        c.duration_ns = maybe_unsigned(i, kDurationNs);
        c.retval = maybe_integer<std::int64_t>(i, kRetval);
        c.kernel_depth = maybe_integer<int>(i, kKernelDepth);
        maybe_string(i, kArgs, c.args);
        maybe_string(i, kRetaddr, c.retaddr);
        c.irq = bool_or(i, kIrq, false);
        c.entry_seen = bool_or(i, kEntrySeen, true);
        c.exit_seen = bool_or(i, kExitSeen, true);
        maybe_string(i, kPhase, c.phase);
    }

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
                ++index_;
                head[key_].push_back(std::move(dom_));
                state_ = State::section;
                return true;
        }
        return true;
    }
};

}  // namespace

Result<Report> read_report_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Report r;
    ReportSax sax(r);
    {
        BlockReader reader(fd);
        (void)json::sax_parse(BlockIterator(reader), BlockIterator(), &sax);
        ::close(fd);
        if (!reader.error().empty())
            return fail(Error::usage(fmt::format("{}: cannot read: {}", path, reader.error())));
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
            // Elements that are not objects were kept in the head: they are errors.
            if (!a->empty()) throw FieldError{fmt::format("{}: expected an array of objects", s.key)};
        }
    } catch (const FieldError& e) {
        return fail(Error::usage(fmt::format("{}: {}", path, e.where)));
    }
    return r;
}

bool is_saved_report_input(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) return true;
    struct stat st {};
    if (path == "-" || (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)))
        return false;  // not peeked: what a pipe gives can be read only once (load_report_input reads it)
    std::ifstream in(path, std::ios::binary);
    if (!in) return true;  // load_report_input says why
    char ch = 0;
    while (in.get(ch) && (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')) {
    }
    return ch == '{';
}

namespace {

// The report of an imported trace, as load_report_input gives it (source.kind "file", `path` as named).
Result<Report> report_of_trace(Result<ImportResult> imported, const std::string& path) {
    if (!imported) return fail(imported.error());
    Report r = build_report(imported->stream);
    for (auto& m : imported->kernel_log)
        r.kernel_log.push_back(std::move(m));
    r.source = {{"kind", "file"}, {"path", path}, {"format", std::string(format_name(imported->format))}};
    return r;
}

}  // namespace

std::optional<Result<Report>> saved_report_from_text(std::string_view text, const std::string& name) {
    auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || text[first] != '{') return std::nullopt;
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return Result<Report>(fail(Error::usage(name + ": starts with '{' but is not valid JSON")));
    auto r = report_from_json(j);
    if (!r) return Result<Report>(fail(Error::usage(name + ": " + r.error().message)));
    return r;
}

Result<Report> load_report_input(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        fs::path rep = fs::path(path) / "report.json";
        if (!fs::exists(rep, ec)) {
            // As `nvtrace report DIR` says it: a run killed before it wrote its report left raw/ only.
            if (!fs::exists(fs::path(path) / "meta.json", ec) && fs::exists(fs::path(path) / "raw", ec))
                return fail(Error::usage(fmt::format(
                    "{}: no report.json: an unfinished capture (nvtrace was killed before writing it?)", path)));
            return fail(Error::usage(fmt::format("{}: not a capture directory (no report.json in it)", path)));
        }
        return read_report_file(rep.string());
    }
    // Standard input, a pipe or a FIFO (`cat X | nvtrace export -`, `<(...)`): read once, whole, then as report
    // reads it (report.md): a saved report when it starts with '{', else a trace. Peeking and then reading the
    // pipe again lost what the peek had read.
    struct stat st {};
    if (path == "-" || (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))) {
        const std::string name = path == "-" ? "<stdin>" : path;
        auto text = read_input_whole(path);
        if (!text) return fail(text.error());
        if (auto saved = saved_report_from_text(*text, name)) return std::move(*saved);
        return report_of_trace(import_text(*text, name), path);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    in.close();
    if (is_saved_report_input(path)) return read_report_file(path);
    return report_of_trace(import_file(path), path);
}

}  // namespace nvtrace
