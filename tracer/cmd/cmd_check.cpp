// nvtrace check REPORT --expect FILE [--json] [-v]   (docs/check.md)
#include <filesystem>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/report_io.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct CheckArgs {
    std::string report;
    std::string expect;
    bool json = false;
    bool verbose = false;
};

int do_check(const CheckArgs& a) {
    std::string expect_path = a.expect;
    // A scenario directory stands for its expectations file.
    if (tracer::is_scenario_dir(expect_path)) {
        auto sc = tracer::read_scenario(expect_path);
        if (!sc) {
            tracer::note("nvtrace check: {}\n", sc.error().message);
            return static_cast<int>(sc.error().code);
        }
        expect_path = (sc->dir / sc->expect).string();
    } else if (std::error_code ec; std::filesystem::is_directory(expect_path, ec)) {
        // Read as a file, a directory is empty: it would pass with zero checks.
        fmt::print(stderr,
                   "nvtrace check: {}: a directory without scenario.conf is not a scenario; --expect takes an "
                   "expectations file or a scenario directory\n",
                   expect_path);
        return static_cast<int>(ExitCode::usage);
    }
    auto ex = read_expectations_file(expect_path);
    if (!ex) {
        tracer::note("nvtrace check: {}\n", ex.error().message);
        return static_cast<int>(ex.error().code);
    }
    auto report = load_report_input(a.report);
    if (!report) {
        tracer::note("nvtrace check: {}\n", report.error().message);
        return static_cast<int>(report.error().code);
    }
    auto checks = check_report(*report, *ex);
    if (a.json) {
        nlohmann::json out = {
            {"report", a.report}, {"expectations", expect_path}, {"checks", tracer::checks_json(checks)}};
        fmt::print("{}\n", out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        fmt::print("report: {}\nexpectations: {}{}\n", a.report == "-" ? "- (standard input)" : a.report, expect_path,
                   ex->title.empty() ? std::string() : " (" + ex->title + ")");
        tracer::print_checks(checks, a.verbose);
    }
    return summarize(checks).fail ? static_cast<int>(ExitCode::expectation_failed) : 0;
}

void add_check(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<CheckArgs>();
    CLI::App* cmd = app.add_subcommand("check", "Check a report against documented paths (expectations)");
    cmd->footer(
        "Example: nvtrace check runs/gem-mmap-20250101T000000Z --expect scenarios/gem-mmap/path.expect\n"
        "Each check is pass, fail (with the closest evidence) or inconclusive (with the data that was missing).\n"
        "Kernel functions match without compiler clone suffixes (.isra.N, .constprop.N, .part.N, .cold, ...).\n"
        "Exit 0 when nothing fails, 1 when a check fails, 2 for unreadable input (also a directory that is not a\n"
        "scenario, or an expectations file without any check). Format: docs/expectations.md.");
    cmd->add_option("report", args->report, "report.json, a capture directory, or a trace file nvtrace report reads")
        ->required();
    cmd->add_option("-e,--expect", args->expect, "Expectations file, or a scenario directory")->required();
    cmd->add_flag("--json", args->json, "Print the checks as JSON");
    cmd->add_flag("-v,--verbose", args->verbose, "Show evidence for passing checks too");
    cmd->callback([args, &exit_code] { exit_code = do_check(*args); });
}

}  // namespace

NVTRACE_COMMAND(30, add_check);

}  // namespace nvtrace::cli
