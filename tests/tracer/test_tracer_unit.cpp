// Unit tests of tracer/ pieces that work on files alone: a temporary directory stands in for tracefs
// (libtracefs's tracefs_set_tracing_dir), so they need neither root nor a kernel (LABELS unit).
// Each regression test is named after the bug it reproduces.
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tracefs_cxx.h"
#include "tracefs_session.hpp"

namespace fs = std::filesystem;
using nvtrace::tracer::count_matches;
using nvtrace::tracer::restore_order;
using nvtrace::tracer::TopLevelJournal;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void put(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

// A temporary directory that libtracefs takes for the tracing directory while the test runs.
class FakeTracefs : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "nvtrace-fake-tracefs-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr) << std::strerror(errno);
        root_ = templ;
        dir_ = root_ / "tracing";
        fs::create_directories(dir_);
        ASSERT_EQ(tracefs_set_tracing_dir(const_cast<char*>(dir_.c_str())), 0);
    }
    void TearDown() override {
        tracefs_set_tracing_dir(nullptr);
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    fs::path root_, dir_;
};

using TracerRegression = FakeTracefs;

// Restoring an empty set_ftrace_filter while function_graph still ran made the kernel patch every traceable
// function: minutes of soft lockup in the qemu guest. The journal must put current_tracer back first.
// The order is observed as the kernel reports it: inotify close-after-write events on the stand-in directory.
TEST_F(TracerRegression, TopLevelJournal_restores_tracer_before_filters) {
    const std::string all = "#### all functions enabled ####\n";
    put(dir_ / "current_tracer", "nop\n");
    put(dir_ / "set_ftrace_filter", all);
    put(dir_ / "set_graph_function", all);
    put(dir_ / "tracing_on", "1\n");
    const fs::path journal_path = root_ / "run" / "journal.json";
    {
        TopLevelJournal journal(journal_path.string());
        // The order nvtrace run uses: filters, then the tracer, then the rest.
        ASSERT_TRUE(journal.write("set_ftrace_filter", ":mod:null_blk"));
        ASSERT_TRUE(journal.write("set_graph_function", "null_queue_rq"));
        ASSERT_TRUE(journal.write("current_tracer", "function_graph"));
        ASSERT_TRUE(journal.write("tracing_on", "0"));
        EXPECT_EQ(slurp(dir_ / "current_tracer"), "function_graph");
        EXPECT_EQ(slurp(dir_ / "set_ftrace_filter"), ":mod:null_blk");

        // Persisted before the writes, with the original contents.
        const auto j = nlohmann::json::parse(slurp(journal_path));
        EXPECT_EQ(j.at("pid").get<int>(), ::getpid());
        std::map<std::string, std::string> saved;
        for (const auto& f : j.at("files"))
            saved[f.at("file").get<std::string>()] = f.at("content").get<std::string>();
        EXPECT_EQ(saved["current_tracer"], "nop\n");
        EXPECT_EQ(saved["set_ftrace_filter"], all);
        EXPECT_EQ(saved["tracing_on"], "1\n");

        const int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        ASSERT_GE(in, 0) << std::strerror(errno);
        ASSERT_GE(::inotify_add_watch(in, dir_.c_str(), IN_CLOSE_WRITE), 0) << std::strerror(errno);
        EXPECT_TRUE(journal.restore().empty());

        std::vector<std::string> order;
        alignas(inotify_event) char buf[4096];
        for (ssize_t n; (n = ::read(in, buf, sizeof buf)) > 0;) {
            for (char* p = buf; p < buf + n;) {
                const auto* ev = reinterpret_cast<const inotify_event*>(p);
                if (ev->len > 0) order.emplace_back(ev->name);
                p += sizeof(inotify_event) + ev->len;
            }
        }
        ::close(in);
        const std::vector<std::string> expected{"current_tracer", "tracing_on", "set_graph_function",
                                                "set_ftrace_filter"};
        EXPECT_EQ(order, expected);
    }
    EXPECT_EQ(slurp(dir_ / "current_tracer"), "nop");
    EXPECT_EQ(slurp(dir_ / "set_ftrace_filter"), "");
    EXPECT_EQ(slurp(dir_ / "set_graph_function"), "");
    EXPECT_EQ(slurp(dir_ / "tracing_on"), "1");
    EXPECT_FALSE(fs::exists(journal_path)) << "a fully restored journal is removed";
}

// `nvtrace cleanup` restores a killed run's journal through the same order (tracer/cleanup.cpp).
TEST(TracerRestoreOrder, CurrentTracerFirstThenReverseSaveOrder) {
    const std::vector<std::pair<std::string, std::string>> saved{{"set_ftrace_filter", "a"},
                                                                 {"options/function-fork", "0"},
                                                                 {"current_tracer", "nop"},
                                                                 {"set_ftrace_pid", "no pid"}};
    const std::vector<std::pair<std::string, std::string>> expected{{"current_tracer", "nop"},
                                                                    {"set_ftrace_pid", "no pid"},
                                                                    {"options/function-fork", "0"},
                                                                    {"set_ftrace_filter", "a"}};
    EXPECT_EQ(restore_order(saved), expected);
    EXPECT_TRUE(restore_order({}).empty());
}

// libtracefs 1.6.4: tracefs_filter_functions(NULL, module) matches no function, so the dry-run count of
// `--module M` was 0 and nvtrace run refused every module ("has no traceable function"). "*" is passed instead.
TEST_F(TracerRegression, Libtracefs_null_filter_with_module_counts_every_module_function) {
    put(dir_ / "available_filter_functions",
        "vfs_read\n"
        "null_queue_rq [null_blk]\n"
        "null_handle_cmd [null_blk]\n"
        "null_process_cmd [null_blk]\n"
        "vgem_gem_create_object [vgem]\n");
    EXPECT_EQ(count_matches(nullptr, "null_blk"), 3u);
    EXPECT_EQ(count_matches(nullptr, "vgem"), 1u);
    EXPECT_EQ(count_matches("null_*", "null_blk"), 3u);
    EXPECT_EQ(count_matches("null_queue_rq", nullptr), 1u);
    EXPECT_EQ(count_matches(nullptr, "nvidia"), 0u);
    EXPECT_EQ(count_matches("no_such_function", nullptr), 0u);
}

}  // namespace
