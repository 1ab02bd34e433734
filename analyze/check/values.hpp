// values.hpp: the values an expectations file may give (docs/expectations.md), read the same way by the parser
// (which refuses what none of them accepts: a misspelt `absent` fact would otherwise always pass) and by the
// checker. Internal to analyze/check.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

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

// A PCI address "[DOMAIN:]BUS:DEVICE[.FUNCTION]" in hex (0000:01:00.0, nvidia-smi's 00000000:01:00.0, RM's Xid
// "PCI:0000:01:00" without a function, lspci's 01:00.0 without a domain, which is 0).
struct PciAddress {
    std::uint64_t domain = 0;
    unsigned bus = 0, device = 0;
    std::optional<unsigned> function;
};

inline std::optional<PciAddress> pci_address(std::string_view s) {
    if (s.starts_with("PCI:") || s.starts_with("pci:")) s.remove_prefix(4);
    auto hex = [](std::string_view t, std::size_t max_digits) -> std::optional<std::uint64_t> {
        if (t.empty() || t.size() > max_digits) return std::nullopt;
        std::uint64_t v = 0;
        for (char c : t) {
            int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                : -1;
            if (d < 0) return std::nullopt;
            v = v * 16 + static_cast<std::uint64_t>(d);
        }
        return v;
    };
    PciAddress a;
    if (std::size_t dot = s.rfind('.'); dot != std::string_view::npos) {
        auto fn = hex(s.substr(dot + 1), 1);
        if (!fn || *fn > 7) return std::nullopt;
        a.function = static_cast<unsigned>(*fn);
        s = s.substr(0, dot);
    }
    std::vector<std::string_view> parts;
    for (std::size_t at = 0;;) {
        std::size_t colon = s.find(':', at);
        parts.push_back(s.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
        if (colon == std::string_view::npos) break;
        at = colon + 1;
    }
    if (parts.size() != 2 && parts.size() != 3) return std::nullopt;
    if (parts.size() == 3) {
        auto d = hex(parts[0], 8);
        if (!d) return std::nullopt;
        a.domain = *d;
    }
    auto bus = hex(parts[parts.size() - 2], 2), dev = hex(parts.back(), 2);
    if (!bus || !dev || *dev > 0x1f) return std::nullopt;
    a.bus = static_cast<unsigned>(*bus);
    a.device = static_cast<unsigned>(*dev);
    return a;
}

}  // namespace nvtrace::check_values
