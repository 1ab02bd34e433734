// nvtrace export INPUT --format json|chrome|folded|csv|html [-o FILE]   (docs/export.md)
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/report_io.hpp"
#include "output_guard.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct ExportArgs {
    std::string input;
    std::string format;
    std::string out;
    std::string table;  // --table of csv: calls, ioctls, ioctl-stats
};

int do_export(const ExportArgs& a) {
    auto f = parse_export_format(a.format);
    if (!f) {
        tracer::note("nvtrace export: unknown --format '{}' (expected json, chrome, folded, csv or html)\n", a.format);
        return static_cast<int>(ExitCode::usage);
    }
    std::optional<CsvTable> table;
    if (!a.table.empty()) {
        table = parse_csv_table(a.table);
        if (!table || *f != ExportFormat::csv) {
            if (table)
                tracer::note("nvtrace export: --table is for --format csv (given: {})\n", a.format);
            else
                tracer::note("nvtrace export: unknown --table '{}' (expected calls, ioctls or ioctl-stats)\n", a.table);
            return static_cast<int>(ExitCode::usage);
        }
    }
    // `export DIR -o DIR/report.json` wrote CSV over the run's report: refused as `report` does.
    if (auto why = overwrites_capture("-o", a.out, a.input); why || (why = overwrites_input("-o", a.out, a.input))) {
        tracer::note("nvtrace export: {}\n", *why);
        return static_cast<int>(ExitCode::usage);
    }
    auto report = load_report_input(a.input);
    if (!report) {
        tracer::note("nvtrace export: {}\n", report.error().message);
        return static_cast<int>(report.error().code);
    }
    const CsvTable t = table.value_or(default_csv_table(*report));
    const auto calls_elsewhere = calls_written_elsewhere(report->source, report->calls.size());
    if (const auto& why = calls_elsewhere) {
        if (*f == ExportFormat::folded || (*f == ExportFormat::csv && t == CsvTable::calls)) {
            tracer::note("nvtrace export: {}: {}: export the report made without --calls-jsonl\n", a.input, *why);
            return static_cast<int>(ExitCode::usage);
        }
        tracer::note("nvtrace export: {}: {}: they are not in this export\n", a.input, *why);
    }
    // An export that would hold no data (folded stacks without a timed call, a CSV table without a row, a chrome
    // trace without an event) is refused before the output is opened: an empty file with exit 0 said nothing.
    if (auto why = empty_export_reason(*report, *f, t)) {
        tracer::note("nvtrace export: {}: nothing to export as {}: {}\n", a.input,
                     *f == ExportFormat::csv ? fmt::format("csv --table {}", to_string(t)) : std::string(to_string(*f)),
                     *why);
        return static_cast<int>(ExitCode::usage);
    }
    Result<void> done;
    auto write = [&](std::ostream& os) -> Result<void> {
        if (*f == ExportFormat::chrome) {
            // Written here for its counts: a report without calls says what the trace holds instead.
            ChromeTraceStats stats = write_chrome_trace(*report, os);
            os.flush();
            if (!os) return fail(Error::environment("write failed"));
            if (auto note = calls_elsewhere ? std::nullopt : export_without_calls_note(*report, *f, &stats))
                tracer::note("nvtrace export: {}: {}\n", a.input, *note);
            return {};
        }
        if (*f != ExportFormat::csv) {
            auto r = export_report(*report, *f, os);
            if (r)
                if (auto note = calls_elsewhere ? std::nullopt : export_without_calls_note(*report, *f))
                    tracer::note("nvtrace export: {}: {}\n", a.input, *note);
            if (r && *f == ExportFormat::folded)
                if (auto note = folded_self_clamped_note(*report))
                    tracer::note("nvtrace export: {}: {}\n", a.input, *note);
            return r;
        }
        if (!table && t != CsvTable::calls)
            tracer::note(
                "nvtrace export: the report has no calls: writing its {} table (--table calls for the "
                "calls)\n",
                to_string(t));
        write_csv(*report, t, os);
        os.flush();
        if (!os) return fail(Error::environment("write failed"));
        return {};
    };
    if (a.out.empty() || a.out == "-") {
        done = write(std::cout);
    } else {
        std::ofstream out(a.out, std::ios::binary | std::ios::trunc);
        if (!out) {
            tracer::note("nvtrace export: -o {}: cannot write: {}\n", a.out, std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
        done = write(out);
    }
    if (!done) {
        tracer::note("nvtrace export: {}: {}\n", a.out.empty() || a.out == "-" ? std::string("stdout") : "-o " + a.out,
                     done.error().message);
        return static_cast<int>(done.error().code);
    }
    return 0;
}

void add_export(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ExportArgs>();
    CLI::App* cmd =
        app.add_subcommand("export", "Write a report as JSON, Chrome trace JSON, folded stacks, CSV or one HTML page");
    cmd->footer(
        "INPUT: a report.json, a capture directory or a trace file. Formats: json (the report, schema\n"
        "nvtrace.report/1), chrome (Perfetto UI, chrome://tracing; calls and ioctls as slices per thread),\n"
        "folded (flamegraph.pl, speedscope; self ns), csv (--table calls, ioctls or ioctl-stats), html (one "
        "self-contained page:\n"
        "icicle of the call tree, timeline per thread, checks, completeness; opens without a network).\n"
        "In folded and csv, control bytes of names are written as \\xNN; a csv text cell starting with = + - @\n"
        "is quoted behind a ' (spreadsheet formulas).\n"
        "A report without calls (strace, a kernel log, a run without function tracing): json, chrome and html\n"
        "are written and say on stderr what they hold; chrome lays out items without a time in recorded order.\n"
        "An export that would hold no data (folded without a timed call, a csv table without a row, chrome\n"
        "without an event) is refused, saying why, and no file is written.\n"
        "Exit codes: 0 ok, 2 bad input or\n"
        "format, nothing to export, or -o onto the input or into a capture directory, 3 cannot write (-o).\n"
        "See docs/export.md.");
    cmd->add_option("input", args->input, "Report, capture directory or trace file")->required();
    cmd->add_option("-f,--format", args->format, "json, chrome, folded, csv or html")->required();
    cmd->add_option("-o,--out", args->out, "Output file (default: stdout)");
    cmd->add_option("--table", args->table,
                    "csv: calls, ioctls or ioctl-stats (default: calls; ioctls for a report without calls)");
    cmd->callback([args, &exit_code] { exit_code = do_export(*args); });
}

}  // namespace

NVTRACE_COMMAND(50, add_export);

}  // namespace nvtrace::cli
