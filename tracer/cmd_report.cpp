// nvtrace report INPUT [--kmsg FILE] [--format F] [--json | -o OUT]   (docs/report.md)
#include <fcntl.h>
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

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture.hpp"
#include "commands.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"
#include "nvtrace/report_fold.hpp"
#include "nvtrace/report_io.hpp"
#include "nvtrace/report_stream.hpp"
#include "nvtrace/stream_report.hpp"
#include "output_guard.hpp"
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

std::string dump(const nlohmann::json& j, int indent) {
    // Readers replace invalid UTF-8 already; `replace` keeps a stray byte from turning into an exception.
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_summary(const Report& r, std::string_view input, std::string_view format, bool verbose = false) {
    fmt::print("input: {} ({})\n", input, format);
    print_report_body(r, true, true, verbose);
}

// The three outputs of every path: -o FILE (streamed), then --json on stdout or the text summary. `label` says
// what the input was; `before_summary` may add what only the summary needs (the report files are written first).
int write_and_print(Report& report, const ReportArgs& a, std::string_view label,
                    const std::function<void(Report&)>& before_summary = {},
                    const std::function<void()>& after_summary = {}) {
    if (!a.out.empty()) {
        std::ofstream out(a.out, std::ios::trunc);
        if (out) write_json(report, out);
        if (!out || !out.flush()) {
            tracer::note("nvtrace report: cannot write {}: {}\n", a.out, std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (a.json) {
        write_json(report, std::cout);
        std::cout.flush();
        return 0;
    }
    if (before_summary) before_summary(report);
    print_summary(report, a.input, label, a.verbose);
    if (after_summary) after_summary();
    if (!a.out.empty()) fmt::print("report: {}\n", a.out);
    return 0;
}

// Where a streamed report (nvtrace/report_stream.hpp) writes its JSON for these arguments, and its temporary
// files: with -o FILE a temporary file in FILE's directory (write_to() then links it as FILE; --json copies it to
// stdout), with --json alone straight to stdout, with neither nowhere (the summary only counts the records).
// `may_refuse`: the stream can still be refused part way (the caller then reads the input whole), so nothing may
// reach stdout before the end: --json alone then goes through a temporary file too. The events and markers go to
// temporary files in -o's directory or $TMPDIR. Empty temp_dir: no place for them.
ReportStream::Options streamed_output(const ReportArgs& a, bool may_refuse, std::string& temp_dir) {
    ReportStream::Options o;
    std::error_code ec;
    temp_dir = std::filesystem::temp_directory_path(ec).string();
    if (!a.out.empty()) {
        std::filesystem::path parent = std::filesystem::path(a.out).parent_path();
        temp_dir = parent.empty() ? "." : parent.string();
    } else if (a.json && !may_refuse) {
        std::cout.flush();
        o.json = ReportStream::Json::direct;
        o.direct_fd = STDOUT_FILENO;
    } else if (!a.json) {
        o.json = ReportStream::Json::none;
    }
    return o;
}

// The summary's ioctl lines of a streamed report (no "(kernel: ...)" part: streamed reports hold no calls).
std::unique_ptr<IoctlSummary> streamed_ioctl_summary(const ReportArgs& a) {
    IoctlSummaryOptions o;
    o.verbose = a.verbose;
    o.kernel_traced = false;
    return std::make_unique<IoctlSummary>(o);
}

// A ReportStream for `a` (streamed_output) whose ioctl records also go to `summary` (when a summary is printed).
// nullopt when there is no place for its temporary files: the caller reads the input whole.
std::optional<std::unique_ptr<ReportStream>> open_streamed(const ReportArgs& a, EventStream side,
                                                           IoctlSummary& summary) {
    std::string temp_dir;
    ReportStream::Options out_opts = streamed_output(a, true, temp_dir);
    if (temp_dir.empty()) return std::nullopt;
    auto rs = ReportStream::open(temp_dir, std::move(side), out_opts);
    if (!rs) return std::nullopt;
    if (!a.json) (*rs)->on_ioctl([&summary](const IoctlRecord& io) { summary.add(io, std::nullopt); });
    return std::move(*rs);
}

// write_and_print for a report whose records were streamed, opened with streamed_output(a): -o FILE is the
// report's temporary file linked under that name, --json writes or copies it to stdout, the summary counts what
// was streamed (`ioctls`: the summary the records were given to).
int write_and_print_streamed(ReportStream& r, IoctlSummary& ioctls, const ReportArgs& a, std::string_view label,
                             const std::function<void()>& after_summary = {}) {
    const StreamedRecords streamed{r.ioctls(), a.json ? std::vector<std::string>{} : ioctls.lines(), r.markers(),
                                   r.events(), r.event_names()};
    if (!a.out.empty())
        if (auto w = r.write_to(a.out); !w) {
            tracer::note("nvtrace report: cannot write {}: {}\n", a.out, w.error().message);
            return static_cast<int>(ExitCode::environment);
        }
    if (a.json) {
        std::cout.flush();
        if (auto w = r.write(STDOUT_FILENO); !w) {
            tracer::note("nvtrace report: cannot write to standard output: {}\n", w.error().message);
            return static_cast<int>(ExitCode::environment);
        }
        return 0;
    }
    fmt::print("input: {} ({})\n", a.input, label);
    print_report_body(r.report(), streamed, true, true, a.verbose);
    if (after_summary) after_summary();
    if (!a.out.empty()) fmt::print("report: {}\n", a.out);
    return 0;
}

Result<std::string> read_small_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", p.string(), std::strerror(errno))));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Result<void> emit(const nlohmann::json& j, const ReportArgs& a) {
    if (!a.out.empty()) {
        std::ofstream out(a.out, std::ios::trunc);
        if (!out || !(out << dump(j, 1) << "\n") || !out.flush())
            return fail(Error::environment(fmt::format("cannot write {}: {}", a.out, std::strerror(errno))));
    }
    if (a.json) fmt::print("{}\n", dump(j, -1));
    return {};
}

// A capture directory written before the raw format (no "capture_format" in meta.json): its report.json
// is re-emitted as it is (docs/report.md).
int reemit_report_json(const ReportArgs& a, std::vector<KernelLogMessage> extra_log) {
    auto path = std::filesystem::path(a.input) / "report.json";
    auto text = read_small_file(path);
    if (!text) {
        tracer::note("nvtrace report: {}: not a capture directory (expected report.json and meta.json)\n", a.input);
        return static_cast<int>(ExitCode::usage);
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("schema")) {
        tracer::note("nvtrace report: {}: expected an nvtrace report (JSON with \"schema\")\n", path.string());
        return static_cast<int>(ExitCode::usage);
    }
    if (!extra_log.empty()) {
        Report only_log;
        only_log.kernel_log = std::move(extra_log);
        nlohmann::json added = to_json(only_log);
        if (!j.contains("kernel_log") || !j["kernel_log"].is_array()) j["kernel_log"] = nlohmann::json::array();
        for (auto& m : added["kernel_log"])
            j["kernel_log"].push_back(m);
    }
    if (auto e = emit(j, a); !e) {
        tracer::note("nvtrace report: {}\n", e.error().message);
        return static_cast<int>(e.error().code);
    }
    if (!a.json) {
        std::size_t calls = j.contains("calls") && j["calls"].is_array() ? j["calls"].size() : 0;
        fmt::print("input: {} (capture directory without raw data; report.json re-emitted)\n", a.input);
        fmt::print("calls: {}\n", calls);
        if (j.contains("kernel_log") && j["kernel_log"].is_array())
            fmt::print("kernel log: {} message(s)\n", j["kernel_log"].size());
        const auto& c = j.value("completeness", nlohmann::json::object());
        if (c.value("complete", false)) {
            fmt::print("complete: yes\n");
        } else {
            // The saved report's own reasons, in the one-line form the other routes print.
            std::vector<std::string> reasons;
            if (auto r = c.find("reasons"); r != c.end() && r->is_array())
                for (const auto& x : *r)
                    if (x.is_string()) reasons.push_back(x.get<std::string>());
            if (reasons.empty())
                fmt::print("complete: no\n");
            else
                fmt::print("complete: no: {}\n", fmt::join(reasons, "; "));
        }
    }
    return 0;
}

// A raw capture directory (docs/formats.md): the whole analysis again from the saved pages and formats.
constexpr std::string_view kCaptureDirLabel = "capture directory, re-analysed from its raw pages";

// The re-analysis of a capture directory without holding its events, as `nvtrace run` streams its report
// (CaptureDirReader::stream into a ReportStream). nullopt when it cannot be streamed (function_graph data, an
// event out of time order, no temporary file): the caller reads the directory whole, which gives the same report.
std::optional<int> report_capture_dir_streamed(const ReportArgs& a, CaptureDirReader& reader,
                                               std::vector<KernelLogMessage>& extra_log) {
    auto ioctls = streamed_ioctl_summary(a);
    auto rs = open_streamed(a, reader.side(), *ioctls);
    if (!rs) return std::nullopt;
    ReportStream& r = **rs;
    ReportFold fold(r);  // decoded here, folded on another thread; the comms were given to r by open_streamed
    auto st = reader.stream([&fold](Event& ev) { return fold.add(std::move(ev)); });
    bool folded = fold.finish();
    if (!st) {
        tracer::note("nvtrace report: {}\n", st.error().message);
        return static_cast<int>(st.error().code);
    }
    if (!*st || !folded) return std::nullopt;
    r.side().diagnostics = reader.side().diagnostics;  // complete once the pages are decoded
    if (auto f = r.finish(); !f) {
        tracer::note("nvtrace report: {}\n", f.error().message);
        return static_cast<int>(f.error().code);
    }
    Report& report = r.report();
    for (auto& m : extra_log)
        report.kernel_log.push_back(std::move(m));
    const nlohmann::json& meta = reader.meta();
    report.source = {{"kind", "capture-dir"},
                     {"path", a.input},
                     {"captured", meta.value("report_source", nlohmann::json::object())}};
    report.environment = meta.value("environment", nlohmann::json::object());
    return write_and_print_streamed(r, *ioctls, a, kCaptureDirLabel);
}

int report_capture_dir(const ReportArgs& a, std::vector<KernelLogMessage> extra_log) {
    auto reader = CaptureDirReader::open(a.input);
    if (!reader) {
        tracer::note("nvtrace report: {}\n", reader.error().message);
        return static_cast<int>(reader.error().code);
    }
    {
        // Streamed unless something needs the whole report: --source, or the run's checks to redo.
        nlohmann::json cap = reader->meta().value("report_source", nlohmann::json::object());
        bool checks = cap.is_object() && !cap.contains("cannot_run") &&
                      (cap.contains("expectations") || cap.contains("scenario"));
        if (a.source.empty() && !checks && !reader->has_function_graph()) {
            if (auto rc = report_capture_dir_streamed(a, *reader, extra_log)) return *rc;
            reader = CaptureDirReader::open(a.input);  // the pages are read again, whole
            if (!reader) {
                tracer::note("nvtrace report: {}\n", reader.error().message);
                return static_cast<int>(reader.error().code);
            }
        }
    }
    auto data = reader->read_all();
    if (!data) {
        tracer::note("nvtrace report: {}\n", data.error().message);
        return static_cast<int>(data.error().code);
    }
    const nlohmann::json& meta = data->meta;
    Report report = build_report(data->stream);
    for (auto& m : extra_log)
        report.kernel_log.push_back(std::move(m));
    if (!a.source.empty())
        if (int rc = add_source_links(report, a.source, "report")) return rc;
    nlohmann::json captured = meta.value("report_source", nlohmann::json::object());
    report.source = {{"kind", "capture-dir"}, {"path", a.input}, {"captured", captured}};
    report.environment = meta.value("environment", nlohmann::json::object());
    // The run's checks again: its expectations file (when still readable here) and, for a scenario, the
    // program's own verdict from the recorded exit status.
    if (captured.is_object() && !captured.contains("cannot_run")) {
        if (captured.contains("expectations") && captured["expectations"].is_string()) {
            auto ex = read_expectations_file(captured["expectations"].get<std::string>());
            if (!ex) {
                tracer::note("nvtrace report: the run's expectations are not re-checked: {}\n", ex.error().message);
            } else {
                report.checks = check_report(report, *ex);
            }
        }
        if (captured.contains("scenario")) {
            auto code = meta.value("exit_code", nlohmann::json());
            auto sig = meta.value("signal", nlohmann::json());
            report.checks.insert(report.checks.begin(),
                                 tracer::scenario_program_check(
                                     code.is_number_integer() ? std::optional<int>(code.get<int>()) : std::nullopt,
                                     sig.is_number_integer() ? std::optional<int>(sig.get<int>()) : std::nullopt));
        }
    }
    // The summary counts kernel calls per ioctl as `nvtrace run` did: it needs the run's tracer mode (set
    // after the JSON is written, so the report itself is unchanged).
    return write_and_print(report, a, kCaptureDirLabel, [&](Report& r) {
        if (meta.contains("tracer_mode")) r.source["tracer_mode"] = meta["tracer_mode"];
    });
}

// stdin is read once; a pipe or FIFO too (a socket as well).
bool is_pipe(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

// A saved report (nvtrace.report/1, the report.json `nvtrace run` writes): its summary, and the report again
// with --json/-o (docs/report.md).
bool looks_like_saved_report(const std::string& path) {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return false;
    std::ifstream in(path, std::ios::binary);
    char ch = 0;
    while (in.get(ch) && (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')) {
    }
    return in && ch == '{';
}

int report_saved_json(const ReportArgs& a, std::vector<KernelLogMessage> extra_log,
                      std::optional<Result<Report>> from_stdin = std::nullopt) {
    if (!a.calls_jsonl.empty()) {
        tracer::note("nvtrace report: --calls-jsonl takes a trace file, not a saved report\n");
        return static_cast<int>(ExitCode::usage);
    }
    auto report = from_stdin ? std::move(*from_stdin) : read_report_file(a.input);
    if (!report) {
        tracer::note("nvtrace report: {}\n", report.error().message);
        return static_cast<int>(report.error().code);
    }
    for (auto& m : extra_log)
        report->kernel_log.push_back(std::move(m));
    if (!a.source.empty())
        if (int rc = add_source_links(*report, a.source, "report")) return rc;
    return write_and_print(*report, a, "saved report, nvtrace.report/1");
}

// --calls-jsonl: the calls go to their own file as they end; memory stays bounded for function_graph text
// (stream_report.hpp, docs/performance.md).
int report_calls_jsonl(const ReportArgs& a, std::optional<TraceFormat> forced, std::vector<KernelLogMessage> kmsg,
                       std::vector<Diagnostic> kmsg_diags) {
    std::ofstream calls(a.calls_jsonl, std::ios::trunc | std::ios::binary);
    if (!calls) {
        tracer::note("nvtrace report: cannot write {}: {}\n", a.calls_jsonl, std::strerror(errno));
        return static_cast<int>(ExitCode::environment);
    }
    std::string temp_dir;
    // Text is streamed in file order: never refused part way.
    ReportStream::Options out_opts = streamed_output(a, false, temp_dir);
    auto ioctls = streamed_ioctl_summary(a);
    auto st = report_streaming(a.input, forced, calls, temp_dir, out_opts,
                               [&ioctls](const IoctlRecord& io) { ioctls->add(io, std::nullopt); });
    if (!st) {
        tracer::note("nvtrace report: {}\n", st.error().message);
        return static_cast<int>(st.error().code);
    }
    if (!calls.flush()) {
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
    report.source = {{"kind", "file"},
                     {"path", a.input},
                     {"format", std::string(format_name(st->format))},
                     {"calls_jsonl", a.calls_jsonl},
                     {"calls_count", st->calls}};
    if (!a.kmsg.empty()) report.source["kmsg"] = a.kmsg;
    if (st->records) return write_and_print_streamed(*st->records, *ioctls, a, format_name(st->format));
    return write_and_print(report, a, format_name(st->format));
}

// A trace.dat file (not stdin, not a pipe) whose report can be streamed: what import_file would read it as.
bool is_trace_dat_file(const std::string& path, std::optional<TraceFormat> forced) {
    struct stat st {};
    if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (forced) return *forced == TraceFormat::trace_dat;
    std::ifstream in(path, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    return detect_format(head) == TraceFormat::trace_dat;
}

// A trace.dat reported without holding its events (docs/report.md): stream_trace_dat feeds a ReportStream.
// nullopt when the file cannot be streamed (function-graph events, times going back, buffers whose events
// interleave, no temporary file, unreadable): the caller then reads it whole, which gives the same report
// (and the same error for an unreadable file).
std::optional<int> report_trace_dat_streamed(const ReportArgs& a, std::vector<KernelLogMessage>& kmsg,
                                             const std::vector<Diagnostic>& kmsg_diags) {
    auto ioctls = streamed_ioctl_summary(a);
    auto rs = open_streamed(a, EventStream{}, *ioctls);
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
        bool record(const RawEventDecoder& d, const RawEventDecoder::Fields& f, const tep_record& rec) override {
            return fold.add(d, f, rec);  // decoded on the fold thread
        }
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
    return write_and_print_streamed(r, *ioctls, a, format_name(TraceFormat::trace_dat));
}

int do_report(const ReportArgs& a) {
    std::optional<std::string> stdin_text;  // stdin or a pipe, read once (see below)
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
    // An empty --kmsg file is a kernel that logged nothing (a fresh user's quiet `dmesg > log`): no messages.
    auto blank_file = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return false;  // import_file says why
        for (char c; in.get(c);)
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
        return true;
    };
    if (!a.kmsg.empty() && a.kmsg != "-" && blank_file(a.kmsg)) {
        // nothing to add
    } else if (!a.kmsg.empty()) {
        auto k = import_file(a.kmsg, TraceFormat::kernel_log);
        if (!k) {
            tracer::note("nvtrace report: --kmsg {}\n", k.error().message);
            return static_cast<int>(k.error().code);
        }
        kmsg_messages = std::move(k->kernel_log);
        kmsg_diags = std::move(k->stream.diagnostics);
    }
    std::error_code ec;
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
    if (!a.calls_jsonl.empty() && std::filesystem::is_directory(a.input, ec)) {
        tracer::note("nvtrace report: --calls-jsonl takes a trace file, not a capture directory\n");
        return static_cast<int>(ExitCode::usage);
    }
    if (std::filesystem::is_directory(a.input, ec)) {
        const std::filesystem::path meta = std::filesystem::path(a.input) / "meta.json";
        bool has_meta = std::filesystem::exists(meta, ec);
        if (ec) {
            tracer::note("nvtrace report: {}: cannot open: {}\n", meta.string(), ec.message());
            return static_cast<int>(ExitCode::usage);
        }
        if (!has_meta) {
            bool has_raw = std::filesystem::exists(std::filesystem::path(a.input) / "raw", ec);
            tracer::note("nvtrace report: {}: {}\n", a.input,
                         has_raw ? "no meta.json: an unfinished capture (nvtrace was killed before writing it?); "
                                   "its raw pages cannot be decoded without it"
                                 : "not a capture directory (no meta.json; `nvtrace run` writes one)");
            return static_cast<int>(ExitCode::usage);
        }
        if (std::ifstream mf(meta); nlohmann::json::parse(mf, nullptr, false).is_discarded()) {
            tracer::note("nvtrace report: {}: not valid JSON (damaged or unfinished capture)\n", meta.string());
            return static_cast<int>(ExitCode::usage);
        }
        if (!a.reemit && !is_raw_capture_dir(a.input)) {
            fmt::print(stderr,
                       "nvtrace report: {}/meta.json has no \"capture_format\": a capture directory written before "
                       "the raw format (or not by nvtrace run); --reemit prints its saved report.json\n",
                       a.input);
            return static_cast<int>(ExitCode::usage);
        }
        if (a.reemit) return reemit_report_json(a, std::move(kmsg_messages));
        return report_capture_dir(a, std::move(kmsg_messages));
    }

    if (!forced && looks_like_saved_report(a.input)) return report_saved_json(a, std::move(kmsg_messages));
    // A saved report piped in (`cat runs/X/report.json | nvtrace report -`): stdin can be read only once, so
    // it is peeked here and parsed as JSON when it starts with '{'; anything else goes to the trace readers.
    if (!forced && a.calls_jsonl.empty() && (a.input == "-" || is_pipe(a.input))) {
        auto text = read_input_whole(a.input);
        if (!text) {
            tracer::note("nvtrace report: {}\n", text.error().message);
            return static_cast<int>(text.error().code);
        }
        std::string name = a.input == "-" ? "<stdin>" : a.input;
        if (auto saved = saved_report_from_text(*text, name))
            return report_saved_json(a, std::move(kmsg_messages), std::move(*saved));
        stdin_text = std::move(*text);
    }
    if (!a.calls_jsonl.empty()) return report_calls_jsonl(a, forced, std::move(kmsg_messages), std::move(kmsg_diags));
    // A trace.dat is reported as it is read where it can be; `kmsg_messages` is taken only when it was.
    if (!stdin_text && a.source.empty() && is_trace_dat_file(a.input, forced))
        if (auto rc = report_trace_dat_streamed(a, kmsg_messages, kmsg_diags)) return *rc;

    auto in = stdin_text ? import_text(*stdin_text, a.input == "-" ? "<stdin>" : a.input, forced)
                         : import_file(a.input, forced);
    if (!in) {
        tracer::note("nvtrace report: {}\n", in.error().message);
        return static_cast<int>(in.error().code);
    }
    for (auto& d : kmsg_diags)
        in->stream.diagnostics.push_back(std::move(d));
    Report report = build_report(in->stream);
    for (auto& m : in->kernel_log)
        report.kernel_log.push_back(std::move(m));
    for (auto& m : kmsg_messages)
        report.kernel_log.push_back(std::move(m));
    report.source = {{"kind", "file"}, {"path", a.input}, {"format", std::string(format_name(in->format))}};
    if (!a.kmsg.empty()) report.source["kmsg"] = a.kmsg;
    if (!a.source.empty())
        if (int rc = add_source_links(report, a.source, "report")) return rc;

    // Streamed: a report of millions of calls never exists as one JSON DOM.
    return write_and_print(report, a, format_name(in->format));
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
        "pages, docs/formats.md), or - for standard input (a pipe is read whole). The format is detected from\n"
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
