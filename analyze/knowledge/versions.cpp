#include <charconv>

#include <fmt/format.h>

#include "nvtrace/knowledge.hpp"

namespace nvtrace {

std::optional<DriverVersion> parse_driver_version(std::string_view text) {
    DriverVersion v;
    std::uint32_t* parts[] = {&v.major, &v.minor, &v.patch};
    std::uint8_t n = 0;
    const char* p = text.data();
    const char* end = text.data() + text.size();
    while (true) {
        if (n == 3) return std::nullopt;
        auto [next, ec] = std::from_chars(p, end, *parts[n]);
        if (ec != std::errc() || next == p) return std::nullopt;
        ++n;
        p = next;
        if (p == end) break;
        if (*p != '.') return std::nullopt;
        ++p;
    }
    v.parts = n;
    return v;
}

std::string to_string(DriverVersion v) {
    if (v == kNewestKnown) return "newest";
    if (v.minor == 0xffffffffu && v.patch == 0xffffffffu) return fmt::format("{}.x", v.major);  // branch_end()
    if (v.parts <= 1) return fmt::format("{}", v.major);
    if (v.parts == 2) return fmt::format("{}.{}", v.major, v.minor);
    return fmt::format("{}.{}.{:02}", v.major, v.minor, v.patch);
}

std::string to_string(const VersionRange& r) {
    bool from_oldest = r.first == kOldestKnown;
    bool to_newest = r.last == kNewestKnown;
    if (from_oldest && to_newest) return "all versions checked";
    if (from_oldest) return fmt::format("up to {}", to_string(r.last));
    if (to_newest) return fmt::format("from {}", to_string(r.first));
    return fmt::format("{} to {}", to_string(r.first), to_string(r.last));
}

}  // namespace nvtrace
