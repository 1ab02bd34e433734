#include "report_capture.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "capture.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/stream_report.hpp"
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
    const ReportSource& captured = report.source;
    if (captured.scenario && meta.exit_code == tracer::kScenarioCannotRun) {
        out.cannot_run = cannot_run_reason(report, meta.command.empty() ? std::string() : meta.command[0]);
        report.source.cannot_run = *out.cannot_run;
        return;
    }
    if (captured.expectations) {
        auto ex = read_expectations_file(*captured.expectations);
        if (!ex)
            tracer::note("nvtrace: the run's expectations are not checked: {}\n", ex.error().message);
        else
            report.checks = check_report(report, *ex);
    }
    if (captured.scenario)
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

}  // namespace

CaptureReport report_and_write(const Input& in, ReportSinks sinks, CaptureReportOptions o) {
    CaptureReport out;
    auto failed = [&](int code) {
        out.exit_code = code;
        return out;
    };
    std::optional<std::ofstream> calls;
    if (!o.calls_jsonl.empty()) calls.emplace(o.calls_jsonl, std::ios::trunc | std::ios::binary);
    if (calls && !*calls) {
        tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, o.calls_jsonl, std::strerror(errno));
        return failed(static_cast<int>(ExitCode::environment));
    }
    ReportRequest req;
    // Nothing reaches standard output before the end: an input found unusable, or page files that do not hold what
    // meta.json says, fail after events were read (--json alone goes through a temporary file too).
    req.out = streamed_output(sinks, true, req.temp_dir);
    if (!o.temp_dir.empty()) req.temp_dir = o.temp_dir;
    req.calls_jsonl = calls ? &*calls : nullptr;
    req.diagnostics = std::move(o.extra_diagnostics);
    SummaryTap tap(sinks.verbose);  // the summary of a report written as it is built
    if (sinks.summary && !sinks.json) {
        req.on_ioctl = [&tap](const IoctlRecord& io) { tap.ioctl(io); };
        req.on_call = [&tap](const Call& c) { tap.call(c); };
    }
    // Held whole only when something reads it whole: --source (links for every call), the run's checks to redo
    // (docs/architecture.md "The route").
    req.hold_if = [&o](const CaptureMeta* meta) {
        bool checks = meta && (meta->report_source.expectations || meta->report_source.scenario);
        return !o.source_dir.empty() || checks;
    };
    auto routed = report_input(in, std::move(req));
    if (!routed) {
        tracer::note("nvtrace {}: {}\n", sinks.command, routed.error().message);
        return failed(static_cast<int>(routed.error().code));
    }
    if (calls && !calls->flush()) {
        tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, o.calls_jsonl, std::strerror(errno));
        return failed(static_cast<int>(ExitCode::environment));
    }
    ReportStream& rs = *routed->stream;
    Report& report = rs.report();
    for (auto& m : o.extra_log)
        report.kernel_log.push_back(std::move(m));
    if (calls) {
        report.source.calls_jsonl = o.calls_jsonl;
        report.source.calls_count = rs.calls();
    }
    if (!o.kmsg.empty()) report.source.kmsg = o.kmsg;
    if (!o.source_dir.empty())
        if (int rc = add_source_links(report, o.source_dir, sinks.command)) return failed(rc);
    if (routed->meta) {
        redo_checks(report, *routed->meta, out);
        out.checks = report.checks;
        sinks = with_capture_summary(sinks, *routed->meta, report);
    }
    out.exit_code = rs.held() ? write_and_print(report, sinks) : write_and_print_streamed(rs, tap, sinks);
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
        std::ostringstream only_log_json;
        write_json(only_log, only_log_json);
        nlohmann::json added = nlohmann::json::parse(only_log_json.str());
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
