// member_traits.hpp: what kind of member a field list names (private to analyze), for the readers and writers that
// walk a struct's fields() (import/capture_meta.cpp: meta.json; report_head.cpp: a report's source and environment).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "nvtrace/event.hpp"  // Omitted

namespace nvtrace::member_traits {

template <class T>
struct IsOptional : std::false_type {};  // may be null: std::optional, Omitted
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsOptional<Omitted<T>> : std::true_type {};
template <class T>
struct IsOmitted : std::false_type {};  // its key left out when it has no value
template <class T>
struct IsOmitted<Omitted<T>> : std::true_type {};
template <class T>
struct IsVariant : std::false_type {};
template <class... T>
struct IsVariant<std::variant<T...>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsMap : std::false_type {};  // a JSON object of values of one type
template <class T>
struct IsMap<std::map<std::string, T>> : std::true_type {};

}  // namespace nvtrace::member_traits
