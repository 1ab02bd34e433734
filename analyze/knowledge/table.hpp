// Lookup helpers shared by the knowledge tables (private to analyze/knowledge).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "nvtrace/knowledge.hpp"

namespace nvtrace::knowledge_detail {

// Shorthands for the version ranges in the tables.
constexpr DriverVersion v(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    return {a, b, c, 3};
}
constexpr DriverVersion v(std::uint32_t a, std::uint32_t b) {
    return {a, b, 0, 2};
}
// Every release of driver branch `major`, whatever its minor and patch. NVIDIA's production branches (525, 535, 550,
// 570, 580) keep getting releases after the main line has moved on to the next branch, and keep their interfaces:
// an entry still present in the newest tag of a branch ends at branch_end(major), not at the branch's last main-line
// release (580.119.02 to 580.142 carry 580.105.08's uvm_ioctl.h and nverror.h unchanged).
constexpr DriverVersion branch_end(std::uint32_t major) {
    return {major, 0xffffffffu, 0xffffffffu, 3};
}
constexpr VersionRange all() {
    return {};
}
constexpr VersionRange since(DriverVersion f) {
    return {f, kNewestKnown};
}
constexpr VersionRange until(DriverVersion l) {
    return {kOldestKnown, l};
}
constexpr VersionRange between(DriverVersion f, DriverVersion l) {
    return {f, l};
}

// The entry for `key`: with a version, the one whose range holds it; without, the newest one.
template <class T, class KeyOf, class Key>
const T* find_versioned(std::span<const T> table, Key key, KeyOf key_of, std::optional<DriverVersion> version) {
    const T* best = nullptr;
    for (const T& e : table) {
        if (key_of(e) != key) continue;
        if (version) {
            if (e.versions.contains(*version)) return &e;
            continue;
        }
        if (!best || best->versions.last < e.versions.last ||
            (best->versions.last == e.versions.last && best->versions.first < e.versions.first))
            best = &e;
    }
    return best;
}

// The newest entry whose name is `name`.
template <class T, class NameOf>
const T* find_by_name(std::span<const T> table, std::string_view name, NameOf name_of) {
    const T* best = nullptr;
    for (const T& e : table)
        if (name_of(e) == name && (!best || best->versions.last < e.versions.last)) best = &e;
    return best;
}

}  // namespace nvtrace::knowledge_detail
