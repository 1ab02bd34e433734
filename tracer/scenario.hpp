// scenario.hpp: scenario directories (docs/scenarios.md): scenarios/<name>/scenario.conf names the built program,
// its tracing options, its expectations file and its requirements.
//
// scenario.conf is line based: "KEY VALUE...", '#' comments. Keys: name, summary, program, args, expect, module,
// filter, notrace, graph-function, event, max-depth, timeout, as-root (run the program as root under sudo), requires
// (repeatable: "root", "module M", "device PATH" are checked by nvtrace before it traces; anything else is shown to
// people and checked by the program, which exits 77 when it is not met). Errors read "FILE:LINE: ...". Thread-safety:
// plain functions; find_scenario_program reads /proc/self/exe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::tracer {

inline constexpr const char* kScenarioFile = "scenario.conf";
// The exit status with which a scenario program says "this machine does not meet my requirements".
inline constexpr int kScenarioCannotRun = 77;

struct Scenario {
    std::filesystem::path dir;
    std::string name;  // defaults to the directory name
    std::string summary;
    std::string program;  // executable name of the built program (scenarios/<name>/CMakeLists.txt)
    std::vector<std::string> args;
    std::string expect = "path.expect";  // relative to dir
    std::vector<std::string> modules, filters, notrace, graph_functions, events;
    std::optional<int> max_depth;
    std::optional<double> timeout_s;
    bool as_root = false;                // the program itself needs root (e.g. to map a PCI resource file)
    std::vector<std::string> requires_;  // "root", "module vgem", "device /dev/dri", "NVIDIA GPU with BAR1 >= 256 MiB"
};

bool is_scenario_dir(const std::filesystem::path& dir);
Result<Scenario> read_scenario(const std::filesystem::path& dir);

// Where the built program is: BIN_DIR/PROGRAM when bin_dir is given (or $NVTRACE_SCENARIO_BIN_DIR), else next
// to the nvtrace executable (EXE_DIR/PROGRAM: the static build and the qemu guest), EXE_DIR/../scenarios/NAME/PROGRAM
// (a CMake build tree: build/tracer/nvtrace and build/scenarios/NAME/), EXE_DIR/../libexec/nvtrace/PROGRAM (an
// install). The error lists every place looked at.
Result<std::filesystem::path> find_scenario_program(const Scenario& s, const std::optional<std::string>& bin_dir);

// Where /sys and /proc are read for module and driver facts: "/sys" and "/proc", or $NVTRACE_TEST_SYSFS_ROOT and
// $NVTRACE_TEST_PROCFS_ROOT when set (tests only, docs/testing.md: a temporary directory stands in for a machine
// whose driver is built in).
std::filesystem::path sysfs_root();
std::filesystem::path procfs_root();

// How a kernel module is present. `live`: loaded (/sys/module/M/initstate says "live"). `builtin`: built into the
// kernel: /sys/module/M without initstate (the kernel makes that directory for a built-in module with parameters or
// a version), or, for nvidia, /proc/driver/nvidia (made by the driver whether built in or loaded). `absent`:
// neither. '-' in M is read as '_'.
enum class ModuleState : std::uint8_t { live, builtin, absent };
ModuleState module_state(const std::string& module);

// Why the scenario's call graph cannot be recorded here, or nullopt when nothing is known against it. Reads files
// only, before anything is changed. `modules` built into the kernel (":mod:M" matches only loadable modules'
// functions) are removed; a note names each. When no module is left (and no filter or graph function was given),
// or the kernel does not list function_graph in available_tracers (/sys/kernel/tracing or /sys/kernel/debug/tracing;
// ROOT/kernel/tracing under $NVTRACE_TEST_SYSFS_ROOT), no_graph_reason is set, starting "function_graph not
// available: ", and the run goes without the graph. A tracefs that is not mounted says nothing here (the capture
// reports it).
struct GraphPlan {
    std::vector<std::string> modules;  // what is left to trace with :mod:
    std::optional<std::string> no_graph_reason;
    std::vector<std::string> notes;  // modules dropped and why, for the progress lines
};
GraphPlan plan_graph(const std::vector<std::string>& modules, bool other_graph_options);

// The functions named in the chains of `ex` that this machine's ftrace cannot hook, each with why: not in
// available_filter_functions but in /proc/kallsyms ("notrace" or unpatchable), or in neither (inlined in this driver
// version, not built, or its module is not loaded). Empty when available_filter_functions cannot be read (nothing is
// claimed). The checker treats them like `untraced` lines (report environment.not_traceable). Reads files only.
std::map<std::string, std::string> not_traceable(const ExpectFile& ex);

// The first requirement nvtrace can check that this machine does not meet ("module vgem is not loaded (load it:
// modprobe vgem)"), or nullopt. `modules` replaces the scenario's own module requirements when given (--module).
std::optional<std::string> unmet_requirement(const Scenario& s);

// What `nvtrace run` was asked: the command line's program (or scenario directory) and tracing options.
struct RunRequest {
    CaptureOptions capture;  // capture.meta.command: CMD ARGS, or SCENARIO_DIR [PROGRAM ARGS]
    bool no_graph = false;
    std::string expect;   // --expect FILE or scenario directory
    std::string bin_dir;  // --bin-dir
    std::string device;   // --device (scenario only)
};

// The run to make: a scenario's program, argv and options merged with the command line's (its modules, filters,
// notrace, graph functions replaced by the command line's when given, its events added), the expectations read,
// and the call graph planned (plan_graph). `cannot_run`: a requirement nvtrace checks itself is not met (the run
// says "cannot run here: ..." and exits 3). `notes`: the progress lines of plan_graph, for stderr.
struct ResolvedRun {
    RunRequest run;  // final: argv in run.capture.meta.command, options merged, graph options cleared
    std::optional<Scenario> scenario;
    std::optional<ExpectFile> expectations;  // read from run.expect (a file path once resolved)
    std::optional<std::string> no_graph_reason;
    std::optional<std::string> cannot_run;
    std::vector<std::string> notes;
    std::string default_name;  // of the default capture directory: the scenario's, else the program's
};

// Errors (the message without "nvtrace run: "): a directory that is not a scenario, an unreadable scenario.conf
// or expectations file, an expectations file without checks, --device without a scenario, a bad --event.
Result<ResolvedRun> resolve_run(RunRequest req);

// `raw` as a file-name part: letters, digits, '.', '_', '+', '-' kept, every other byte '_', at most 64 bytes;
// `fallback` when that leaves "", "." or ".." (runs/<program>-..., the expectations' copy expect/NAME).
std::string sanitized_file_name(const std::string& raw, const std::string& fallback);

// Directories that hold scenarios, in search order: `dir` when given, $NVTRACE_SCENARIOS_DIR, ./scenarios, the
// source tree nvtrace was built from, EXE_DIR/../share/nvtrace/scenarios. Only existing ones.
std::vector<std::filesystem::path> scenario_roots(const std::optional<std::string>& dir);

// Prints checks for people: one line each, "pass", "FAIL", "inconclusive", with evidence and why.
void print_checks(const std::vector<Check>& checks, bool verbose);

nlohmann::json checks_json(const std::vector<Check>& checks);

}  // namespace nvtrace::tracer
