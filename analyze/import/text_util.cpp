#include "text_util.hpp"

#include <fmt/format.h>

namespace nvtrace::import {

void append_utf8_clean(std::string& out, std::string_view in) {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    out.reserve(out.size() + in.size());
    std::size_t i = 0;
    while (i < in.size()) {
        auto c = static_cast<unsigned char>(in[i]);
        if (c >= 0x20 && c < 0x80) {
            std::size_t j = i + 1;
            while (j < in.size() && static_cast<unsigned char>(in[j]) >= 0x20 &&
                   static_cast<unsigned char>(in[j]) < 0x80)
                ++j;
            out.append(in.substr(i, j - i));
            i = j;
            continue;
        }
        if (c < 0x20) {  // control characters: tab kept, the rest (NUL included) replaced
            if (c == '\t')
                out.push_back('\t');
            else
                out.append(kReplacement);
            ++i;
            continue;
        }
        std::size_t len = (c >= 0xC2 && c <= 0xDF)   ? 2
                          : (c >= 0xE0 && c <= 0xEF) ? 3
                          : (c >= 0xF0 && c <= 0xF4) ? 4
                                                     : 0;
        bool ok = len != 0 && i + len <= in.size();
        for (std::size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
        if (ok && len == 3) {
            auto c1 = static_cast<unsigned char>(in[i + 1]);
            ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
        }
        if (ok && len == 4) {
            auto c1 = static_cast<unsigned char>(in[i + 1]);
            ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
        }
        if (ok) {
            out.append(in.substr(i, len));
            i += len;
        } else {
            out.append(kReplacement);
            ++i;
        }
    }
}

std::string example(std::string_view file, std::uint32_t line, std::string_view what, std::string_view found) {
    std::string shown;
    constexpr std::size_t kMax = 80;
    for (std::size_t i = 0; i < found.size() && i < kMax; ++i) {
        auto c = static_cast<unsigned char>(found[i]);
        if (c >= 0x20 && c < 0x7f)
            shown.push_back(static_cast<char>(c));
        else
            shown += fmt::format("\\x{:02x}", c);
    }
    if (found.size() > kMax) shown += fmt::format("... ({} bytes)", found.size());
    return fmt::format("{}:{}: expected {}, found '{}'", file, line, what, shown);
}

namespace {

// "fd: 0x00000003, cmd: 0x0000541b, arg: 0x7ffd5e4b0a2c" (the syscalls' print fmt) -> value of `key`.
std::optional<std::uint64_t> field_value(std::string_view fields, std::string_view key) {
    std::size_t pos = 0;
    while (pos < fields.size()) {
        std::size_t comma = fields.find(',', pos);
        std::string_view item = trim(fields.substr(pos, comma == fields.npos ? fields.npos : comma - pos));
        std::size_t colon = item.find(':');
        std::size_t eq = item.find('=');
        std::size_t sep = std::min(colon, eq);
        if (sep != std::string_view::npos && trim(item.substr(0, sep)) == key) {
            auto v = parse_retval(trim(item.substr(sep + 1)));
            if (v) return static_cast<std::uint64_t>(*v);
            return std::nullopt;
        }
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return std::nullopt;
}

// ftrace:print renders as "%ps: %s" (ip, buf): drop the "tracing_mark_write: " / "0xffff...: " head.
std::string_view strip_ip(std::string_view text) {
    std::size_t colon = text.find(": ");
    if (colon == std::string_view::npos || colon == 0) return text;
    for (char c : text.substr(0, colon))
        if (!is_ident_char(c) && c != '.') return text;
    return text.substr(colon + 2);
}

}  // namespace

EventBody event_from_text(std::string_view name, std::string_view fields) {
    fields = trim(fields);
    if (name == "sys_enter_ioctl") {
        auto fd = field_value(fields, "fd");
        auto cmd = field_value(fields, "cmd");
        auto arg = field_value(fields, "arg");
        if (cmd) return IoctlEnter{fd ? static_cast<int>(static_cast<std::int32_t>(*fd)) : -1, *cmd, arg.value_or(0)};
    } else if (name == "sys_exit_ioctl") {
        if (auto ret = parse_retval(fields)) return IoctlExit{*ret};
        if (auto ret = field_value(fields, "ret")) return IoctlExit{static_cast<std::int64_t>(*ret)};
    } else if (name == "tracing_mark_write") {
        return Marker{clean(fields)};
    } else if (name == "print" || name == "bprint" || name == "bputs") {
        return Marker{clean(strip_ip(fields))};
    } else if (name == "console") {
        return ConsoleLine{clean(fields)};
    }
    return OtherEvent{"", clean(name), clean(fields)};
}

std::optional<EventBody> event_from_body(std::string_view body) {
    body = trim(body);
    if (starts_with(body, "sys_ioctl(") && ends_with(body, ")")) {
        // print_syscall_enter: "%s: %lx" per argument, hex without "0x".
        std::string_view args = body.substr(10, body.size() - 11);
        IoctlEnter e;
        bool have_cmd = false;
        std::size_t pos = 0;
        while (pos <= args.size()) {
            std::size_t comma = args.find(',', pos);
            std::string_view item = trim(args.substr(pos, comma == args.npos ? args.npos : comma - pos));
            std::size_t colon = item.find(':');
            if (colon != std::string_view::npos) {
                std::string_view key = trim(item.substr(0, colon)), val = trim(item.substr(colon + 1));
                if (starts_with(val, "0x")) val.remove_prefix(2);
                auto v = parse_u64(val, 16);
                if (v && key == "fd") e.fd = static_cast<int>(static_cast<std::int32_t>(*v));
                if (v && key == "cmd") {
                    e.cmd = *v;
                    have_cmd = true;
                }
                if (v && key == "arg") e.arg = *v;
            }
            if (comma == std::string_view::npos) break;
            pos = comma + 1;
        }
        if (have_cmd) return EventBody{e};
    }
    if (starts_with(body, "sys_ioctl -> ")) {
        if (auto v = parse_retval(trim(body.substr(13)))) return EventBody{IoctlExit{*v}};
    }
    std::size_t i = 0;
    while (i < body.size() && is_ident_char(body[i]))
        ++i;
    if (i > 0 && i < body.size() && body[i] == ':' && (i + 1 == body.size() || body[i + 1] == ' '))
        return event_from_text(body.substr(0, i), body.substr(i + 1));
    return std::nullopt;
}

// "            ruby-2564  [001] 107227.460641: funcgraph_entry: ..."
// "     kworker/0:0-27338 [000] d.h.  6028.897808: irq_handler_entry: irq=56 name=dwc_otg"
// "            bash-1977  (   1977) [000] .... 17284.993652: ..." (record-tgid)
std::optional<Prefix> parse_prefix(std::string_view s) {
    std::size_t search = 0;
    while (true) {
        std::size_t open = s.find('[', search);
        if (open == std::string_view::npos) return std::nullopt;
        search = open + 1;
        std::size_t close = open + 1;
        while (close < s.size() && is_digit(s[close]))
            ++close;
        if (close == open + 1 || close >= s.size() || s[close] != ']') continue;
        if (open == 0 || !is_space(s[open - 1])) continue;
        std::string_view who = trim(s.substr(0, open));
        if (ends_with(who, ")")) {  // record-tgid: "comm-pid (  tgid)"
            std::size_t paren = who.rfind('(');
            if (paren != std::string_view::npos) who = trim(who.substr(0, paren));
        }
        // trace-cmd report of several buffers names the instance first: "inst-name:   comm-pid [cpu] ..."
        if (std::size_t ic = who.find(": ");
            ic != std::string_view::npos && ic > 0 && who.substr(0, ic).find(' ') == std::string_view::npos)
            who = trim(who.substr(ic + 1));
        auto task = split_comm_pid(who);
        if (!task) continue;
        Prefix p;
        p.task = *task;
        p.cpu = parse_int(s.substr(open + 1, close - open - 1)).value_or(-1);
        std::string_view r = ltrim(s.substr(close + 1));
        std::size_t sp = 0;
        while (sp < r.size() && !is_space(r[sp]) && r[sp] != ':')
            ++sp;
        if (sp < r.size() && is_space(r[sp]) && looks_like_lat_flags(r.substr(0, sp))) {
            p.flags = r.substr(0, sp);
            r = ltrim(r.substr(sp));
        }
        std::size_t colon = r.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        std::string_view ts = trim(r.substr(0, colon));
        if (ts.find('.') != std::string_view::npos)
            p.ts_ns = parse_decimal_ns(ts, 1'000'000'000);
        else
            p.ts_ns = parse_u64(ts);  // a counter clock (x86-tsc, counter): kept as is
        if (!p.ts_ns) return std::nullopt;
        p.body = r.substr(colon + 1);
        if (!p.body.empty() && p.body[0] == ' ') p.body.remove_prefix(1);
        return p;
    }
}

}  // namespace nvtrace::import
