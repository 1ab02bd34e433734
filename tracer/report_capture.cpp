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
void print_program(const nlohmann::json& meta) {
    auto code = meta.value("exit_code", nlohmann::json());
    auto sig = meta.value("signal", nlohmann::json());
    std::string status = code.is_number_integer() ? fmt::format("exit {}", code.get<int>())
                         : sig.is_number_integer()
                             ? fmt::format("killed by signal {} ({})", sig.get<int>(), strsignal(sig.get<int>()))
                             : "unknown";
    if (meta.value("timed_out", false)) status += ", timed out";
    if (auto d = meta.find("descendants_ended"); d != meta.end() && d->is_array() && !d->empty())
        status += fmt::format(", {} process(es) it left running ended", d->size());
    std::vector<std::string> command;
    if (auto c = meta.find("command"); c != meta.end() && c->is_array())
        for (const auto& x : *c)
            if (x.is_string()) command.push_back(x.get<std::string>());
    auto pid = meta.value("pid", nlohmann::json());
    fmt::print("program: {} (pid {}, {})\n", fmt::join(command, " "),
               pid.is_number_integer() ? std::to_string(pid.get<int>()) : std::string("unknown"), status);
    fmt::print("tracer: {}\n", meta.value("tracer_mode", std::string("unknown")));
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
void redo_checks(Report& report, const nlohmann::json& meta, CaptureReport& out) {
    const nlohmann::json& captured = report.source;
    if (!captured.is_object()) return;
    auto code = meta.value("exit_code", nlohmann::json());
    auto sig = meta.value("signal", nlohmann::json());
    std::optional<int> exit_code = code.is_number_integer() ? std::optional<int>(code.get<int>()) : std::nullopt;
    std::optional<int> signal = sig.is_number_integer() ? std::optional<int>(sig.get<int>()) : std::nullopt;
    if (captured.contains("scenario") && exit_code == tracer::kScenarioCannotRun) {
        std::string program;
        if (auto c = meta.find("command"); c != meta.end() && c->is_array() && !c->empty() && (*c)[0].is_string())
            program = (*c)[0].get<std::string>();
        out.cannot_run = cannot_run_reason(report, program);
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
        report.checks.insert(report.checks.begin(), tracer::scenario_program_check(exit_code, signal));
}

// The summary around the body: the program lines first, the checks and the caller's tail after.
ReportSinks with_capture_summary(ReportSinks s, const nlohmann::json& meta, const Report& report) {
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

// The re-analysis without holding the events (CaptureDirReader::stream into a ReportStream). nullopt when it
// cannot be streamed (an event out of time order, no temporary file): the caller reads the directory whole,
// which gives the same report.
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
    if (!*st || !folded) return std::nullopt;
    r.side().diagnostics = reader.side().diagnostics;  // complete once the pages are decoded
    if (auto f = r.finish(); !f) {
        tracer::note("nvtrace {}: {}\n", sinks.command, f.error().message);
        out.exit_code = static_cast<int>(f.error().code);
        return out;
    }
    Report& report = r.report();
    for (auto& m : extra_log)
        report.kernel_log.push_back(std::move(m));
    const nlohmann::json& meta = reader.meta();
    report.source = meta.value("report_source", nlohmann::json::object());
    report.environment = meta.value("environment", nlohmann::json::object());
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
        nlohmann::json cap = reader->meta().value("report_source", nlohmann::json::object());
        bool checks = cap.is_object() && (cap.contains("expectations") || cap.contains("scenario"));
        if (o.source_dir.empty() && !checks && !reader->has_function_graph()) {
            if (auto rc = streamed(dir, *reader, sinks, o.extra_log)) return *rc;
            reader = CaptureDirReader::open(dir);  // the pages are read again, whole
            if (!reader) {
                tracer::note("nvtrace {}: {}\n", sinks.command, reader.error().message);
                out.exit_code = static_cast<int>(reader.error().code);
                return out;
            }
        }
    }
    auto data = reader->read_all();
    if (!data) {
        tracer::note("nvtrace {}: {}: {}\n", sinks.command, dir, data.error().message);
        out.exit_code = static_cast<int>(data.error().code);
        return out;
    }
    const nlohmann::json& meta = data->meta;
    Report report = build_report(data->stream);
    for (auto& m : o.extra_log)
        report.kernel_log.push_back(std::move(m));
    if (!o.source_dir.empty())
        if (int rc = add_source_links(report, o.source_dir, sinks.command)) {
            out.exit_code = rc;
            return out;
        }
    report.source = meta.value("report_source", nlohmann::json::object());
    report.environment = meta.value("environment", nlohmann::json::object());
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
