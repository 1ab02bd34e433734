#include "json_write.hpp"

#include <charconv>
#include <optional>

#include <nlohmann/json.hpp>

namespace nvtrace::import {

namespace {

template <class T>
void append_int(std::string& out, T v) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(p - buf));
}

template <class T>
void append_opt(std::string& out, const std::optional<T>& v) {
    if (v)
        append_int(out, *v);
    else
        out += "null";
}

void append_opt_string(std::string& out, const std::optional<std::string>& v) {
    if (v)
        append_json_string(out, *v);
    else
        out += "null";
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    for (unsigned char ch : s)
        if (ch >= 0x80) {
            out += nlohmann::json(std::string(s)).dump();
            return;
        }
    out += '"';
    std::size_t run = 0;  // start of the bytes not yet copied
    for (std::size_t i = 0; i < s.size(); ++i) {
        auto ch = static_cast<unsigned char>(s[i]);
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\r':
                out += "\\r";
                break;
            default: {
                static constexpr char kHex[] = "0123456789abcdef";
                char u[6] = {'\\', 'u', '0', '0', kHex[ch >> 4], kHex[ch & 15]};
                out.append(u, 6);
            }
        }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
}

void append_call_json(std::string& out, const Call& k) {
    out += "{\"comm\":";
    append_json_string(out, k.comm);
    out += ",\"cpu\":";
    append_int(out, k.cpu);
    out += ",\"depth\":";
    append_int(out, k.depth);
    out += ",\"duration_ns\":";
    append_opt(out, k.duration_ns);
    out += ",\"entry_ns\":";
    append_opt(out, k.entry_ns);
    out += k.entry_seen ? ",\"entry_seen\":true" : ",\"entry_seen\":false";
    out += k.exit_seen ? ",\"exit_seen\":true" : ",\"exit_seen\":false";
    out += ",\"function\":";
    append_json_string(out, k.function);
    out += ",\"id\":";
    append_int(out, k.id);
    out += k.irq ? ",\"irq\":true" : ",\"irq\":false";
    out += ",\"module\":";
    append_opt_string(out, k.module);
    out += ",\"parent\":";
    append_opt(out, k.parent);
    out += ",\"phase\":";
    append_opt_string(out, k.phase);
    out += ",\"pid\":";
    append_int(out, k.pid);
    out += ",\"retval\":";
    append_opt(out, k.retval);
    out += '}';
}

void write_calls_array(std::ostream& out, const std::vector<Call>& calls) {
    std::string buf;
    buf.reserve(1 << 20);
    buf += " \"calls\": [";
    for (std::size_t i = 0; i < calls.size(); ++i) {
        buf += i ? ",\n  " : "\n  ";
        append_call_json(buf, calls[i]);
        if (buf.size() > (1u << 20) - 4096) {
            out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
            buf.clear();
        }
    }
    buf += calls.empty() ? "]" : "\n ]";
    buf += ",\n";
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace nvtrace::import
