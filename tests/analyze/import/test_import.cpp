// Format detection, import_file / import_text and bad input (never a crash, an error naming file:line).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {
const std::string kData = NVTRACE_TEST_DATA;

// This process's files, removed when it exits (each ctest test is a process of its own: they were left in /tmp).
struct TempDirOfThisProcess {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("nvtrace-import-test-" + std::to_string(getpid()));
    ~TempDirOfThisProcess() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

std::string temp_file(const std::string& name, const std::string& content) {
    static TempDirOfThisProcess temp;
    const auto& dir = temp.path;
    std::filesystem::create_directories(dir);
    auto p = dir / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
}
}  // namespace

TEST(Detect, CaseFiles) {
    struct {
        const char* file;
        TraceFormat want;
    } cases[] = {
        {"fgraph-abstime-orphan-close.txt", TraceFormat::fgraph_text},
        {"fgraph-events-sched-switch-rpi.txt", TraceFormat::fgraph_text},
        {"fgraph-funcgraph-proc-column.txt", TraceFormat::fgraph_text},
        {"fgraph-irq-nested-module-suffix.txt", TraceFormat::fgraph_text},
        {"fgraph-overhead-markers-cpu-interleave.txt", TraceFormat::fgraph_text},
        {"fgraph-retval-merged-format.txt", TraceFormat::fgraph_text},
        {"fgraph-task-switch-mid-schedule.txt", TraceFormat::fgraph_text},
        {"function-text-stacktrace-rpi.txt", TraceFormat::function_text},
        {"trace-cmd-report-fgraph-v6.txt", TraceFormat::trace_cmd_report},
    };
    for (const auto& c : cases) {
        std::ifstream in(kData + "/cases/" + c.file, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), {});
        EXPECT_EQ(detect_format(text), c.want) << c.file;
    }
}

TEST(Detect, OtherShapes) {
    EXPECT_EQ(detect_format(std::string("\x17\x08\x44tracing6\0", 12)), TraceFormat::trace_dat);
    EXPECT_EQ(detect_format("[    9.424670] NVRM: API mismatch\n"), TraceFormat::kernel_log);
    EXPECT_EQ(detect_format("Jun 30 11:07:05 host1 kernel: NVRM: x\n"), TraceFormat::kernel_log);
    EXPECT_EQ(detect_format("6,1234,5678,-;NVRM: x\n"), TraceFormat::kernel_log);
    EXPECT_EQ(detect_format("# tracer: nop\n"), TraceFormat::function_text);
    EXPECT_EQ(detect_format("  prog-1 [000] 1.000001: funcgraph_entry:   1.000 us   |  f();\n"),
              TraceFormat::trace_cmd_report);
    EXPECT_EQ(detect_format("\t 0)   0.100 us    |  f();\n"), TraceFormat::fgraph_text);
    EXPECT_EQ(detect_format("hello world\n"), std::nullopt);
    EXPECT_EQ(detect_format(""), std::nullopt);
}

// strace -k prints each call's stack under it, one " > object(symbol+off) [0xaddr]" line per frame: mostly frame
// lines, which were read as quoted kernel-log lines, so the file was a kernel log with no ioctl (fresh user).
TEST(Detect, StraceWithStackTracesIsStrace) {
    std::string text;
    for (int i = 0; i < 3; ++i) {
        text += "1234  ioctl(3</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20), 0x7ffc5678) = 0\n";
        for (int f = 0; f < 8; ++f)
            text += " > /usr/lib/x86_64-linux-gnu/libc.so.6(ioctl+0xb) [0x11b0fb]\n";
    }
    EXPECT_EQ(detect_format(text), TraceFormat::strace);
    auto r = import_text(text, "sk.txt", std::nullopt);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(build_report(r->stream).ioctls.size(), 3u);
}

// A kernel log none of whose lines could be read said only "one.kmsg: no kernel log messages found": the first
// line that failed and why are named too (fresh user).
TEST(ImportText, KernelLogWithoutAReadableLineNamesTheFirstBadLine) {
    auto r = import_text("6,-1,100,-;NVRM: neg.\n", "one.kmsg", TraceFormat::kernel_log);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("no kernel log messages found"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("first: one.kmsg:1: kmsg record: expected numeric"), std::string::npos)
        << r.error().message;
}

TEST(FormatNames, RoundTrip) {
    for (auto f : {TraceFormat::fgraph_text, TraceFormat::function_text, TraceFormat::trace_cmd_report,
                   TraceFormat::trace_dat, TraceFormat::kernel_log})
        EXPECT_EQ(parse_format_name(format_name(f)), f);
    EXPECT_FALSE(parse_format_name("nope"));
}

TEST(ImportFile, UnreadableAndEmpty) {
    auto missing = import_file("/nonexistent/trace.txt");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("/nonexistent/trace.txt"), std::string::npos);
    auto empty = import_file(temp_file("empty.txt", ""));
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("empty file"), std::string::npos);
    auto dir = import_file(std::filesystem::temp_directory_path().string());
    EXPECT_FALSE(dir);
}

TEST(ImportFile, NotATraceNamesFileAndLine) {
    auto p = temp_file("notes.txt", "\n\nshopping list: milk\n");
    auto r = import_file(p);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with(p + ":3: expected a trace")) << r.error().message;
}

TEST(ImportFile, ForcedFormatOnWrongContent) {
    auto p = temp_file("forced.txt", "hello\n");
    auto r = import_file(p, TraceFormat::trace_cmd_report);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with(p + ":1: expected an event line")) << r.error().message;
}

TEST(ImportFile, KernelLogGoesToReadKernelLog) {
    auto p = temp_file("k.log", "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n");
    auto r = import_file(p);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->format, TraceFormat::kernel_log);
    EXPECT_TRUE(r->stream.events.empty());
}

TEST(BadInput, RandomBytesNeverCrash) {
    std::mt19937 rng(42);
    for (int i = 0; i < 200; ++i) {
        std::string junk(static_cast<std::size_t>(rng() % 4096), '\0');
        for (auto& c : junk)
            c = static_cast<char>(rng() % 256);
        for (auto f : {TraceFormat::fgraph_text, TraceFormat::function_text, TraceFormat::trace_cmd_report}) {
            auto r = import_text(junk, "junk.bin", f);
            if (r) {
                EXPECT_NO_THROW(to_json(build_report(r->stream)).dump());
            }
        }
        EXPECT_NO_THROW(import_text(junk, "junk.bin"));
    }
}

TEST(BadInput, TruncatedCaseFilesStillRead) {
    std::ifstream in(kData + "/cases/trace-cmd-report-fgraph-v6.txt", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    for (std::size_t cut : {text.size() / 3, text.size() / 2, text.size() - 7}) {
        auto r = import_text(text.substr(0, cut), "cut.txt");
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_FALSE(r->stream.events.empty());
    }
}
