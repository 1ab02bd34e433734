// stderr_note.hpp: messages on stderr that cannot end a run. `nvtrace run ... 2>&1 | head -1` closed the pipe
// after the first line; the next progress line killed nvtrace (SIGPIPE) or, with SIGPIPE handled, fmt::print
// threw: either way meta.json and report.json were never written and the capture was lost. A message that cannot
// be written is dropped instead.
#pragma once

#include <cstdio>
#include <utility>

#include <fmt/format.h>

namespace nvtrace::tracer {

template <class... T>
void note(fmt::format_string<T...> format, T&&... args) noexcept {
    try {
        fmt::print(stderr, format, std::forward<T>(args)...);
    } catch (...) {
    }
}

}  // namespace nvtrace::tracer
