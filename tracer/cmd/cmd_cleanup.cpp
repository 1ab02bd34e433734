// nvtrace cleanup [--dry-run] [--json]   (docs/cleanup.md)
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cleanup.hpp"
#include "commands.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

int do_cleanup(bool dry_run, bool json) {
    auto r = tracer::cleanup(dry_run);
    if (!r) {
        tracer::note("nvtrace cleanup: {}\n", r.error().message);
        return static_cast<int>(r.error().code);
    }
    bool failed = false;
    for (const auto& a : r->actions)
        failed |= !dry_run && !a.done;
    if (json) {
        nlohmann::json j;
        j["dry_run"] = dry_run;
        j["actions"] = nlohmann::json::array();
        for (const auto& a : r->actions)
            j["actions"].push_back({{"what", a.what}, {"done", a.done}, {"error", a.error}});
        j["kept"] = r->kept;
        fmt::print("{}\n", j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        if (r->actions.empty() && r->kept.empty()) fmt::print("nothing to clean up\n");
        for (const auto& a : r->actions)
            fmt::print("{}{}{}\n", dry_run ? "would " : (a.done ? "" : "FAILED to "), a.what,
                       a.error.empty() ? "" : ": " + a.error);
        for (const auto& k : r->kept)
            fmt::print("kept (owner still running): {}\n", k);
    }
    return failed ? static_cast<int>(ExitCode::environment) : 0;
}

void add_cleanup(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand("cleanup", "Restore the tracing state a killed nvtrace run left behind");
    auto dry = std::make_shared<bool>(false);
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("-n,--dry-run", *dry, "Only say what would be done");
    cmd->add_flag("--json", *json, "JSON output");
    cmd->footer(
        "Restores the top-level files listed in /run/nvtrace/journal.json when the run that wrote it is gone,\n"
        "and removes instances/nvtrace-<pid> whose owner is gone, after ending the processes the killed run left\n"
        "running that hold its trace_marker open (SIGTERM, SIGKILL 2 s later). Leftovers of running nvtrace\n"
        "processes are kept: the pid must be an nvtrace process (/proc/PID/exe) that started before the leftover\n"
        "was made (/proc/PID/stat starttime); a pid reused by another program is a leftover (docs/cleanup.md).\n"
        "Exit 3 when something could not be done (the line names who holds the instance).");
    cmd->callback([dry, json, &exit_code] { exit_code = do_cleanup(*dry, *json); });
}

}  // namespace

NVTRACE_COMMAND(90, add_cleanup);

}  // namespace nvtrace::cli
