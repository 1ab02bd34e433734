// Live tests of the uprobe layer on this kernel (root, tracefs, CONFIG_UPROBE_EVENTS): probes created in nvtrace's
// own group, enabled in a private instance only, fired by a child process, read back, and removed so that
// uprobe_events is exactly as before, on success, on a refused probe, and after the owner was killed (SIGKILL, then
// cleanup_uprobes, the part of `nvtrace cleanup` that removes probes). Every probe lives only inside its test.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "elf_file.hpp"
#include "library_search.hpp"
#include "nvtrace/knowledge.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"
#include "uprobe_plan.hpp"
#include "uprobes.hpp"

namespace fs = std::filesystem;
using namespace nvtrace;
using namespace nvtrace::tracer;

namespace {

const std::string kTracing = "/sys/kernel/tracing";
const std::string kCuda = "/usr/local/cuda";

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string uprobe_events() {
    return slurp(kTracing + "/uprobe_events");
}

bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

std::string missing_requirement() {
    if (::geteuid() != 0) return "needs root";
    if (::access((kTracing + "/instances").c_str(), W_OK) != 0) return "needs tracefs mounted at " + kTracing;
    if (::access((kTracing + "/uprobe_events").c_str(), W_OK) != 0)
        return "needs uprobe events (CONFIG_UPROBE_EVENTS: " + kTracing + "/uprobe_events)";
    return {};
}

#define REQUIRE_LIVE()                                        \
    do {                                                      \
        if (auto why = missing_requirement(); !why.empty()) { \
            if (on_ci()) FAIL() << why;                       \
            GTEST_SKIP() << why;                              \
        }                                                     \
    } while (0)

#define REQUIRE_FILE(path)                                                                       \
    do {                                                                                         \
        if (!fs::exists(path)) {                                                                 \
            if (on_ci()) FAIL() << (path) << " is missing (the CUDA toolkit)";                   \
            GTEST_SKIP() << (path) << " is missing (needs the CUDA toolkit at " << kCuda << ")"; \
        }                                                                                        \
    } while (0)

struct TraceEvent {
    int pid = 0;
    std::string event;
    std::map<std::string, std::string> args;
};

// The instance's trace file: "comm-PID [CPU] FLAGS TS: EVENT: (ADDR[ <- ADDR]) NAME=VALUE ...".
std::vector<TraceEvent> read_trace(const std::string& instance_dir) {
    std::vector<TraceEvent> out;
    std::istringstream in(slurp(instance_dir + "/trace"));
    std::string line;
    std::regex head(R"(-(\d+)\s+\[\d+\].*?:\s+(\w+): \([^)]*\)\s*(.*)$)");
    std::regex arg(R"((\w+)=("[^"]*"|\S+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (line.empty() || line[0] == '#' || !std::regex_search(line, m, head)) continue;
        TraceEvent e;
        e.pid = std::stoi(m[1]);
        e.event = m[2];
        std::string rest = m[3];
        for (auto it = std::sregex_iterator(rest.begin(), rest.end(), arg); it != std::sregex_iterator(); ++it)
            e.args[(*it)[1]] = (*it)[2];
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<TraceEvent> named(const std::vector<TraceEvent>& all, const std::string& event, int pid) {
    std::vector<TraceEvent> out;
    for (const auto& e : all)
        if (e.event == event && e.pid == pid) out.push_back(e);
    return out;
}

fs::path temp_dir(const std::string& tag) {
    fs::path d = fs::temp_directory_path() / fmt::format("nvtrace-uprobe-{}-{}", tag, ::getpid());
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string libc_path() {
    auto cache = read_ld_cache();
    SearchContext ctx;
    if (cache) ctx.cache = *cache;
    auto exe = read_elf(fs::canonical("/proc/self/exe").string());
    if (!exe) return {};
    auto c = find_library("libc.so.6", *exe, nullptr, ctx);
    return c.empty() ? std::string() : c.front().real_path;
}

// A child that waits until the parent writes a byte, runs `body`, and exits with its status.
struct GatedChild {
    pid_t pid = -1;
    int go = -1;
    template <class F>
    explicit GatedChild(F body) {
        int p[2];
        if (::pipe(p) != 0) return;
        pid = ::fork();
        if (pid == 0) {
            ::close(p[1]);
            char c;
            if (::read(p[0], &c, 1) != 1) ::_exit(90);
            ::_exit(body());
        }
        ::close(p[0]);
        go = p[1];
    }
    int release_and_wait() {
        char c = 'g';
        if (::write(go, &c, 1) != 1) return -1;
        ::close(go);
        int st = 0;
        ::waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
};

// Scopes `inst` to `pid` and turns tracing on.
void trace_pid(Instance& inst, int pid) {
    ASSERT_GE(tracefs_instance_file_write(inst.get(), "set_event_pid", std::to_string(pid).c_str()), 0);
    ASSERT_EQ(tracefs_trace_on(inst.get()), 0);
}

}  // namespace

TEST(LiveUprobes, getpid_entry_and_return_fire_in_the_private_instance_only) {
    REQUIRE_LIVE();
    const std::string before = uprobe_events();
    const fs::path jdir = temp_dir("fire");
    const std::string libc = libc_path();
    ASSERT_FALSE(libc.empty());
    {
        auto inst = Instance::create();
        ASSERT_TRUE(inst) << inst.error().message;
        UprobeSet set(uprobe_group(::getpid(), "fire"), jdir.string());
        auto elf = read_elf(libc);
        ASSERT_TRUE(elf) << elf.error().message;
        ProbePlan plan;
        ASSERT_TRUE(plan_function(plan, *elf, "getpid", {}, {"ret=$retval:s32"}));
        for (const auto& d : plan.defs())
            ASSERT_TRUE(set.add(d)) << set.group() << "/" << d.event;
        // Journaled (before creation) and listed by the kernel under our group.
        auto j = nlohmann::json::parse(slurp(set.journal_path()));
        EXPECT_EQ(j["group"], set.group());
        EXPECT_EQ(j["probes"].size(), 2u);
        const std::string during = uprobe_events();
        EXPECT_NE(during.find(fmt::format("p:{}/getpid ", set.group())), std::string::npos) << during;
        EXPECT_NE(during.find(fmt::format("r:{}/getpid__return ", set.group())), std::string::npos) << during;

        GatedChild child([] {
            pid_t (*volatile call)() = &::getpid;
            int ok = 0;
            for (int i = 0; i < 3; ++i)
                ok += call() > 0;
            return ok == 3 ? 0 : 1;
        });
        ASSERT_GT(child.pid, 0);
        trace_pid(*inst, child.pid);
        ASSERT_TRUE(set.enable(inst->get()));
        // Enabled in the private instance, not at the top level.
        EXPECT_EQ(slurp(fmt::format("{}/events/{}/getpid/enable", inst->dir(), set.group())), "1\n");
        EXPECT_EQ(slurp(fmt::format("{}/events/{}/getpid/enable", kTracing, set.group())), "0\n");
        ASSERT_EQ(child.release_and_wait(), 0);
        tracefs_trace_off(inst->get());
        auto events = read_trace(inst->dir());
        auto entries = named(events, "getpid", child.pid);
        auto exits = named(events, "getpid__return", child.pid);
        EXPECT_EQ(entries.size(), 3u);
        ASSERT_EQ(exits.size(), 3u);
        for (const auto& e : exits)
            EXPECT_EQ(e.args.at("ret"), std::to_string(child.pid));  // getpid's result, read by the r: probe
        EXPECT_TRUE(set.remove_all().empty());
        EXPECT_FALSE(fs::exists(set.journal_path()));
    }
    EXPECT_EQ(uprobe_events(), before);
    fs::remove_all(jdir);
}

TEST(LiveUprobes, a_refused_probe_names_the_kernels_reason_and_nothing_is_left) {
    REQUIRE_LIVE();
    const std::string before = uprobe_events();
    const fs::path jdir = temp_dir("refused");
    const std::string libc = libc_path();
    ASSERT_FALSE(libc.empty());
    auto elf = read_elf(libc);
    ASSERT_TRUE(elf);
    std::string journal;
    {
        UprobeSet set(uprobe_group(::getpid(), "refused"), jdir.string());
        ProbePlan plan;
        ASSERT_TRUE(plan_function(plan, *elf, "getpid", {}, {}));
        ASSERT_TRUE(set.add(plan.functions[0].entry));
        // $retval exists only at a return: the kernel refuses it in an entry probe (trace_probe.c RETVAL_ON_PROBE).
        UprobeDef bad = plan.functions[0].entry;
        bad.event = "getpid_bad";
        bad.fetchargs = "r=$retval:s32";
        auto r = set.add(bad);
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message.find("the kernel refused uprobe"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find(" ("), std::string::npos) << "no kernel reason: " << r.error().message;
        EXPECT_EQ(set.probes().size(), 1u);
        journal = set.journal_path();
        EXPECT_EQ(nlohmann::json::parse(slurp(journal))["probes"].size(), 1u);
        // The destructor removes the one that was created (the exit path of an error).
    }
    EXPECT_EQ(uprobe_events(), before);
    EXPECT_FALSE(fs::exists(journal));
    fs::remove_all(jdir);
}

TEST(LiveUprobes, probes_of_a_killed_owner_are_removed_by_cleanup_and_no_other_probe_is) {
    REQUIRE_LIVE();
    const std::string before = uprobe_events();
    const fs::path jdir = temp_dir("killed");
    const std::string libc = libc_path();
    ASSERT_FALSE(libc.empty());
    auto elf = read_elf(libc);
    ASSERT_TRUE(elf);
    ProbePlan plan;
    ASSERT_TRUE(plan_function(plan, *elf, "getpid", {}, {}));
    const auto defs = plan.defs();

    // Another tool's probe on the same function, in its own group: cleanup must leave it.
    const std::string foreign_group = "nvtrace_test_foreign";
    tracefs_dynevent* foreign =
        tracefs_uprobe_alloc(foreign_group.c_str(), "getpid", libc.c_str(), defs[0].offset, nullptr);
    ASSERT_NE(foreign, nullptr);
    ASSERT_EQ(tracefs_dynevent_create(foreign), 0) << kernel_error(nullptr);

    // The owner must be a running nvtrace (cleanup.hpp owner_running: a process whose executable is named nvtrace,
    // started before its journal was written): after creating the probes it becomes a copy of sleep named nvtrace.
    const fs::path owner_exe = jdir.parent_path() / fmt::format("owner-{}", ::getpid()) / "nvtrace";
    fs::create_directories(owner_exe.parent_path());
    fs::copy_file("/bin/sleep", owner_exe, fs::copy_options::overwrite_existing);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t owner = ::fork();
    if (owner == 0) {
        ::close(ready[0]);
        auto* set = new UprobeSet(uprobe_group(::getpid()), jdir.string());  // never destroyed: SIGKILL comes first
        for (const auto& d : defs)
            if (!set->add(d)) ::_exit(3);
        char c = 'r';
        if (::write(ready[1], &c, 1) != 1) ::_exit(4);
        ::close(ready[1]);
        ::execl(owner_exe.c_str(), "nvtrace", "1000", static_cast<char*>(nullptr));
        ::_exit(5);
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the owner could not create its probes";
    ::close(ready[0]);
    const std::string group = uprobe_group(owner);
    EXPECT_NE(uprobe_events().find(group + "/getpid "), std::string::npos);
    // While the owner runs (once it is the nvtrace executable), its probes are kept.
    for (int i = 0; i < 200 && fs::read_symlink(fmt::format("/proc/{}/exe", owner)) != owner_exe; ++i)
        ::usleep(10'000);
    {
        std::vector<std::string> kept;
        auto actions = cleanup_uprobes(false, kept, jdir.string());
        EXPECT_TRUE(actions.empty());
        EXPECT_FALSE(kept.empty());
    }
    ::kill(owner, SIGKILL);
    ::waitpid(owner, nullptr, 0);
    EXPECT_NE(uprobe_events().find(group + "/getpid "), std::string::npos) << "SIGKILL leaves the probes";

    std::vector<std::string> kept;
    auto dry = cleanup_uprobes(true, kept, jdir.string());
    EXPECT_EQ(dry.size(), 2u);
    EXPECT_NE(uprobe_events().find(group + "/getpid "), std::string::npos) << "--dry-run removed something";
    auto actions = cleanup_uprobes(false, kept, jdir.string());
    ASSERT_EQ(actions.size(), 2u);
    for (const auto& a : actions) {
        EXPECT_TRUE(a.done) << a.what << ": " << a.error;
        EXPECT_NE(a.what.find(group), std::string::npos) << a.what;
    }
    EXPECT_TRUE(fs::is_empty(jdir)) << "the journal is left";
    const std::string after = uprobe_events();
    EXPECT_NE(after.find(foreign_group + "/getpid "), std::string::npos) << "cleanup removed another tool's probe";
    EXPECT_EQ(tracefs_dynevent_destroy(foreign, true), 0);
    tracefs_dynevent_free(foreign);
    EXPECT_EQ(uprobe_events(), before);
    fs::remove_all(jdir);
    fs::remove_all(owner_exe.parent_path());
}

namespace {

struct Dim3 {  // dim3 of vector_types.h: three unsigned ints, passed by value
    unsigned x, y, z;
};

// Creates the plan's probes on `lib` for `layer`, runs `body` in a child traced by a private instance, and returns
// the child's events. Checks that the kernel accepted every probe of the table and that nothing is left after.
std::vector<TraceEvent> trace_cuda_calls(const std::string& lib, CudaLayer layer, const std::string& tag,
                                         int (*body)(const char*), int& child_pid) {
    std::vector<TraceEvent> events;
    const std::string before = uprobe_events();
    const fs::path jdir = temp_dir(tag);
    {
        auto inst = Instance::create();
        EXPECT_TRUE(inst) << inst.error().message;
        if (!inst) return events;
        UprobeSet set(uprobe_group(::getpid(), tag), jdir.string());
        auto elf = read_elf(lib);
        EXPECT_TRUE(elf);
        if (!elf) return events;
        ProbePlan plan;
        EXPECT_GT(plan_cuda(plan, *elf, layer), 10u);
        EXPECT_TRUE(plan.skipped.empty());
        auto t0 = std::chrono::steady_clock::now();
        for (const auto& d : plan.defs()) {
            auto r = set.add(d);
            EXPECT_TRUE(r) << r.error().message;
        }
        auto t1 = std::chrono::steady_clock::now();
        std::string path = lib;
        GatedChild child([&] { return body(path.c_str()); });
        child_pid = child.pid;
        trace_pid(*inst, child.pid);
        EXPECT_TRUE(set.enable(inst->get()));
        EXPECT_EQ(child.release_and_wait(), 0);
        tracefs_trace_off(inst->get());
        events = read_trace(inst->dir());
        auto t2 = std::chrono::steady_clock::now();
        EXPECT_TRUE(set.remove_all().empty());
        auto t3 = std::chrono::steady_clock::now();
        auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
        // The cost of arming a table, for docs/api.md.
        std::printf("%s: %zu probes created in %lld ms, removed in %lld ms\n", lib.c_str(), plan.defs().size(),
                    static_cast<long long>(ms(t1 - t0)), static_cast<long long>(ms(t3 - t2)));
    }
    EXPECT_EQ(uprobe_events(), before);
    fs::remove_all(jdir);
    return events;
}

using CuInit = int (*)(unsigned);
using CuMemAlloc = int (*)(unsigned long long*, std::size_t);
using CuLaunchKernel = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                               void**, void**);
using CudaMalloc = int (*)(void**, std::size_t);
using CudaLaunchKernel = int (*)(const void*, Dim3, Dim3, void**, std::size_t, void*);

int call_driver_stub(const char* lib) {
    void* h = ::dlopen(lib, RTLD_NOW);
    if (!h) return 10;
    auto init = reinterpret_cast<CuInit>(::dlsym(h, "cuInit"));
    auto alloc = reinterpret_cast<CuMemAlloc>(::dlsym(h, "cuMemAlloc_v2"));
    auto launch = reinterpret_cast<CuLaunchKernel>(::dlsym(h, "cuLaunchKernel"));
    if (!init || !alloc || !launch) return 11;
    unsigned long long dptr = 0;
    init(0x5);
    alloc(&dptr, 0x1234567);
    launch(reinterpret_cast<void*>(0x1111), 2, 3, 4, 5, 6, 7, 8, reinterpret_cast<void*>(0x9999), nullptr, nullptr);
    return 0;
}

int call_runtime(const char* lib) {
    void* h = ::dlopen(lib, RTLD_NOW);
    if (!h) return 10;
    auto malloc_fn = reinterpret_cast<CudaMalloc>(::dlsym(h, "cudaMalloc"));
    auto launch = reinterpret_cast<CudaLaunchKernel>(::dlsym(h, "cudaLaunchKernel"));
    if (!malloc_fn || !launch) return 11;
    void* p = nullptr;
    malloc_fn(&p, 4096);
    launch(reinterpret_cast<void*>(0x2222), Dim3{2, 3, 4}, Dim3{5, 6, 7}, nullptr, 0x40,
           reinterpret_cast<void*>(0x7777));
    return 0;
}

}  // namespace

TEST(LiveUprobes, cuda_driver_stub_arguments_and_results_as_called) {
    REQUIRE_LIVE();
    const std::string stub = kCuda + "/lib64/stubs/libcuda.so";
    REQUIRE_FILE(stub);
    int pid = 0;
    auto events = trace_cuda_calls(fs::canonical(stub).string(), CudaLayer::driver, "drv", call_driver_stub, pid);
    auto init = named(events, "cuInit", pid), init_ret = named(events, "cuInit__return", pid);
    ASSERT_EQ(init.size(), 1u);
    ASSERT_EQ(init_ret.size(), 1u);
    EXPECT_EQ(init[0].args["Flags"], "0x5");
    // The stub's answer to everything (cuda.h: "the CUDA driver is a stub library").
    EXPECT_EQ(cu_result_name(std::stoll(init_ret[0].args["ret"])), "CUDA_ERROR_STUB_LIBRARY");
    auto alloc = named(events, "cuMemAlloc_v2", pid);
    ASSERT_EQ(alloc.size(), 1u);
    EXPECT_EQ(alloc[0].args["bytesize"], std::to_string(0x1234567));
    auto launch = named(events, "cuLaunchKernel", pid);
    ASSERT_EQ(launch.size(), 1u);
    auto& a = launch[0].args;
    EXPECT_EQ(a["f"], "0x1111");
    EXPECT_EQ(a["gridDimX"], "2");
    EXPECT_EQ(a["gridDimY"], "3");
    EXPECT_EQ(a["gridDimZ"], "4");
    EXPECT_EQ(a["blockDimX"], "5");
    EXPECT_EQ(a["blockDimY"], "6");
    EXPECT_EQ(a["blockDimZ"], "7");       // the first stack argument, $stack1
    EXPECT_EQ(a["sharedMemBytes"], "8");  // $stack2
    EXPECT_EQ(a["hStream"], "0x9999");    // $stack3
    EXPECT_EQ(a["kernelParams"], "0x0");
}

TEST(LiveUprobes, cudart_arguments_and_results_as_called_without_a_driver) {
    REQUIRE_LIVE();
    const std::string cudart = kCuda + "/lib64/libcudart.so.13";
    REQUIRE_FILE(cudart);
    int pid = 0;
    auto events = trace_cuda_calls(fs::canonical(cudart).string(), CudaLayer::runtime, "rt", call_runtime, pid);
    auto m = named(events, "cudaMalloc", pid), mr = named(events, "cudaMalloc__return", pid);
    ASSERT_EQ(m.size(), 1u);
    ASSERT_EQ(mr.size(), 1u);
    EXPECT_EQ(m[0].args["size"], "4096");
    auto name = cuda_error_name(std::stoll(mr[0].args["ret"]));
    ASSERT_TRUE(name) << "ret=" << mr[0].args["ret"] << " is no cudaError_t";
    EXPECT_NE(*name, "cudaSuccess") << "cudaMalloc succeeded with no driver on this machine?";
    auto l = named(events, "cudaLaunchKernel", pid);
    ASSERT_EQ(l.size(), 1u);
    auto& a = l[0].args;
    EXPECT_EQ(a["func"], "0x2222");
    EXPECT_EQ(a["gridDim_x"], "2");
    EXPECT_EQ(a["gridDim_y"], "3");  // bits 32..63 of the register holding x and y
    EXPECT_EQ(a["gridDim_z"], "4");
    EXPECT_EQ(a["blockDim_x"], "5");
    EXPECT_EQ(a["blockDim_y"], "6");
    EXPECT_EQ(a["blockDim_z"], "7");
    EXPECT_EQ(a["sharedMem"], "64");
    EXPECT_EQ(a["stream"], "0x7777");
}
