// uprobe_plan.hpp: which uprobes to create, before anything is created. Pure: reads ELF files and parses text; no
// tracefs, no /proc.
//
// Two sources of probes: the generic `--uprobe LIB:SYMBOL[%FETCHARGS]` (parse_uprobe_spec), and the CUDA table
// (knowledge.hpp cuda_apis(): every entry point a libcuda/libcudart file exports, with its arguments). Each probed
// function gets an entry probe (p:, the arguments) and a return probe (r:, $retval), so that a call is a span.
// Fetch-args follow kernel Documentation/trace/uprobetracer.rst "Synopsis of uprobe_tracer"; registers are the
// x86-64 names of arch/x86/kernel/ptrace.c regoffset_table.
// Thread-safety: all functions are reentrant.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "elf_file.hpp"
#include "library_search.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/knowledge.hpp"
#include "uprobes.hpp"

namespace nvtrace::tracer {

// --uprobe LIB:SYMBOL[%FETCHARGS]
//   LIB       a path (with '/'), or a library name resolved as the program's loader resolves it: a soname
//             ("libc.so.6"), or its stem ("libc", matching "libc.so.*" among the libraries the program loads)
//   SYMBOL    a function in LIB's .dynsym, optionally with its version ("memcpy@@GLIBC_2.14")
//   FETCHARGS comma-separated fetch-args, each [NAME=]FETCHARG[:TYPE]; the '%' after SYMBOL may be the first
//             register's own: "libc:write%di:s32,%dx:u64" and "libc:write%fd=%di:s32" both parse. A fetch-arg that
//             uses $retval goes to the return probe; without one the return probe fetches ret=$retval:s64.
struct UprobeSpec {
    std::string text;  // as given
    std::string library;
    std::string symbol;
    std::vector<std::string> entry_args;
    std::vector<std::string> return_args;
};

// Errors: Error::usage "--uprobe 'TEXT': expected ..., found ...".
Result<UprobeSpec> parse_uprobe_spec(std::string_view text);
// One fetch-arg, [NAME=]FETCHARG[:TYPE]; "" when valid, else what was expected.
std::string check_fetcharg(std::string_view arg);

// The files a spec's LIB names for `program`, the loader's choice first: a path (with '/') as is; a name equal to,
// or the stem of ("libc" for "libc.so.6"), a library the program loads at start (DT_NEEDED, breadth first), found
// where the loader finds it; otherwise the name as a dlopen from the program would find it ("libcuda.so.1").
// Error::usage naming LIB and the program when nothing is found.
Result<std::vector<LibraryCandidate>> resolve_uprobe_library(std::string_view lib, const std::string& program,
                                                             const SearchContext& ctx);

// A probe pair (entry and return) on one function of one file.
struct PlannedFunction {
    std::string function;           // the symbol as exported ("cuMemAlloc_v2")
    std::string library;            // the file (real path)
    UprobeDef entry, exit;          // exit.is_return
    const CudaApi* cuda = nullptr;  // the table entry, for CUDA probes
};

struct ProbePlan {
    std::vector<PlannedFunction> functions;
    std::vector<std::string> skipped;     // "getpid in /x/libc.so.6: an IFUNC (...)", one line each
    std::set<std::string> event_names;    // taken so far (event names are unique in a group)
    std::vector<UprobeDef> defs() const;  // every probe, entry then return, in plan order
};

// An event name for `symbol` unique in `plan`: the symbol with characters outside [A-Za-z0-9_] as '_', short
// enough for "__return" to fit kMaxEventName, then _2, _3, ... when taken.
std::string unique_event_name(ProbePlan& plan, std::string_view symbol);

// Adds the entry/return pair for `symbol` of `elf` to `plan`; a symbol that cannot be probed (missing, an IFUNC,
// outside every PT_LOAD segment) is an error naming it and the file.
Result<void> plan_function(ProbePlan& plan, const ElfInfo& elf, std::string_view symbol,
                           const std::vector<std::string>& entry_args, const std::vector<std::string>& return_args,
                           const CudaApi* cuda = nullptr);

// Every table entry of `layer` that `elf` exports (each name, and its _ptds/_ptsz variants), with its arguments.
// Returns how many functions were added.
std::size_t plan_cuda(ProbePlan& plan, const ElfInfo& elf, CudaLayer layer);

// ---- The probes of one program (nvtrace run) ----

// The program's file: `name` when it has a '/', else the first executable regular file PATH names (execvp's
// search; "/usr/bin:/bin" when PATH is unset). nullopt when none is found.
std::optional<std::string> find_program(const std::string& name, const std::optional<std::string>& path_env);

// Folders NVIDIA's user-mode driver puts libcuda.so.1 in beyond the loader's own: the .run installer and Debian's
// nvidia-driver (/usr/lib/x86_64-linux-gnu, already a default directory; /usr/lib/x86_64-linux-gnu/nvidia/current),
// RPM distributions (/usr/lib64), the NVIDIA Container Toolkit's mount (/usr/local/nvidia/lib64), the CUDA
// forward-compatibility package (/usr/local/cuda/compat) and WSL (/usr/lib/wsl/lib). Candidates to arm.
std::vector<std::string> cuda_driver_dirs();

// The CUDA libraries in a program's DT_NEEDED closure (needed_libraries): names libcudart.so.* and libcuda.so.*.
struct CudaUse {
    std::optional<LoadedLibrary> runtime;  // libcudart.so.N
    std::optional<LoadedLibrary> driver;   // libcuda.so.1
    bool any() const { return runtime || driver; }
};
CudaUse cuda_use(const std::vector<LoadedLibrary>& needed);

// The CUDA tables for `program` (its file; read_elf errors pass through): the runtime table on the libcudart the
// program loads, the driver table on the libcuda it loads, and, when libcudart is loaded (or `force`), on every
// file find_library gives for "libcuda.so.1" as libcudart's dlopen looks it up, then in cuda_driver_dirs(): libcudart
// loads the driver with dlopen, so its file is known only then; each is armed before the program starts. With
// `force` and no libcudart in the closure, "libcudart.so.13" as a dlopen from the program finds it. `notes`: one line
// per file armed or left out. Returns the functions added (0: the program uses no CUDA library nvtrace found).
Result<std::size_t> plan_cuda_program(ProbePlan& plan, const std::string& program, const SearchContext& ctx, bool force,
                                      std::vector<std::string>& notes);

// One --uprobe for `program`: the spec's library resolved (resolve_uprobe_library) and its function probed on every
// candidate file. The loader's choice must export it (else the error of plan_function); other candidates that do not
// are left out with a note.
Result<void> plan_uprobe_spec(ProbePlan& plan, const UprobeSpec& spec, const std::string& program,
                              const SearchContext& ctx, std::vector<std::string>& notes);

// "cuda_driver", "cuda_runtime" or "user" (meta.json uprobes[].api).
std::string_view api_name(const PlannedFunction& f);

}  // namespace nvtrace::tracer
