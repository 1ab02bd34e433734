// uprobe_events as a live test compares it before and after a run: the lines of this kernel's global probe list,
// without those of another nvtrace that is running and was not started by this test process (its probes come and
// go on its own, as foreign_live_instance says for instances).
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>

#include "live_util.hpp"

namespace nvtrace::live {

// "p:nvtrace_123/getpid /lib/...": the pid of an nvtrace_<pid>[_tag] group, -1 for other groups.
inline long uprobe_line_owner(const std::string& line) {
    auto colon = line.find(':'), slash = line.find('/');
    if (colon == std::string::npos || slash == std::string::npos || slash < colon) return -1;
    const std::string group = line.substr(colon + 1, slash - colon - 1);
    if (group.rfind("nvtrace_", 0) != 0) return -1;
    return std::strtol(group.c_str() + 8, nullptr, 10);
}

inline std::string uprobe_events_snapshot() {
    std::istringstream in(slurp(kTracing + "/uprobe_events"));
    std::string out, line;
    while (std::getline(in, line)) {
        long owner = uprobe_line_owner(line);
        if (owner > 1 && foreign_live_instance("nvtrace-" + std::to_string(owner))) continue;
        out += line + "\n";
    }
    return out;
}

// Lines of nvtrace groups (any pid) in uprobe_events.
inline std::string nvtrace_uprobe_lines() {
    std::istringstream in(slurp(kTracing + "/uprobe_events"));
    std::string out, line;
    while (std::getline(in, line))
        if (uprobe_line_owner(line) > 0) out += line + "\n";
    return out;
}

}  // namespace nvtrace::live
