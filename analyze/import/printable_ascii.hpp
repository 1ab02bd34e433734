// printable_ascii.hpp: whether a string is printable ASCII, 8 bytes at a time (private to analyze/import).
// One scan serves the JSON writer (a string it copies without escapes) and the stream builder (a name clean()
// would return unchanged, which may be viewed instead of copied).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace nvtrace::import {

// True when no byte of `s` is >= 0x80 or below 0x20 and, with `kNoJsonEscapes`, none is '"' or '\\' (the
// bytes RFC 8259 makes a JSON string escape). Inlined into its callers: one call per name written.
template <bool kNoJsonEscapes>
[[gnu::always_inline]] inline bool printable_ascii(std::string_view s) {
    constexpr std::uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & high; };
    // A byte >= 0x80, below 0x20 (subtracting 0x20 borrows into its high bit), '"' or '\\'.
    auto bad = [&](std::uint64_t w) {
        std::uint64_t b = (w & high) | ((w - 0x20 * ones) & ~w & high);
        if constexpr (kNoJsonEscapes) b |= has_zero(w ^ (ones * '"')) | has_zero(w ^ (ones * '\\'));
        return b;
    };
    const char* d = s.data();
    const std::size_t n = s.size();
    std::uint64_t w;
    if (n >= 8) {
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            std::memcpy(&w, d + i, 8);
            if (bad(w)) return false;
        }
        if (i == n) return true;
        std::memcpy(&w, d + n - 8, 8);  // the last bytes in a word that overlaps the one before (no byte loop)
        return !bad(w);
    }
    // Shorter: the bytes gathered into one word by overlapping loads, the rest of it spaces (which pass).
    if (n >= 4) {
        std::uint32_t a, b;
        std::memcpy(&a, d, 4);
        std::memcpy(&b, d + n - 4, 4);
        w = std::uint64_t(a) | std::uint64_t(b) << 32;
    } else if (n > 0) {
        w = (ones * ' ' & ~std::uint64_t(0xffffff)) | static_cast<unsigned char>(d[0]) |
            std::uint64_t(static_cast<unsigned char>(d[n / 2])) << 8 |
            std::uint64_t(static_cast<unsigned char>(d[n - 1])) << 16;
    } else {
        return true;
    }
    return !bad(w);
}

}  // namespace nvtrace::import
