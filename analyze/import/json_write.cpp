#include "json_write.hpp"

#include <charconv>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

namespace nvtrace::import {

namespace {

// A record written through a raw pointer into `s`, which grows by a bound computed beforehand (keys and
// numbers, and at most 6 bytes per byte of every string: "\u001f") and is cut back to what was written when
// the record is done: no capacity check per piece, as std::string::append makes.
class Raw {
public:
    Raw(std::string& s, std::size_t bound) : s_(s), old_(s.size()) {
        s.resize(old_ + bound);
        p_ = s.data() + old_;
    }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;
    ~Raw() { s_.resize(static_cast<std::size_t>(p_ - s_.data())); }
    char*& p() { return p_; }

private:
    std::string& s_;
    std::size_t old_;
    char* p_;
};

// Upper bound of what str() writes for `s` ("\u001f" is 6 bytes; nlohmann's U+FFFD for a bad byte, 3).
std::size_t string_bound(std::string_view s) {
    return 6 * s.size() + 2;
}
std::size_t opt_string_bound(const std::optional<std::string>& s) {
    return s ? string_bound(std::string_view(*s)) : 4;
}
std::size_t map_bound(const std::map<std::string, std::string>& m) {
    std::size_t n = 2;
    for (const auto& [k, v] : m)
        n += string_bound(k) + string_bound(v) + 2;
    return n;
}
std::size_t frames_bound(const std::vector<std::string>& frames) {
    std::size_t n = 4;
    for (const auto& f : frames)
        n += string_bound(f) + 1;
    return n;
}
constexpr std::size_t kKeysAndNumbers = 512;  // every key of a record and 24 bytes per number: < 512

// A string literal, its length known at compile time.
template <std::size_t N>
void lit(Raw& out, const char (&s)[N]) {
    std::memcpy(out.p(), s, N - 1);
    out.p() += N - 1;
}

void put(Raw& out, char c) {
    *out.p()++ = c;
}

template <class T>
void append_int(Raw& out, T v) {
    out.p() = std::to_chars(out.p(), out.p() + 24, v).ptr;
}

template <class T>
void append_opt(Raw& out, const std::optional<T>& v) {
    if (v)
        append_int(out, *v);
    else
        lit(out, "null");
}

void str(Raw& out, std::string_view s) {
    char* p = out.p();
    *p++ = '"';
    for (std::size_t i = 0; i < s.size(); ++i) {
        auto ch = static_cast<unsigned char>(s[i]);
        if (ch >= 0x20 && ch != '"' && ch != '\\' && ch < 0x80) {
            *p++ = static_cast<char>(ch);
            continue;
        }
        if (ch >= 0x80) {  // UTF-8 (or not): the std::string version hands it to nlohmann
            std::string tmp =
                nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            std::memcpy(out.p(), tmp.data(), tmp.size());
            out.p() += tmp.size();
            return;
        }
        *p++ = '\\';
        switch (ch) {
            case '"':
            case '\\':
                *p++ = static_cast<char>(ch);
                break;
            case '\b':
                *p++ = 'b';
                break;
            case '\t':
                *p++ = 't';
                break;
            case '\n':
                *p++ = 'n';
                break;
            case '\f':
                *p++ = 'f';
                break;
            case '\r':
                *p++ = 'r';
                break;
            default: {
                static constexpr char kHex[] = "0123456789abcdef";
                *p++ = 'u';
                *p++ = '0';
                *p++ = '0';
                *p++ = kHex[ch >> 4];
                *p++ = kHex[ch & 15];
            }
        }
    }
    *p++ = '"';
    out.p() = p;
}

void append_opt_string(Raw& out, const std::optional<std::string>& v) {
    if (v)
        str(out, *v);
    else
        lit(out, "null");
}

// ["a","b"], or null when empty (EventRecord::stack and user_stack).
void append_frames_or_null(Raw& out, const std::vector<std::string>& frames) {
    if (frames.empty()) {
        lit(out, "null");
        return;
    }
    put(out, '[');
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (i) put(out, ',');
        str(out, frames[i]);
    }
    put(out, ']');
}

// {"k":"v",...} in the map's order, which is nlohmann's (std::less on the bytes).
void append_string_map(Raw& out, const std::map<std::string, std::string>& m) {
    put(out, '{');
    bool first = true;
    for (const auto& [k, v] : m) {
        if (!first) put(out, ',');
        first = false;
        str(out, k);
        put(out, ':');
        str(out, v);
    }
    put(out, '}');
}

template <class Out>
void call_body(Out& out, const Call& k) {
    lit(out, "{\"args\":");
    append_opt_string(out, k.args);
    lit(out, ",\"comm\":");
    str(out, k.comm);
    lit(out, ",\"cpu\":");
    append_int(out, k.cpu);
    lit(out, ",\"depth\":");
    append_int(out, k.depth);
    lit(out, ",\"duration_ns\":");
    append_opt(out, k.duration_ns);
    lit(out, ",\"entry_ns\":");
    append_opt(out, k.entry_ns);
    k.entry_seen ? lit(out, ",\"entry_seen\":true") : lit(out, ",\"entry_seen\":false");
    k.exit_seen ? lit(out, ",\"exit_seen\":true") : lit(out, ",\"exit_seen\":false");
    lit(out, ",\"function\":");
    str(out, k.function);
    lit(out, ",\"id\":");
    append_int(out, k.id);
    k.irq ? lit(out, ",\"irq\":true") : lit(out, ",\"irq\":false");
    lit(out, ",\"kernel_depth\":");
    append_opt(out, k.kernel_depth);
    lit(out, ",\"module\":");
    append_opt_string(out, k.module);
    lit(out, ",\"parent\":");
    append_opt(out, k.parent);
    lit(out, ",\"phase\":");
    append_opt_string(out, k.phase);
    lit(out, ",\"pid\":");
    append_int(out, k.pid);
    lit(out, ",\"retaddr\":");
    append_opt_string(out, k.retaddr);
    lit(out, ",\"retval\":");
    append_opt(out, k.retval);
    put(out, '}');
}

template <class Out>
void ioctl_body(Out& out, const IoctlRecord& i) {
    lit(out, "{\"call\":");
    append_opt(out, i.call);
    lit(out, ",\"calls\":[");
    for (std::size_t k = 0; k < i.calls.size(); ++k) {
        if (k) put(out, ',');
        append_int(out, i.calls[k]);
    }
    lit(out, "],\"cmd\":");
    append_int(out, i.cmd);
    lit(out, ",\"comm\":");
    str(out, i.comm);
    lit(out, ",\"ctrl\":");
    append_opt(out, i.ctrl);
    lit(out, ",\"ctrl_class\":");
    append_opt_string(out, i.ctrl_class);
    lit(out, ",\"enter_ns\":");
    append_int(out, i.enter_ns);
    lit(out, ",\"errno_name\":");
    append_opt_string(out, i.errno_name);
    lit(out, ",\"errno_text\":");
    append_opt_string(out, i.errno_text);
    lit(out, ",\"exit_ns\":");
    append_opt(out, i.exit_ns);
    lit(out, ",\"fd\":");
    append_int(out, i.fd);
    lit(out, ",\"fd_path\":");
    append_opt_string(out, i.fd_path);
    if (i.fd_path_unknown) {  // only when known: reports written before it existed round-trip unchanged
        lit(out, ",\"fd_path_unknown\":");
        append_opt_string(out, i.fd_path_unknown);
    }
    lit(out, ",\"hclass\":");
    append_opt(out, i.hclass);
    lit(out, ",\"name\":");
    append_opt_string(out, i.name);
    lit(out, ",\"phase\":");
    append_opt_string(out, i.phase);
    lit(out, ",\"pid\":");
    append_int(out, i.pid);
    lit(out, ",\"ret\":");
    append_opt(out, i.ret);
    lit(out, ",\"status\":");
    append_opt_string(out, i.status);
    put(out, '}');
}

template <class Out>
void event_body(Out& out, const EventRecord& e) {
    lit(out, "{\"comm\":");
    str(out, e.comm);
    lit(out, ",\"cpu\":");
    append_int(out, e.cpu);
    lit(out, ",\"fields\":");
    if (e.fields)
        append_string_map(out, *e.fields);
    else
        lit(out, "null");
    lit(out, ",\"line\":");
    append_opt(out, e.line);
    lit(out, ",\"name\":");
    str(out, e.name);
    lit(out, ",\"pid\":");
    append_int(out, e.pid);
    lit(out, ",\"stack\":");
    append_frames_or_null(out, e.stack);
    lit(out, ",\"text\":");
    str(out, e.text);
    lit(out, ",\"ts\":");
    append_opt(out, e.ts_ns);
    lit(out, ",\"user_stack\":");
    append_frames_or_null(out, e.user_stack);
    put(out, '}');
}

template <class Out>
void marker_body(Out& out, const MarkerEntry& m) {
    lit(out, "{\"pid\":");
    append_int(out, m.pid);
    lit(out, ",\"text\":");
    str(out, m.text);
    lit(out, ",\"ts\":");
    append_opt(out, m.ts_ns);
    put(out, '}');
}

template <class Out>
void graph_body(Out& out, const GraphNode& n) {
    lit(out, "{\"count\":");
    append_int(out, n.count);
    lit(out, ",\"max_ns\":");
    append_int(out, n.max_ns);
    lit(out, ",\"min_ns\":");
    append_int(out, n.min_ns);
    lit(out, ",\"path\":");
    str(out, n.path);
    lit(out, ",\"self_ns\":");
    append_int(out, n.self_ns);
    lit(out, ",\"total_ns\":");
    append_int(out, n.total_ns);
    put(out, '}');
}

template <class Out>
void log_body(Out& out, const KernelLogMessage& m) {
    lit(out, "{\"attached\":");
    str(out, m.attached.empty() ? std::string_view("none") : std::string_view(m.attached));
    lit(out, ",\"call\":");
    append_opt(out, m.call);
    lit(out, ",\"fields\":");
    append_string_map(out, m.fields);
    lit(out, ",\"kind\":");
    str(out, m.kind);
    lit(out, ",\"level\":");
    append_int(out, m.level);
    lit(out, ",\"seq\":");
    append_opt(out, m.seq);
    lit(out, ",\"source\":");
    str(out, m.source);
    lit(out, ",\"text\":");
    str(out, m.text);
    lit(out, ",\"trace_ts\":");
    append_opt(out, m.trace_ts_ns);
    lit(out, ",\"ts\":");
    append_opt(out, m.ts_ns);
    put(out, '}');
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    Raw raw(out, string_bound(s));
    str(raw, s);
}

void append_call_json(std::string& out, const Call& k) {
    Raw raw(out, kKeysAndNumbers + string_bound(k.comm) + string_bound(k.function) + opt_string_bound(k.module) +
                     opt_string_bound(k.phase) + opt_string_bound(k.args) + opt_string_bound(k.retaddr));
    call_body(raw, k);
}

void append_ioctl_json(std::string& out, const IoctlRecord& i) {
    Raw raw(out, kKeysAndNumbers + 21 * i.calls.size() + string_bound(i.comm) + opt_string_bound(i.fd_path) +
                     opt_string_bound(i.fd_path_unknown) + opt_string_bound(i.name) + opt_string_bound(i.status) +
                     opt_string_bound(i.ctrl_class) + opt_string_bound(i.phase) + opt_string_bound(i.errno_name) +
                     opt_string_bound(i.errno_text));
    ioctl_body(raw, i);
}

void append_event_json(std::string& out, const EventRecord& e) {
    Raw raw(out, kKeysAndNumbers + string_bound(e.comm) + string_bound(e.name) + string_bound(e.text) +
                     (e.fields ? map_bound(*e.fields) : 4) + frames_bound(e.stack) + frames_bound(e.user_stack));
    event_body(raw, e);
}

void append_marker_json(std::string& out, const MarkerEntry& m) {
    Raw raw(out, kKeysAndNumbers + string_bound(m.text));
    marker_body(raw, m);
}

void append_graph_json(std::string& out, const GraphNode& n) {
    Raw raw(out, kKeysAndNumbers + string_bound(n.path));
    graph_body(raw, n);
}

void append_log_json(std::string& out, const KernelLogMessage& m) {
    Raw raw(out, kKeysAndNumbers + string_bound(m.attached) + 6 + map_bound(m.fields) + string_bound(m.kind) +
                     string_bound(m.source) + string_bound(m.text));
    log_body(raw, m);
}

void write_calls_array(std::ostream& out, const std::vector<Call>& calls) {
    std::string buf;
    buf.reserve(1 << 20);
    write_array(out, buf, "calls", calls, append_call_json, false);
    flush_buffer(out, buf, true);
}

}  // namespace nvtrace::import
