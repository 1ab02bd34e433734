#include "report_sinks.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "stderr_note.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

std::string dump(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

int cannot_write(const ReportSinks& s, const std::string& what, const std::string& why) {
    std::error_code ec;
    if (s.remove_cut_out && what == s.out) std::filesystem::remove(s.out, ec);
    tracer::note("nvtrace {}: cannot write {}: {}{}\n", s.command, what, why, what == s.out ? s.write_hint : "");
    return static_cast<int>(ExitCode::environment);
}

}  // namespace

ReportStream::Options streamed_output(const ReportSinks& s, bool may_refuse, std::string& temp_dir) {
    ReportStream::Options o;
    std::error_code ec;
    temp_dir = std::filesystem::temp_directory_path(ec).string();
    if (!s.out.empty()) {
        std::filesystem::path parent = std::filesystem::path(s.out).parent_path();
        temp_dir = parent.empty() ? "." : parent.string();
    } else if (s.json && !may_refuse) {
        std::cout.flush();
        o.json = ReportStream::Json::direct;
        o.direct_fd = STDOUT_FILENO;
    } else if (!s.json) {
        o.json = ReportStream::Json::none;
    }
    return o;
}

int write_and_print(Report& report, const ReportSinks& s) {
    if (!s.out.empty()) {
        std::ofstream out(s.out, std::ios::trunc);
        if (out) write_json(report, out);
        if (!out || !out.flush()) {
            return cannot_write(s, s.out, std::strerror(errno));
        }
    }
    if (s.after_files) s.after_files();
    if (s.json) {
        write_json(report, std::cout);
        if (!std::cout.flush()) return cannot_write(s, "the report to standard output", std::strerror(errno));
        return 0;
    }
    if (!s.summary) return 0;
    if (s.head) s.head();
    print_report_body(report, true, true, s.verbose);
    if (s.tail) s.tail();
    if (!s.out.empty()) fmt::print("report: {}\n", s.out);
    return 0;
}

int write_and_print_streamed(ReportStream& r, SummaryTap& tap, const ReportSinks& s) {
    if (!s.out.empty())
        if (auto w = r.write_to(s.out); !w) return cannot_write(s, s.out, w.error().message);
    if (s.after_files) s.after_files();
    if (s.json) {
        std::cout.flush();
        if (auto w = r.write(STDOUT_FILENO); !w)
            return cannot_write(s, "the report to standard output", w.error().message);
        return 0;
    }
    if (!s.summary) return 0;
    if (s.head) s.head();
    print_report_body(r.report(), tap.records(r), true, true, s.verbose);
    if (s.tail) s.tail();
    if (!s.out.empty()) fmt::print("report: {}\n", s.out);
    return 0;
}

}  // namespace nvtrace::cli
