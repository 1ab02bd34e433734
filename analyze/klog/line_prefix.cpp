// The prefixes other programs put before a kernel message, recognised by hand (no regex: lines can be a
// megabyte long). Sources:
//   dmesg (util-linux sys-utils/dmesg.c): "[%5ld.%06ld] " monotonic; --ctime/-T "[%a %b %e %H:%M:%S %Y] "
//     (%e pads the day with a space: "Tue Sep  8"); --time-format iso "2024-08-30T11:43:09,123456+02:00 ";
//     -r "<N>" raw priority; -x "kern  :err   : ". Kernels with CONFIG_PRINTK_CALLER add "[T123]"/"[C1]".
//   journalctl -o short (systemd src/shared/logs-show.c): "%b %d %H:%M:%S host ident[pid]: " (zero-padded
//     day); -o short-monotonic "[%5llu.%06llu] host ident: "; -o short-iso "2024-08-30T11:43:09+0000 host ...".
//   rsyslog RSYSLOG_TraditionalFileFormat (RFC 3164 timestamp): "%b %e %H:%M:%S host tag: " (space-padded
//     day), control characters escaped as "#ooo" (parser.escapeControlCharactersOnReceive, "#012" = '\n');
//     with the kernel's own timestamp kept in the message ("[  885.242168] "). Remote/RFC 5424 templates
//     put an ISO-8601 time first.
//   dmesg --time-format reltime / -e: "[Feb 3 03:10] " then "[  +0.000010] "; --time-format delta / -d:
//     "[<    0.000012>] "; -t / --notime: no prefix at all (the message start is recognised instead).
//   journalctl -o short-unix: "1701234567.123456 host ident: "; -o short-full: "Mon 2023-12-11 22:20:08 CET host
//     ident: "; a journal excerpt cut after the host keeps a bare "kernel: ".
//   Remote syslog collectors that keep the facility and level as text (e.g. Talos' and some rsyslog
//     templates): "host: kern: warning: [2024-05-01T10:11:12.123456789Z]: msg".
#include <array>
#include <cctype>

#include "klog.hpp"

namespace nvtrace::klog {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

constexpr std::array<std::string_view, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<std::string_view, 7> kDays{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

bool is_month(std::string_view s) {
    for (auto m : kMonths)
        if (s == m) return true;
    return false;
}
bool is_weekday(std::string_view s) {
    for (auto d : kDays)
        if (s == d) return true;
    return false;
}

// "HH:MM:SS" at s[pos]; returns the length (8) or 0.
std::size_t clock_at(std::string_view s, std::size_t pos) {
    if (pos + 8 > s.size()) return 0;
    auto d = [&](std::size_t i) { return is_digit(s[pos + i]); };
    if (d(0) && d(1) && s[pos + 2] == ':' && d(3) && d(4) && s[pos + 5] == ':' && d(6) && d(7)) return 8;
    return 0;
}

// "Mmm dd HH:MM:SS" or "Mmm  d HH:MM:SS" (optionally ".ffffff"); returns length or 0, and the padding style.
std::size_t month_day_clock(std::string_view s, std::size_t pos, bool& space_padded) {
    if (pos + 15 > s.size() || !is_month(s.substr(pos, 3)) || s[pos + 3] != ' ') return 0;
    std::size_t p = pos + 4;
    if (s[p] == ' ' && is_digit(s[p + 1])) {
        space_padded = true;
        p += 2;
    } else if (is_digit(s[p]) && is_digit(s[p + 1])) {
        space_padded = false;
        p += 2;
    } else if (is_digit(s[p]) && s[p + 1] == ' ') {  // unpadded single digit (some templates)
        space_padded = true;
        p += 1;
    } else {
        return 0;
    }
    if (p >= s.size() || s[p] != ' ') return 0;
    ++p;
    std::size_t c = clock_at(s, p);
    if (!c) return 0;
    p += c;
    if (p < s.size() && s[p] == '.') {  // journalctl -o short-precise
        std::size_t q = p + 1;
        while (q < s.size() && is_digit(s[q]))
            ++q;
        if (q > p + 1) p = q;
    }
    return p - pos;
}

// ISO-8601 date-time at pos ("2024-08-30T11:43:09", fraction with '.' or ',', zone Z/+hh:mm/+hhmm).
std::size_t iso_at(std::string_view s, std::size_t pos) {
    if (pos + 19 > s.size()) return 0;
    auto d = [&](std::size_t i) { return is_digit(s[pos + i]); };
    if (!(d(0) && d(1) && d(2) && d(3) && s[pos + 4] == '-' && d(5) && d(6) && s[pos + 7] == '-' && d(8) && d(9) &&
          (s[pos + 10] == 'T' || s[pos + 10] == ' ')))
        return 0;
    if (!clock_at(s, pos + 11)) return 0;
    std::size_t p = pos + 19;
    if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
        std::size_t q = p + 1;
        while (q < s.size() && is_digit(s[q]))
            ++q;
        if (q > p + 1) p = q;
    }
    if (p < s.size() && s[p] == 'Z') {
        ++p;
    } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
        std::size_t q = p + 1, digits = 0;
        while (q < s.size() && (is_digit(s[q]) || s[q] == ':') && q - p <= 6) {
            if (is_digit(s[q])) ++digits;
            ++q;
        }
        if (digits == 4) p = q;
    }
    return p - pos;
}

// "[Fri Aug 30 11:43:09 2024]" at pos; returns length including brackets, or 0.
std::size_t ctime_bracket_at(std::string_view s, std::size_t pos) {
    if (pos + 26 > s.size() || s[pos] != '[' || !is_weekday(s.substr(pos + 1, 3)) || s[pos + 4] != ' ') return 0;
    bool padded = false;
    std::size_t n = month_day_clock(s, pos + 5, padded);
    if (!n) return 0;
    std::size_t p = pos + 5 + n;
    if (p + 6 > s.size() || s[p] != ' ') return 0;
    for (std::size_t i = 1; i <= 4; ++i)
        if (!is_digit(s[p + i])) return 0;
    if (s[p + 5] != ']') return 0;
    return p + 6 - pos;
}

// "host ident[pid]: " or "host ident: " at pos. Returns the length, and host/ident.
std::size_t host_ident_at(std::string_view s, std::size_t pos, std::string& host, std::string& ident) {
    std::size_t sp = s.find(' ', pos);
    if (sp == std::string_view::npos || sp == pos || sp - pos > 255) return 0;
    std::string_view h = s.substr(pos, sp - pos);
    for (char c : h)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return 0;
    std::size_t p = sp + 1, start = p;
    while (p < s.size() && p - start < 64 && s[p] != ':' && s[p] != ' ' && s[p] != '[')
        ++p;
    if (p == start || p >= s.size()) return 0;
    std::string_view id = s.substr(start, p - start);
    if (s[p] == '[') {
        std::size_t close = s.find(']', p);
        if (close == std::string_view::npos || close - p > 12) return 0;
        for (std::size_t i = p + 1; i < close; ++i)
            if (!is_digit(s[i])) return 0;
        p = close + 1;
    }
    if (p >= s.size() || s[p] != ':') return 0;
    ++p;
    if (p < s.size() && s[p] == ' ') ++p;
    host = std::string(h);
    ident = std::string(id);
    return p - pos;
}

int level_from_name(std::string_view n) {
    constexpr std::array<std::string_view, 8> names{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"};
    for (std::size_t i = 0; i < names.size(); ++i)
        if (n == names[i]) return static_cast<int>(i);
    return -1;
}

// After a syslog/journal/ISO time: " host ident: " and maybe the kernel's own "[ 885.242168] ".
bool finish_host_prefix(std::string_view line, std::size_t p, LinePrefix& out) {
    if (p >= line.size() || line[p] != ' ') return false;
    std::size_t n = host_ident_at(line, p + 1, out.host, out.ident);
    if (!n) return false;
    out.body = p + 1 + n;
    if (auto kt = parse_bracket_seconds(line.substr(out.body))) {
        out.ts_ns = kt->first;
        out.body += kt->second;
        if (out.body < line.size() && line[out.body] == ' ') ++out.body;
    }
    return true;
}

// "[Feb 3 03:10] " or "[Feb 13 03:10:22] " (dmesg --time-format reltime, the first line of a minute) and
// "[  +0.000010] " (its following lines); returns the length including brackets, or 0.
std::size_t reltime_bracket_at(std::string_view s, std::size_t pos) {
    if (pos + 3 > s.size() || s[pos] != '[') return 0;
    std::size_t close = s.find(']', pos);
    if (close == std::string_view::npos || close - pos > 24) return 0;
    std::string_view in = trim(s.substr(pos + 1, close - pos - 1));
    if (!in.empty() && in[0] == '+') {
        std::size_t i = 1, digits = 0;
        while (i < in.size() && is_digit(in[i]))
            ++i, ++digits;
        if (!digits || i >= in.size() || in[i] != '.') return 0;
        ++i;
        std::size_t frac = 0;
        while (i < in.size() && is_digit(in[i]))
            ++i, ++frac;
        return frac && i == in.size() ? close + 1 - pos : 0;
    }
    if (in.size() < 9 || !is_month(in.substr(0, 3)) || in[3] != ' ') return 0;
    std::size_t i = 4;
    while (i < in.size() && in[i] == ' ')
        ++i;
    std::size_t day = i;
    while (i < in.size() && is_digit(in[i]))
        ++i;
    if (i == day || i - day > 2 || i >= in.size() || in[i] != ' ') return 0;
    std::string_view clock = in.substr(i + 1);
    auto d = [&](std::size_t k) { return k < clock.size() && is_digit(clock[k]); };
    if (!(d(0) && d(1) && clock.size() >= 5 && clock[2] == ':' && d(3) && d(4))) return 0;
    if (clock.size() != 5 && !(clock.size() == 8 && clock[5] == ':' && d(6) && d(7))) return 0;
    return close + 1 - pos;
}

// "[<    0.000012>] " (dmesg --time-format delta); returns the length including brackets, or 0.
std::size_t delta_bracket_at(std::string_view s, std::size_t pos) {
    if (pos + 5 > s.size() || s[pos] != '[' || s[pos + 1] != '<') return 0;
    std::size_t close = s.find(">]", pos);
    if (close == std::string_view::npos || close - pos > 24) return 0;
    std::string_view in = trim(s.substr(pos + 2, close - pos - 2));
    std::size_t dot = in.find('.');
    if (dot == std::string_view::npos || dot == 0) return 0;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (i != dot && !is_digit(in[i])) return 0;
    return close + 2 - pos;
}

// "Mon 2023-12-11 22:20:08 CET" (journalctl -o short-full); returns the length or 0.
std::size_t short_full_at(std::string_view s, std::size_t pos) {
    if (pos + 24 > s.size() || !is_weekday(s.substr(pos, 3)) || s[pos + 3] != ' ') return 0;
    std::size_t n = 0;
    if (s[pos + 14] != ' ') return 0;
    std::string_view date = s.substr(pos + 4, 10);
    for (std::size_t i = 0; i < 10; ++i)
        if (i == 4 || i == 7 ? date[i] != '-' : !is_digit(date[i])) return 0;
    if (!clock_at(s, pos + 15)) return 0;
    n = 23;
    std::size_t p = pos + n;
    if (p < s.size() && s[p] == '.') {
        ++p;
        while (p < s.size() && is_digit(s[p]))
            ++p;
    }
    if (p >= s.size() || s[p] != ' ') return 0;
    std::size_t z = p + 1;
    while (z < s.size() &&
           (std::isalpha(static_cast<unsigned char>(s[z])) || s[z] == '+' || s[z] == '-' || is_digit(s[z])) &&
           z - p <= 6)
        ++z;
    if (z == p + 1) return 0;
    return z - pos;
}

// "1701234567.123456" (journalctl -o short-unix): 9-11 integer digits, '.', 1-9 fraction digits.
std::size_t unix_time_at(std::string_view s, std::size_t pos) {
    std::size_t p = pos;
    while (p < s.size() && is_digit(s[p]))
        ++p;
    if (p - pos < 9 || p - pos > 11 || p >= s.size() || s[p] != '.') return 0;
    std::size_t q = p + 1;
    while (q < s.size() && is_digit(s[q]))
        ++q;
    if (q == p + 1 || q - p > 10) return 0;
    return q - pos;
}

// "host: kern: warning: [2024-05-01T10:11:12.123456789Z]: " (facility and level written as words).
std::size_t remote_facility_at(std::string_view s, std::size_t pos, LinePrefix& out) {
    std::size_t c1 = s.find(": ", pos);
    if (c1 == std::string_view::npos || c1 == pos || c1 - pos > 255) return 0;
    std::string_view host = s.substr(pos, c1 - pos);
    for (char c : host)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return 0;
    std::size_t c2 = s.find(": ", c1 + 2);
    if (c2 == std::string_view::npos) return 0;
    std::string_view fac = s.substr(c1 + 2, c2 - c1 - 2);
    if (fac != "kern" && fac != "kernel") return 0;
    std::size_t c3 = s.find(':', c2 + 2);
    if (c3 == std::string_view::npos) return 0;
    std::string_view lvl = s.substr(c2 + 2, c3 - c2 - 2);
    int level = lvl == "warning" ? 4 : lvl == "error" ? 3 : lvl == "emergency" ? 0 : lvl == "critical" ? 2 : -1;
    if (level < 0) {
        constexpr std::array<std::string_view, 8> names{"emerg", "alert",  "crit", "err",
                                                        "warn",  "notice", "info", "debug"};
        for (std::size_t i = 0; i < names.size(); ++i)
            if (lvl == names[i]) level = static_cast<int>(i);
    }
    if (level < 0) return 0;
    std::size_t p = c3 + 1;
    if (p < s.size() && s[p] == ' ') ++p;
    if (p < s.size() && s[p] == '[') {
        std::size_t close = s.find(']', p);
        if (close == std::string_view::npos) return 0;
        std::string_view t = s.substr(p + 1, close - p - 1);
        if (iso_at(t, 0) == t.size() && !t.empty()) {
            out.wall_time = std::string(t);
        } else if (auto kt = parse_bracket_seconds(s.substr(p))) {
            out.ts_ns = kt->first;
        } else {
            return 0;
        }
        p = close + 1;
        if (p < s.size() && s[p] == ':') ++p;
        if (p < s.size() && s[p] == ' ') ++p;
    }
    out.host = std::string(host);
    out.ident = "kernel";
    out.level = level;
    return p - pos;
}

}  // namespace

std::optional<std::pair<std::uint64_t, std::size_t>> parse_bracket_seconds(std::string_view s) {
    if (s.empty() || s[0] != '[') return std::nullopt;
    std::size_t p = 1;
    while (p < s.size() && s[p] == ' ')
        ++p;
    std::size_t int_start = p;
    while (p < s.size() && is_digit(s[p]))
        ++p;
    if (p == int_start || p - int_start > 10 || p >= s.size() || s[p] != '.') return std::nullopt;
    std::uint64_t sec = 0;
    for (std::size_t i = int_start; i < p; ++i)
        sec = sec * 10 + static_cast<std::uint64_t>(s[i] - '0');
    ++p;
    std::size_t frac_start = p;
    std::uint64_t frac = 0;
    while (p < s.size() && is_digit(s[p])) {
        if (p - frac_start < 9) frac = frac * 10 + static_cast<std::uint64_t>(s[p] - '0');
        ++p;
    }
    std::size_t digits = p - frac_start;
    if (digits == 0 || p >= s.size() || s[p] != ']') return std::nullopt;
    for (std::size_t i = digits; i < 9; ++i)
        frac *= 10;
    return std::make_pair(sec * 1'000'000'000ull + frac, p + 1);
}

namespace {
bool is_octal_escape(std::string_view s, std::size_t i) {
    return i + 3 < s.size() && s[i] == '#' && s[i + 1] == '0' && s[i + 2] >= '0' && s[i + 2] <= '3' &&
           s[i + 3] >= '0' && s[i + 3] <= '7';
}
bool has_octal_escape(std::string_view s) {
    for (std::size_t i = s.find('#'); i != std::string_view::npos; i = s.find('#', i + 1))
        if (is_octal_escape(s, i)) return true;
    return false;
}
}  // namespace

std::string unescape_syslog_octal(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (is_octal_escape(s, i)) {
            out.push_back(static_cast<char>((s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
            i += 3;
            continue;
        }
        out.push_back(s[i]);
    }
    return out;
}

LinePrefix parse_line_prefix(std::string_view line) {
    LinePrefix out;
    std::size_t p = 0;
    // Quoted inside other output: "> " (mail, program output), "| ", or indentation before a timestamp.
    while (p < line.size()) {
        if ((line[p] == '>' || line[p] == '|') && p + 1 < line.size() && line[p + 1] == ' ') {
            p += 2;
            out.quoted = true;
        } else if (line[p] == ' ' || line[p] == '\t') {
            ++p;
        } else {
            break;
        }
    }
    bool indented = p > 0;
    // dmesg -r / kmsg-style "<N>" priority.
    if (p + 2 < line.size() && line[p] == '<') {
        std::size_t q = p + 1;
        unsigned prio = 0;
        while (q < line.size() && is_digit(line[q]) && q - p <= 3) {
            prio = prio * 10 + static_cast<unsigned>(line[q] - '0');
            ++q;
        }
        if (q > p + 1 && q < line.size() && line[q] == '>') {
            out.level = static_cast<int>(prio & 7u);
            out.facility = static_cast<int>(prio >> 3);
            p = q + 1;
        }
    }
    // dmesg -x: "kern  :err   : ".
    {
        std::size_t c1 = line.find(':', p);
        if (c1 != std::string_view::npos && c1 - p <= 8) {
            std::string_view fac = trim(line.substr(p, c1 - p));
            std::size_t c2 = line.find(':', c1 + 1);
            if (c2 != std::string_view::npos && c2 - c1 <= 8 && c2 + 1 < line.size() && line[c2 + 1] == ' ' &&
                (fac == "kern" || fac == "user" || fac == "daemon" || fac == "syslog" || fac == "auth")) {
                int lvl = level_from_name(trim(line.substr(c1 + 1, c2 - c1 - 1)));
                if (lvl >= 0) {
                    out.level = lvl;
                    // syslog.h's numbers of the names accepted above.
                    out.facility = fac == "kern" ? 0 : fac == "user" ? 1 : fac == "daemon" ? 3 : fac == "auth" ? 4 : 5;
                    p = c2 + 2;
                }
            }
        }
    }
    std::string_view rest = line.substr(p);
    if (auto kt = parse_bracket_seconds(rest)) {
        out.ts_ns = kt->first;
        std::size_t q = p + kt->second;
        // CONFIG_PRINTK_CALLER: "[    T1]" / "[  C3]" right after the time (the console, /proc/kmsg), or after
        // one space (util-linux dmesg prints its caller-ID column as a column of its own).
        if (std::size_t b = q + (q + 1 < line.size() && line[q] == ' ' && line[q + 1] == '[');
            b < line.size() && line[b] == '[') {
            std::size_t close = line.find(']', b);
            if (close != std::string_view::npos && close - b <= 12) {
                std::string_view id = trim(line.substr(b + 1, close - b - 1));
                if (id.size() >= 2 && (id[0] == 'T' || id[0] == 'C')) {
                    bool ok = true;
                    for (char c : id.substr(1))
                        ok = ok && is_digit(c);
                    if (ok) q = close + 1;
                }
            }
        }
        if (q < line.size() && line[q] == ' ') ++q;
        out.format = "dmesg";
        out.body = q;
        // journalctl -o short-monotonic: "[ 1234.567890] host kernel: ".
        std::string host, ident;
        if (std::size_t n = host_ident_at(line, q, host, ident); n && ident == "kernel") {
            out.format = "journal-monotonic";
            out.host = host;
            out.ident = ident;
            out.body = q + n;
        }
        out.quoted = out.quoted || indented;
        return out;
    }
    if (std::size_t n = ctime_bracket_at(line, p)) {
        out.format = "dmesg-ctime";
        out.wall_time = std::string(line.substr(p + 1, n - 2));
        out.body = p + n;
        if (out.body < line.size() && line[out.body] == ' ') ++out.body;
        out.quoted = out.quoted || indented;
        return out;
    }
    if (std::size_t n = iso_at(line, p)) {
        out.wall_time = std::string(line.substr(p, n));
        if (finish_host_prefix(line, p + n, out)) {
            out.format = "syslog-iso";
        } else if (p + n < line.size() && line[p + n] == ' ') {
            out.format = "dmesg-iso";
            out.body = p + n + 1;
        } else {
            return LinePrefix{};
        }
        out.quoted = out.quoted || indented;
        return out;
    }
    bool space_padded = false;
    if (std::size_t n = month_day_clock(line, p, space_padded)) {
        LinePrefix t = out;
        t.wall_time = std::string(line.substr(p, n));
        if (finish_host_prefix(line, p + n, t)) {
            t.syslog_evidence = space_padded || has_octal_escape(line.substr(t.body));
            if (t.ts_ns)
                t.format = "syslog-dmesg";
            else
                t.format = t.syslog_evidence ? "syslog" : "journal";
            t.quoted = t.quoted || indented;
            return t;
        }
    }
    if (std::size_t n = reltime_bracket_at(line, p)) {
        out.format = "dmesg-reltime";
        std::string_view in = trim(line.substr(p + 1, n - 2));
        if (!in.empty() && in[0] != '+') out.wall_time = std::string(in);
        out.body = p + n;
        if (out.body < line.size() && line[out.body] == ' ') ++out.body;
        out.quoted = out.quoted || indented;
        return out;
    }
    if (std::size_t n = delta_bracket_at(line, p)) {
        out.format = "dmesg-delta";
        out.body = p + n;
        if (out.body < line.size() && line[out.body] == ' ') ++out.body;
        out.quoted = out.quoted || indented;
        return out;
    }
    if (std::size_t n = short_full_at(line, p)) {
        LinePrefix t = out;
        t.wall_time = std::string(line.substr(p, n));
        if (finish_host_prefix(line, p + n, t)) {
            t.format = "journal";
            t.quoted = t.quoted || indented;
            return t;
        }
    }
    if (std::size_t n = unix_time_at(line, p)) {
        LinePrefix t = out;
        t.wall_time = std::string(line.substr(p, n));
        if (finish_host_prefix(line, p + n, t)) {
            t.format = "journal-unix";
            t.quoted = t.quoted || indented;
            return t;
        }
    }
    {
        LinePrefix t = out;
        if (std::size_t n = remote_facility_at(line, p, t)) {
            t.format = "syslog-remote";
            t.body = p + n;
            t.quoted = t.quoted || indented;
            return t;
        }
    }
    // A journal or syslog excerpt with the date and host cut off: "kernel: msg" (optionally "kernel: [ 1.2] msg").
    if (line.substr(p, 8) == "kernel: ") {
        out.format = "kernel-tag";
        out.ident = "kernel";
        out.body = p + 8;
        if (auto kt = parse_bracket_seconds(line.substr(out.body))) {
            out.ts_ns = kt->first;
            out.body += kt->second;
            if (out.body < line.size() && line[out.body] == ' ') ++out.body;
        }
        out.quoted = out.quoted || indented;
        return out;
    }
    return LinePrefix{};
}

}  // namespace nvtrace::klog
