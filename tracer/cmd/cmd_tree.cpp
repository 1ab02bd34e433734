// nvtrace tree INPUT [--depth N] [--min-time DURATION] [--focus FUNCTION] [--module NAME]
//                    [--group-by phase|api|ioctl|thread] [--color auto|always|never]   (docs/tree.md)
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/tree.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct TreeArgs {
    std::string input;
    std::string min_time;
    std::string focus;
    std::string module;
    std::string group_by = "none";
    std::string color = "auto";
    std::optional<std::uint32_t> depth;
};

// --depth: levels from 1 (the tops alone) to the most TreeOptions::max_depth holds. One message for every value
// outside it (0, -1, a word, a number past 2^32-1): before, 0, a negative and an overflowing value each had its own.
const CLI::Validator depth_levels(
    [](std::string& value) -> std::string {
        std::uint64_t v = 0;
        bool ok = !value.empty() && value.size() <= 10;
        for (char c : value) {
            ok = ok && c >= '0' && c <= '9';
            if (ok) v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (ok && v >= 1 && v <= std::numeric_limits<std::uint32_t>::max()) return {};
        return fmt::format("expected a whole number of levels from 1 to {}, got '{}'",
                           std::numeric_limits<std::uint32_t>::max(), value);
    },
    "1..4294967295");

int usage(const std::string& message) {
    tracer::note("nvtrace tree: {}\n", message);
    return static_cast<int>(ExitCode::usage);
}

// Colours only on a terminal and without NO_COLOR (https://no-color.org: set and not empty); an explicit
// --color=always is the user's choice and wins over NO_COLOR.
bool use_color(const std::string& when) {
    if (when == "always") return true;
    if (when == "never") return false;
    const char* no_color = std::getenv("NO_COLOR");
    return ::isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

int do_tree(const TreeArgs& a) {
    TreeOptions o;
    if (a.depth) o.max_depth = *a.depth;  // 1 or more: depth_levels
    if (!a.min_time.empty()) {
        o.min_time_ns = parse_duration_ns(a.min_time);
        if (!o.min_time_ns)
            return usage(
                fmt::format("--min-time: expected a duration such as 10us, 1.5ms, 250ns or 2s, got '{}'", a.min_time));
    }
    auto g = parse_tree_group_by(a.group_by);
    if (!g) return usage(fmt::format("--group-by: expected phase, api, ioctl or thread, got '{}'", a.group_by));
    o.group_by = *g;
    if (!a.focus.empty()) o.focus = a.focus;
    if (!a.module.empty()) o.module = a.module;
    o.color = use_color(a.color);

    auto report = load_report_input(a.input);
    if (!report) {
        tracer::note("nvtrace tree: {}\n", report.error().message);
        return static_cast<int>(report.error().code);
    }
    TreeView view = build_tree(*report, o);
    std::cout << "input: " << a.input << '\n';
    write_tree(view, *report, o, std::cout);
    return 0;
}

void add_tree(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<TreeArgs>();
    CLI::App* cmd =
        app.add_subcommand("tree", "Print the aggregated call-path tree (count, total, self, max per path)");
    cmd->footer(
        "INPUT: anything `nvtrace report` reads: a trace file, a trace.dat, a capture directory, a report.json.\n"
        "One line per call path: TOTAL, SELF and MAX in microseconds ('unknown' when the data has no duration),\n"
        "CALLS, the path; children sorted by total time. Notes: the ioctl and RM status a tree's top ran under,\n"
        "its phase or API call, kernel-log lines printed inside a call. Without calls (no function tracing): the\n"
        "ioctl requests with counts, outcomes and latency. Control bytes from the input (a newline or ESC in a\n"
        "name) are shown as \\xNN. A sum of durations past 2^64-1 ns (a damaged report) is shown as 'overflow'.\n"
        "--depth takes 1 to 4294967295 levels. Exit codes: 0 ok, 2 bad input or option, 3 standard output cannot be\n"
        "written. See docs/tree.md.");
    cmd->add_option("input", args->input, "Trace file, capture directory or report")->required();
    cmd->add_option("-d,--depth", args->depth, "Levels shown from each top (1: the tops alone)")->check(depth_levels);
    cmd->add_option("-t,--min-time", args->min_time,
                    "Fold sibling paths whose total is below this (10us, 1.5ms, 250ns, 2s; a bare number is us)");
    cmd->add_option("-F,--focus", args->focus, "Only the subtrees rooted at each outermost call of FUNCTION, merged");
    cmd->add_option("-m,--module", args->module,
                    "Only the subtrees rooted at the outermost calls of module NAME (the driver boundary)");
    cmd->add_option("-g,--group-by", args->group_by, "A top level per phase, api (uprobe API call), ioctl or thread");
    cmd->add_option("--color,--colour", args->color, "auto (a terminal without NO_COLOR), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    cmd->callback([args, &exit_code] { exit_code = do_tree(*args); });
}

}  // namespace

NVTRACE_COMMAND(25, add_tree);

}  // namespace nvtrace::cli
