// Unit tests of tracer/ pieces that work on files alone: a temporary directory stands in for tracefs
// (libtracefs's tracefs_set_tracing_dir), so they need neither root nor a kernel (LABELS unit).
// Each regression test is named after the bug it reproduces.
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "capture.hpp"
#include "procfs.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"

namespace fs = std::filesystem;
using nvtrace::ExitCode;
using nvtrace::tracer::CaptureOptions;
using nvtrace::tracer::count_matches;
using nvtrace::tracer::KernelOffer;
using nvtrace::tracer::plan_capture;
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

// The capture plan (tracer/capture.hpp) from options and a hand-made KernelOffer: no tracefs, no root.
// `events`: the "system:event" names the stand-in kernel has; `functions`: available_filter_functions lines.
KernelOffer offer(std::set<std::string> events, std::vector<std::string> functions, bool fgraph_in_instance = true) {
    KernelOffer k;
    k.tracing_dir = "/sys/kernel/tracing";
    k.instance = "nvtrace-1";
    k.fgraph_in_instance = fgraph_in_instance;
    k.top_tracers = "function_graph function nop";
    k.has_event = [events](const std::string& sys, const std::string& ev) { return events.count(sys + ":" + ev) > 0; };
    k.module_loaded = [functions](const std::string& m) {
        return std::any_of(functions.begin(), functions.end(),
                           [&](const std::string& f) { return f.ends_with(" [" + m + "]"); });
    };
    k.count_matches = [functions](const char* glob, const char* module) {
        std::size_t n = 0;
        for (const auto& f : functions) {
            const std::string name = f.substr(0, f.find(' '));
            const bool in_module = !module || f.ends_with(std::string(" [") + module + "]");
            const std::string g = glob ? glob : "*";  // globs of the form "prefix*" or a whole name
            const bool match = g.ends_with('*') ? name.starts_with(g.substr(0, g.size() - 1)) : name == g;
            n += in_module && match;
        }
        return n;
    };
    return k;
}

CaptureOptions options(std::vector<std::string> command) {
    CaptureOptions o;
    o.meta.command = std::move(command);
    return o;
}

TEST(CapturePlan, EventsOnlyRunTracesTheIoctlsAndTheFdSyscallsWithBothHalves) {
    auto o = options({"/bin/true"});
    o.meta.events = {"sched:sched_switch", "printk:console"};
    auto p = plan_capture(
        o, offer({"syscalls:sys_enter_openat", "syscalls:sys_exit_openat", "syscalls:sys_enter_close"}, {}));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_FALSE(p->fgraph);
    EXPECT_EQ(p->meta.tracer_mode, "events");
    EXPECT_EQ(p->meta.instance, "nvtrace-1");
    EXPECT_EQ(p->meta.command, std::vector<std::string>{"/bin/true"});
    EXPECT_EQ(p->fd_syscalls, std::vector<std::string>{"openat"}) << "close lacks its exit tracepoint";
    const std::vector<std::string> formats{"ftrace:*",
                                           "syscalls:sys_enter_ioctl",
                                           "syscalls:sys_exit_ioctl",
                                           "syscalls:sys_enter_openat",
                                           "syscalls:sys_exit_openat",
                                           "sched:sched_switch",
                                           "printk:console"};
    EXPECT_EQ(p->formats, formats);
    EXPECT_EQ(p->meta.kept_events, o.meta.events);
    EXPECT_TRUE(p->meta.printk_console);
    EXPECT_FALSE(p->xid_event);
    EXPECT_TRUE(p->meta.filter_counts.empty());

    o.fd_events = false;  // NVTRACE_TEST_NO_FD_EVENTS=1
    EXPECT_TRUE(
        plan_capture(o, offer({"syscalls:sys_enter_openat", "syscalls:sys_exit_openat"}, {}))->fd_syscalls.empty());
}

TEST(CapturePlan, XidTracepointIsKeptWhereTheDriverOffersIt) {
    auto p = plan_capture(options({"/bin/true"}), offer({"nvidia:nvidia_dev_xid"}, {}));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_TRUE(p->xid_event);
    EXPECT_EQ(p->formats.back(), "nvidia:nvidia_dev_xid");
    EXPECT_EQ(p->meta.kept_events, std::vector<std::string>{"nvidia:nvidia_dev_xid"});
    EXPECT_FALSE(p->meta.printk_console);
}

TEST(CapturePlan, ModulesAndGlobsAreCountedAndFilteredModulesFirst) {
    const std::vector<std::string> functions{"uvm_ioctl [nvidia_uvm]", "uvm_open [nvidia_uvm]", "drm_gem_open",
                                             "drm_gem_close", "drm_ioctl"};
    auto o = options({"./app"});
    o.meta.modules = {"nvidia-uvm"};  // modprobe's spelling; :mod: uses '_'
    o.meta.filters = {"drm_gem_*"};
    o.meta.notrace = {"no_such_*"};
    o.meta.graph_functions = {"drm_ioctl"};
    auto p = plan_capture(o, offer({}, functions));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_TRUE(p->fgraph);
    EXPECT_FALSE(p->top_level);
    EXPECT_EQ(p->meta.tracer_mode, "function_graph (instance)");
    const std::map<std::string, std::uint64_t> counts{
        {"module:nvidia_uvm", 2}, {"filter:drm_gem_*", 2}, {"notrace:no_such_*", 0}, {"graph-function:drm_ioctl", 1}};
    EXPECT_EQ(p->meta.filter_counts, counts);
    ASSERT_EQ(p->filter.size(), 2u);
    EXPECT_EQ(p->filter[0].text, "nvidia_uvm");
    EXPECT_TRUE(p->filter[0].module);
    EXPECT_FALSE(p->filter[0].future);
    EXPECT_EQ(p->filter[1].text, "drm_gem_*");
    EXPECT_FALSE(p->filter[1].module);

    // A kernel without function_graph in instances (before ~6.11): the top level, under the journal.
    p = plan_capture(o, offer({}, functions, false));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_TRUE(p->top_level);
    EXPECT_EQ(p->meta.tracer_mode, "function_graph (top level)");
    auto k = offer({}, functions, false);
    k.top_tracers = "function nop";
    auto none = plan_capture(o, k);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, ExitCode::environment);
    EXPECT_NE(none.error().message.find("available_tracers: function nop"), std::string::npos) << none.error().message;
}

TEST(CapturePlan, OptionsThatCannotBeTracedAreRefusedBeforeAnythingChanges) {
    auto refused = [](CaptureOptions o, const std::vector<std::string>& functions, ExitCode code, const char* says) {
        auto p = plan_capture(o, offer({}, functions));
        ASSERT_FALSE(p) << says;
        EXPECT_EQ(p.error().code, code) << p.error().message;
        EXPECT_NE(p.error().message.find(says), std::string::npos) << p.error().message;
    };
    refused(options({}), {}, ExitCode::usage, "no command given");
    auto o = options({"./app"});
    o.meta.notrace = {"x"};
    refused(o, {}, ExitCode::usage, "--notrace and --max-depth need function_graph");
    o = options({"./app"});
    o.meta.max_depth = 3;
    refused(o, {}, ExitCode::usage, "--notrace and --max-depth need function_graph");
    o = options({"./app"});
    o.meta.modules = {"vgem"};
    refused(o, {"drm_ioctl"}, ExitCode::environment, "module vgem is not loaded");
    o.future = true;  // armed for when it loads: no count yet, and the filter is marked
    auto p = plan_capture(o, offer({}, {"drm_ioctl"}));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->meta.filter_counts.at("module:vgem"), 0u);
    EXPECT_TRUE(p->filter.at(0).future);
    o = options({"./app"});
    o.meta.filters = {"nothing_*"};
    refused(o, {"drm_ioctl"}, ExitCode::usage, "--filter 'nothing_*' matches no traceable function");
    o = options({"./app"});
    o.meta.graph_functions = {"nothing"};
    refused(o, {"drm_ioctl"}, ExitCode::usage, "--graph-function 'nothing' matches no traceable function");
}

// The capture's process tree (tracer/procfs.hpp) lists /proc again only after a pid was allocated: a process the
// tree forks is still found, a zombie stays a member until it is reaped (as /proc lists it), a reaped one is gone.
TEST(ProcessTree, FollowsChildrenAndZombiesWhetherItListsProcOrChecksTheMembers) {
    const long before = nvtrace::tracer::last_pid_allocated();
    ASSERT_GT(before, 0) << "/proc/loadavg has no last pid";
    int go[2], end_grandchild[2], ready[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(end_grandchild), 0);
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // forks a grandchild on the first byte of `go`, reaps it on the second, then waits
        char c;
        if (::read(go[0], &c, 1) != 1) ::_exit(1);
        const pid_t grandchild = ::fork();
        if (grandchild == 0) {
            if (::read(end_grandchild[0], &c, 1) != 1) ::_exit(1);
            ::_exit(0);
        }
        if (::write(ready[1], &grandchild, sizeof grandchild) != sizeof grandchild) ::_exit(1);
        if (::read(go[0], &c, 1) != 1) ::_exit(1);
        int st = 0;
        ::waitpid(grandchild, &st, 0);
        if (::write(ready[1], &c, 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    // A fork allocates a pid: the cursor moved.
    EXPECT_NE(nvtrace::tracer::last_pid_allocated(), before);
    nvtrace::tracer::ProcessTree tree(child);
    EXPECT_EQ(tree.refresh(), std::vector<int>{child});
    EXPECT_EQ(tree.refresh(), std::vector<int>{child});
    ASSERT_EQ(::write(go[1], "a", 1), 1);
    pid_t grandchild = 0;
    ASSERT_EQ(::read(ready[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
    std::vector<int> both{child, grandchild};
    std::sort(both.begin(), both.end());
    EXPECT_EQ(tree.refresh(), both);
    EXPECT_EQ(tree.refresh(), both);
    // The grandchild ends; until its parent reaps it, it is a zombie and still listed.
    ASSERT_EQ(::write(end_grandchild[1], "b", 1), 1);
    for (int i = 0; i < 2000; ++i) {  // until it is a zombie (state Z), at most 2 s
        char state = '?';
        int ppid = 0, pgrp = 0;
        if (!nvtrace::tracer::read_proc_stat(grandchild, state, ppid, pgrp) || state == 'Z') break;
        ::usleep(1000);
    }
    EXPECT_EQ(tree.refresh(), both);
    ASSERT_EQ(::write(go[1], "c", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);  // reaped
    EXPECT_EQ(tree.refresh(), std::vector<int>{child});
    EXPECT_EQ(tree.refresh(), std::vector<int>{child});
    ::kill(child, SIGKILL);
    int st = 0;
    ::waitpid(child, &st, 0);
    EXPECT_TRUE(tree.refresh().empty());
    EXPECT_GE(tree.scans(), 1u);
    for (int fd : {go[0], go[1], end_grandchild[0], end_grandchild[1], ready[0], ready[1]})
        ::close(fd);
}

}  // namespace
