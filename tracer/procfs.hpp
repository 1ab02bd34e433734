// procfs.hpp: small readers of /proc and /sys files (kernel access: tracer/ only).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

// Whole file as text; an error names the path and errno text.
Result<std::string> read_file(const std::string& path);

// Kernel release, machine, the loaded versions of `modules` (/sys/module/M/version, srcversion,
// taint), and the NVIDIA driver banner (/proc/driver/nvidia/version) when present.
nlohmann::json environment_info(const std::vector<std::string>& modules);

bool module_loaded(const std::string& module);

// The traced program's process tree, followed while it runs (for its open files, /proc/PID/fd). A process is
// a member when it is the root, is in the root's process group, or its parent is a member or the caller (a
// child subreaper: orphans of the tree are reparented to it). Each pid is classified once, when it first
// shows in /proc, from /proc/PID/stat; later scans read only the /proc directory and the stat of new pids,
// which keeps a 10 ms poll cheap. The caller is never a member. A pid that exits and is reused by a new
// process between two scans keeps its first classification (pid reuse within 10 ms; pid_max is 4 M here).
// Thread-safety: one thread.
class ProcessTree {
public:
    explicit ProcessTree(int root_pid) : root_(root_pid) {}
    // Rescans /proc; returns the live members, sorted by pid.
    const std::vector<int>& refresh();

private:
    int root_;
    std::unordered_map<int, bool> member_;  // every pid seen in /proc -> member of the tree
    std::vector<int> members_;
};

// (pid, fd) -> link targets of /proc/PID/fd/FD for every member of the tree, recorded under the id of every
// thread of the process (/proc/PID/task/TID: trace events carry the thread id, and threads share the fd
// table). A target different from the last one recorded for that (pid, fd) is appended: an fd closed and
// opened again on another file between two polls keeps every path seen. Processes that are gone are skipped.
void poll_fd_paths(const std::vector<int>& pids, std::map<std::pair<int, int>, std::vector<std::string>>& paths);

}  // namespace nvtrace::tracer
