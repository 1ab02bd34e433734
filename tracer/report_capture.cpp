#include "report_capture.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capture.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/report_fold.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

// "program: CMD (pid P, exit N)" and "tracer: MODE", from meta.json (docs/run.md "Summary").
void print_program(const CaptureMeta& meta) {
    std::string status = meta.exit_code ? fmt::format("exit {}", *meta.exit_code)
                         : meta.signal  ? fmt::format("killed by signal {} ({})", *meta.signal, strsignal(*meta.signal))
                                        : "unknown";
    if (meta.timed_out) status += ", timed out";
    if (!meta.descendants_ended.empty())
        status += fmt::format(", {} process(es) it left running ended", meta.descendants_ended.size());
    fmt::print("program: {} (pid {}, {})\n", fmt::join(meta.command, " "),
               meta.pid ? std::to_string(*meta.pid) : std::string("unknown"), status);
    fmt::print("tracer: {}\n", meta.absent_keys.count("tracer_mode") ? "unknown" : meta.tracer_mode);
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

// The run's checks again: a scenario that said it cannot run here is not checked (report.source.cannot_run);
// else its expectations file (when still readable) and, for a scenario, the program's own verdict.
void redo_checks(Report& report, const CaptureMeta& meta, CaptureReport& out) {
    const nlohmann::json& captured = report.source;
    if (!captured.is_object()) return;
    if (captured.contains("scenario") && meta.exit_code == tracer::kScenarioCannotRun) {
        out.cannot_run = cannot_run_reason(report, meta.command.empty() ? std::string() : meta.command[0]);
        report.source["cannot_run"] = *out.cannot_run;
        return;
    }
    if (captured.contains("expectations") && captured["expectations"].is_string()) {
        auto ex = read_expectations_file(captured["expectations"].get<std::string>());
        if (!ex)
            tracer::note("nvtrace: the run's expectations are not checked: {}\n", ex.error().message);
        else
            report.checks = check_report(report, *ex);
    }
    if (captured.contains("scenario"))
        report.checks.insert(report.checks.begin(), tracer::scenario_program_check(meta.exit_code, meta.signal));
}

// The summary around the body: the program lines first, the checks and the caller's tail after.
ReportSinks with_capture_summary(ReportSinks s, const CaptureMeta& meta, const Report& report) {
    auto head = s.head;
    s.head = [head, &meta] {
        if (head) head();
        print_program(meta);
    };
    auto tail = s.tail;
    s.tail = [tail, &report] {
        if (!report.checks.empty()) tracer::print_checks(report.checks, false);
        if (tail) tail();
    };
    return s;
}

// The re-analysis without holding the events (CaptureDirReader::stream into a ReportStream, whose sorter takes
// every event). nullopt, with nothing read, when there is no place for the temporary files: the caller reads the
// directory whole, which gives the same report.
std::optional<CaptureReport> streamed(const std::string& dir, CaptureDirReader& reader, const ReportSinks& sinks,
                                      std::vector<KernelLogMessage>& extra_log) {
    CaptureReport out;
    auto ioctls = streamed_ioctl_summary(sinks);
    auto rs = open_streamed(sinks, reader.side(), *ioctls);
    if (!rs) return std::nullopt;
    ReportStream& r = **rs;
    ReportFold fold(r);  // decoded here, folded on another thread; the comms were given to r by open_streamed
    auto st = reader.stream([&fold](Event& ev) { return fold.add(std::move(ev)); });
    bool folded = fold.finish();
    if (!st) {
        tracer::note("nvtrace {}: {}: {}\n", sinks.command, dir, st.error().message);
        out.exit_code = static_cast<int>(st.error().code);
        return out;
    }
    if (!*st || !folded) {  // a function-graph event in a capture without kallsyms: a damaged directory
        tracer::note("nvtrace {}: {}: function-graph events in a capture without a kallsyms file\n", sinks.command,
                     dir);
        out.exit_code = static_cast<int>(ExitCode::usage);
        return out;
    }
    r.side().diagnostics = reader.side().diagnostics;  // complete once the pages are decoded
    if (auto f = r.finish(); !f) {
        tracer::note("nvtrace {}: {}\n", sinks.command, f.error().message);
        out.exit_code = static_cast<int>(f.error().code);
        return out;
    }
    Report& report = r.report();
    for (auto& m : extra_log)
        report.kernel_log.push_back(std::move(m));
    const CaptureMeta& meta = reader.meta();
    report.source = meta.report_source;
    report.environment = meta.environment;
    out.exit_code = write_and_print_streamed(r, *ioctls, with_capture_summary(sinks, meta, report));
    return out;
}

}  // namespace

CaptureReport report_capture_dir(const std::string& dir, ReportSinks sinks, CaptureReportOptions o) {
    CaptureReport out;
    auto reader = CaptureDirReader::open(dir);
    if (!reader) {
        tracer::note("nvtrace {}: {}\n", sinks.command, reader.error().message);
        out.exit_code = static_cast<int>(reader.error().code);
        return out;
    }
    {
        // Streamed unless something needs the whole report: --source, or the run's checks to redo.
        const nlohmann::json& cap = reader->meta().report_source;
        bool checks = cap.contains("expectations") || cap.contains("scenario");
        if (o.source_dir.empty() && !checks && !reader->has_function_graph()) {
            if (auto rc = streamed(dir, *reader, sinks, o.extra_log)) return *rc;
        }
    }
    auto data = reader->read_all();
    if (!data) {
        tracer::note("nvtrace {}: {}: {}\n", sinks.command, dir, data.error().message);
        out.exit_code = static_cast<int>(data.error().code);
        return out;
    }
    const CaptureMeta& meta = data->meta;
    Report report = build_report(data->stream);
    for (auto& m : o.extra_log)
        report.kernel_log.push_back(std::move(m));
    if (!o.source_dir.empty())
        if (int rc = add_source_links(report, o.source_dir, sinks.command)) {
            out.exit_code = rc;
            return out;
        }
    report.source = meta.report_source;
    report.environment = meta.environment;
    redo_checks(report, meta, out);
    out.checks = report.checks;
    out.exit_code = write_and_print(report, with_capture_summary(sinks, meta, report));
    return out;
}

int reemit_report_json(const std::string& dir, const ReportSinks& sinks, std::vector<KernelLogMessage> extra_log) {
    auto path = std::filesystem::path(dir) / "report.json";
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
        tracer::note("nvtrace {}: {}: not a capture directory (expected report.json and meta.json)\n", sinks.command,
                     dir);
        return static_cast<int>(ExitCode::usage);
    }
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("schema")) {
        tracer::note("nvtrace {}: {}: expected an nvtrace report (JSON with \"schema\")\n", sinks.command,
                     path.string());
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
    if (!sinks.out.empty()) {
        std::ofstream f(sinks.out, std::ios::trunc);
        if (!f || !(f << dump(j, 1) << "\n") || !f.flush()) {
            tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, sinks.out, std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (sinks.json) {
        fmt::print("{}\n", dump(j, -1));
        return 0;
    }
    std::size_t calls = j.contains("calls") && j["calls"].is_array() ? j["calls"].size() : 0;
    fmt::print("input: {} (capture directory without raw data; report.json re-emitted)\n", dir);
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
    return 0;
}

}  // namespace nvtrace::cli
