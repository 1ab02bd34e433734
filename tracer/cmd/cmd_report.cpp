// nvtrace report INPUT [--kmsg FILE] [--format F] [--json | -o OUT]   (docs/report.md)

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
    bool verbose = false;     // -v: every ioctl and kernel-log line in the summary
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

// function_graph text read in one pass (stream_report.hpp): its calls into report.json as they end (--json), or
// to their own file with --calls-jsonl; memory stays bounded (docs/performance.md). With --calls-jsonl, every
// other text format is read whole and its calls written after.
int report_text_streamed(const ReportArgs& a, const Input& in, const std::string& temp_dir,
                         std::vector<KernelLogMessage> kmsg, std::vector<Diagnostic> kmsg_diags) {
    // Text is streamed in file order: never refused part way.
    ReportSinks sinks = sinks_of(a, "");  // the format is known once read
    std::string dir;                      // `temp_dir`, where the input was spooled
    ReportStream::Options out_opts = streamed_output(sinks, false, dir);
    std::optional<std::ofstream> calls;
    if (!a.calls_jsonl.empty()) calls.emplace(a.calls_jsonl, std::ios::trunc | std::ios::binary);
    if (calls && !*calls) {
        tracer::note("nvtrace report: cannot write {}: {}\n", a.calls_jsonl, std::strerror(errno));
        return static_cast<int>(ExitCode::environment);
    }
    auto ioctls = streamed_ioctl_summary(sinks);
    auto st = report_streaming(in, calls ? &*calls : nullptr, temp_dir, out_opts,
                               [&ioctls](const IoctlRecord& io) { ioctls->add(io, std::nullopt); });
    if (!st) {
        tracer::note("nvtrace report: {}\n", st.error().message);
        return static_cast<int>(st.error().code);
    }
    if (calls && !calls->flush()) {
        tracer::note("nvtrace report: cannot write {}: {}\n", a.calls_jsonl, std::strerror(errno));
        return static_cast<int>(ExitCode::environment);
    }
    Report& report = st->records ? st->records->report() : st->report;
    for (auto& d : kmsg_diags)
        report.completeness.diagnostics.push_back(std::move(d));
    for (auto& m : st->kernel_log)
        report.kernel_log.push_back(std::move(m));
    for (auto& m : kmsg)
        report.kernel_log.push_back(std::move(m));
    report.source = {{"kind", "file"}, {"path", a.input}, {"format", std::string(format_name(st->format))}};
    if (calls) {
        report.source["calls_jsonl"] = a.calls_jsonl;
        report.source["calls_count"] = st->calls;
    }
    if (!a.kmsg.empty()) report.source["kmsg"] = a.kmsg;
    sinks = sinks_of(a, std::string(format_name(st->format)));
    if (st->records) return write_and_print_streamed(*st->records, *ioctls, sinks);
    return write_and_print(report, sinks);
}

// A trace.dat reported without holding its events (docs/report.md): stream_trace_dat feeds a ReportStream.
// nullopt when the file cannot be streamed (function-graph events: the call graph is built from the whole
// stream; no temporary file; unreadable): the caller then reads it whole, which gives the same report (and the
// same error for an unreadable file). Times going back and interleaved buffers are the sorter's.
std::optional<int> report_trace_dat_streamed(const ReportArgs& a, std::vector<KernelLogMessage>& kmsg,
                                             const std::vector<Diagnostic>& kmsg_diags) {
    const ReportSinks sinks = sinks_of(a, std::string(format_name(TraceFormat::trace_dat)));
    auto ioctls = streamed_ioctl_summary(sinks);
    auto rs = open_streamed(sinks, EventStream{}, *ioctls);
    if (!rs) return std::nullopt;
    ReportStream& r = **rs;
    // Decoded on this thread, folded into the report on another (ReportFold); the comms stream_trace_dat finds
    // are this thread's until handed over with the first event of their pid.
    EventStream side;
    ReportFold fold(r, [&side](int pid) -> std::optional<std::string> {
        auto it = side.comms.find(pid);
        return it == side.comms.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
    struct Sink : TraceDatSink {
        ReportFold& fold;
        explicit Sink(ReportFold& f) : fold(f) {}
        bool event(Event& ev) override { return fold.add(std::move(ev)); }
        bool record(const RawRecord& rec) override { return fold.add(rec); }  // decoded on the fold thread
        void handle_done() override { fold.sync(); }
    } sink(fold);
    auto st = stream_trace_dat(a.input, side, sink);
    bool folded = fold.finish();
    if (!st || *st != TraceDatStreamed::done || !folded) return std::nullopt;
    for (auto& d : side.diagnostics)
        r.side().diagnostics.push_back(std::move(d));
    for (const auto& d : kmsg_diags)
        r.side().diagnostics.push_back(d);
    if (auto f = r.finish(); !f) {
        tracer::note("nvtrace report: {}\n", f.error().message);
        return static_cast<int>(f.error().code);
    }
    Report& report = r.report();
    for (auto& m : kmsg)
        report.kernel_log.push_back(std::move(m));
    report.source = {{"kind", "file"}, {"path", a.input}, {"format", std::string(format_name(TraceFormat::trace_dat))}};
    if (!a.kmsg.empty()) report.source["kmsg"] = a.kmsg;
    return write_and_print_streamed(r, *ioctls, sinks);
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
    switch (in.kind) {
        case InputKind::capture_dir:
        case InputKind::capture_dir_saved: {
            if (a.reemit) return reemit_report_json(a.input, sinks_of(a, ""), std::move(kmsg_messages));
            if (in.kind == InputKind::capture_dir_saved) {
                fmt::print(stderr,
                           "nvtrace report: {}/meta.json has no \"capture_format\": a capture directory written before "
                           "the raw format (or not by nvtrace run); --reemit prints its saved report.json\n",
                           a.input);
                return static_cast<int>(ExitCode::usage);
            }
            CaptureReportOptions o;
            o.extra_log = std::move(kmsg_messages);
            o.source_dir = a.source;
            return report_capture_dir(a.input, sinks_of(a, std::string(kCaptureDirLabel)), std::move(o)).exit_code;
        }
        case InputKind::saved_report:
            return report_saved_json(a, in, std::move(kmsg_messages));
        case InputKind::trace_dat:
        case InputKind::text:
            break;
    }
    if (!a.calls_jsonl.empty())
        return report_text_streamed(a, in, temp_dir, std::move(kmsg_messages), std::move(kmsg_diags));
    if (a.json && a.source.empty() && in.kind == InputKind::text && in.format == TraceFormat::fgraph_text) {
        std::string dir;  // where the report's temporary files go ($TMPDIR)
        (void)streamed_output(sinks_of(a, ""), false, dir);
        return report_text_streamed(a, in, dir, std::move(kmsg_messages), std::move(kmsg_diags));
    }
    // A trace.dat file is reported as it is read where it can be; `kmsg_messages` is taken only when it was.
    if (in.kind == InputKind::trace_dat && in.reopenable() && a.source.empty())
        if (auto rc = report_trace_dat_streamed(a, kmsg_messages, kmsg_diags)) return *rc;

    auto imported = import_input(in);
    if (!imported) {
        tracer::note("nvtrace report: {}\n", imported.error().message);
        return static_cast<int>(imported.error().code);
    }
    for (auto& d : kmsg_diags)
        imported->stream.diagnostics.push_back(std::move(d));
    Report report = build_report(imported->stream);
    for (auto& m : imported->kernel_log)
        report.kernel_log.push_back(std::move(m));
    for (auto& m : kmsg_messages)
        report.kernel_log.push_back(std::move(m));
    report.source = {{"kind", "file"}, {"path", a.input}, {"format", std::string(format_name(imported->format))}};
    if (!a.kmsg.empty()) report.source["kmsg"] = a.kmsg;
    if (!a.source.empty())
        if (int rc = add_source_links(report, a.source, "report")) return rc;

    // Streamed: a report of millions of calls never exists as one JSON DOM.
    return write_and_print(report, sinks_of(a, std::string(format_name(imported->format))));
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
    cmd->add_flag("-v,--verbose", args->verbose, "Summary: every ioctl and kernel-log line, not folded or capped");
    cmd->add_option("--calls-jsonl", args->calls_jsonl,
                    "Write the calls to this file as JSON Lines, as they end, and leave report.calls empty: memory "
                    "bounded by the distinct call paths for function_graph text (not for a capture directory)");
    cmd->add_flag("--reemit", args->reemit,
                  "Capture directory: print its saved report.json instead of re-analysing the raw data "
                  "(the only way for directories written before the raw format)");
    cmd->add_option("--kmsg", args->kmsg, "Kernel log (dmesg, journalctl -k, syslog, /dev/kmsg) to add to kernel_log");
    cmd->add_option("--format", args->format,
                    "fgraph-text, function-text, trace-cmd-report, trace-dat, kernel-log or strace (default: detect)");
    auto* json = cmd->add_flag("--json", args->json, "Print the report JSON on stdout instead of the summary");
    cmd->add_option("-o,--out", args->out, "Write the report JSON to this file (the summary still goes to stdout)")
        ->excludes(json);
    cmd->callback([args, &exit_code] { exit_code = do_report(*args); });
}

}  // namespace

NVTRACE_COMMAND(20, add_report);

}  // namespace nvtrace::cli
