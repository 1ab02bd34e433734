// scenario.hpp: scenario directories (docs/scenarios.md): scenarios/<name>/scenario.conf names the built program,
// its tracing options, its expectations file and its requirements.
//
// scenario.conf is line based: "KEY VALUE...", '#' comments. Keys: name, summary, program, args, expect, module,
// filter, notrace, graph-function, event, max-depth, timeout, as-root (run the program as root under sudo), requires
// (repeatable: "root", "module M", "device PATH" are checked by nvtrace before it traces; anything else is shown to
// people and checked by the program, which exits 77 when it is not met). Errors read "FILE:LINE: ...". Thread-safety:
// plain functions; find_scenario_program reads /proc/self/exe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/error.hpp"
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

// The first requirement nvtrace can check that this machine does not meet ("module vgem is not loaded (load it:
// modprobe vgem)"), or nullopt. `modules` replaces the scenario's own module requirements when given (--module).
std::optional<std::string> unmet_requirement(const Scenario& s);

// Directories that hold scenarios, in search order: `dir` when given, $NVTRACE_SCENARIOS_DIR, ./scenarios, the
// source tree nvtrace was built from, EXE_DIR/../share/nvtrace/scenarios. Only existing ones.
std::vector<std::filesystem::path> scenario_roots(const std::optional<std::string>& dir);

// Prints checks for people: one line each, "pass", "FAIL", "inconclusive", with evidence and why.
void print_checks(const std::vector<Check>& checks, bool verbose);

nlohmann::json checks_json(const std::vector<Check>& checks);

}  // namespace nvtrace::tracer
