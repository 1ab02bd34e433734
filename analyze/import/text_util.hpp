// text_util.hpp: shared pieces of the text readers (private to analyze/import).
// Everything here works on std::string_view and never allocates unless it returns a std::string.
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"
#include "nvtrace/import.hpp"

namespace nvtrace::import {

inline bool is_space(char c) {
    return c == ' ' || c == '\t';
}
inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// The number of ' ' bytes at s[i...], 8 at a time (function_graph indents by runs of spaces).
inline std::size_t space_run(std::string_view s, std::size_t i) {
    std::size_t start = i;
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        w ^= 0x2020202020202020ULL;  // zero bytes where the spaces are
        if (w) {
            if constexpr (std::endian::native == std::endian::little)
                return i + static_cast<std::size_t>(std::countr_zero(w) / 8) - start;
            break;
        }
    }
    while (i < s.size() && s[i] == ' ')
        ++i;
    return i - start;
}

inline std::string_view ltrim(std::string_view s) {
    std::size_t i = space_run(s, 0);
    while (i < s.size() && is_space(s[i]))  // tabs, and spaces after them
        i += 1 + space_run(s, i + 1);
    return s.substr(i);
}
inline std::string_view rtrim(std::string_view s) {
    std::size_t n = s.size();
    while (n > 0 && (is_space(s[n - 1]) || s[n - 1] == '\r' || s[n - 1] == '\0'))
        --n;
    return s.substr(0, n);
}
inline std::string_view trim(std::string_view s) {
    return rtrim(ltrim(s));
}

// A length check, then a compare of p.size() bytes: inlined for a literal `p` (no memcmp call per line).
inline bool starts_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && std::char_traits<char>::compare(s.data(), p.data(), p.size()) == 0;
}
inline bool ends_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() &&
           std::char_traits<char>::compare(s.data() + s.size() - p.size(), p.data(), p.size()) == 0;
}

// Unsigned decimal; the whole view must be digits.
inline std::optional<std::uint64_t> parse_u64(std::string_view s, int base = 10) {
    if (s.empty()) return std::nullopt;
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}
inline std::optional<int> parse_int(std::string_view s) {
    auto v = parse_u64(s);
    if (!v || *v > 0x7fffffff) return std::nullopt;
    return static_cast<int>(*v);
}

// "123", "-22", "0xffffffea", "0x0": a return value (hex is kept as the same 64-bit pattern).
inline std::optional<std::int64_t> parse_retval(std::string_view s) {
    if (starts_with(s, "0x") || starts_with(s, "0X")) {
        auto v = parse_u64(s.substr(2), 16);
        if (!v) return std::nullopt;
        return static_cast<std::int64_t>(*v);
    }
    bool neg = !s.empty() && s[0] == '-';
    auto v = parse_u64(neg ? s.substr(1) : s);
    if (!v) return std::nullopt;
    return neg ? -static_cast<std::int64_t>(*v) : static_cast<std::int64_t>(*v);
}

// A return value as function_graph prints it: parse_retval's forms, and the BTF-typed booleans of
// funcgraph-retval with BTF (>= 6.13, kernel/trace/trace_functions_graph.c print_graph_retval through
// btf_type_is_bool): "true" -> 1, "false" -> 0.
inline std::optional<std::int64_t> parse_graph_retval(std::string_view s) {
    if (s == "true") return 1;
    if (s == "false") return 0;
    return parse_retval(s);
}

// The `trace` file header "entries-in-buffer/entries-written: 57813/70138   #P:12" (the text after '#';
// kernel/trace/trace.c print_event_info): A and B, nullopt when the text is not that header.
struct EntriesHeader {
    std::uint64_t in_buffer = 0, written = 0;
};
inline std::optional<EntriesHeader> parse_entries_header(std::string_view h) {
    constexpr std::string_view key = "entries-in-buffer/entries-written:";
    if (!starts_with(h, key)) return std::nullopt;
    h = ltrim(h.substr(key.size()));
    std::size_t slash = h.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    std::size_t end = slash + 1;
    while (end < h.size() && is_digit(h[end]))
        ++end;
    auto a = parse_u64(h.substr(0, slash));
    auto b = parse_u64(h.substr(slash + 1, end - slash - 1));
    if (!a || !b) return std::nullopt;
    return EntriesHeader{*a, *b};
}

// "##### CPU 2 buffer started ####" (kernel/trace/trace.c, test_cpu_buff_start: printed with the annotate
// option when the buffer had overruns, before the first surviving event of each CPU but the first): the CPU.
inline std::optional<int> parse_buffer_started(std::string_view t) {
    if (!starts_with(t, "#####")) return std::nullopt;
    t = ltrim(t.substr(5));
    if (!starts_with(t, "CPU ")) return std::nullopt;
    t = t.substr(4);
    std::size_t n = 0;
    while (n < t.size() && is_digit(t[n]))
        ++n;
    auto cpu = parse_int(t.substr(0, n));
    if (!cpu || !starts_with(ltrim(t.substr(n)), "buffer started")) return std::nullopt;
    return cpu;
}

// An elision row of an excerpt (" [..]", "[...]", "...", "…"): lines someone left out when copying a trace.
inline bool is_elision_row(std::string_view t) {
    return t == "[..]" || t == "[...]" || t == "..." || t == "\xE2\x80\xA6" || t == "[\xE2\x80\xA6]";
}

// "<int>[.<frac>]" with the integer part in `unit_ns` units (1000 for µs, 1e9 for seconds): fraction digits
// beyond ns precision are dropped. "82.823" us -> 82823 ns, "33998.59" -> 33998590, "3594274" -> 3594274000.
inline std::optional<std::uint64_t> parse_decimal_ns(std::string_view s, std::uint64_t unit_ns) {
    // The integer part in one pass (no find, no from_chars call): digits up to the dot or the end.
    std::size_t dot = 0;
    std::uint64_t iv = 0;
    bool ok = true;
    for (; dot < s.size() && s[dot] != '.'; ++dot) {
        if (!is_digit(s[dot]) || __builtin_mul_overflow(iv, 10, &iv) ||
            __builtin_add_overflow(iv, static_cast<std::uint64_t>(s[dot] - '0'), &iv))
            ok = false;
    }
    std::size_t int_digits = dot;
    if (dot == s.size()) dot = std::string_view::npos;
    std::uint64_t limit = unit_ns == 1000            ? UINT64_MAX / 1000  // constants: no division per call
                          : unit_ns == 1'000'000'000 ? UINT64_MAX / 1'000'000'000
                                                     : UINT64_MAX / unit_ns;
    if (!ok || int_digits == 0 || iv > limit) return std::nullopt;  // "", ".5", non-digits, overflow
    std::uint64_t ns = iv * unit_ns;
    if (dot != std::string_view::npos) {
        std::string_view fp = s.substr(dot + 1);
        if (fp.empty()) return std::nullopt;
        // unit_ns = 10^m (us and s): the first m fraction digits as one number, scaled once.
        int m = unit_ns == 1000 ? 3 : unit_ns == 1'000'000'000 ? 9 : 0;
        if (m) {
            std::uint64_t f = 0;
            int k = 0;
            for (char c : fp) {
                if (!is_digit(c)) return std::nullopt;
                if (k < m) {
                    f = f * 10 + static_cast<std::uint64_t>(c - '0');
                    ++k;
                }
            }
            for (; k < m; ++k)
                f *= 10;
            return ns + f;
        }
        std::uint64_t scale = unit_ns;
        for (char c : fp) {
            if (!is_digit(c)) return std::nullopt;
            scale /= 10;
            ns += static_cast<std::uint64_t>(c - '0') * scale;  // scale reaches 0 past ns precision
        }
    }
    return ns;
}

// Overhead mark of the duration column (trace_find_mark, kernel/trace/trace.c).
inline bool is_overhead_mark(char c) {
    return c == '+' || c == '!' || c == '#' || c == '*' || c == '@' || c == '$';
}

// "[mark] <decimal> us": the DURATION column of function_graph text and trace-cmd report.
inline std::optional<std::uint64_t> parse_duration_column(std::string_view seg) {
    seg = trim(seg);
    if (!seg.empty() && is_overhead_mark(seg[0])) seg = ltrim(seg.substr(1));
    if (!ends_with(seg, "us")) return std::nullopt;
    seg = rtrim(seg.substr(0, seg.size() - 2));
    return parse_decimal_ns(seg, 1000);
}

// Latency-format flags ("d..1", "dNh2.", "....", "d.h."), kernel trace_print_lat_fmt. The third flag says
// hard or soft interrupt context.
inline bool looks_like_lat_flags(std::string_view s) {
    if (s.size() < 4 || s.size() > 6) return false;
    for (char c : s) {
        bool ok = c == '.' || is_digit(c) || (c >= 'a' && c <= 'f') || c == 'd' || c == 'D' || c == 'X' || c == 'n' ||
                  c == 'N' || c == 'p' || c == 'P' || c == 'b' || c == 'B' || c == 'h' || c == 'H' || c == 's' ||
                  c == 'S' || c == 'z' || c == 'Z' || c == 'i' || c == 'I';
        if (!ok) return false;
    }
    return !is_digit(s[0]);
}
inline bool lat_flags_irq(std::string_view s) {
    return s.size() >= 3 && (s[2] == 'h' || s[2] == 'H' || s[2] == 's' || s[2] == 'z' || s[2] == 'Z');
}

// "comm-pid" split at the last '-' (comms may hold '-', '/', ':', spaces: "irq/17--33", "kworker/0:0-27338").
struct CommPid {
    std::string_view comm;
    int pid = -1;
};
inline std::optional<CommPid> split_comm_pid(std::string_view s) {
    s = trim(s);
    std::size_t dash = s.rfind('-');
    if (dash == std::string_view::npos || dash == 0) return std::nullopt;
    auto pid = parse_int(s.substr(dash + 1));
    if (!pid) return std::nullopt;
    return CommPid{s.substr(0, dash), *pid};
}

inline bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

// Replaces invalid UTF-8 (and NUL) by U+FFFD so that JSON output never fails; ASCII passes untouched.
void append_utf8_clean(std::string& out, std::string_view in);
inline std::string clean(std::string_view in) {
    std::string s;
    append_utf8_clean(s, in);
    return s;
}

// "file:line: what, found 'text'" with the text shortened and made printable.
std::string example(std::string_view file, std::uint32_t line, std::string_view what, std::string_view found);

// An event body printed as "name: fields" (kernel trace output, trace-cmd report, fgraph comments) to the
// event nvtrace keeps: syscalls ioctl enter/exit, print/bprint/bputs/tracing_mark_write -> Marker,
// console -> ConsoleLine, anything else -> OtherEvent{"", name, fields}.
EventBody event_from_text(std::string_view name, std::string_view fields);

// The text of an event as the kernel or trace-cmd prints it, without the line prefix: "name: fields",
// or the syscall tracer's own "sys_ioctl(fd: 3, cmd: 541b, arg: 7ffc)" / "sys_ioctl -> 0x0"
// (kernel/trace/trace_syscalls.c). nullopt when it has neither shape.
std::optional<EventBody> event_from_body(std::string_view body);

// The event-line prefix of kernel `trace` text and trace-cmd report: "comm-pid [cpu] flags ts: body".
struct Prefix {
    CommPid task;
    int cpu = -1;
    std::string_view flags;
    std::optional<std::uint64_t> ts_ns;
    std::string_view body;
};

std::optional<Prefix> parse_prefix(std::string_view line);

// Splits `text` into lines ('\n'; a final line without newline counts; '\r' and NULs at the end dropped).
class LineSplitter {
public:
    explicit LineSplitter(std::string_view text) : text_(text) {}
    bool next(std::string_view& line) {
        if (pos_ >= text_.size()) return false;
        std::size_t nl = text_.find('\n', pos_);
        if (nl == std::string_view::npos) nl = text_.size();
        line = text_.substr(pos_, nl - pos_);
        while (!line.empty() && (line.back() == '\r' || line.back() == '\0'))
            line.remove_suffix(1);
        pos_ = nl + 1;
        ++number_;
        return true;
    }
    std::uint32_t number() const { return number_; }

private:
    std::string_view text_;
    std::size_t pos_ = 0;
    std::uint32_t number_ = 0;
};

// A text read with most of its lines malformed is not that format (random bytes forced through --format, or a
// detection fooled by a few lines): fewer than one line in four giving events (`good_lines` against the count
// of the malformed_line diagnostic) is refused, Error::usage naming the file and the first unreadable line.
std::optional<Error> unusable_text(std::uint64_t good_lines, const std::vector<Diagnostic>& diagnostics,
                                   std::string_view file_name, TraceFormat f);

}  // namespace nvtrace::import
