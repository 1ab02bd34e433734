// nvtrace run [options] -- CMD [ARGS]   and   nvtrace run [options] SCENARIO_DIR [-- PROGRAM ARGS]   (docs/run.md)
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "capture.hpp"
#include "commands.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/visible_text.hpp"
#include "report_capture.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

struct RunArgs {
    tracer::RunRequest r;  // the program or scenario and the tracing options (scenario.hpp)
    std::string out;
    bool no_preload = false;
    bool json = false;
    bool quiet = false;
    std::string source;                   // --source DIR: driver sources for source_links
    bool verbose = false;                 // -v: every ioctl and kernel-log line in the summary
    std::string exit_status = "nvtrace";  // --exit-status: "nvtrace" (default) or "program"
    std::string api;                      // --api: "cuda" (force the CUDA tables)
    bool no_api = false;                  // --no-api
    bool out_given = false;               // -o/--out given, even as ''
};

// --exit-status program: the program's exit status, 128 + N when signal N killed it (as a shell reports it), 0
// when its status is unknown. nvtrace's own outcomes come first (do_run, docs/run.md "Exit status").
int program_exit_status(const CaptureMeta& m) {
    if (m.exit_code) return *m.exit_code;
    if (m.signal) return 128 + *m.signal;
    return 0;
}

// runs/NAME-<UTC time with microseconds>Z-<nvtrace pid>, created here with mkdir (exclusive): a directory
// that exists already is never reused; "-2", "-3", ... are appended until a new one is made.
Result<std::string> make_default_out_dir(const std::string& raw_name) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    std::tm tm{};
    gmtime_r(&now.tv_sec, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y%m%dT%H%M%S", &tm);
    std::error_code ec;
    std::filesystem::create_directories("runs", ec);
    if (ec) {
        std::error_code cwd_ec;
        const std::string cwd = std::filesystem::current_path(cwd_ec).string();
        return fail(Error::environment(fmt::format("cannot create runs/ in {}: {}; give --out DIR",
                                                   cwd_ec ? std::string(".") : cwd, ec.message())));
    }
    std::string base = fmt::format("runs/{}-{}.{:06d}Z-{}", tracer::sanitized_file_name(raw_name, "run"), ts,
                                   now.tv_nsec / 1000, ::getpid());
    for (int i = 1; i < 1000; ++i) {
        std::string dir = i == 1 ? base : fmt::format("{}-{}", base, i);
        if (::mkdir(dir.c_str(), 0755) == 0) return dir;
        if (errno != EEXIST)
            return fail(Error::environment(fmt::format("cannot create {}: {}", dir, std::strerror(errno))));
    }
    return fail(Error::environment(fmt::format("cannot create a new directory named {}[-N]", base)));
}

// --out DIR: created when missing; an existing directory is used only when it holds no capture (meta.json,
// report.json or raw/): a capture is never overwritten.
Result<std::string> prepare_out_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // A directory made inside tracefs is a tracing instance (or an error), never a capture directory.
    const fs::path parent = fs::absolute(dir, ec).parent_path();
    if (struct statfs sfs{};
        !ec && ::statfs(parent.c_str(), &sfs) == 0 && (sfs.f_type == TRACEFS_MAGIC || sfs.f_type == DEBUGFS_MAGIC))
        return fail(Error::usage(
            fmt::format("--out {}: inside tracefs/debugfs; give a directory on a normal file system", dir)));
    auto holds_capture = [&](const char* f) {
        return fail(Error::usage(
            fmt::format("--out {}: already holds a capture ({} exists); nvtrace never overwrites one: choose another "
                        "directory or remove it",
                        dir, f)));
    };
    if (fs::is_symlink(fs::symlink_status(dir, ec)) && !fs::exists(dir, ec)) {
        std::error_code rl;
        return fail(Error::usage(
            fmt::format("--out {}: a symbolic link to {}, which does not exist: create its target or give another "
                        "directory",
                        dir, fs::read_symlink(dir, rl).string())));
    }
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec))
            return fail(Error::usage(fmt::format("--out {}: exists and is not a directory", dir)));
        // A symbolic link counts, dangling or not: the report would be written through it.
        for (const char* f : {"meta.json", "report.json", "raw"})
            if (fs::exists(fs::symlink_status(fs::path(dir) / f, ec))) return holds_capture(f);
    } else {
        fs::create_directories(dir, ec);
        if (ec) return fail(Error::environment(fmt::format("cannot create {}: {}", dir, ec.message())));
    }
    // The directory is taken by making raw/ (mkdir fails when it exists): of two runs given the same directory
    // at once, the second is refused instead of both writing their pages there.
    if (::mkdir((fs::path(dir) / "raw").c_str(), 0755) != 0) {
        if (errno == EEXIST) return holds_capture("raw");
        return fail(Error::environment(fmt::format("cannot create {}/raw: {}", dir, std::strerror(errno))));
    }
    return dir;
}

// SIGPIPE while the capture is made and saved: a closed stderr pipe (`nvtrace run ... 2>&1 | head -1`) must not end
// the run before meta.json and report.json are written. A handler, not SIG_IGN: the program gets the default again
// at exec. Restored before the report goes to stdout, so that `--json | head` ends as any writer to a closed pipe.
struct SigpipeHeld {
    struct sigaction old {};
    bool held = false;
    SigpipeHeld() {
        struct sigaction sa {};
        sa.sa_handler = [](int) {};
        sigemptyset(&sa.sa_mask);
        held = ::sigaction(SIGPIPE, &sa, &old) == 0;
    }
    void release() {
        if (held) ::sigaction(SIGPIPE, &old, nullptr);
        held = false;
    }
    ~SigpipeHeld() { release(); }
};

int do_run(RunArgs a) {
    SigpipeHeld sigpipe;
    if (a.out_given && a.out.empty()) {
        tracer::note("nvtrace run: --out '': an empty directory name (leave --out out for a new runs/... directory)\n");
        return static_cast<int>(ExitCode::usage);
    }
    auto resolved = tracer::resolve_run(a.r);
    if (!resolved) {
        tracer::note("nvtrace run: {}\n", resolved.error().message);
        return static_cast<int>(resolved.error().code);
    }
    if (resolved->cannot_run) {
        fmt::print("cannot run here: {}\n", *resolved->cannot_run);
        return static_cast<int>(ExitCode::environment);
    }
    for (const auto& n : resolved->notes)
        if (!a.quiet) tracer::note("nvtrace: {}\n", n);
    tracer::CaptureOptions& opts = resolved->run.capture;
    if (opts.meta.tty && !::isatty(STDIN_FILENO)) {
        tracer::note("nvtrace run: --tty: standard input is not a terminal\n");
        return static_cast<int>(ExitCode::usage);
    }
    if (opts.meta.tty && ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) {
        tracer::note("nvtrace run: --tty: nvtrace is not in the terminal's foreground (started in the background?)\n");
        return static_cast<int>(ExitCode::usage);
    }
    // --out PATTERN: %j %s %n %h %p %% (one capture directory per node and job step under Slurm; docs/run.md).
    if (a.out.find('%') != std::string::npos) {
        char host[256] = {};
        (void)::gethostname(host, sizeof host - 1);
        auto expanded = expand_out_pattern(a.out, {[](const char* n) { return std::getenv(n); }, host, ::getpid()});
        if (!expanded) {
            tracer::note("nvtrace run: {}\n", expanded.error().message);
            return static_cast<int>(expanded.error().code);
        }
        a.out = *expanded;
    }
    opts.preload = !a.no_preload;
    opts.api = a.no_api          ? tracer::CaptureOptions::Api::none
               : a.api == "cuda" ? tracer::CaptureOptions::Api::cuda
                                 : tracer::CaptureOptions::Api::automatic;
    // A bad --uprobe is a usage error before anything is made (plan_capture parses them again).
    for (const auto& u : opts.uprobes)
        if (auto spec = tracer::parse_uprobe_spec(u); !spec) {
            tracer::note("nvtrace run: {}\n", spec.error().message);
            return static_cast<int>(spec.error().code);
        }
    opts.progress = !a.quiet;
    // Test hooks (docs/testing.md): no reading while the program runs, only the final drain; no fd syscall events.
    auto hook = [](const char* name) { return std::string_view(std::getenv(name) ? std::getenv(name) : "") == "1"; };
    opts.meta.raw.drained_while_running = !hook("NVTRACE_TEST_NO_DRAIN");
    opts.fd_events = !hook("NVTRACE_TEST_NO_FD_EVENTS");
    opts.hold_signals = true;  // a SIGINT/SIGTERM/SIGHUP/SIGQUIT while the report is written waits for it (docs/run.md)

    // The capture directory is made before the capture (the raw pages are written while the program runs),
    // after the root check so that a refused run leaves nothing; a failed capture removes it again when
    // nvtrace made it.
    if (auto root = tracer::require_root(); !root) {
        tracer::note("nvtrace run: {}\n", root.error().message);
        return static_cast<int>(root.error().code);
    }
    std::error_code ec;
    bool out_existed = !a.out.empty() && std::filesystem::exists(a.out, ec);
    auto dir_r = a.out.empty() ? make_default_out_dir(resolved->default_name) : prepare_out_dir(a.out);
    if (!dir_r) {
        tracer::note("nvtrace run: {}\n", dir_r.error().message);
        return static_cast<int>(dir_r.error().code);
    }
    const std::string out_dir = opts.out_dir = *dir_r;
    if (!a.quiet)
        tracer::note("nvtrace: tracing {}; capture directory {}\n",
                     visible(fmt::format("{}", fmt::join(opts.meta.command, " "))), visible(out_dir));
    // --json: standard output carries the report alone (`nvtrace run --json -- CMD | jq` parses it), so the
    // program writes its standard output to nvtrace's stderr: fd 1 is stderr while the program runs, and the
    // report goes to the standard output kept aside (docs/run.md "--json").
    struct StdoutAside {
        int saved = -1;
        void restore() {
            if (saved < 0) return;
            std::fflush(stdout);
            ::dup2(saved, STDOUT_FILENO);
            ::close(saved);
            saved = -1;
        }
        ~StdoutAside() { restore(); }
    } stdout_aside;
    if (a.json) {
        std::fflush(stdout);
        stdout_aside.saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (stdout_aside.saved >= 0 && ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) stdout_aside.restore();
        if (!a.quiet && stdout_aside.saved >= 0)
            tracer::note("nvtrace: --json: the program's standard output goes to stderr; stdout carries the report\n");
    }
    auto cap = tracer::capture(opts);
    stdout_aside.restore();
    // Whatever path leaves from here, the signals are given back (take_held_signal does it once).
    struct HeldSignals {
        tracer::CaptureResult* cap = nullptr;
        ~HeldSignals() {
            if (cap) tracer::take_held_signal(*cap);
        }
    } held{cap ? &*cap : nullptr};
    if (!cap) {
        tracer::note("nvtrace run: {}\n", cap.error().message);
        // Pages recorded before the failure are kept (a full disk while saving the formats must not delete them);
        // a start that recorded nothing leaves nothing behind.
        const auto raw = std::filesystem::path(out_dir) / "raw";
        std::uintmax_t bytes = 0;
        for (auto it = std::filesystem::recursive_directory_iterator(raw, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
            if (it->is_regular_file(ec)) bytes += it->file_size(ec);
        if (bytes > 0)
            fmt::print(stderr,
                       "nvtrace run: the capture is incomplete (no meta.json, so `nvtrace report` cannot read it); "
                       "its raw ring-buffer pages ({} bytes) are kept in {}\n",
                       bytes, raw.string());
        else if (!out_existed)
            std::filesystem::remove_all(out_dir, ec);
        else
            std::filesystem::remove_all(raw, ec);
        // The start announced the capture directory: say what became of it.
        if (bytes == 0 && !a.quiet)
            tracer::note("nvtrace run: nothing was recorded; {}\n",
                         out_existed ? visible(out_dir) + " is as it was"
                                     : "capture directory " + visible(out_dir) + " not kept");
        return static_cast<int>(cap.error().code);
    }
    for (const auto& f : cap->restore_failures)
        tracer::note("nvtrace run: could not restore {} (the journal is kept for `nvtrace cleanup`)\n", f);
    if (cap->meta.instance_left) tracer::note("nvtrace run: {}\n", *cap->meta.instance_left);
    // The report: made from the capture directory by the code of `nvtrace report DIR` (record, then report), so
    // that the two are the same. The capture is saved once report.json is; a signal that arrived meanwhile ends
    // the run then (exit 128 + N below), before anything goes to stdout.
    ReportSinks sinks;
    sinks.command = "run";
    sinks.out = (std::filesystem::path(out_dir) / "report.json").string();
    sinks.remove_cut_out = true;
    sinks.write_hint = fmt::format("; the capture is kept: `nvtrace report {}` writes the report again", out_dir);
    sinks.json = a.json;
    sinks.verbose = a.verbose;
    sinks.after_files = [&] {
        tracer::take_held_signal(*cap);
        sigpipe.release();
    };
    sinks.summary = !a.quiet;
    CaptureReportOptions ro;
    ro.source_dir = a.source;
    auto saved = open_input(out_dir);
    if (!saved) {
        tracer::note("nvtrace run: {}\n", saved.error().message);
        return static_cast<int>(saved.error().code);
    }
    CaptureReport report = report_and_write(*saved, sinks, std::move(ro));
    if (report.exit_code != 0) return report.exit_code;
    if (report.cannot_run) fmt::print("cannot run here: {}\n", *report.cannot_run);
    if (cap->interrupted_by) return 128 + *cap->interrupted_by;
    if (!cap->restore_failures.empty() || cap->meta.instance_left) return static_cast<int>(ExitCode::environment);
    if (report.cannot_run) return static_cast<int>(ExitCode::environment);
    if (summarize(report.checks).fail) return static_cast<int>(ExitCode::expectation_failed);
    if (a.exit_status == "program") return program_exit_status(cap->meta);
    return 0;
}

void add_run(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "Run a program under tracing and write a report");
    run->footer(
        "Example: sudo nvtrace run --module null_blk -- dd if=/dev/nullb0 of=/dev/null bs=4k count=4 iflag=direct\n"
        "         sudo nvtrace run scenarios/gem-mmap\n"
        "Writes DIR/report.json, DIR/meta.json and the raw ring-buffer pages with what decodes them, so that\n"
        "`nvtrace report DIR` redoes the analysis offline (docs/formats.md); DIR defaults to a new\n"
        "runs/<program or scenario>-<UTC time>.<microseconds>Z-<nvtrace pid>; an existing capture is never "
        "overwritten.\n"
        "The program is a process tree: what it leaves running is ended (SIGTERM, SIGKILL after 2 s) before\n"
        "the instance is removed; meta.json lists it (descendants_ended). Progress lines go to stderr.\n"
        "Without function tracing, --expect, a scenario or --source, report.json is written as the pages are\n"
        "decoded, without holding the events (meta.json report_streamed; docs/run.md).\n"
        "A scenario directory brings its program, tracing options and expectations (docs/scenarios.md);\n"
        "exit 1 when a check fails, 3 with \"cannot run here: ...\" when the machine lacks what it needs.\n"
        "Exit status, first that applies: 2 or 3 (nvtrace's own errors), 128+N (a signal N stopped nvtrace), 3\n"
        "(tracing state not restored, instance left, scenario cannot run), 1 (a check failed), then with\n"
        "--exit-status program the program's status (128+N when signal N killed it), else 0. So\n"
        "`nvtrace run --exit-status program -- ./test && echo ok` says ok only when ./test exited 0.");
    run->add_option("command", args->r.capture.meta.command,
                    "Program and arguments (after --), or a scenario directory [-- its program's arguments]")
        ->required()
        ->expected(-1);
    run->add_option(
        "--expect", args->r.expect,
        "Check the report against this expectations file, or a scenario directory's (docs/expectations.md); "
        "a file without checks is an error");
    run->add_option("--bin-dir", args->r.bin_dir,
                    "Where the built scenario programs are (default: found from nvtrace's own path)");
    run->add_flag("--no-graph", args->r.no_graph,
                  "No function_graph (drop modules and filters, also a scenario's): ioctls, markers, kernel log only");
    run->add_option("--device", args->r.device,
                    "Scenario only: pass --device PATH to its program (e.g. another GEM driver)");
    auto* out_opt =
        run->add_option("-o,--out", args->out,
                        "Capture directory: created, or an existing one without a capture (default: a new "
                        "runs/<program>-<UTC time>.<microseconds>Z-<pid>); %j SLURM_JOB_ID, %s SLURM_STEP_ID, %n "
                        "SLURMD_NODENAME (else the short host name), %h host name, %p pid, %% a '%' "
                        "(--out runs/%j/%n under srun)");
    run->add_option("-m,--module", args->r.capture.meta.modules,
                    "Trace every function of this module with function_graph (:mod:M); repeatable")
        ->allow_extra_args(false);
    run->add_option("--filter", args->r.capture.meta.filters,
                    "Also trace functions matching this glob (set_ftrace_filter); repeatable")
        ->allow_extra_args(false);
    run->add_option("--notrace", args->r.capture.meta.notrace,
                    "Never trace functions matching this glob (set_ftrace_notrace); repeatable")
        ->allow_extra_args(false);
    run->add_option("--graph-function", args->r.capture.meta.graph_functions,
                    "Start graphs only at these functions (set_graph_function); repeatable")
        ->allow_extra_args(false);
    run->add_option("--max-depth", args->r.capture.meta.max_depth, "Cap the graph depth (max_graph_depth)")
        ->check(nvtrace::cli::positive_number);
    run->add_flag("--future", args->r.capture.future,
                  "Arm :mod:M for a module that is not loaded yet (applied when it loads)");
    run->add_flag("--force", args->r.capture.force,
                  "Take the top level although another tracer is set or a journal exists (it is still restored)");
    run->add_flag("--as-root", args->r.capture.as_root,
                  "Under sudo, run the program as root instead of the invoking user");
    run->add_flag("--no-preload", args->no_preload,
                  "Do not inject libnvtrace_preload.so (user-space ioctl decoding, docs/preload.md)");
    run->add_option("-e,--event", args->r.capture.meta.events, "Also record this tracepoint, SYSTEM:EVENT; repeatable")
        ->allow_extra_args(false);
    run->add_option("--buffer-size", args->r.capture.meta.buffer_size_kb,
                    "Per-CPU ring-buffer size of nvtrace's instance in KiB (buffer_size_kb; default: the kernel's)")
        ->check(nvtrace::cli::positive_number);
    run->add_flag("--trace-dat", args->r.capture.trace_dat,
                  "Also write DIR/trace.dat (and trace-top.dat) from the raw pages with `trace-cmd restore` "
                  "(needs trace-cmd)");
    run->add_option("--timeout", args->r.capture.timeout_s,
                    "Stop the program and its process group after this many seconds (SIGTERM, then SIGKILL 2 s later)")
        ->check(nvtrace::cli::positive_number);
    run->add_flag("--json", args->json,
                  "Print the report JSON on stdout instead of the summary; the program's standard output goes to "
                  "stderr then, so that stdout holds the JSON alone (`--json | jq`)");
    run->add_flag("-q,--quiet", args->quiet, "No summary and no progress lines");
    run->add_option("--source", args->source,
                    "Driver source tree (e.g. open-gpu-kernel-modules): file and line of each function's definition "
                    "in the report (source_links)")
        ->check(CLI::ExistingDirectory);
    run->add_flag("-v,--verbose", args->verbose, "Summary: every ioctl and kernel-log line, not folded or capped");
    run->add_option("--exit-status", args->exit_status,
                    "nvtrace (default): 0 unless nvtrace failed; program: exit with the program's status (128+N when "
                    "signal N killed it) once nvtrace itself succeeded (its errors 2, 3, a signal to nvtrace 128+N "
                    "and a failed check 1 come first)")
        ->check(CLI::IsMember({"nvtrace", "program"}));
    run->add_flag("--tty", args->r.capture.meta.tty,
                  "Give the program the terminal (its process group becomes the foreground one) so that it can read "
                  "it; without it, a program that reads the terminal is stopped by SIGTTIN: nvtrace says so and ends "
                  "it, the capture saved");
    run->add_option("--uprobe", args->r.capture.uprobes,
                    "Probe a function of a user-space library, LIB:SYMBOL[%FETCHARGS] (e.g. libc:getpid, "
                    "'libc:write%fd=%di:s32,%dx:u64'): an entry and a return event per call; repeatable (docs/api.md)")
        ->allow_extra_args(false);
    auto* api =
        run->add_option(
               "--api", args->api,
               "Trace this API's calls with uprobes even when the program does not link it: cuda (the "
               "driver API of libcuda.so.1 and the runtime of libcudart.so.*). Default: CUDA is traced "
               "when the program's libraries (DT_NEEDED) include libcudart or libcuda, and on a libcudart/libcuda the "
               "program maps later (dlopen) once nvtrace sees it mapped (calls before are not seen)")
            ->check(CLI::IsMember({"cuda"}));
    run->add_flag("--no-api", args->no_api, "Do not probe the CUDA libraries (no API calls in the report)")
        ->excludes(api);
    run->callback([args, out_opt, &exit_code] {
        args->out_given = out_opt->count() > 0;
        exit_code = do_run(*args);
    });
}

}  // namespace

NVTRACE_COMMAND(10, add_run);

}  // namespace nvtrace::cli
