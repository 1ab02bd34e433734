// Bounds of the streamed function_graph reader (report_streaming): what it holds back for a context-switch
// banner that may still come, and the cap on distinct call paths. Line shapes: the kernel's default
// function_graph output without funcgraph-proc (" CPU)  DURATION |  body", print_graph_prologue and
// print_graph_duration in kernel/trace/trace_functions_graph.c); the banner is verif_pid's.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "nvtrace/report.hpp"
#include "nvtrace/stream_report.hpp"

using namespace nvtrace;

namespace {

// The one route (report_input) of a file, its calls to `lines` as JSON Lines when given.
Result<InputReport> stream_file(const std::string& path, std::ostream* lines) {
    ReportRequest req;
    req.temp_dir = std::filesystem::temp_directory_path().string();
    req.calls_jsonl = lines;
    return report_input(path, std::nullopt, std::move(req));
}

std::string temp_file(const std::string& name, const std::string& text) {
    auto p = std::filesystem::temp_directory_path() / ("nvtrace-limits-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
}

const Diagnostic* diag(const Report& r, const std::string& name) {
    for (const auto& d : r.completeness.diagnostics)
        if (d.name == name) return &d;
    return nullptr;
}

// `n` leaf calls on CPU 0 (a CPU whose task never switched), then a banner and one call of the next task.
std::string cpu_without_banner(int n) {
    std::string text = "# tracer: function_graph\n#\n";
    for (int i = 0; i < n; ++i)
        text += " 0)   0.500 us    |  leaf_call();\n";
    text +=
        " ------------------------------------------\n 0)  app-42  =>  bash-7  \n"
        " ------------------------------------------\n\n";
    text += " 0)   0.700 us    |  after_switch();\n";
    return text;
}

}  // namespace

// Before the cap, a CPU with no banner held every later event (of every CPU) and rescanned them on each line:
// quadratic, and memory that grew with the file. Past 262,144 events they go on with the pid unknown.
TEST(StreamLimits, CpuWithoutBannerStopsHoldingEventsPastTheCap) {
    const int n = 300000;  // 600,000 events: past the 262,144 a CPU may hold back
    std::string path = temp_file("nobanner.txt", cpu_without_banner(n));
    std::ostringstream lines;
    auto st = stream_file(path, &lines);
    std::filesystem::remove(path);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_FALSE(st->stream->held());
    EXPECT_EQ(st->stream->calls(), static_cast<std::uint64_t>(n) + 1);
    const Diagnostic* d = diag(st->stream->report(), "pid_backfill_limit");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->severity, "info");
    EXPECT_EQ(d->count, 1u);
    EXPECT_NE(d->first_example.find("cpu 0: no context-switch banner within 262144 events"), std::string::npos)
        << d->first_example;
    // The first calls went on before the banner named their task; the one after it has the next task's pid.
    std::string text = lines.str();
    EXPECT_NE(text.find("\"function\":\"leaf_call\",\"id\":1,"), std::string::npos);
    std::string first = text.substr(0, text.find('\n'));
    EXPECT_NE(first.find("\"pid\":-1,"), std::string::npos) << first;
    std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
    EXPECT_NE(last.find("\"function\":\"after_switch\""), std::string::npos) << last;
    EXPECT_NE(last.find("\"pid\":7,"), std::string::npos) << last;
}

// Under the cap the banner still names the task of the lines before it, as in the whole-file reader.
TEST(StreamLimits, CpuWithoutBannerUnderTheCapIsBackfilled) {
    std::string path = temp_file("shortnobanner.txt", cpu_without_banner(1000));
    std::ostringstream lines;
    auto st = stream_file(path, &lines);
    std::filesystem::remove(path);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(diag(st->stream->report(), "pid_backfill_limit"), nullptr);
    std::string text = lines.str();
    std::string first = text.substr(0, text.find('\n'));
    EXPECT_NE(first.find("\"pid\":42,"), std::string::npos) << first;
}
