#include "graph_line.hpp"

#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nvtrace::import {

namespace {

constexpr std::string_view kIrqEnter = "==========>";
constexpr std::string_view kIrqExit = "<==========";

// The bytes that end a function name: '(', a space or tab, '{', ';', '}' (one load per byte to test).
constexpr auto kNameStop = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : std::string_view("( \t{;}"))
        t[c] = true;
    return t;
}();

// The number of ASCII digits that lead the 8 bytes at `p` (all readable), and those bytes in `w`. A byte is a
// digit when its high nibble is 3 and adding 6 leaves it 3 (0x30-0x39); a carry out of a byte >= 0xfa can only
// reach bytes after a non-digit, which do not count.
inline unsigned leading_digits8(const char* p, std::uint64_t& w) {
    constexpr std::uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL, three = 0x3030303030303030ULL, six = 0x0606060606060606ULL;
    std::memcpy(&w, p, 8);
    std::uint64_t m = ((w & hi) ^ three) | (((w + six) & hi) ^ three);
    if constexpr (std::endian::native == std::endian::little)
        return m ? static_cast<unsigned>(std::countr_zero(m)) / 8 : 8;
    unsigned n = 0;
    while (n < 8 && is_digit(p[n]))
        ++n;
    return n;
}

// The value of the first n (1-8) digits of `w` (leading_digits8's word): moved to the top of the word, then
// combined pairwise (2, 4, 8 digits) by multiplications.
inline std::uint64_t digits_value(std::uint64_t w, unsigned n) {
    w <<= 8 * (8 - n);
    w = (w & 0x0F0F0F0F0F0F0F0FULL) * 2561 >> 8;
    w = (w & 0x00FF00FF00FF00FFULL) * 6553601 >> 16;
    return (w & 0x0000FFFF0000FFFFULL) * 42949672960001ULL >> 32;
}

// The end of the run of digits at s[i...], and in `v` their value modulo 2^64 (v * 10 + digit for each), 8
// digits at a time while 8 bytes remain in `s`.
inline std::size_t digit_run(std::string_view s, std::size_t i, std::uint64_t& v) {
    constexpr std::uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    v = 0;
    if constexpr (std::endian::native == std::endian::little) {
        while (i + 8 <= s.size()) {
            std::uint64_t w;
            unsigned n = leading_digits8(s.data() + i, w);
            if (n == 0) return i;
            v = v * kPow10[n] + digits_value(w, n);
            i += n;
            if (n < 8) return i;
        }
    }
    while (i < s.size() && is_digit(s[i]))
        v = v * 10 + static_cast<std::uint64_t>(s[i++] - '0');
    return i;
}

// memcmp(a, b, n) == 0 for n <= TaskColumn::kMax, without a call: two fixed-size compares that may overlap.
inline bool same_bytes(const char* a, const char* b, std::size_t n) {
    if (n >= 16) return std::memcmp(a, b, 16) == 0 && std::memcmp(a + n - 16, b + n - 16, 16) == 0;
    if (n >= 8) return std::memcmp(a, b, 8) == 0 && std::memcmp(a + n - 8, b + n - 8, 8) == 0;
    if (n >= 4) return std::memcmp(a, b, 4) == 0 && std::memcmp(a + n - 4, b + n - 4, 4) == 0;
    for (std::size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

// The length of the function name that starts `body`: up to the first byte of kNameStop, or all of it. 16 bytes
// at a time with SSE2 (x86-64's baseline) while 16 remain, the last ones in a block that overlaps the one before;
// a byte at a time elsewhere.
inline std::size_t name_length(std::string_view body) {
    const char* d = body.data();
    const std::size_t n = body.size();
#if defined(__SSE2__)
    if (n >= 16) {
        auto stops = [](const char* p) {
            __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
            __m128i m = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('(')), _mm_cmpeq_epi8(v, _mm_set1_epi8(' '))),
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')), _mm_cmpeq_epi8(v, _mm_set1_epi8('{'))));
            m = _mm_or_si128(
                m, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(';')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}'))));
            return static_cast<unsigned>(_mm_movemask_epi8(m));
        };
        std::size_t i = 0;
        for (; i + 16 <= n; i += 16)
            if (unsigned bits = stops(d + i)) return i + static_cast<std::size_t>(std::countr_zero(bits));
        if (i == n) return n;
        // The bytes before i in this block hold no stop: its first stop is at or past i.
        if (unsigned bits = stops(d + n - 16)) return n - 16 + static_cast<std::size_t>(std::countr_zero(bits));
        return n;
    }
#endif
    std::size_t i = 0;
    while (i < n && !kNameStop[static_cast<unsigned char>(d[i])])
        ++i;
    return i;
}

// The DURATION column as print_graph_duration prints it (kernel/trace/trace_functions_graph.c: the overhead
// mark or a space, then "%*llu.%s us" padded with spaces, then "|  "; all spaces for an entry that is not a
// leaf): the first bytes the general reading below would look at and what it would find in them, read in one
// pass. Accepted from rest[from]: spaces, then the '|' (no duration) or [mark, spaces] <1-15 digits>[.<digits>]
// spaces "us" spaces '|'. Returns the position of that '|' with the duration in `ns`; npos for anything else
// (tabs, no unit, another column, a longer integer part), which the general reading takes.
std::size_t kernel_duration_column(std::string_view rest, std::size_t from, std::optional<std::uint64_t>& ns) {
    constexpr std::size_t npos = std::string_view::npos;
    const char* d = rest.data();
    const std::size_t n = rest.size();
    std::size_t i = from + space_run(rest, from);
    if (i >= n) return npos;
    if (d[i] == '|') {
        ns.reset();
        return i;
    }
    if (is_overhead_mark(d[i])) {
        ++i;
        i += space_run(rest, i);
    }
    std::uint64_t iv = 0;
    std::size_t q = digit_run(rest, i, iv);
    if (q == i || q - i > 15) return npos;  // 15 digits of us: no overflow of the ns in 64 bits
    std::uint64_t f = 0;
    if (q < n && d[q] == '.') {
        std::uint64_t all = 0;
        std::size_t r = digit_run(rest, q + 1, all);
        std::size_t nf = r - q - 1;
        if (nf == 0) return npos;
        for (std::size_t k = 0; k < 3; ++k)  // ns: the first 3 fraction digits, the rest dropped
            f = f * 10 + (k < nf ? static_cast<std::uint64_t>(d[q + 1 + k] - '0') : 0);
        q = r;
    }
    q += space_run(rest, q);
    if (q + 2 > n || d[q] != 'u' || d[q + 1] != 's') return npos;
    q += 2;
    q += space_run(rest, q);
    if (q >= n || d[q] != '|') return npos;
    ns.emplace(iv * 1000 + f);
    return q;
}

// "<digits>.<digits>" seconds, already split and checked to be digits: parse_decimal_ns(s, 1e9) without
// looking for the dot again.
std::optional<std::uint64_t> seconds_ns(std::string_view ip, std::string_view fp) {
    if (ip.size() > 10)
        return parse_decimal_ns(std::string(ip) + "." + std::string(fp), 1'000'000'000);  // may overflow
    std::uint64_t sec = 0;
    for (char c : ip)
        sec = sec * 10 + static_cast<std::uint64_t>(c - '0');
    std::uint64_t f = 0;
    std::size_t k = 0;
    for (; k < fp.size() && k < 9; ++k)
        f = f * 10 + static_cast<std::uint64_t>(fp[k] - '0');
    for (; k < 9; ++k)
        f *= 10;
    return sec * 1'000'000'000 + f;
}

// The text of a "/* ... */" tail: "f", "= V", "f = V", "f ret=V", "<-caller+0x1a/0x40 ret=V".
void parse_tail_comment(std::string_view inner, GraphBody& out, bool want_name) {
    bool value_next = false;
    while (true) {
        inner = ltrim(inner);
        if (inner.empty()) break;
        std::size_t end = 0;
        while (end < inner.size() && !is_space(inner[end]))
            ++end;
        std::string_view tok = inner.substr(0, end);
        inner.remove_prefix(end);
        if (value_next) {
            if (auto v = parse_graph_retval(tok)) out.retval = v;
            value_next = false;
        } else if (starts_with(tok, "<-")) {
            out.retaddr = tok.substr(2);
        } else if (tok == "=") {
            value_next = true;
        } else if (starts_with(tok, "ret=")) {
            if (auto v = parse_graph_retval(tok.substr(4))) out.retval = v;  // "(trunc)" and the like: kept out
        } else if (tok[0] == '=') {
            if (auto v = parse_graph_retval(tok.substr(1))) out.retval = v;
        } else if (want_name && out.function.empty()) {
            out.function = tok;
        }
    }
}

// What may follow "{", ";" or "}": tail comments, trace-cmd's " (ret=V)" and "-O fgraph:depth" " (N)".
void parse_suffixes(std::string_view r, GraphBody& out, bool want_name) {
    while (true) {
        r = ltrim(r);
        if (r.empty()) return;
        if (starts_with(r, "/*")) {
            std::size_t end = r.find("*/", 2);
            std::string_view inner = r.substr(2, end == std::string_view::npos ? r.npos : end - 2);
            parse_tail_comment(inner, out, want_name);
            if (end == std::string_view::npos) return;
            r.remove_prefix(end + 2);
        } else if (r[0] == '(') {
            std::size_t end = r.find(')');
            std::string_view inner = r.substr(1, end == std::string_view::npos ? r.npos : end - 1);
            if (starts_with(inner, "ret=")) {
                if (auto v = parse_graph_retval(inner.substr(4))) out.retval = v;
            }
            if (end == std::string_view::npos) return;
            r.remove_prefix(end + 1);
        } else {
            out.unknown_tail = r;  // the call itself is understood and kept; the text is counted
            return;
        }
    }
}

}  // namespace

void parse_graph_body(std::string_view body, GraphBody& out) {
    body = rtrim(body);
    if (body.empty()) {
        out.kind = GraphBody::Kind::malformed;
        out.expected = "a function call, '}' or a comment after the columns";
        return;
    }
    if (starts_with(body, "/*")) {
        out.kind = GraphBody::Kind::comment;
        std::string_view inner = body.substr(2);
        if (ends_with(inner, "*/")) inner.remove_suffix(2);
        out.comment = trim(inner);
        return;
    }
    if (body[0] == '}') {
        out.kind = GraphBody::Kind::exit;
        if (body.size() > 1) parse_suffixes(body.substr(1), out, true);  // a bare "}": nothing to look at
        return;
    }
    if (starts_with(body, kIrqEnter)) {
        out.kind = GraphBody::Kind::irq_enter;
        return;
    }
    if (starts_with(body, kIrqExit)) {
        out.kind = GraphBody::Kind::irq_exit;
        return;
    }
    std::size_t i = name_length(body);
    if (i == 0) {
        out.kind = GraphBody::Kind::malformed;
        out.expected = "a function name";
        return;
    }
    out.function = body.substr(0, i);
    std::size_t j = i;
    while (j < body.size() && is_space(body[j]))
        ++j;
    if (j < body.size() && body[j] == '[') {
        std::size_t k = body.find(']', j);
        if (k == std::string_view::npos) {
            out.kind = GraphBody::Kind::malformed;
            out.expected = "']' closing the module name";
            return;
        }
        out.module = body.substr(j + 1, k - j - 1);
        j = k + 1;
        while (j < body.size() && is_space(body[j]))
            ++j;
    }
    if (j >= body.size() || body[j] != '(') {
        out.kind = GraphBody::Kind::malformed;
        out.expected = "'(' after the function name";
        return;
    }
    int level = 0;
    std::size_t k = j;
    for (; k < body.size(); ++k) {
        if (body[k] == '(') ++level;
        if (body[k] == ')' && --level == 0) break;
    }
    if (k >= body.size()) {
        out.kind = GraphBody::Kind::malformed;
        out.expected = "')' closing the argument list";
        return;
    }
    out.args = body.substr(j + 1, k - j - 1);
    std::string_view r = ltrim(body.substr(k + 1));
    if (!r.empty() && r[0] == '{') {
        out.kind = GraphBody::Kind::entry;
    } else if (!r.empty() && r[0] == ';') {
        out.kind = GraphBody::Kind::leaf;
    } else {
        out.kind = GraphBody::Kind::malformed;
        out.expected = "'{' or ';' after the function's parentheses";
        return;
    }
    if (r.size() > 1) parse_suffixes(r.substr(1), out, false);
}

GraphColumns parse_graph_columns(std::string_view rest, int base, std::optional<std::size_t> first_bar) {
    GraphColumns c;
    parse_graph_columns(rest, base, first_bar ? *first_bar : rest.find('|'), c);
    return c;
}

void parse_graph_columns(std::string_view rest, int base, std::size_t first_bar, GraphColumns& c, TaskColumn* tasks,
                         bool kernel_layout) {
    // Field by field: cheaper than zeroing the whole struct.
    c.task.reset();
    c.lat_flags = {};
    GraphBody& b = c.body;
    b.kind = GraphBody::Kind::none;
    b.duration_ns.reset();
    b.depth = 0;
    b.function = {};
    b.module = {};
    b.args = {};
    b.retaddr = {};
    b.comment = {};
    b.retval.reset();
    b.expected = {};
    b.unknown_tail = {};
    std::size_t body_start = 0;
    for (int col = 0; col < 3; ++col) {
        if (col == 0) {
            if (first_bar == std::string_view::npos) break;
            // What the first column is depends on its bytes alone: the same bytes as the cached TASK/PID column
            // are that task again.
            if (tasks && first_bar != 0 && first_bar == tasks->size &&
                same_bytes(rest.data(), tasks->bytes, first_bar)) {
                c.task.emplace(CommPid{rest.substr(tasks->comm_at, tasks->comm_size), tasks->pid});
                body_start = first_bar + 1;
                base = 1;
                continue;
            }
        }
        // The kernel's DURATION column, read in one pass; anything else goes on to the general reading.
        if (kernel_layout) {
            std::size_t end = kernel_duration_column(rest, body_start, b.duration_ns);
            if (end != std::string_view::npos) {
                body_start = end + 1;
                base = 2;
                break;
            }
        }
        std::size_t bar = col == 0 ? first_bar : rest.find('|', body_start);
        if (bar == std::string_view::npos) break;
        std::string_view seg = trim(rest.substr(body_start, bar - body_start));
        std::optional<std::uint64_t> duration;
        if (!seg.empty() && seg.back() == 's') duration = parse_duration_column(seg);
        if (seg.empty() || seg == kIrqEnter || seg == kIrqExit || duration) {
            if (seg == kIrqEnter) {
                c.body.kind = GraphBody::Kind::irq_enter;
                return;
            }
            if (seg == kIrqExit) {
                c.body.kind = GraphBody::Kind::irq_exit;
                return;
            }
            if (duration) c.body.duration_ns.emplace(*duration);  // reset above; no optional copied whole
            body_start = bar + 1;
            base = 2;
            break;
        }
        if (!c.task && c.lat_flags.empty()) {
            if (auto cp = split_comm_pid(seg)) {
                c.task = cp;
                if (col == 0 && tasks) {
                    tasks->size = 0;
                    if (bar <= TaskColumn::kMax) {
                        std::memcpy(tasks->bytes, rest.data(), bar);
                        tasks->size = bar;
                        tasks->comm_at = static_cast<std::size_t>(cp->comm.data() - rest.data());
                        tasks->comm_size = cp->comm.size();
                        tasks->pid = cp->pid;
                    }
                }
                body_start = bar + 1;
                base = 1;
                continue;
            }
        }
        if (c.lat_flags.empty() && looks_like_lat_flags(seg)) {
            c.lat_flags = seg;
            body_start = bar + 1;
            base = 1;
            continue;
        }
        break;
    }
    std::string_view body = rest.substr(body_start);
    std::size_t n = space_run(body, 0);
    int spaces = static_cast<int>(std::min<std::size_t>(n, 1u << 20));
    c.body.depth = spaces >= base ? (spaces - base) / 2 : 0;
    parse_graph_body(body.substr(n), c.body);
}

FgraphLine tokenize_fgraph_line(std::string_view s) {
    FgraphLine L;
    tokenize_fgraph_line(s, L);
    return L;
}

void tokenize_fgraph_line(std::string_view s, FgraphLine& L, TaskColumnCache* tasks, bool kernel_layout) {
    L.kind = FgraphLine::Kind::malformed;
    L.ts_ns.reset();
    L.cpu = -1;
    L.expected = {};
    while (!s.empty() && s[0] == '\t')
        s.remove_prefix(1);  // copies of Documentation/trace/ftrace.rst carry a tab before every line
    // A trace quoted in an e-mail reply (RFC 3676 quoting: "> " per level) or pasted with its columns
    // shifted: quote marks before the CPU column go; the spaces after them are the kernel's own.
    {
        std::size_t q = 0;
        while (q < s.size() && s[q] == '>') {
            ++q;
            if (q < s.size() && s[q] == ' ') ++q;
        }
        if (q > 0) {
            std::size_t d = q;
            while (d < s.size() && s[d] == ' ')
                ++d;
            if (d < s.size() && (is_digit(s[d]) || s[d] == '#')) s.remove_prefix(q);
        }
    }
    std::string_view t = trim(s);
    if (t.empty()) {
        L.kind = FgraphLine::Kind::blank;
        return;
    }
    if (t[0] == '#') {
        L.kind = starts_with(t, "#####") ? FgraphLine::Kind::annotation : FgraphLine::Kind::header;
        L.header = trim(t.substr(1));
        if (L.kind == FgraphLine::Kind::annotation)
            if (auto cpu = parse_buffer_started(t)) L.cpu = *cpu;
        return;
    }
    if (is_elision_row(t)) {
        L.kind = FgraphLine::Kind::elided;
        return;
    }
    if (starts_with(t, "CPU:")) {
        // "CPU:%d [LOST %lu EVENTS]" (kernel/trace/trace.c, print_trace_line with iter->lost_events)
        std::size_t sp = t.find(' ');
        auto cpu = parse_int(t.substr(4, sp == t.npos ? t.npos : sp - 4));
        std::string_view r = sp == t.npos ? std::string_view() : trim(t.substr(sp));
        if (cpu && starts_with(r, "[LOST ") && ends_with(r, "EVENTS]")) {
            L.kind = FgraphLine::Kind::lost;
            L.cpu = *cpu;
            L.count = parse_u64(trim(r.substr(6, r.size() - 6 - 7)));
            return;
        }
        L.expected = "'CPU:N [LOST M EVENTS]'";
        return;
    }
    if (t[0] == '-' && t.find_first_not_of('-') == std::string_view::npos) {
        L.kind = FgraphLine::Kind::dashes;
        return;
    }
    if (starts_with(t, "(Overruns:")) {
        L.kind = FgraphLine::Kind::overruns;
        std::string_view v = trim(t.substr(10));
        if (ends_with(v, ")")) v = trim(v.substr(0, v.size() - 1));
        L.count = parse_u64(v);
        if (!L.count) {
            L.kind = FgraphLine::Kind::malformed;
            L.expected = "'(Overruns: N)'";
        }
        return;
    }

    std::size_t p = 0;
    int base = 0;
    // funcgraph-abstime: "%5lu.%06lu |  "
    {
        std::size_t d = 0;
        while (d < s.size() && s[d] == ' ')
            ++d;
        // The value is gathered while the digits are checked (one pass); seconds_ns below when the
        // integer part may overflow.
        std::uint64_t sec = 0;
        std::size_t q = digit_run(s, d, sec);
        if (q > d && q < s.size() && s[q] == '.') {
            std::uint64_t frac = 0;
            std::size_t r = digit_run(s, q + 1, frac);
            if (r - q - 1 > 9) {  // past ns precision: the first 9 digits only
                frac = 0;
                for (std::size_t k = q + 1; k <= q + 9; ++k)
                    frac = frac * 10 + static_cast<std::uint64_t>(s[k] - '0');
            }
            std::size_t num_end = r;
            while (r < s.size() && s[r] == ' ')
                ++r;
            if (r < s.size() && s[r] == '|' && num_end > q + 1) {
                if (q - d > 10) {
                    L.ts_ns = seconds_ns(s.substr(d, q - d), s.substr(q + 1, num_end - q - 1));
                } else {
                    for (std::size_t k = num_end - q - 1; k < 9; ++k)
                        frac *= 10;
                    L.ts_ns.emplace(sec * 1'000'000'000 + frac);
                }
                p = r + 1;
                base = 2;
            }
        }
    }
    // CPU: " %*d) "
    {
        std::size_t q = p;
        while (q < s.size() && s[q] == ' ')
            ++q;
        std::size_t d = q;
        std::uint64_t cpu = 0;  // exact up to 19 digits; parse_int decides beyond
        while (q < s.size() && is_digit(s[q]))
            cpu = cpu * 10 + static_cast<std::uint64_t>(s[q++] - '0');
        if (q > d && q < s.size() && s[q] == ')') {
            if (q - d > 18) {
                if (auto c = parse_int(s.substr(d, q - d))) L.cpu = *c;
            } else if (cpu <= 0x7fffffff) {
                L.cpu = static_cast<int>(cpu);
            }
            p = q + 1;
            base = 1;
        }
    }
    std::string_view rest = s.substr(p);
    // Context-switch banner (verif_pid): " 0)  platfor-3210  =>  vmstat-2854  ", no '|' at all; a
    // sched_switch comment also holds "==>" but sits behind the DURATION column's '|'.
    std::size_t first_bar = rest.find('|');
    if (first_bar == std::string_view::npos) {
        std::size_t arrow = rest.find(" => ");
        if (arrow != std::string_view::npos) {
            auto prev = split_comm_pid(rest.substr(0, arrow));
            auto next = split_comm_pid(rest.substr(arrow + 4));
            if (prev && next) {
                L.kind = FgraphLine::Kind::banner;
                L.prev = *prev;
                L.next = *next;
                return;
            }
        }
    }
    parse_graph_columns(rest, base, first_bar, L.cols, tasks ? &tasks->slot(L.cpu) : nullptr, kernel_layout);
    if (L.cols.body.kind == GraphBody::Kind::malformed) {
        L.kind = FgraphLine::Kind::malformed;
        L.expected = L.cols.body.expected;
        return;
    }
    L.kind = FgraphLine::Kind::graph;
}

}  // namespace nvtrace::import
