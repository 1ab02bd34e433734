// Small builders for synthetic event streams in unit tests.
#pragma once

#include "nvtrace/event.hpp"

namespace nvtrace::test {

inline Event entry(std::uint64_t ts, int pid, const char* fn, int depth, std::uint64_t addr = 0, int cpu = 0) {
    FuncEntry e;
    e.function = fn;
    e.depth = depth;
    e.func_addr = addr;
    return Event{ts, cpu, pid, false, e};
}

inline Event exit_(std::uint64_t ts, int pid, const char* fn, int depth, std::uint64_t calltime, std::uint64_t rettime,
                   std::uint64_t addr = 0, int cpu = 0) {
    FuncExit x;
    x.function = fn;
    x.depth = depth;
    x.calltime_ns = calltime;
    x.rettime_ns = rettime;
    x.func_addr = addr;
    return Event{ts, cpu, pid, false, x};
}

}  // namespace nvtrace::test
