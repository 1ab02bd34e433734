// nvtrace run [options] -- CMD [ARGS]   (docs/run.md)
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "capture.hpp"
#include "commands.hpp"
#include "nvtrace/report.hpp"
#include "procfs.hpp"

namespace nvtrace::cli {

namespace {

struct RunArgs {
    std::vector<std::string> command;
    std::string out;
    std::vector<std::string> modules;
    std::vector<std::string> events;
    std::vector<std::string> filters, notrace, graph_functions;
    int max_depth = 0;
    bool future = false, force = false, as_root = false;
    double timeout_s = 0;
    bool json = false;
    bool quiet = false;
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

std::string fmt_ns(std::uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

void print_summary(const Report& r, const tracer::CaptureResult& cap, const std::string& out_dir) {
    const auto& st = cap.status;
    std::string status = st.exit_code ? fmt::format("exit {}", *st.exit_code)
                         : st.signal  ? fmt::format("killed by signal {} ({})", *st.signal, strsignal(*st.signal))
                                      : "unknown";
    fmt::print("program: {} (pid {}, {})\n", fmt::join(cap.meta["command"].get<std::vector<std::string>>(), " "),
               cap.meta["pid"].get<int>(), status);
    fmt::print("tracer: {}\n", cap.meta["tracer_mode"].get<std::string>());
    std::size_t roots = 0;
    for (const auto& c : r.calls)
        if (!c.parent) ++roots;
    fmt::print("calls: {} ({} roots)\n", r.calls.size(), roots);
    // The heaviest root paths by total time.
    std::vector<const GraphNode*> top;
    for (const auto& g : r.graph)
        if (g.path.find(" > ") == std::string::npos) top.push_back(&g);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->total_ns > b->total_ns; });
    for (std::size_t i = 0; i < top.size() && i < 5; ++i)
        fmt::print("  {:>6}x  {:>12}  {}\n", top[i]->count, fmt_ns(top[i]->total_ns), top[i]->path);
    std::map<std::string, std::size_t> by_name;
    for (const auto& io : r.ioctls)
        ++by_name[io.name.value_or(fmt::format("0x{:x}", io.cmd))];
    fmt::print("ioctls: {}\n", r.ioctls.size());
    for (const auto& [name, n] : by_name)
        fmt::print("  {:>6}x  {}\n", n, name);
    fmt::print("kernel log: {} message(s)\n", r.kernel_log.size());
    for (std::size_t i = 0; i < r.kernel_log.size() && i < 5; ++i)
        fmt::print("  [{}] {}\n", r.kernel_log[i].kind, r.kernel_log[i].text);
    if (r.completeness.complete)
        fmt::print("complete: yes\n");
    else
        fmt::print("complete: NO: {}\n", fmt::join(r.completeness.reasons, "; "));
    fmt::print("report: {}/report.json\n", out_dir);
}

int do_run(const RunArgs& a) {
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
    report.environment = tracer::environment_info(a.modules);

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
    for (auto [file, text] :
         {std::pair{"report.json", to_json(report).dump(1) + "\n"}, std::pair{"meta.json", cap->meta.dump(1) + "\n"}}) {
        if (auto w = write_text(std::filesystem::path(out_dir) / file, text); !w) {
            fmt::print(stderr, "nvtrace run: {}\n", w.error().message);
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (a.json)
        fmt::print("{}\n", to_json(report).dump());
    else if (!a.quiet)
        print_summary(report, *cap, out_dir);
    if (cap->interrupted_by) return 128 + *cap->interrupted_by;
    if (!cap->restore_failures.empty()) return static_cast<int>(ExitCode::environment);
    return 0;
}

void add_run(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "Run a program under tracing and write a report");
    run->footer(
        "Example: sudo nvtrace run --module null_blk -- dd if=/dev/nullb0 of=/dev/null bs=4k count=4 iflag=direct\n"
        "Writes DIR/report.json and DIR/meta.json (DIR defaults to runs/<program>-<UTC time>).\n"
        "Scenario directories (nvtrace run scenarios/NAME) arrive with the scenarios; see docs/run.md.");
    run->add_option("command", args->command, "Program and arguments, after --")->required()->expected(-1);
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
