// report.json's "source" and "environment" as types (nvtrace/report_source.hpp, analyze/report_head.cpp): what is
// read, what is kept without being interpreted, and the views that show them.
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../analyze/json_values.hpp"
#include "nvtrace/diff.hpp"
#include "nvtrace/export.hpp"
#include "nvtrace/report_io.hpp"
#include "report_head.hpp"

using namespace nvtrace;
using json = nlohmann::json;

namespace {

// A live report's source as tracer/capture.cpp writes it, with keys of other producers: one nvtrace does not know
// (a newer version's "gpu_uuid"), known keys of another type ("pid" as a string, "kernel" as a number) and a
// module with a key of its own.
const json kSource = json::parse(R"j({"kind": "live", "command": ["cuda_malloc", "1MiB"], "pid": null,
    "tracer_mode": "function_graph (instance)", "modules": ["nvidia"], "filters": [], "calls_count": 3,
    "gpu_uuid": "GPU-5f1b", "scenario": 7})j");
const json kEnvironment = json::parse(R"j({"kernel": 6, "machine": "x86_64", "nvidia_driver_banner": null,
    "modules": {"nvidia": {"loaded": true, "version": "580.65.06", "refcnt": 12}},
    "slurm": {"node": "n3", "job_id": "17"}, "not_traceable": {"nvidia_ioctl": "inlined"}, "gpus": [0, 1]})j");

}  // namespace

TEST(ReportHead, KeysNvtraceDoesNotInterpretAreWrittenBackAsRead) {
    ReportSource s = report_source_from_json(kSource);
    EXPECT_EQ(to_json(s), kSource);
    ASSERT_TRUE(s.command && s.pid && s.calls_count);
    EXPECT_EQ(std::get<std::vector<std::string>>(*s.command), (std::vector<std::string>{"cuda_malloc", "1MiB"}));
    EXPECT_FALSE(*s.pid);  // null: unknown, not 0
    EXPECT_EQ(*s.calls_count, 3u);
    EXPECT_FALSE(s.scenario);  // a number is not a scenario's name: kept, not read
    EXPECT_EQ(s.other, (UninterpretedKeys{{"gpu_uuid", "\"GPU-5f1b\""}, {"scenario", "7"}}));

    ReportEnvironment e = report_environment_from_json(kEnvironment);
    EXPECT_EQ(to_json(e), kEnvironment);
    EXPECT_FALSE(e.kernel);
    ASSERT_TRUE(e.nvidia_driver_banner);
    EXPECT_FALSE(*e.nvidia_driver_banner);
    ASSERT_TRUE(e.modules && e.modules->count("nvidia"));
    EXPECT_EQ(e.modules->at("nvidia").version, "580.65.06");
    EXPECT_EQ(e.modules->at("nvidia").other, (UninterpretedKeys{{"refcnt", "12"}}));
    ASSERT_TRUE(e.slurm);
    EXPECT_EQ(e.slurm->at("node"), "n3");
    EXPECT_EQ(e.other.count("gpus"), 1u);

    // Not an object: nothing set, written as {}.
    EXPECT_EQ(to_json(report_source_from_json(json::array())), json::object());
    // A key left unset is left out, not written as null.
    ReportSource file;
    file.kind = "file", file.path = "-", file.format = "fgraph-text";
    EXPECT_EQ(to_json(file).dump(), R"({"format":"fgraph-text","kind":"file","path":"-"})");
}

TEST(ReportHead, SavedReportKeepsItsSourceAndEnvironmentThroughBothReaders) {
    json j = to_json(Report{});
    j["source"] = kSource;
    j["environment"] = kEnvironment;
    auto dom = report_from_json(j);
    ASSERT_TRUE(dom) << dom.error().message;
    EXPECT_EQ(to_json(*dom)["source"], kSource);
    EXPECT_EQ(to_json(*dom)["environment"], kEnvironment);
    auto text = saved_report_from_text(j.dump(), "<test>");
    ASSERT_TRUE(text && *text) << (text && !*text ? (*text).error().message : "not a report");
    EXPECT_EQ(to_json(**text)["source"], kSource);
}

// A live report's command is argv (an array): the HTML page's title and the diff's input line show it joined
// (they read only a string command before, which nvtrace run never writes); another tool's one-string command too.
TEST(ReportHead, LiveReportsCommandIsShownByTheHtmlPageAndTheDiff) {
    Report r;
    r.source = report_source_from_json(kSource);
    std::ostringstream html;
    write_html_report(r, html);
    EXPECT_NE(html.str().find("<title>nvtrace report: cuda_malloc 1MiB</title>"), std::string::npos);
    EXPECT_EQ(command_text(r.source), "cuda_malloc 1MiB");
    r.source.command = std::string("./copylat -w 1");
    EXPECT_EQ(command_text(r.source), "./copylat -w 1");
    EXPECT_EQ(to_json(r.source)["command"], "./copylat -w 1");

    DiffResult d = diff_reports(r, r, DiffOptions{});
    EXPECT_NE(format_diff_text(d).find("command: ./copylat -w 1"), std::string::npos) << format_diff_text(d);
}
