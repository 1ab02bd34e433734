// nvtrace doctor [--module M]... [--json]   (docs/doctor.md)
#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "doctor.hpp"
#include "nvtrace/error.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

int do_doctor(const std::vector<std::string>& modules, bool json) {
    // A module name is what /sys/module lists: letters, digits, '_' and '-'. `--module ''` and `../kernel` were
    // reported as "built into the kernel": the name was joined into /sys/module/NAME.
    for (const auto& m : modules)
        if (m.empty() || m.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                             std::string::npos) {
            tracer::note("nvtrace doctor: --module '{}': expected a module name (letters, digits, _ and -)\n", m);
            return static_cast<int>(ExitCode::usage);
        }
    auto findings = tracer::doctor(modules);
    if (json) {
        fmt::print("{}\n", tracer::to_json(findings).dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        for (const auto& f : findings)
            fmt::print("{:<5} {:<28} {}\n      -> {}\n", f.status, f.id, f.value, f.meaning);
    }
    return 0;
}

void add_doctor(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand("doctor", "Say what this machine allows: tracefs, tracers, modules, driver, CUDA");
    auto modules = std::make_shared<std::vector<std::string>>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("-m,--module", *modules, "Also report this module; repeatable")->allow_extra_args(false);
    cmd->add_flag("--json", *json, "JSON output (schema nvtrace.doctor/1)");
    cmd->footer(
        "Each finding: status (ok, warn, fail, info), what was found, and what it means for nvtrace run.\n"
        "Not root: what tracefs or /dev/kmsg refuse to show (EACCES/EPERM) is 'info: cannot tell without root',\n"
        "never a kernel limit; run `sudo nvtrace doctor` to know. leftovers: what `nvtrace cleanup` would remove\n"
        "(an nvtrace-<pid> instance whose pid is not an nvtrace started before it was made). See docs/doctor.md.");
    cmd->callback([modules, json, &exit_code] { exit_code = do_doctor(*modules, *json); });
}

}  // namespace

NVTRACE_COMMAND(80, add_doctor);

}  // namespace nvtrace::cli
