// calls_jsonl.hpp: the buffered JSON Lines writer of `nvtrace report --calls-jsonl` (private to analyze/import).
// One line per call, the same bytes as append_call_json (json_write.hpp) followed by '\n', written into a
// fixed buffer instead of a std::string: a call whose strings need no escaping (printable ASCII without '"'
// or '\\', the usual case) is copied as is; any other string goes through append_json_string, so escaping
// and invalid UTF-8 handling stay exactly json_write's. tests/analyze/import/test_stream_report.cpp compares
// both.
#pragma once

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "json_write.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::import {

class CallsJsonlWriter {
public:
    explicit CallsJsonlWriter(std::ostream& out) : out_(out), buf_(new char[kSize]) {}
    ~CallsJsonlWriter() { flush(); }
    CallsJsonlWriter(const CallsJsonlWriter&) = delete;
    CallsJsonlWriter& operator=(const CallsJsonlWriter&) = delete;

    void write(const Call& c) {
        if (pos_ + kFixed > kSize) flush();
        // The position lives in a local: stores through char* may alias the members, which would make the
        // compiler reload and store pos_ around every piece.
        char* p = buf_.get() + pos_;
        p = lit(p, "{\"args\":");
        p = opt_str(p, c.args);
        p = lit(p, ",\"comm\":");
        p = str(p, c.comm);
        p = lit(p, ",\"cpu\":");
        p = num(p, c.cpu);
        p = lit(p, ",\"depth\":");
        p = num(p, c.depth);
        p = lit(p, ",\"duration_ns\":");
        p = opt(p, c.duration_ns);
        p = lit(p, ",\"entry_ns\":");
        p = opt(p, c.entry_ns);
        if (c.entry_seen)
            p = c.exit_seen ? lit(p, ",\"entry_seen\":true,\"exit_seen\":true,\"function\":")
                            : lit(p, ",\"entry_seen\":true,\"exit_seen\":false,\"function\":");
        else
            p = c.exit_seen ? lit(p, ",\"entry_seen\":false,\"exit_seen\":true,\"function\":")
                            : lit(p, ",\"entry_seen\":false,\"exit_seen\":false,\"function\":");
        p = str(p, c.function);
        p = lit(p, ",\"id\":");
        p = num(p, c.id);
        p = c.irq ? lit(p, ",\"irq\":true,\"kernel_depth\":") : lit(p, ",\"irq\":false,\"kernel_depth\":");
        p = opt(p, c.kernel_depth);
        p = lit(p, ",\"module\":");
        p = opt_str(p, c.module);
        p = lit(p, ",\"parent\":");
        p = opt(p, c.parent);
        p = lit(p, ",\"phase\":");
        p = opt_str(p, c.phase);
        p = lit(p, ",\"pid\":");
        p = num(p, c.pid);
        p = lit(p, ",\"retaddr\":");
        p = opt_str(p, c.retaddr);
        p = lit(p, ",\"retval\":");
        p = opt(p, c.retval);
        p = lit(p, "}\n");
        pos_ = static_cast<std::size_t>(p - buf_.get());
        ++count_;
    }
    void flush() {
        if (pos_) out_.write(buf_.get(), static_cast<std::streamsize>(pos_));
        pos_ = 0;
    }
    std::uint64_t count() const { return count_; }

private:
    static constexpr std::size_t kSize = std::size_t(1) << 20;
    static constexpr std::size_t kFixed = 512;  // more than the keys, numbers and literals of one call

    template <std::size_t N>
    static char* lit(char* p, const char (&s)[N]) {
        std::memcpy(p, s, N - 1);
        return p + N - 1;
    }
    // Decimal, as std::to_chars prints it, two digits per table lookup and the 8-digit groups of a large
    // number converted independently (to_chars divides by 100 one step after the other).
    static constexpr char kPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    static char* pair(char* p, std::uint32_t v) {  // v < 100: two digits
        std::memcpy(p, kPairs + 2 * v, 2);
        return p + 2;
    }
    // v < 10^8 as eight ASCII digits in a register, the first digit in the lowest byte (little-endian
    // order): stored with one 8-byte write, not built in memory and read back (a store-forwarding stall).
    static std::uint64_t digits8(std::uint32_t v) {
        std::uint32_t hi = v / 10000, lo = v % 10000;
        std::uint16_t a, b, c, d;
        std::memcpy(&a, kPairs + 2 * (hi / 100), 2);
        std::memcpy(&b, kPairs + 2 * (hi % 100), 2);
        std::memcpy(&c, kPairs + 2 * (lo / 100), 2);
        std::memcpy(&d, kPairs + 2 * (lo % 100), 2);
        return std::uint64_t(a) | std::uint64_t(b) << 16 | std::uint64_t(c) << 32 | std::uint64_t(d) << 48;
    }
    static char* eight(char* p, std::uint32_t v) {  // v < 10^8: exactly eight digits
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
    static char* upto8(char* p, std::uint32_t v) {  // v < 10^8: no leading zeros
        if (v < 10) {
            *p = static_cast<char>('0' + v);
            return p + 1;
        }
        if (v < 100) return pair(p, v);
        unsigned n = v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
        if constexpr (std::endian::native == std::endian::little) {
            std::uint64_t w = digits8(v) >> (8 * (8 - n));  // the leading zeros shifted out
            std::memcpy(p, &w, 8);                          // 8 bytes written, n kept: kFixed leaves room behind
        } else {
            char tmp[8];
            eight(tmp, v);
            std::memcpy(p, tmp + 8 - n, n);
        }
        return p + n;
    }
    static char* num(char* p, std::uint64_t v) {
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
    static char* num(char* p, std::int64_t v) {
        if (v >= 0) return num(p, static_cast<std::uint64_t>(v));
        *p = '-';
        return num(p + 1, std::uint64_t(0) - static_cast<std::uint64_t>(v));  // INT64_MIN included
    }
    static char* num(char* p, int v) { return num(p, static_cast<std::int64_t>(v)); }
    template <class T>
    static char* opt(char* p, const std::optional<T>& v) {
        return v ? num(p, *v) : lit(p, "null");
    }
    // True when `s` needs no escaping: printable ASCII without '"' and '\\' (8 bytes at a time).
    static bool plain(std::string_view s) {
        constexpr std::uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
        auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & high; };
        const char* d = s.data();
        std::size_t n = s.size(), i = 0;
        for (; i + 8 <= n; i += 8) {
            std::uint64_t w;
            std::memcpy(&w, d + i, 8);
            // A byte >= 0x80, below 0x20 (subtracting 0x20 borrows into its high bit), '"' or '\\'.
            if ((w & high) | ((w - 0x20 * ones) & ~w & high) | has_zero(w ^ (ones * '"')) | has_zero(w ^ (ones * '\\')))
                return false;
        }
        for (; i < n; ++i) {
            auto u = static_cast<unsigned char>(d[i]);
            if (u < 0x20 || u >= 0x80 || u == '"' || u == '\\') return false;
        }
        return true;
    }
    char* str(char* p, std::string_view s) {
        if (!plain(s)) {
            tmp_.clear();
            append_json_string(tmp_, s);
            return put(p, tmp_);
        }
        if (static_cast<std::size_t>(p - buf_.get()) + s.size() + 2 + kFixed > kSize) {
            tmp_.assign(1, '"').append(s).push_back('"');
            return put(p, tmp_);
        }
        *p++ = '"';
        p = copy(p, s);
        *p++ = '"';
        return p;
    }
    // memcpy of a name without a call for up to 32 bytes: two fixed-size copies that may overlap (never
    // reading outside `s`).
    static char* copy(char* p, std::string_view s) {
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
    // Copies `s`, keeping room for the rest of the call (kFixed) behind it; written directly when larger.
    char* put(char* p, std::string_view s) {
        pos_ = static_cast<std::size_t>(p - buf_.get());
        if (pos_ + s.size() + kFixed > kSize) flush();
        p = buf_.get() + pos_;
        if (s.size() + kFixed > kSize) {
            out_.write(s.data(), static_cast<std::streamsize>(s.size()));
            return p;
        }
        std::memcpy(p, s.data(), s.size());
        return p + s.size();
    }
    char* opt_str(char* p, const std::optional<std::string>& s) { return s ? str(p, *s) : lit(p, "null"); }

    std::ostream& out_;
    std::unique_ptr<char[]> buf_;
    std::size_t pos_ = 0;
    std::uint64_t count_ = 0;
    std::string tmp_;
};

}  // namespace nvtrace::import
