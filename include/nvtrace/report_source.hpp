// nvtrace/report_source.hpp: report.json's "source" and "environment" objects (docs/report-format.md "source",
// "environment"), and meta.json's "report_source" and "environment" (docs/formats.md "Capture directory"): what was
// read or run, and the machine it ran on.
//
// Every member is optional and written only when set, so a report read back is written with the keys it had.
// Keys this version does not interpret (another tool's, a newer nvtrace's, a known key holding a value of another
// type) are kept in `other` as their compact JSON text and written back as they were. JSON objects are written with
// their keys sorted (nlohmann's std::map order). Readers and writers: analyze/report_head.cpp.
// Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace nvtrace {

// Key -> compact JSON text ("\"x\"", "{\"a\":1}", "null") of the keys of an object nvtrace does not interpret.
using UninterpretedKeys = std::map<std::string, std::string>;

struct ReportSource;
// The command as one line: argv joined by spaces, or the string as given; "" when there is none.
std::string command_text(const ReportSource& s);

// A report made with --calls-jsonl holds no calls: its `calls` are in that file. Given the calls a report holds,
// "its 39 calls were written to F (--calls-jsonl), not into the report" when that is why it holds none; else nullopt.
std::optional<std::string> calls_written_elsewhere(const ReportSource& s, std::uint64_t calls_in_report);

struct ReportSource {
    std::optional<std::string> kind;  // "live" (nvtrace run), "file" (nvtrace report FILE); other producers' as read
    // kind "file": the input as named ("-" for standard input) and its format (docs/formats.md: "fgraph-text",
    // "trace-dat", "capture-dir", ...).
    std::optional<std::string> path, format;
    // kind "live" (tracer/capture.cpp): the program's argv (no shell; reports made by other tools may give one
    // command line as a string instead), its pid (the inner optional empty: written
    // as null, the pid is unknown), the tracer mode ("events", "function_graph (instance)", "function_graph (top
    // level)"), the --module and --filter values.
    std::optional<std::variant<std::vector<std::string>, std::string>> command;
    std::optional<std::optional<int>> pid;
    std::optional<std::string> tracer_mode;
    std::optional<std::vector<std::string>> modules, filters;
    std::optional<std::string> scenario, expectations;  // nvtrace run SCENARIO: its name, its expectations file
    std::optional<std::string> cannot_run;              // the scenario said it cannot run here, and why
    std::optional<std::string> kmsg;                    // nvtrace report --kmsg FILE
    std::optional<std::string> calls_jsonl;             // --calls-jsonl FILE ...
    std::optional<std::uint64_t> calls_count;           // ... and how many calls it holds
    UninterpretedKeys other;
};

// environment.modules.NAME: /sys/module/NAME (initstate "live", version, srcversion, taint).
struct ModuleInfo {
    std::optional<bool> loaded;
    std::optional<std::string> version, srcversion, taint;
    UninterpretedKeys other;
};

struct ReportEnvironment {
    std::optional<std::string> kernel, kernel_version, machine;  // uname(2): release, version, machine
    std::optional<std::map<std::string, ModuleInfo>> modules;    // by module name with '_' (nvidia_uvm)
    // The first line of /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64
    // 580.65.06 ...", nv.c); the inner optional empty (written as null): the file is not there.
    std::optional<std::optional<std::string>> nvidia_driver_banner;
    std::optional<std::string> nvidia_driver_flavour;  // "open" (the banner says "Open Kernel Module"), "proprietary"
    std::optional<std::string> nvidia_driver_version;  // "580.65.06", where a producer gives it (reports made offline)
    std::optional<std::string> function_graph;         // why the run traced without the function graph
    std::optional<std::map<std::string, std::string>> not_traceable;  // function -> why it cannot be traced here
    std::optional<std::string> host;                                  // gethostname(2)
    // The Slurm job step (nvtrace/fleet.hpp slurm_environment).
    std::optional<std::map<std::string, std::string>> slurm;
    UninterpretedKeys other;
};

}  // namespace nvtrace
