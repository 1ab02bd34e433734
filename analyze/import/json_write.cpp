#include "json_write.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "../record_fields.hpp"
#include "printable_ascii.hpp"

namespace nvtrace::import {

namespace {

using fields::Empty;

// The writer's pieces are inlined into each record's writer: called once per field and byte, a call each
// made the --calls-jsonl writer a third slower than one written by hand.
#define HOT [[gnu::always_inline]] inline

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V>
struct is_map<std::map<K, V>> : std::true_type {};

// A string literal, its length known at compile time.
template <std::size_t N>
HOT char* lit(char* p, const char (&s)[N]) {
    std::memcpy(p, s, N - 1);
    return p + N - 1;
}

// Decimal, as std::to_chars prints it, two digits per table lookup and the 8-digit groups of a large number
// converted independently (to_chars divides by 100 one step after the other).
constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
HOT char* pair(char* p, std::uint32_t v) {  // v < 100: two digits
    std::memcpy(p, kPairs + 2 * v, 2);
    return p + 2;
}
// v < 10^8 as eight ASCII digits in a register, the first digit in the lowest byte (little-endian order):
// stored with one 8-byte write, not built in memory and read back (a store-forwarding stall). No table: the
// two 4-digit halves sit in 32-bit lanes, split into 2-digit values in 16-bit lanes, then digits in bytes, each
// lane divided at once by a multiplication (x * 10486 >> 20 is x / 100 for x < 10^4, x * 103 >> 10 is x / 10
// for x < 100; no product reaches the next lane).
HOT std::uint64_t digits8(std::uint32_t v) {
    std::uint64_t x = (v / 10000) | std::uint64_t(v % 10000) << 32;
    std::uint64_t y = ((x * 10486) >> 20) & 0x0000007F0000007FULL;
    x = y | (x - y * 100) << 16;
    y = ((x * 103) >> 10) & 0x000F000F000F000FULL;
    x = y | (x - y * 10) << 8;
    return x | 0x3030303030303030ULL;
}
HOT char* eight(char* p, std::uint32_t v) {  // v < 10^8: exactly eight digits
    if constexpr (std::endian::native == std::endian::little) {
        std::uint64_t w = digits8(v);
        std::memcpy(p, &w, 8);
    } else {
        pair(p, v / 1000000);
        pair(p + 2, v / 10000 % 100);
        pair(p + 4, v / 100 % 100);
        pair(p + 6, v % 100);
    }
    return p + 8;
}
HOT char* upto8(char* p, std::uint32_t v) {  // v < 10^8: no leading zeros
    if (v < 10) {
        *p = static_cast<char>('0' + v);
        return p + 1;
    }
    if (v < 100) return pair(p, v);
    unsigned n = v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
    if constexpr (std::endian::native == std::endian::little) {
        std::uint64_t w = digits8(v) >> (8 * (8 - n));  // the leading zeros shifted out
        std::memcpy(p, &w, 8);                          // 8 bytes written, n kept: kNumberBound leaves room behind
    } else {
        char tmp[8];
        eight(tmp, v);
        std::memcpy(p, tmp + 8 - n, n);
    }
    return p + n;
}
HOT char* num(char* p, std::uint64_t v) {
    if (v < 100000000) return upto8(p, static_cast<std::uint32_t>(v));
    if (v < 10000000000000000ULL) {
        p = upto8(p, static_cast<std::uint32_t>(v / 100000000));
        return eight(p, static_cast<std::uint32_t>(v % 100000000));
    }
    std::uint64_t top = v / 100000000;
    p = upto8(p, static_cast<std::uint32_t>(top / 100000000));  // at most 1844
    p = eight(p, static_cast<std::uint32_t>(top % 100000000));
    return eight(p, static_cast<std::uint32_t>(v % 100000000));
}
HOT char* num(char* p, std::int64_t v) {
    if (v >= 0) return num(p, static_cast<std::uint64_t>(v));
    *p = '-';
    return num(p + 1, std::uint64_t(0) - static_cast<std::uint64_t>(v));  // INT64_MIN included
}

// What a number may take: a sign and 20 digits, and the 8-byte store of upto8 reaching past its last digit.
constexpr std::size_t kNumberBound = 24;

// True when `s` needs no escaping: printable ASCII without '"' and '\\' (8 bytes at a time).
HOT bool plain(std::string_view s) {
    return printable_ascii<true>(s);
}

// memcpy of a name without a call for up to 32 bytes: two fixed-size copies that may overlap (never reading
// outside `s`).
HOT char* copy(char* p, std::string_view s) {
    const char* d = s.data();
    std::size_t n = s.size();
    if (n >= 16 && n <= 32) {
        std::memcpy(p, d, 16);
        std::memcpy(p + n - 16, d + n - 16, 16);
    } else if (n >= 8 && n < 16) {
        std::memcpy(p, d, 8);
        std::memcpy(p + n - 8, d + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        std::memcpy(p, d, 4);
        std::memcpy(p + n - 4, d + n - 4, 4);
    } else {
        std::memcpy(p, d, n);
    }
    return p + n;
}

// `s` as nlohmann::json::dump() writes a string (ensure_ascii off): a plain string copied as is, escapes as
// nlohmann writes them; text with a byte >= 0x80 goes through nlohmann itself with error_handler_t::replace
// (invalid UTF-8 becomes U+FFFD, never an exception).
[[gnu::noinline]] char* escaped(char* p, std::string_view s) {
    char* start = p;
    *p++ = '"';
    for (char c : s) {
        auto ch = static_cast<unsigned char>(c);
        if (ch >= 0x20 && ch != '"' && ch != '\\' && ch < 0x80) {
            *p++ = c;
            continue;
        }
        if (ch >= 0x80) {
            std::string tmp =
                nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            std::memcpy(start, tmp.data(), tmp.size());
            return start + tmp.size();
        }
        *p++ = '\\';
        switch (ch) {
            case '"':
            case '\\':
                *p++ = c;
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
                p = lit(p, "u00");
                *p++ = kHex[ch >> 4];
                *p++ = kHex[ch & 15];
            }
        }
    }
    *p++ = '"';
    return p;
}
HOT char* str(char* p, std::string_view s) {
    if (!plain(s)) return escaped(p, s);
    *p++ = '"';
    p = copy(p, s);
    *p++ = '"';
    return p;
}

// Upper bound of what str() writes for `s` ("\u001f" is 6 bytes; nlohmann's U+FFFD for a bad byte, 3).
HOT std::size_t string_bound(std::string_view s) {
    return 6 * s.size() + 2;
}

// One field's value, by its member's type and the field's Empty rule (record_fields.hpp).
template <Empty E, class T>
HOT char* value(char* p, const T& v) {
    if constexpr (is_optional<T>::value) {
        return v ? value<Empty::as_is>(p, *v) : lit(p, "null");
    } else if constexpr (std::is_same_v<T, bool>) {
        return v ? lit(p, "true") : lit(p, "false");
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        return num(p, static_cast<std::int64_t>(v));
    } else if constexpr (std::is_integral_v<T>) {
        return num(p, static_cast<std::uint64_t>(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (E == Empty::none && v.empty()) return lit(p, "\"none\"");
        return str(p, v);
    } else if constexpr (is_vector<T>::value) {
        if (E == Empty::null && v.empty()) return lit(p, "null");
        *p++ = '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) *p++ = ',';
            p = value<Empty::as_is>(p, v[i]);
        }
        *p++ = ']';
        return p;
    } else {
        static_assert(is_map<T>::value, "a field type record_fields.hpp does not know");
        *p++ = '{';  // in the map's order, which is nlohmann's (std::less on the bytes)
        bool first = true;
        for (const auto& [k, x] : v) {
            if (!first) *p++ = ',';
            first = false;
            p = str(p, k);
            *p++ = ':';
            p = value<Empty::as_is>(p, x);
        }
        *p++ = '}';
        return p;
    }
}

// Upper bound of what value<E>() writes for `v`.
template <Empty E, class T>
HOT std::size_t value_bound(const T& v) {
    if constexpr (is_optional<T>::value) {
        return v ? value_bound<Empty::as_is>(*v) : 4;
    } else if constexpr (std::is_same_v<T, bool>) {
        return 5;
    } else if constexpr (std::is_integral_v<T>) {
        return kNumberBound;
    } else if constexpr (std::is_same_v<T, std::string>) {
        return string_bound(v) + (E == Empty::none ? 4 : 0);
    } else if constexpr (is_vector<T>::value) {
        std::size_t n = 4;
        for (const auto& x : v)
            n += value_bound<Empty::as_is>(x) + 1;
        return n;
    } else {
        std::size_t n = 2;
        for (const auto& [k, x] : v)
            n += string_bound(k) + value_bound<Empty::as_is>(x) + 2;
        return n;
    }
}

// `{"key":` for the first field written, `,"key":` for the others.
template <std::size_t N>
struct KeyText {
    char text[N + 4];
};
template <class R, std::size_t I, bool First>
constexpr auto kKeyText = [] {
    constexpr std::string_view key = fields::field<R, I>().key;
    KeyText<key.size()> k{};
    k.text[0] = First ? '{' : ',';
    k.text[1] = '"';
    for (std::size_t i = 0; i < key.size(); ++i)
        k.text[i + 2] = key[i];
    k.text[key.size() + 2] = '"';
    k.text[key.size() + 3] = ':';
    return k;
}();

template <class R>
constexpr auto kKeyOrder = fields::key_order<R>();

template <class R, std::size_t I, bool First>
HOT char* emit_field(char* p, const R& r) {
    constexpr auto& f = fields::field<R, I>();
    static_assert(!First || f.empty != Empty::omit, "the first key written holds the '{'");
    const auto& v = r.*(f.member);
    if constexpr (f.empty == Empty::omit)
        if (!v) return p;
    constexpr auto& key = kKeyText<R, I, First>;
    std::memcpy(p, key.text, sizeof key.text);
    return value<f.empty>(p + sizeof key.text, v);
}

// R as the compact JSON object to_json() dumps: its keys in nlohmann's order. `p` stays a parameter, never
// captured by reference: a char store may alias a char* in memory, which would make the compiler reload and
// store it around every piece.
template <class R, std::size_t... K>
HOT char* emit_fields(char* p, const R& r, std::index_sequence<K...>) {
    ((p = emit_field<R, kKeyOrder<R>[K], K == 0>(p, r)), ...);
    *p++ = '}';
    return p;
}
template <class R>
HOT char* emit(char* p, const R& r) {
    return emit_fields(p, r, std::make_index_sequence<fields::field_count<R>>{});
}

template <class R, std::size_t I>
HOT std::size_t field_bound(const R& r) {
    constexpr auto& f = fields::field<R, I>();
    return f.key.size() + 4 + value_bound<f.empty>(r.*(f.member));
}

template <class R>
HOT std::size_t bound(const R& r) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (1 + ... + field_bound<R, I>(r));  // 1: '}'
    }
    (std::make_index_sequence<fields::field_count<R>>{});
}

// Memory of at least `n` bytes to write into, this thread's, not initialised: growing `s` itself by a bound
// zero-filled every byte of the bound (std::string::resize), several times what is written (6 bytes per byte
// of a string, which a deep call path in a graph row makes kilobytes).
inline char* scratch(std::size_t n) {
    thread_local std::unique_ptr<char[]> buf;
    thread_local std::size_t size = 0;
    if (n > size) {
        size = std::max<std::size_t>(n, 4096);
        buf.reset(new char[size]);
    }
    return buf.get();
}

// A record written through a raw pointer into scratch memory of bound() bytes (no capacity check per piece, as
// std::string::append makes), then appended to `s`.
template <class R>
void append(std::string& s, const R& r) {
    char* p = scratch(bound(r));
    char* end = emit(p, r);
    s.append(p, static_cast<std::size_t>(end - p));
}

#undef HOT

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    char* p = scratch(string_bound(s));
    char* end = str(p, s);
    out.append(p, static_cast<std::size_t>(end - p));
}

void append_call_json(std::string& out, const Call& c) {
    append(out, c);
}
void append_ioctl_json(std::string& out, const IoctlRecord& i) {
    append(out, i);
}
void append_ioctl_stat_json(std::string& out, const IoctlStat& s) {
    append(out, s);
}
void append_event_json(std::string& out, const EventRecord& e) {
    append(out, e);
}
void append_marker_json(std::string& out, const MarkerEntry& m) {
    append(out, m);
}
void append_graph_json(std::string& out, const GraphNode& n) {
    append(out, n);
}
void append_log_json(std::string& out, const KernelLogMessage& m) {
    append(out, m);
}
void append_api_call_json(std::string& out, const ApiCall& a) {
    append(out, a);
}

std::size_t call_json_bound(const Call& c) {
    return bound(c);
}
char* emit_call_json(char* p, const Call& c) {
    return emit(p, c);
}

}  // namespace nvtrace::import
