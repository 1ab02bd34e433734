// uprobe_late.hpp: uprobes for libraries a traced program maps after it started (dlopen of a file nvtrace did not
// find before the start: PyTorch's libcudart under site-packages/nvidia/cuda_runtime/lib, a path given to dlopen).
//
// The capture's drain loop reads /proc/PID/maps of every process of the traced tree (each tick, 10 ms); a file
// mapped executable ('x' in the perms column; kernel fs/proc/task_mmu.c show_map_vma) whose name matches a library
// nvtrace probes (libcudart.so*, libcuda.so*: the CUDA tables; the LIB of a --uprobe by soname or stem) and that
// the start's plan did not probe gets the same probes, in the same group. They are armed only after the file was
// mapped: the calls made between the mapping and the arming are not seen, which the capture records
// (meta.json uprobes[].late_pid, armed_after_ns, armed_ns; the report's `uprobes_armed_late` diagnostic).
// armed_after_ns / armed_ns are taken once the last probe of the file is enabled: calls from then on are seen; the
// probes are enabled one by one before it, so a call somewhat earlier may be seen too.
// Only the file's name is looked at (its DT_SONAME is not read: a library a program maps may be large).
// Thread-safety: one thread per LateUprobes.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "uprobe_plan.hpp"

namespace nvtrace::tracer {

// One line of /proc/PID/maps that maps a file executable.
struct MappedFile {
    std::string path;  // as the kernel prints it (d_path from the process's root); " (deleted)" kept
    std::uint64_t inode = 0;
    std::string dev;  // "fd:01" (major:minor, hex)
};

// The executable file mappings of a maps text ("START-END PERMS OFFSET DEV INODE PATH"); anonymous mappings, inode 0
// and lines that are not maps lines are left out. Each (dev, inode) once, in the order first seen.
std::vector<MappedFile> executable_mappings(std::string_view maps_text);

// What to look for in the mappings: the CUDA tables (unless --no-api) and the --uprobe specs naming a library.
struct LateWatch {
    bool cuda = false;
    std::vector<UprobeSpec> specs;
};

// Which probes a file of this name gets: CudaLayer::runtime for libcudart.so*, CudaLayer::driver for libcuda.so*
// (with `watch.cuda`), and the specs whose LIB is the name, or its stem ("libc" and "libc.so" match
// "libc.so.6", never "libcap.so.2"). A spec whose LIB is a path matches nothing here (its file is armed at start).
struct LateMatch {
    std::optional<CudaLayer> cuda;
    std::vector<const UprobeSpec*> specs;
    bool any() const { return cuda || !specs.empty(); }
};
LateMatch late_match(std::string_view file_name, const LateWatch& watch);

// A file found mapped after the start and planned: the functions to probe (empty when none could be), what was
// left out.
struct LateLibrary {
    std::string path;  // the file probed (real path)
    int pid = -1;      // the process whose maps showed it
    std::vector<PlannedFunction> functions;
    std::vector<std::string> notes;
};

class LateUprobes {
public:
    // `start`: the plan armed before the start (its files are not armed again; its event names stay taken).
    LateUprobes(LateWatch watch, const ProbePlan& start);
    bool active() const { return watch_.cuda || !watch_.specs.empty(); }
    // Reads /proc/PID/maps of each pid; the files seen mapped for the first time that match the watch, planned.
    // A process that ended meanwhile is skipped.
    std::vector<LateLibrary> scan(const std::vector<int>& pids);
    // The same for one maps text of process `pid` (scan reads the file; tests pass text).
    std::vector<LateLibrary> scan_text(int pid, std::string_view maps_text);

private:
    LateWatch watch_;
    ProbePlan plan_;                                           // the start's event names, then every late function
    std::set<std::pair<std::string, std::uint64_t>> seen_;     // (dev, inode) of every mapping looked at
    std::set<std::pair<std::uint64_t, std::uint64_t>> armed_;  // (st_dev, st_ino) of files probed, start or late
};

}  // namespace nvtrace::tracer
