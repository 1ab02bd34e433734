// report.json -> Report (include/nvtrace/report_io.hpp): exact round trips and errors that name the field.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "nvtrace/report_io.hpp"

using namespace nvtrace;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> report_files() {
    std::vector<std::string> out;
    for (const char* dir : {"/reports", "/golden"})
        for (const auto& e : fs::directory_iterator(std::string(NVTRACE_TEST_DATA) + dir))
            if (e.path().extension() == ".json") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

nlohmann::json parse_file(const std::string& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}

fs::path temp_dir(const std::string& name) {
    fs::path d = fs::temp_directory_path() / ("nvtrace-report-io-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

TEST(ReportIo, EveryFixtureAndGoldenRoundTripsExactly) {
    auto files = report_files();
    ASSERT_GE(files.size(), 15u);
    for (const auto& f : files) {
        SCOPED_TRACE(f);
        nlohmann::json j = parse_file(f);
        auto streamed = read_report_file(f);
        ASSERT_TRUE(streamed) << streamed.error().message;
        EXPECT_EQ(to_json(*streamed), j);
        auto dom = report_from_json(j);
        ASSERT_TRUE(dom) << dom.error().message;
        EXPECT_EQ(to_json(*dom), j);
    }
}

TEST(ReportIo, ErrorsNameTheField) {
    nlohmann::json j = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    j["calls"][3]["duration_ns"] = "12 us";
    auto r = report_from_json(j);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("calls[3].duration_ns"), std::string::npos) << r.error().message;

    fs::path d = temp_dir("errors");
    std::ofstream(d / "bad.json") << j.dump();
    auto s = read_report_file((d / "bad.json").string());
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("bad.json: calls[3].duration_ns"), std::string::npos) << s.error().message;

    j = parse_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json");
    j["schema"] = "nvtrace.report/99";
    auto wrong = report_from_json(j);
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("schema"), std::string::npos);

    std::ofstream(d / "trunc.json") << "{\"schema\":\"nvtrace.report/1\",\"calls\":[{\"id\":1";
    auto t = read_report_file((d / "trunc.json").string());
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find("not valid JSON"), std::string::npos);
    fs::remove_all(d);
}

TEST(ReportIo, LoadsCaptureDirectoriesAndTraceFiles) {
    fs::path d = temp_dir("capture");
    fs::copy_file(std::string(NVTRACE_TEST_DATA) + "/reports/baseline.json", d / "report.json");
    auto dir = load_report_input(d.string());
    ASSERT_TRUE(dir) << dir.error().message;
    EXPECT_EQ(dir->calls.size(), 24u);

    auto trace = load_report_input(std::string(NVTRACE_TEST_DATA) + "/cases/fgraph-irq-nested-module-suffix.txt");
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_FALSE(trace->calls.empty());
    EXPECT_EQ(trace->source["kind"], "file");

    fs::create_directories(d / "empty");
    auto empty = load_report_input((d / "empty").string());
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("not a capture directory"), std::string::npos);
    EXPECT_FALSE(load_report_input((d / "missing.json").string()));
    fs::remove_all(d);
}
