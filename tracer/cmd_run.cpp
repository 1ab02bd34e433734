// nvtrace run [options] -- CMD [ARGS]   and   nvtrace run [options] SCENARIO_DIR [-- PROGRAM ARGS]   (docs/run.md)
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "capture.hpp"
#include "commands.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/report.hpp"
#include "procfs.hpp"
#include "scenario.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

struct RunArgs {
    std::vector<std::string> command;
    std::string out;
    std::vector<std::string> modules;
    std::vector<std::string> events;
    std::vector<std::string> filters, notrace, graph_functions;
    int max_depth = 0;
    bool future = false, force = false, as_root = false, no_preload = false;
    double timeout_s = 0;
    bool json = false;
    bool quiet = false;
    std::string expect;     // --expect FILE (a scenario brings its own)
    std::string bin_dir;    // --bin-dir: where the built scenario programs are
    std::string device;     // --device: passed to the scenario program as "--device PATH"
    bool no_graph = false;  // --no-graph: ioctls, markers and the kernel log only
};

std::string default_out_dir(const std::vector<std::string>& cmd) {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    std::string name = cmd.empty() ? "run" : std::filesystem::path(cmd[0]).filename().string();
    return fmt::format("runs/{}-{}", name, ts);
}

Result<void> write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::trunc);
    if (!out) return fail(Error::environment(fmt::format("cannot write {}: {}", p.string(), std::strerror(errno))));
    out << text;
    if (!out.flush()) return fail(Error::environment(fmt::format("cannot write {}", p.string())));
    return {};
}

void print_summary(const Report& r, const tracer::CaptureResult& cap, const std::string& out_dir) {
    const auto& st = cap.status;
    std::string status = st.exit_code ? fmt::format("exit {}", *st.exit_code)
                         : st.signal  ? fmt::format("killed by signal {} ({})", *st.signal, strsignal(*st.signal))
                                      : "unknown";
    fmt::print("program: {} (pid {}, {})\n", fmt::join(cap.meta["command"].get<std::vector<std::string>>(), " "),
               cap.meta["pid"].get<int>(), status);
    fmt::print("tracer: {}\n", cap.meta["tracer_mode"].get<std::string>());
    print_report_body(r, false, false);
    fmt::print("report: {}/report.json\n", out_dir);
}

// The reason a scenario program gave for exiting kScenarioCannotRun ("nvtrace-cannot-run: REASON" marker).
std::string cannot_run_reason(const Report& r, const std::string& program) {
    constexpr std::string_view prefix = "nvtrace-cannot-run: ";
    for (const auto& m : r.markers)
        if (m.text.rfind(prefix, 0) == 0) {
            std::string t = m.text.substr(prefix.size());
            while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
                t.pop_back();
            return t;
        }
    return fmt::format("{} exited {} (requirements not met; its stderr says which)", program,
                       tracer::kScenarioCannotRun);
}

int do_run(RunArgs a) {
    std::optional<tracer::Scenario> scenario;
    std::optional<ExpectFile> expectations;
    if (!a.command.empty() && tracer::is_scenario_dir(a.command[0])) {
        auto sc = tracer::read_scenario(a.command[0]);
        if (!sc) {
            fmt::print(stderr, "nvtrace run: {}\n", sc.error().message);
            return static_cast<int>(sc.error().code);
        }
        scenario = *sc;
        // Command-line tracing options replace the scenario's (modules, filters) or add to them (events).
        if (a.modules.empty()) a.modules = sc->modules;
        if (a.filters.empty()) a.filters = sc->filters;
        if (a.notrace.empty()) a.notrace = sc->notrace;
        if (a.graph_functions.empty()) a.graph_functions = sc->graph_functions;
        a.events.insert(a.events.begin(), sc->events.begin(), sc->events.end());
        if (a.max_depth <= 0 && sc->max_depth) a.max_depth = *sc->max_depth;
        if (a.timeout_s <= 0 && sc->timeout_s) a.timeout_s = *sc->timeout_s;
        a.as_root = a.as_root || sc->as_root;
        if (a.expect.empty()) a.expect = (sc->dir / sc->expect).string();
        // Requirements nvtrace can check itself come first: a clean "cannot run here" beats a capture error.
        tracer::Scenario req = *sc;
        if (a.modules != sc->modules && !a.no_graph) {  // --module replaces the scenario's module requirements
            std::erase_if(req.requires_, [](const std::string& r) { return r.rfind("module ", 0) == 0; });
            for (const auto& m : a.modules)
                req.requires_.push_back("module " + m);
        }
        if (!a.device.empty())
            std::erase_if(req.requires_, [](const std::string& r) { return r.rfind("device ", 0) == 0; });
        if (auto why = tracer::unmet_requirement(req)) {
            fmt::print("cannot run here: {}\n", *why);
            return static_cast<int>(ExitCode::environment);
        }
        auto prog = tracer::find_scenario_program(
            *sc, a.bin_dir.empty() ? std::nullopt : std::optional<std::string>(a.bin_dir));
        if (!prog) {
            fmt::print(stderr, "nvtrace run: {}\n", prog.error().message);
            return static_cast<int>(prog.error().code);
        }
        std::vector<std::string> argv{prog->string()};
        argv.insert(argv.end(), sc->args.begin(), sc->args.end());
        if (!a.device.empty()) {
            argv.push_back("--device");
            argv.push_back(a.device);
        }
        argv.insert(argv.end(), a.command.begin() + 1, a.command.end());
        a.command = argv;
        if (a.out.empty()) a.out = default_out_dir({sc->name});
    } else if (!a.device.empty()) {
        fmt::print(stderr, "nvtrace run: --device is for scenario directories\n");
        return static_cast<int>(ExitCode::usage);
    }
    if (a.no_graph) {
        a.modules.clear();
        a.filters.clear();
        a.notrace.clear();
        a.graph_functions.clear();
        a.max_depth = 0;
    }
    if (!a.expect.empty()) {
        auto ex = read_expectations_file(a.expect);
        if (!ex) {
            fmt::print(stderr, "nvtrace run: {}\n", ex.error().message);
            return static_cast<int>(ex.error().code);
        }
        expectations = std::move(*ex);
    }

    tracer::CaptureOptions opts;
    opts.argv = a.command;
    opts.modules = a.modules;
    opts.events = a.events;
    opts.filters = a.filters;
    opts.notrace = a.notrace;
    opts.graph_functions = a.graph_functions;
    if (a.max_depth > 0) opts.max_depth = a.max_depth;
    opts.future = a.future;
    opts.force = a.force;
    opts.as_root = a.as_root;
    opts.preload = !a.no_preload;
    if (a.timeout_s > 0) opts.timeout_s = a.timeout_s;
    opts.progress = !a.quiet;

    auto cap = tracer::capture(opts);
    if (!cap) {
        fmt::print(stderr, "nvtrace run: {}\n", cap.error().message);
        return static_cast<int>(cap.error().code);
    }
    for (const auto& f : cap->restore_failures)
        fmt::print(stderr, "nvtrace run: could not restore {} (the journal is kept for `nvtrace cleanup`)\n", f);

    Report report = build_report(cap->stream);
    report.source = {
        {"kind", "live"}, {"command", a.command}, {"pid", cap->meta["pid"]}, {"tracer_mode", cap->meta["tracer_mode"]}};
    report.source["modules"] = a.modules;
    report.source["filters"] = a.filters;
    if (scenario) report.source["scenario"] = scenario->name;
    if (expectations) report.source["expectations"] = a.expect;
    // The NVIDIA modules are always described: the checker decides version alternatives from them.
    std::vector<std::string> env_modules = a.modules;
    for (const char* m : {"nvidia", "nvidia_uvm"})
        if (std::find(env_modules.begin(), env_modules.end(), m) == env_modules.end() && tracer::module_loaded(m))
            env_modules.emplace_back(m);
    report.environment = tracer::environment_info(env_modules);

    const auto& st = cap->status;
    bool cannot_run = scenario && st.exit_code && *st.exit_code == tracer::kScenarioCannotRun;
    std::optional<std::string> cannot_run_why;
    if (cannot_run) {
        cannot_run_why = cannot_run_reason(report, a.command[0]);
        report.source["cannot_run"] = *cannot_run_why;
    } else if (expectations) {
        report.checks = check_report(report, *expectations);
        if (scenario) {
            // The program's own verdict (its TAP output): a scenario that fails its own tests fails the run.
            Check prog{"program-exit", "pass", "", "the scenario program's own tests (TAP on its stdout)"};
            if (st.exit_code && *st.exit_code == 0) {
                prog.evidence = "exit 0";
            } else {
                prog.result = "fail";
                prog.evidence = st.exit_code ? fmt::format("exit {}", *st.exit_code)
                                : st.signal  ? fmt::format("killed by signal {}", *st.signal)
                                             : "exit status unknown";
                prog.why += ": a test failed (see the \"not ok\" lines above)";
            }
            report.checks.insert(report.checks.begin(), prog);
        }
    }

    std::string out_dir = a.out.empty() ? default_out_dir(a.command) : a.out;
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) {
        fmt::print(stderr, "nvtrace run: cannot create {}: {}\n", out_dir, ec.message());
        return static_cast<int>(ExitCode::environment);
    }
    nlohmann::json kmsg = nlohmann::json::array();
    for (const auto& k : cap->stream.kmsg)
        kmsg.push_back(k.text);
    cap->meta["kmsg_records"] = kmsg;
    cap->meta["buffer_stats"] = nlohmann::json::array();
    for (const auto& s : cap->stream.buffer_stats)
        cap->meta["buffer_stats"].push_back(
            {{"cpu", s.cpu}, {"buffer", s.buffer}, {"overrun", s.overrun}, {"dropped_events", s.dropped_events}});
    {
        // The report is streamed: a DOM of a large capture does not fit next to its events (docs/report-format.md).
        auto path = std::filesystem::path(out_dir) / "report.json";
        std::ofstream out(path, std::ios::trunc);
        if (out) write_json(report, out);
        if (!out || !out.flush()) {
            fmt::print(stderr, "nvtrace run: cannot write {}: {}\n", path.string(), std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (auto w = write_text(std::filesystem::path(out_dir) / "meta.json", cap->meta.dump(1) + "\n"); !w) {
        fmt::print(stderr, "nvtrace run: {}\n", w.error().message);
        return static_cast<int>(ExitCode::environment);
    }
    if (a.json) {
        write_json(report, std::cout);
        std::cout.flush();
    } else if (!a.quiet) {
        print_summary(report, *cap, out_dir);
        if (!report.checks.empty()) tracer::print_checks(report.checks, false);
    }
    if (cannot_run_why) fmt::print("cannot run here: {}\n", *cannot_run_why);
    if (cap->interrupted_by) return 128 + *cap->interrupted_by;
    if (!cap->restore_failures.empty()) return static_cast<int>(ExitCode::environment);
    if (cannot_run_why) return static_cast<int>(ExitCode::environment);
    if (summarize(report.checks).fail) return static_cast<int>(ExitCode::expectation_failed);
    return 0;
}

void add_run(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "Run a program under tracing and write a report");
    run->footer(
        "Example: sudo nvtrace run --module null_blk -- dd if=/dev/nullb0 of=/dev/null bs=4k count=4 iflag=direct\n"
        "         sudo nvtrace run scenarios/gem-mmap\n"
        "Writes DIR/report.json and DIR/meta.json (DIR defaults to runs/<program or scenario>-<UTC time>).\n"
        "A scenario directory brings its program, tracing options and expectations (docs/scenarios.md);\n"
        "exit 1 when a check fails, 3 with \"cannot run here: ...\" when the machine lacks what it needs.");
    run->add_option("command", args->command,
                    "Program and arguments (after --), or a scenario directory [-- its program's arguments]")
        ->required()
        ->expected(-1);
    run->add_option("--expect", args->expect, "Check the report against this expectations file (docs/expectations.md)");
    run->add_option("--bin-dir", args->bin_dir,
                    "Where the built scenario programs are (default: found from nvtrace's own path)");
    run->add_flag("--no-graph", args->no_graph,
                  "No function_graph (drop modules and filters, also a scenario's): ioctls, markers, kernel log only");
    run->add_option("--device", args->device,
                    "Scenario only: pass --device PATH to its program (e.g. another GEM driver)");
    run->add_option("-o,--out", args->out, "Capture directory (default runs/<program>-<UTC time>)");
    run->add_option("-m,--module", args->modules,
                    "Trace every function of this module with function_graph (:mod:M); repeatable")
        ->allow_extra_args(false);
    run->add_option("--filter", args->filters,
                    "Also trace functions matching this glob (set_ftrace_filter); repeatable")
        ->allow_extra_args(false);
    run->add_option("--notrace", args->notrace,
                    "Never trace functions matching this glob (set_ftrace_notrace); repeatable")
        ->allow_extra_args(false);
    run->add_option("--graph-function", args->graph_functions,
                    "Start graphs only at these functions (set_graph_function); repeatable")
        ->allow_extra_args(false);
    run->add_option("--max-depth", args->max_depth, "Cap the graph depth (max_graph_depth)")
        ->check(CLI::PositiveNumber);
    run->add_flag("--future", args->future, "Arm :mod:M for a module that is not loaded yet (applied when it loads)");
    run->add_flag("--force", args->force,
                  "Take the top level although another tracer is set or a journal exists (it is still restored)");
    run->add_flag("--as-root", args->as_root, "Under sudo, run the program as root instead of the invoking user");
    run->add_flag("--no-preload", args->no_preload,
                  "Do not inject libnvtrace_preload.so (user-space ioctl decoding, docs/preload.md)");
    run->add_option("-e,--event", args->events, "Also record this tracepoint, SYSTEM:EVENT; repeatable")
        ->allow_extra_args(false);
    run->add_option("--timeout", args->timeout_s, "Stop the program after this many seconds (SIGTERM, then SIGKILL)")
        ->check(CLI::PositiveNumber);
    run->add_flag("--json", args->json, "Print the report JSON on stdout instead of the summary");
    run->add_flag("-q,--quiet", args->quiet, "No summary and no progress lines");
    run->callback([args, &exit_code] { exit_code = do_run(*args); });
}

}  // namespace

NVTRACE_COMMAND(10, add_run);

}  // namespace nvtrace::cli
