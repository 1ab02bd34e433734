// nvtrace fleet DIR... [--expect FILE] [--json] (docs/fleet.md)
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/fleet.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct FleetArgs {
    std::vector<std::string> paths;
    std::string expect;
    std::vector<std::string> renames;
    std::vector<std::string> ignore;
    std::size_t max_diff_rows = 40;
    bool json = false;
};

int fleet_error(const Error& e) {
    tracer::note("nvtrace fleet: {}\n", e.message);
    return static_cast<int>(e.code);
}

int do_fleet(const FleetArgs& args) {
    FleetOptions o;
    ExpectFile expectations;
    if (!args.expect.empty()) {
        auto ex = read_expectations_file(args.expect);
        if (!ex) return fleet_error(ex.error());
        if (ex->checks.empty())
            return fleet_error(
                Error::usage(fmt::format("--expect {}: holds no checks, so nothing would be checked", args.expect)));
        expectations = std::move(*ex);
        o.expectations = &expectations;
    }
    for (const auto& r : args.renames) {
        auto p = parse_rename(r);
        if (!p) return fleet_error(p.error());
        o.diff.renames[p->first] = p->second;
    }
    o.diff.ignore = args.ignore;
    auto reports = find_fleet_reports(args.paths);
    if (!reports) return fleet_error(reports.error());
    auto f = analyze_fleet(*reports, o);
    if (!f) return fleet_error(f.error());
    if (args.json) {
        fmt::print("{}\n", to_json_text(*f));
    } else {
        FleetTextOptions t;
        t.colour = ::isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");
        t.max_diff_rows = args.max_diff_rows;
        fmt::print("{}", format_fleet_text(*f, t));
    }
    return f->expect_failed ? static_cast<int>(ExitCode::expectation_failed) : 0;
}

void add_fleet(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<FleetArgs>();
    CLI::App* cmd = app.add_subcommand("fleet", "Compare many nodes' reports: one row per node, groups, outliers");
    cmd->footer(
        "Example: srun -N64 --ntasks-per-node=1 nvtrace run --out /shared/runs/%j/%n scenarios/memcpy\n"
        "         nvtrace fleet /shared/runs/1234\n"
        "Reads every report.json named or found below each DIR (recursively), one at a time: each is reduced to a\n"
        "small per-node digest and dropped, so memory is one report plus the digests. Nodes are named by\n"
        "environment.slurm.node, else environment.host, else the report's directory. Nodes are grouped by a\n"
        "signature without timing: call paths (normalised frames, interrupts under [irq]) with their counts, and\n"
        "each thread's ioctl request sequence (threads sorted). The largest group is the majority; every other\n"
        "group's first node is compared with the majority's: environment values, ioctl requests and counts, and the\n"
        "call trees with `nvtrace diff`. Control bytes from the reports (a newline in a host name) are shown as\n"
        "\\xNN.\n"
        "Exit codes: 0 read and compared, 1 with --expect when a check fails on any node, 2 bad input (the file is\n"
        "named; also a report nesting calls deeper than the 4096 levels nvtrace diff compares). See docs/fleet.md.");
    cmd->add_option("paths", args->paths, "report.json files or directories holding them (searched recursively)")
        ->required()
        ->expected(-1);
    cmd->add_option("--expect", args->expect,
                    "Check every node's report against this expectations file (docs/expectations.md); exit 1 when "
                    "any node fails a check");
    cmd->add_option("--rename", args->renames, "For the call-tree diffs: OLD=NEW as in `nvtrace diff --rename`");
    cmd->add_option("--ignore", args->ignore, "For the call-tree diffs: leave out frames matching this glob");
    cmd->add_option("--max-diff-rows", args->max_diff_rows, "Text: rows of each outlier's call-tree diff (0 = all)")
        ->check(non_negative_integer);
    cmd->add_flag("--json", args->json, "Print the fleet as JSON (schema nvtrace.fleet/1) for notebooks");
    cmd->callback([args, &exit_code] { exit_code = do_fleet(*args); });
}

}  // namespace

NVTRACE_COMMAND(45, add_fleet);

}  // namespace nvtrace::cli
