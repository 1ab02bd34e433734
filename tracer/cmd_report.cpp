// nvtrace report INPUT [--kmsg FILE] [--format F] [--json | -o OUT]   (docs/report.md)
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

struct ReportArgs {
    std::string input;
    std::string kmsg;
    std::string format;
    std::string out;
    bool json = false;
};

std::string dump(const nlohmann::json& j, int indent) {
    // Readers replace invalid UTF-8 already; `replace` keeps a stray byte from turning into an exception.
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_summary(const Report& r, std::string_view input, std::string_view format) {
    fmt::print("input: {} ({})\n", input, format);
    print_report_body(r, true, true);
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

// A capture directory from `nvtrace run`: its report.json is re-emitted (re-analysis of the raw data
// arrives with the raw capture format).
int report_capture_dir(const ReportArgs& a, std::vector<KernelLogMessage> extra_log) {
    auto path = std::filesystem::path(a.input) / "report.json";
    auto text = read_small_file(path);
    if (!text) {
        fmt::print(stderr, "nvtrace report: {}: not a capture directory (expected report.json and meta.json)\n",
                   a.input);
        return static_cast<int>(ExitCode::usage);
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("schema")) {
        fmt::print(stderr, "nvtrace report: {}: expected an nvtrace report (JSON with \"schema\")\n", path.string());
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
        fmt::print(stderr, "nvtrace report: {}\n", e.error().message);
        return static_cast<int>(e.error().code);
    }
    if (!a.json) {
        std::size_t calls = j.contains("calls") && j["calls"].is_array() ? j["calls"].size() : 0;
        fmt::print("input: {} (capture directory; report.json re-emitted)\n", a.input);
        fmt::print("calls: {}\n", calls);
        if (j.contains("kernel_log") && j["kernel_log"].is_array())
            fmt::print("kernel log: {} message(s)\n", j["kernel_log"].size());
        const auto& c = j.value("completeness", nlohmann::json::object());
        if (c.value("complete", false))
            fmt::print("complete: yes\n");
        else
            fmt::print("complete: NO\n");
    }
    return 0;
}

int do_report(const ReportArgs& a) {
    std::optional<TraceFormat> forced;
    if (!a.format.empty()) {
        forced = parse_format_name(a.format);
        if (!forced) {
            fmt::print(stderr,
                       "nvtrace report: unknown --format '{}' (expected fgraph-text, function-text, "
                       "trace-cmd-report, trace-dat or kernel-log)\n",
                       a.format);
            return static_cast<int>(ExitCode::usage);
        }
    }
    std::vector<KernelLogMessage> kmsg_messages;
    std::vector<Diagnostic> kmsg_diags;
    if (!a.kmsg.empty()) {
        auto k = import_file(a.kmsg, TraceFormat::kernel_log);
        if (!k) {
            fmt::print(stderr, "nvtrace report: --kmsg {}\n", k.error().message);
            return static_cast<int>(k.error().code);
        }
        kmsg_messages = std::move(k->kernel_log);
        kmsg_diags = std::move(k->stream.diagnostics);
    }
    std::error_code ec;
    if (std::filesystem::is_directory(a.input, ec)) return report_capture_dir(a, std::move(kmsg_messages));

    auto in = import_file(a.input, forced);
    if (!in) {
        fmt::print(stderr, "nvtrace report: {}\n", in.error().message);
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

    // Streamed: a report of millions of calls never exists as one JSON DOM.
    if (!a.out.empty()) {
        std::ofstream out(a.out, std::ios::trunc);
        if (out) write_json(report, out);
        if (!out || !out.flush()) {
            fmt::print(stderr, "nvtrace report: cannot write {}: {}\n", a.out, std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (a.json) {
        write_json(report, std::cout);
        std::cout.flush();
    }
    if (!a.json) {
        print_summary(report, a.input, format_name(in->format));
        if (!a.out.empty()) fmt::print("report: {}\n", a.out);
    }
    return 0;
}

void add_report(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ReportArgs>();
    CLI::App* cmd = app.add_subcommand("report", "Build the report offline from a trace file or a capture directory");
    cmd->footer(
        "INPUT: function_graph text (trace, trace_pipe, perf ftrace), function tracer text, trace-cmd report text,\n"
        "a trace.dat, a kernel log, or a capture directory written by `nvtrace run`. The format is detected from\n"
        "the content; --format forces it. Exit codes: 0 ok, 2 unreadable or unusable input. See docs/report.md.");
    cmd->add_option("input", args->input, "Trace file or capture directory")->required();
    cmd->add_option("--kmsg", args->kmsg, "Kernel log (dmesg, journalctl -k, syslog, /dev/kmsg) to add to kernel_log");
    cmd->add_option("--format", args->format,
                    "fgraph-text, function-text, trace-cmd-report, trace-dat or kernel-log (default: detect)");
    auto* json = cmd->add_flag("--json", args->json, "Print the report JSON on stdout instead of the summary");
    cmd->add_option("-o,--out", args->out, "Write the report JSON to this file (the summary still goes to stdout)")
        ->excludes(json);
    cmd->callback([args, &exit_code] { exit_code = do_report(*args); });
}

}  // namespace

NVTRACE_COMMAND(20, add_report);

}  // namespace nvtrace::cli
