// values.hpp: the values an expectations file may give (docs/expectations.md), read the same way by the parser
// (which refuses what none of them accepts: a misspelt `absent` fact would otherwise always pass) and by the
// checker. Internal to analyze/check.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "nvtrace/knowledge.hpp"

namespace nvtrace::check_values {

// errno names and numbers ("EINVAL", "-22", "22", "-EINVAL").
inline std::optional<std::int64_t> errno_value(std::string_view s) {
    bool neg = !s.empty() && s.front() == '-';
    if (neg) s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
    if (std::isdigit(static_cast<unsigned char>(s.front()))) {
        std::int64_t v = 0;
        for (char c : s) {
            if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
            v = v * 10 + (c - '0');
        }
        return neg ? -v : v;
    }
    for (int e = 1; e < 200; ++e) {
        const char* name = strerrorname_np(e);
        if (name && s == name) return -static_cast<std::int64_t>(e);
    }
    return std::nullopt;
}

inline std::optional<std::uint64_t> number(std::string_view s) {
    if (s.empty()) return std::nullopt;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    std::uint64_t v = 0;
    for (char c : s) {
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (base == 16 && std::isxdigit(static_cast<unsigned char>(c)))
                    ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                    : -1;
        if (d < 0) return std::nullopt;
        v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    }
    return v;
}

// An API call's result as `api F = RESULT` gives it: a CUresult (cuda.h) or cudaError_t (driver_types.h) name
// of the CUDA table (nvtrace/knowledge.hpp), or a number (decimal, -decimal or 0x hex).
inline bool api_result_value(std::string_view s) {
    std::string_view digits = !s.empty() && s.front() == '-' ? s.substr(1) : s;
    if (number(digits)) return true;
    for (const auto& r : cu_results())
        if (s == r.name) return true;
    for (const auto& r : cuda_errors())
        if (s == r.name) return true;
    return false;
}

// An NV_STATUS by name or number.
inline std::optional<std::uint64_t> status_value(std::string_view s) {
    if (auto n = number(s)) return n;
    if (const auto* st = nv_status_by_name(s)) return st->value;
    return std::nullopt;
}

// An RM class (hClass) by name or number.
inline std::optional<std::uint64_t> hclass_value(std::string_view s) {
    if (auto n = number(s)) return n;
    if (const auto* c = rm_class_by_name(s)) return c->hclass;
    return std::nullopt;
}

// An ioctl request by name (one nvtrace knows: ioctl_number_by_name) or number.
inline std::optional<std::uint64_t> ioctl_value(std::string_view s) {
    if (auto n = number(s)) return n;
    return ioctl_number_by_name(s);
}

}  // namespace nvtrace::check_values
