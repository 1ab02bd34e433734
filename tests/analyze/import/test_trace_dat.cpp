// read_trace_dat through libtracecmd on a real trace.dat, made at test time by the fixture
// make_trace_dat.sh (root only: the tests skip with its reason otherwise, and fail when CI=true).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "nvtrace/import.hpp"
#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {
const std::string kDir = NVTRACE_TRACE_DAT_DIR;

// Why the fixture made no file, or "" when it did.
std::string missing_reason(const std::string& path) {
    if (std::filesystem::exists(path)) return "";
    std::ifstream skipped(kDir + "/SKIPPED");
    std::string why;
    if (skipped) std::getline(skipped, why);
    return why.empty() ? "the fixture import_make_trace_dat did not run (ctest runs it)" : why;
}

bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}
}  // namespace

#define REQUIRE_DAT(path)                                                    \
    do {                                                                     \
        std::string why_ = missing_reason(path);                             \
        if (!why_.empty()) {                                                 \
            if (on_ci()) FAIL() << "no trace.dat test data on CI: " << why_; \
            GTEST_SKIP() << why_;                                            \
        }                                                                    \
    } while (0)

TEST(TraceDat, ReadsIoctlEventsFromAV7File) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    std::string path = kDir + "/ioctl-v7.dat";
    REQUIRE_DAT(path);
    auto r = import_file(path);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->format, TraceFormat::trace_dat);
    Report rep = build_report(r->stream);
    ASSERT_GE(rep.ioctls.size(), 3u);
    int fionread = 0;
    for (const auto& io : rep.ioctls)
        if (io.name == "FIONREAD") {
            ++fionread;
            EXPECT_EQ(io.ret, 0);
            EXPECT_GT(io.pid, 0);
        }
    EXPECT_EQ(fionread, 5);  // fionread_loop 5
    EXPECT_TRUE(rep.completeness.complete);
}

TEST(TraceDat, ReadsTheSameFileConvertedToV6) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    REQUIRE_DAT(kDir + "/ioctl-v7.dat");
    std::string path = kDir + "/ioctl-v6.dat";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "no v6 file: this trace-cmd could not write one";
    auto v6 = import_file(path);
    auto v7 = import_file(kDir + "/ioctl-v7.dat");
    ASSERT_TRUE(v6 && v7);
    EXPECT_EQ(build_report(v6->stream).ioctls.size(), build_report(v7->stream).ioctls.size());
}

TEST(TraceDat, GarbageWithTheMagicIsAnError) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    auto p = std::filesystem::temp_directory_path() / "nvtrace-bad.dat";
    {
        std::FILE* f = std::fopen(p.c_str(), "wb");
        ASSERT_TRUE(f);
        std::fwrite("\x17\x08\x44tracing6\0garbage", 1, 19, f);
        std::fclose(f);
    }
    auto r = import_file(p.string());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("libtracecmd cannot open it"), std::string::npos) << r.error().message;
    std::filesystem::remove(p);
}

// The reader takes libtracecmd's time-ordered iteration as it comes (no sort when it is in order): the
// stream must still be in time order, every enter followed by its exit on the single-threaded loop.
TEST(TraceDat, EventsAreInTimeOrderWithEachEnterBeforeItsExit) {
    if (!trace_dat_supported()) GTEST_SKIP() << "built without libtracecmd (static build)";
    std::string path = kDir + "/ioctl-v7.dat";
    REQUIRE_DAT(path);
    auto r = import_file(path);
    ASSERT_TRUE(r) << r.error().message;
    const auto& ev = r->stream.events;
    EXPECT_TRUE(std::is_sorted(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; }));
    int open = 0, pairs = 0;
    for (const auto& e : ev) {
        if (std::holds_alternative<IoctlEnter>(e.body)) {
            EXPECT_EQ(open, 0);
            ++open;
        } else if (std::holds_alternative<IoctlExit>(e.body)) {
            EXPECT_EQ(open, 1);
            open = 0;
            ++pairs;
        }
    }
    EXPECT_GE(pairs, 5);
}
