// nvtrace scenarios [--dir DIR] [--bin-dir DIR] [--json]   (docs/scenarios.md)
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "nvtrace/expect.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

namespace fs = std::filesystem;

struct ScenariosArgs {
    std::string dir;
    std::string bin_dir;
    bool json = false;
};

int do_scenarios(const ScenariosArgs& a) {
    auto roots = tracer::scenario_roots(a.dir.empty() ? std::nullopt : std::optional<std::string>(a.dir));
    if (roots.empty()) {
        tracer::note("nvtrace scenarios: no scenarios directory found ({}; give --dir)\n",
                     a.dir.empty() ? "looked at $NVTRACE_SCENARIOS_DIR, ./scenarios and the source tree" : a.dir);
        return static_cast<int>(ExitCode::usage);
    }
    nlohmann::json out = nlohmann::json::array();
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(roots.front()))
        if (tracer::is_scenario_dir(e.path())) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    if (dirs.empty()) {
        tracer::note("nvtrace scenarios: no scenario in {} (a scenario is a directory with a scenario.conf)\n",
                     roots.front().string());
        return static_cast<int>(ExitCode::usage);
    }
    int status = 0;
    for (const auto& d : dirs) {
        auto sc = tracer::read_scenario(d);
        if (!sc) {
            tracer::note("nvtrace scenarios: {}\n", sc.error().message);
            status = static_cast<int>(ExitCode::usage);
            continue;
        }
        auto prog = tracer::find_scenario_program(
            *sc, a.bin_dir.empty() ? std::nullopt : std::optional<std::string>(a.bin_dir));
        auto ex = read_expectations_file((sc->dir / sc->expect).string());
        std::size_t nchecks = ex ? ex->checks.size() : 0;
        fs::path path_doc = sc->dir / ".." / ".." / "docs" / "paths" / (sc->name + ".md");
        std::error_code ec;
        nlohmann::json j = {
            {"name", sc->name},
            {"dir", sc->dir.string()},
            {"summary", sc->summary},
            {"program", prog ? nlohmann::json(prog->string()) : nlohmann::json(nullptr)},
            {"requires", sc->requires_},
            {"modules", sc->modules},
            {"filters", sc->filters},
            {"expectations", (sc->dir / sc->expect).string()},
            {"checks", nchecks},
            {"documented_path", fs::exists(path_doc, ec) ? nlohmann::json(path_doc.lexically_normal().string())
                                                         : nlohmann::json(nullptr)}};
        if (!ex) j["expectations_error"] = ex.error().message;
        out.push_back(j);
        if (a.json) continue;
        fmt::print("{}  {}\n", sc->name, sc->summary);
        fmt::print("    requires: {}\n",
                   sc->requires_.empty() ? "nothing" : fmt::format("{}", fmt::join(sc->requires_, "; ")));
        fmt::print("    traces:   {}{}\n",
                   sc->modules.empty() ? "ioctls" : fmt::format("module {}", fmt::join(sc->modules, ", ")),
                   sc->filters.empty() ? "" : fmt::format(" + {}", fmt::join(sc->filters, ", ")));
        fmt::print("    path:     {} ({} checks){}\n", (sc->dir / sc->expect).string(), nchecks,
                   ex ? "" : " ERROR: " + ex.error().message);
        if (fs::exists(path_doc, ec)) fmt::print("    for people: {}\n", path_doc.lexically_normal().string());
        fmt::print("    program:  {}\n", prog ? prog->string() : "not built here");
    }
    if (a.json) fmt::print("{}\n", out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
    return status;
}

void add_scenarios(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ScenariosArgs>();
    CLI::App* cmd = app.add_subcommand("scenarios", "List the scenarios with their requirements and documented paths");
    cmd->footer("Run one with: sudo nvtrace run scenarios/NAME   (docs/scenarios.md)");
    cmd->add_option("--dir", args->dir,
                    "Scenarios directory (default: $NVTRACE_SCENARIOS_DIR, ./scenarios, the source tree)");
    cmd->add_option("--bin-dir", args->bin_dir, "Where the built scenario programs are");
    cmd->add_flag("--json", args->json, "Print JSON");
    cmd->callback([args, &exit_code] { exit_code = do_scenarios(*args); });
}

}  // namespace

NVTRACE_COMMAND(100, add_scenarios);

}  // namespace nvtrace::cli
