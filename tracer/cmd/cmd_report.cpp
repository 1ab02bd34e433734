// nvtrace report INPUT [--kmsg FILE] [--format F] [--json | -o OUT]   (docs/report.md)

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture.hpp"
#include "commands.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_fold.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/report_stream.hpp"
#include "nvtrace/stream_report.hpp"
#include "output_guard.hpp"
#include "report_capture.hpp"
#include "report_sinks.hpp"
#include "stderr_note.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

struct ReportArgs {
    std::string input;
    std::string kmsg;
    std::string format;
    std::string out;
    bool json = false;
    bool reemit = false;      // --reemit: a capture directory's saved report.json instead of a re-analysis
    std::string calls_jsonl;  // --calls-jsonl: calls streamed to this file, report.calls left empty
    std::string source;       // --source DIR: driver sources for source_links
    std::string expect;       // --expect FILE: a capture directory checked against FILE instead of its run's
    bool verbose = false;     // -v: every ioctl and kernel-log line in the summary
    bool out_given = false, calls_jsonl_given = false, kmsg_given = false;  // given, even as ''
};

// The sinks of these arguments; the summary starts with the input and what it was read as.
ReportSinks sinks_of(const ReportArgs& a, std::string label) {
    ReportSinks s;
    s.out = a.out;
    s.json = a.json;
    s.verbose = a.verbose;
    s.head = [input = a.input, label = std::move(label)] { fmt::print("input: {} ({})\n", input, label); };
    return s;
}

// A raw capture directory (docs/formats.md): the whole analysis again from the saved pages and formats.
constexpr std::string_view kCaptureDirLabel = "capture directory, re-analysed from its raw pages";

// A saved report (nvtrace.report/1, the report.json `nvtrace run` writes): its summary, and the report again
// with --json/-o (docs/report.md). A file by name is parsed as it is read; what was read once, from its bytes.
int report_saved_json(const ReportArgs& a, const Input& in, std::vector<KernelLogMessage> extra_log) {
    if (!a.calls_jsonl.empty()) {
        tracer::note("nvtrace report: --calls-jsonl takes a trace file, not a saved report\n");
        return static_cast<int>(ExitCode::usage);
    }
    Result<Report> report = fail(Error::usage(in.name + ": not a saved report"));
    if (in.reopenable())
        report = read_report_file(in.path);
    else if (auto saved = saved_report_from_text(in.bytes(), in.name))
        report = std::move(*saved);
    if (!report) {
        tracer::note("nvtrace report: {}\n", report.error().message);
        return static_cast<int>(report.error().code);
    }
    for (auto& m : extra_log)
        report->kernel_log.push_back(std::move(m));
    if (!a.source.empty())
        if (int rc = add_source_links(*report, a.source, "report")) return rc;
    return write_and_print(*report, sinks_of(a, "saved report, nvtrace.report/1"));
}

int do_report(const ReportArgs& a) {
    if (a.reemit && !a.source.empty()) {
        tracer::note("nvtrace report: --source cannot apply to --reemit (it prints the saved report as it is)\n");
        return static_cast<int>(ExitCode::usage);
    }
    std::optional<TraceFormat> forced;
    if (!a.format.empty()) {
        forced = parse_format_name(a.format);
        if (!forced) {
            fmt::print(stderr,
                       "nvtrace report: unknown --format '{}' (expected fgraph-text, function-text, "
                       "trace-cmd-report, trace-dat, kernel-log or strace)\n",
                       a.format);
            return static_cast<int>(ExitCode::usage);
        }
    }
    // Names that name nothing, or name standard output twice: refused before anything is read.
    for (const auto& [what, value, given] :
         {std::tuple<const char*, const std::string&, bool>{"-o", a.out, a.out_given},
          {"--calls-jsonl", a.calls_jsonl, a.calls_jsonl_given},
          {"--kmsg", a.kmsg, a.kmsg_given}})
        if (given && value.empty()) {
            tracer::note("nvtrace report: {} '': an empty file name\n", what);
            return static_cast<int>(ExitCode::usage);
        }
    if (!a.kmsg.empty() && a.kmsg == a.input && is_read_once(a.input)) {
        tracer::note("nvtrace report: standard input can be read only once: give - as INPUT or as --kmsg, not both\n");
        return static_cast<int>(ExitCode::usage);
    }
    // Standard output always carries the summary or, with --json, the report: an output file that is standard
    // output too (`-o /dev/stdout > f`: two descriptors of one file, each at its own offset) was overwritten by
    // the summary from its first byte, exit 0; into a pipe the two were mixed. A terminal or /dev/null is no file
    // to keep, and may be both.
    auto is_stdout = [](const std::string& path) {
        struct stat st {};
        return same_output(path, "/dev/stdout") && !(::fstat(STDOUT_FILENO, &st) == 0 && S_ISCHR(st.st_mode));
    };
    for (const auto& [what, path, hint] : {std::tuple<const char*, const std::string&, const char*>{
                                               "--calls-jsonl", a.calls_jsonl, " or, with --json, the report"},
                                           std::tuple<const char*, const std::string&, const char*>{
                                               "-o", a.out, "; --json prints the report there instead"}})
        if (path == "-" || (!path.empty() && is_stdout(path))) {
            tracer::note("nvtrace report: {} {}: give a file (standard output carries the summary{})\n", what, path,
                         hint);
            return static_cast<int>(ExitCode::usage);
        }
    std::vector<KernelLogMessage> kmsg_messages;
    std::vector<Diagnostic> kmsg_diags;
    if (!a.kmsg.empty()) {
        // An empty --kmsg file is a kernel that logged nothing (a quiet `dmesg > log`): no messages.
        auto k = open_input(a.kmsg, OpenOptions{TraceFormat::kernel_log, "", true});
        bool blank = k && k->bytes().find_first_not_of(" \n\r\t") == std::string_view::npos;
        auto log = !k ? fail(k.error()) : blank ? Result<ImportResult>(ImportResult{}) : import_input(*k);
        if (!log) {
            tracer::note("nvtrace report: --kmsg {}\n", log.error().message);
            return static_cast<int>(log.error().code);
        }
        kmsg_messages = std::move(log->kernel_log);
        kmsg_diags = std::move(log->stream.diagnostics);
    }
    // An output that is one of the inputs would be truncated before it is read (--calls-jsonl is opened first);
    // the files of a capture directory are the capture (`report DIR -o DIR/report.json` replaced the run's
    // report, and so did -o naming a link to it).
    for (const auto& [what, path] : {std::pair<const char*, const std::string&>{"--calls-jsonl", a.calls_jsonl},
                                     std::pair<const char*, const std::string&>{"-o", a.out}}) {
        std::optional<std::string> why = overwrites_capture(what, path, a.input);
        for (const std::string& in : {a.input, a.kmsg})
            if (!why) why = overwrites_input(what, path, in);
        if (why) {
            tracer::note("nvtrace report: {}\n", *why);
            return static_cast<int>(ExitCode::usage);
        }
    }
    // Two outputs in one file: the second written would replace the first (the calls were lost).
    if (!a.calls_jsonl.empty() && !a.out.empty() && (a.calls_jsonl == a.out || same_output(a.calls_jsonl, a.out))) {
        tracer::note("nvtrace report: --calls-jsonl and -o name the same file {}: give two files\n", a.out);
        return static_cast<int>(ExitCode::usage);
    }
    // An option that does not apply to directories, whatever the directory holds.
    if (std::error_code ec; !a.calls_jsonl.empty() && std::filesystem::is_directory(a.input, ec)) {
        tracer::note("nvtrace report: --calls-jsonl takes a trace file, not a capture directory\n");
        return static_cast<int>(ExitCode::usage);
    }

    // What the input is, decided once (nvtrace/input.hpp): what can be read only once is read here and kept.
    // --calls-jsonl keeps it in an unlinked file beside its outputs instead of memory.
    std::string temp_dir;
    if (!a.calls_jsonl.empty()) (void)streamed_output(sinks_of(a, ""), false, temp_dir);
    auto opened = open_input(a.input, OpenOptions{forced, temp_dir, false});
    if (!opened) {
        tracer::note("nvtrace report: {}\n", opened.error().message);
        return static_cast<int>(opened.error().code);
    }
    const Input& in = *opened;
    if (!a.expect.empty() && (in.kind != InputKind::capture_dir || a.reemit)) {
        tracer::note(
            "nvtrace report: --expect takes a capture directory (not with --reemit); to check a report or "
            "a trace, use `nvtrace check INPUT --expect FILE`\n");
        return static_cast<int>(ExitCode::usage);
    }
    if (in.kind == InputKind::saved_report) return report_saved_json(a, in, std::move(kmsg_messages));
    if (in.kind == InputKind::capture_dir_saved) {
        if (a.reemit) return reemit_report_json(a.input, sinks_of(a, ""), std::move(kmsg_messages));
        fmt::print(stderr,
                   "nvtrace report: {}/meta.json has no \"capture_format\": a capture directory written before "
                   "the raw format (or not by nvtrace run); --reemit prints its saved report.json\n",
                   a.input);
        return static_cast<int>(ExitCode::usage);
    }
    if (in.kind == InputKind::capture_dir && a.reemit)
        return reemit_report_json(a.input, sinks_of(a, ""), std::move(kmsg_messages));
    CaptureReportOptions o;
    o.extra_log = std::move(kmsg_messages);
    o.extra_diagnostics = std::move(kmsg_diags);
    o.kmsg = a.kmsg;
    o.source_dir = a.source;
    o.calls_jsonl = a.calls_jsonl;
    o.temp_dir = temp_dir;
    o.expect = a.expect;
    // What the input was read as: a text format found by detection (or --format); a text no format fits is read
    // as a kernel log (import_input).
    std::string label =
        in.kind == InputKind::capture_dir
            ? std::string(kCaptureDirLabel)
            : std::string(format_name(in.kind == InputKind::trace_dat ? TraceFormat::trace_dat
                                                                      : in.format.value_or(TraceFormat::kernel_log)));
    return report_and_write(in, sinks_of(a, std::move(label)), std::move(o)).exit_code;
}

void add_report(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ReportArgs>();
    CLI::App* cmd = app.add_subcommand("report", "Build the report offline from a trace file or a capture directory");
    cmd->footer(
        "INPUT: function_graph text (trace, trace_pipe, perf ftrace), function tracer text, trace-cmd report text,\n"
        "a trace.dat (streamed through temporary files in -o's directory or $TMPDIR), strace output (its ioctls),\n"
        "a kernel log or test output with CUDA/driver errors (kernel_log only, no calls), a saved report (report.json, "
        "nvtrace.report/1: its summary; --json/-o write it again),\n"
        "a capture directory written by `nvtrace run` (re-analysed from its raw ring-buffer\n"
        "pages, docs/formats.md), or - for standard input (a pipe, FIFO or Unix socket is read once, whole).\n"
        "The format is detected from\n"
        "the content and needs evidence (30% of the first 400 lines); --format forces it.\n"
        "Exit codes: 0 ok, 2 unreadable or unusable input (random bytes, mostly unreadable lines), 3 an output\n"
        "that cannot be written. See docs/report.md.");
    cmd->add_option("input", args->input, "Trace file, saved report.json, capture directory, or - for standard input")
        ->required();
    cmd->add_option("--source", args->source,
                    "Driver source tree (e.g. open-gpu-kernel-modules): file and line of each function's definition "
                    "(report source_links; not with --calls-jsonl or --reemit)");
    cmd->add_option("--expect", args->expect,
                    "Capture directory: check its report against this expectations file instead of the run's (which "
                    "`nvtrace report DIR` otherwise checks again from the copy the run kept in DIR/expect/)");
    cmd->add_flag("-v,--verbose", args->verbose, "Summary: every ioctl and kernel-log line, not folded or capped");
    auto* calls_jsonl = cmd->add_option(
        "--calls-jsonl", args->calls_jsonl,
        "Write the calls to this file as JSON Lines, as they end, and leave report.calls empty: memory "
        "bounded by the distinct call paths for function_graph text (not for a capture directory). The file gets "
        "its name only once the report is complete; a failed report leaves it as it was");
    cmd->add_flag("--reemit", args->reemit,
                  "Capture directory: print its saved report.json instead of re-analysing the raw data "
                  "(the only way for directories written before the raw format)");
    auto* kmsg = cmd->add_option("--kmsg", args->kmsg,
                                 "Kernel log (dmesg, journalctl -k, syslog, /dev/kmsg) to add to kernel_log");
    cmd->add_option("--format", args->format,
                    "fgraph-text, function-text, trace-cmd-report, trace-dat, kernel-log or strace (default: detect)");
    auto* json = cmd->add_flag("--json", args->json, "Print the report JSON on stdout instead of the summary");
    auto* out =
        cmd->add_option(
               "-o,--out", args->out,
               "Write the report JSON to this file (the summary still goes to stdout, so not - or stdout itself)")
            ->excludes(json);
    cmd->callback([args, out, calls_jsonl, kmsg, &exit_code] {
        args->out_given = out->count() > 0;
        args->calls_jsonl_given = calls_jsonl->count() > 0;
        args->kmsg_given = kmsg->count() > 0;
        exit_code = do_report(*args);
    });
}

}  // namespace

NVTRACE_COMMAND(20, add_report);

}  // namespace nvtrace::cli
