// The summary of a report written as it is built (SummaryTap, tracer/summary.hpp) against the summary of the same
// report held whole (print_report_body of the Report): the same text on every test trace and capture directory,
// call lines, root paths, ioctl lines with their "(kernel: ...)" costs and the calls kernel-log lines name
// included. `nvtrace report` prints the first for every input since the summary stopped holding the report.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nvtrace/input.hpp"
#include "nvtrace/stream_report.hpp"
#include "summary.hpp"

using namespace nvtrace;
using namespace nvtrace::cli;
namespace fs = std::filesystem;

namespace {

const std::string kData = NVTRACE_TEST_DATA;

std::string held_summary(const Input& in, bool verbose) {
    ReportRequest req;
    req.out.hold = true;
    auto r = report_input(in, std::move(req));
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return {};
    testing::internal::CaptureStdout();
    print_report_body(r->stream->report(), true, true, verbose);
    return testing::internal::GetCapturedStdout();
}

std::string streamed_summary(const Input& in, bool verbose) {
    SummaryTap tap(verbose);
    ReportRequest req;
    req.out.json = ReportJson::none;
    req.temp_dir = fs::temp_directory_path().string();
    req.on_ioctl = [&tap](const IoctlRecord& io) { tap.ioctl(io); };
    req.on_call = [&tap](const Call& c) { tap.call(c); };
    auto r = report_input(in, std::move(req));
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return {};
    EXPECT_FALSE(r->stream->held());
    testing::internal::CaptureStdout();
    print_report_body(r->stream->report(), tap.records(*r->stream), true, true, verbose);
    return testing::internal::GetCapturedStdout();
}

std::vector<std::string> inputs() {
    std::vector<std::string> out;
    for (const char* dir : {"/cases", "/capture_dir", "/api", "/summary"})
        for (const auto& e : fs::directory_iterator(kData + dir))
            if (e.is_directory() || e.path().extension() != ".md") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(SummaryTap, StreamedSummaryIsTheHeldReportsSummaryOnEveryTestInput) {
    std::size_t compared = 0, with_calls = 0, with_costs = 0;
    for (const std::string& path : inputs()) {
        SCOPED_TRACE(path);
        auto in = open_input(path);
        if (!in || in->kind == InputKind::saved_report || in->kind == InputKind::capture_dir_saved) continue;
        auto probe = import_input(*in);
        if (in->kind != InputKind::capture_dir && !probe) continue;  // inputs that are errors by design
        for (bool verbose : {false, true}) {
            const std::string want = held_summary(*in, verbose);
            EXPECT_EQ(streamed_summary(*in, verbose), want);
            if (!verbose) {
                ++compared;
                with_calls += want.rfind("calls: 0 ", 0) != 0;
                with_costs += want.find("(kernel: ") != std::string::npos;
            }
        }
    }
    EXPECT_GE(compared, 20u);
    EXPECT_GE(with_calls, 10u);
    EXPECT_GE(with_costs, 1u);
}
