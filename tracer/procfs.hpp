// procfs.hpp: small readers of /proc and /sys files (kernel access: tracer/ only).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/report_source.hpp"

namespace nvtrace::tracer {

// Whole file as text; an error names the path and errno text.
Result<std::string> read_file(const std::string& path);

// Kernel release, machine, the loaded versions of `modules` (/sys/module/M/version, srcversion,
// taint), and the NVIDIA driver banner (/proc/driver/nvidia/version) when present.
void add_environment_info(ReportEnvironment& env, const std::vector<std::string>& modules);

bool module_loaded(const std::string& module);

// The numeric entries of directory `path` (/proc: pids, /proc/PID/task: thread ids).
std::vector<int> numeric_entries(const char* path);
// STATE, PPID and PGRP of /proc/PID/stat. False when the process is gone.
bool read_proc_stat(int pid, char& state, int& ppid, int& pgrp);
// STATE and field 22, starttime (clock ticks since boot, proc(5)), of /proc/PID/stat. False when the process is gone.
bool read_proc_start(int pid, char& state, unsigned long long& starttime_ticks);
// Calls f(fd, link target) for each open file of `pid` (/proc/PID/fd) until f returns false. False when the
// directory cannot be read (the process is gone, or not ours to read).
bool for_each_fd(int pid, const std::function<bool(int fd, std::string_view target)>& f);

// The traced program's process tree, followed while it runs (for its open files, /proc/PID/fd). A process is
// a member when it is the root, is in the root's process group, or its parent is a member or the caller (a
// child subreaper: orphans of the tree are reparented to it). Each pid is classified once, when it first
// shows in /proc, from /proc/PID/stat; later scans read only the /proc directory and the stat of new pids,
// which keeps a 10 ms poll cheap. The caller is never a member. A pid that exits and is reused by a new
// process between two scans keeps its first classification (pid reuse within 10 ms; pid_max is 4 M here).
// While no pid was allocated since the last scan (last_pid_allocated), /proc is not listed again: the tree can
// only have lost members, and each member is checked alone (listing /proc was half of a tick's CPU time).
// Thread-safety: one thread.
class ProcessTree {
public:
    explicit ProcessTree(int root_pid) : root_(root_pid) {}
    // Rescans /proc (or, when no pid was allocated since, checks the members); returns the live members, sorted by pid.
    const std::vector<int>& refresh();
    // How many refreshes listed /proc (the others only checked the members).
    std::uint64_t scans() const { return scans_; }

private:
    int root_;
    std::unordered_map<int, bool> member_;  // every pid seen in /proc -> member of the tree
    std::vector<int> members_;
    long last_pid_ = -1;  // last_pid_allocated() before the last scan; -1: none
    std::uint64_t scans_ = 0;
};

// The pid last allocated in the caller's pid namespace (the last field of /proc/loadavg, fs/proc/loadavg.c: the
// namespace's pid allocation cursor), or -1. It changes with every process or thread created in that namespace or a
// namespace below it (alloc_pid allocates a pid at every level).
long last_pid_allocated();

// What the /proc/PID/fd polls of a capture saw. Polls are numbered 0, 1, ... in the order made; the capture
// brackets poll N by two trace_marker_raw records (ids 2N and 2N + 1) so that each poll has an interval on the
// trace clock. A run is one (pid, fd) naming the same link target in consecutive polls (a poll that did not see
// the fd ends the run). Thread-safety: one thread.
struct FdPollLog {
    struct Run {
        int pid = -1;  // process id
        int fd = -1;
        std::uint32_t first_poll = 0, last_poll = 0;
        std::string path;
    };
    std::vector<Run> runs;
    std::map<int, int> process_of;  // thread id -> process id (/proc/PID/task/TID), a process maps to itself
    std::uint32_t polls = 0;        // polls made
    std::map<std::pair<int, int>, std::size_t> open_runs;  // (pid, fd) -> its run in `runs` seen in the last poll
};

// One poll (number log.polls, which it then increments): the link targets of /proc/PID/fd/FD for every member
// of the tree, and its threads (/proc/PID/task: trace events carry thread ids, threads share the fd table).
// Processes that are gone are skipped.
void poll_fd_paths(const std::vector<int>& pids, FdPollLog& log);

}  // namespace nvtrace::tracer
