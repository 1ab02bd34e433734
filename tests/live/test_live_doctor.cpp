// Tier 2: `nvtrace doctor` on this machine's kernel, each finding checked against what the test reads itself
// (docs/doctor.md); and printk:console staying off unless asked for (`nvtrace run`).
// Needs root and tracefs; skips with the reason elsewhere, and fails instead of skipping when CI=true.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;
using nlohmann::json;

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\n'))
        line.pop_back();
    return line;
}

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

std::vector<std::string> entries(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string n = e->d_name; n.rfind(prefix, 0) == 0 && n != "." && n != "..")
                out.push_back(dir + "/" + n);
        ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The findings by id; fails the test on a shape error (schema, fields, types, status values, duplicate ids).
std::map<std::string, json> findings_by_id(const std::string& text) {
    std::map<std::string, json> by_id;
    json doc = json::parse(text, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << "doctor --json is not JSON:\n" << text;
    if (doc.is_discarded()) return by_id;
    EXPECT_EQ(doc.value("schema", ""), "nvtrace.doctor/1");
    EXPECT_TRUE(doc.contains("findings") && doc["findings"].is_array()) << text;
    if (!doc.contains("findings") || !doc["findings"].is_array()) return by_id;
    const std::set<std::string> statuses{"ok", "warn", "fail", "info"};
    for (const json& f : doc["findings"]) {
        EXPECT_TRUE(f.is_object() && f.size() == 4) << f.dump();
        for (const char* key : {"id", "status", "value", "meaning"})
            EXPECT_TRUE(f.contains(key) && f[key].is_string()) << key << " in " << f.dump();
        if (!f.contains("id") || !f["id"].is_string()) continue;
        const std::string id = f["id"];
        EXPECT_TRUE(statuses.count(f.value("status", ""))) << f.dump();
        EXPECT_FALSE(f.value("meaning", "").empty()) << "every line says what it means for nvtrace run: " << f.dump();
        EXPECT_FALSE(by_id.count(id)) << "duplicate id " << id;
        by_id[id] = f;
    }
    return by_id;
}

std::string kernel_release() {
    utsname u{};
    return ::uname(&u) == 0 ? u.release : "";
}

}  // namespace

TEST(LiveDoctor, JsonFindingsMatchWhatTheTestReadsItself) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    Ran r = run({NVTRACE_BIN, "doctor", "--json"});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(tracefs_snapshot(), before) << "doctor must remove its probe instance";
    auto f = findings_by_id(r.out);

    for (const char* id : {"root",
                           "tracefs",
                           "lockdown",
                           "tracers",
                           "function_filters",
                           "function_graph_in_instance",
                           "syscall_events",
                           "printk_console",
                           "nvidia_xid_event",
                           "kmsg",
                           "module:nvidia",
                           "module:nvidia_uvm",
                           "module:nvidia_modeset",
                           "module:nvidia_drm",
                           "module:nvidia_peermem",
                           "module:gdrdrv",
                           "module:vgem",
                           "module:null_blk",
                           "nvidia_driver",
                           "device_nodes",
                           "cuda_driver",
                           "journal",
                           "leftovers"})
        EXPECT_TRUE(f.count(id)) << "no finding " << id << " in\n" << r.out;

    // REQUIRE_LIVE() established root and a writable tracefs at kTracing.
    EXPECT_EQ(f["root"].value("status", ""), "ok");
    EXPECT_EQ(f["tracefs"].value("status", ""), "ok");
    EXPECT_EQ(f["tracefs"].value("value", ""), kTracing + " (writable)");

    const std::string lockdown = first_line("/sys/kernel/security/lockdown");
    EXPECT_EQ(f["lockdown"].value("value", ""), lockdown.empty() ? "unknown" : lockdown);

    const std::string tracers = first_line(kTracing + "/available_tracers");
    const bool has_fgraph = tracers.find("function_graph") != std::string::npos;
    EXPECT_EQ(f["tracers"].value("value", ""), tracers);
    EXPECT_EQ(f["tracers"].value("status", ""), has_fgraph ? "ok" : "warn");

    const int fd = ::open((kTracing + "/set_ftrace_filter").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    EXPECT_EQ(f["function_filters"].value("status", ""), fd >= 0 ? "ok" : "fail");
    const bool fgraph_usable = has_fgraph && fd >= 0;

    // Where function_graph is not even at the top level, no instance has it: --module cannot work.
    const json& in_instance = f["function_graph_in_instance"];
    if (!has_fgraph) {
        EXPECT_EQ(in_instance.value("status", ""), "fail") << in_instance.dump();
        EXPECT_EQ(in_instance.value("value", "").find("function_graph"), std::string::npos);
        EXPECT_NE(in_instance.value("meaning", "").find("--module cannot work"), std::string::npos);
    } else {
        const bool ok = in_instance.value("value", "").find("function_graph") != std::string::npos;
        EXPECT_EQ(in_instance.value("status", ""), ok ? "ok" : "info") << in_instance.dump();
    }

    EXPECT_EQ(f["syscall_events"].value("status", ""),
              exists(kTracing + "/events/syscalls/sys_enter_ioctl") ? "ok" : "fail");
    const bool console = exists(kTracing + "/events/printk/console");
    EXPECT_EQ(f["printk_console"].value("value", ""), console ? "present" : "absent");
    EXPECT_NE(f["printk_console"].value("meaning", "").find("--event printk:console"), std::string::npos)
        << "the line says how to opt in";
    EXPECT_EQ(f["nvidia_xid_event"].value("status", ""),
              exists(kTracing + "/events/nvidia/nvidia_dev_xid") ? "ok" : "info");

    const int kfd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (kfd >= 0) ::close(kfd);
    EXPECT_EQ(f["kmsg"].value("status", ""), kfd >= 0 ? "ok" : "warn");

    for (const char* m :
         {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "gdrdrv", "vgem", "null_blk"}) {
        const json& mf = f[std::string("module:") + m];
        const std::string sys = std::string("/sys/module/") + m;
        const std::string value = mf.value("value", "");
        if (first_line(sys + "/initstate") == "live") {
            const std::string version = first_line(sys + "/version");
            EXPECT_EQ(
                value.rfind(
                    "loaded, version " + (version.empty() ? "of the kernel (" + kernel_release() + ")" : version), 0),
                0u)
                << mf.dump();
            if (!fgraph_usable) {
                EXPECT_EQ(mf.value("status", ""), "warn") << mf.dump();
            }
        } else {
            EXPECT_EQ(value, exists(sys) ? "built into the kernel" : "not loaded") << mf.dump();
            EXPECT_EQ(mf.value("status", ""), "info") << mf.dump();
        }
    }

    const std::string banner = first_line("/proc/driver/nvidia/version");
    EXPECT_EQ(f["nvidia_driver"].value("value", ""), banner.empty() ? "no /proc/driver/nvidia/version" : banner);

    std::vector<std::string> nodes = entries("/dev", "nvidia");
    for (const char* d : {"/dev/dri", "/dev/accel"})
        for (auto& n : entries(d, ""))
            nodes.push_back(n);
    std::string joined;
    for (const auto& n : nodes)
        joined += (joined.empty() ? "" : " ") + n;
    EXPECT_EQ(f["device_nodes"].value("value", ""), nodes.empty() ? "none" : joined);

    if (void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
        ::dlclose(h);
        EXPECT_NE(f["cuda_driver"].value("value", "").find("libcuda.so.1"), std::string::npos);
    } else {
        EXPECT_EQ(f["cuda_driver"].value("value", ""), "libcuda.so.1 not found");
    }

    // The host never runs function_graph at the top level, so no journal unless a killed run left one.
    if (!exists("/run/nvtrace/journal.json")) {
        EXPECT_EQ(f["journal"].value("status", ""), "ok");
        EXPECT_EQ(f["journal"].value("value", ""), "none");
    }
}

// A SIGKILLed run leaves its instance (and, once it started, its program): doctor said
// "nothing for nvtrace cleanup to restore" while cleanup then removed the instance. It names them now.
TEST(LiveDoctor, LeftoversOfAKilledRunAreNamedUntilCleanup) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    pid_t pid = start_sleeping_run(NVTRACE_BIN, temp_dir());
    ASSERT_GT(pid, 0) << "the run never created its instance";
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    const std::string inst = "nvtrace-" + std::to_string(pid);
    auto f = findings_by_id(run({NVTRACE_BIN, "doctor", "--json"}).out);
    EXPECT_EQ(f["leftovers"].value("status", ""), "fail");
    EXPECT_NE(f["leftovers"].value("value", "").find("remove instance " + inst), std::string::npos)
        << f["leftovers"].dump();
    Ran c = run({NVTRACE_BIN, "cleanup"});
    EXPECT_EQ(c.rc, 0) << c.out << c.err;
    f = findings_by_id(run({NVTRACE_BIN, "doctor", "--json"}).out);
    EXPECT_EQ(f["leftovers"].value("status", ""), "ok") << f["leftovers"].dump();
    EXPECT_EQ(tracefs_snapshot(), before);
}

TEST(LiveDoctor, TextOutputHasEveryFindingWithItsMeaning) {
    REQUIRE_LIVE();
    Ran j = run({NVTRACE_BIN, "doctor", "--json"});
    Ran t = run({NVTRACE_BIN, "doctor"});
    ASSERT_EQ(t.rc, 0) << t.err;
    auto f = findings_by_id(j.out);
    ASSERT_FALSE(f.empty());
    std::size_t arrows = 0;
    for (std::size_t at = 0; (at = t.out.find("\n      -> ", at)) != std::string::npos; ++at)
        ++arrows;
    EXPECT_EQ(arrows, f.size()) << t.out;
    for (const auto& [id, finding] : f) {
        EXPECT_NE(t.out.find(" " + id + " "), std::string::npos) << id << " missing from\n" << t.out;
        EXPECT_NE(t.out.find("-> " + finding.value("meaning", "") + "\n"), std::string::npos) << id;
    }
}

TEST(LiveDoctor, ExtraModuleThatIsNotLoadedSaysHowToLoadOrArmIt) {
    REQUIRE_LIVE();
    Ran r = run({NVTRACE_BIN, "doctor", "--json", "--module", "nvtrace_no_such_module"});
    ASSERT_EQ(r.rc, 0) << r.err;
    auto f = findings_by_id(r.out);
    ASSERT_TRUE(f.count("module:nvtrace_no_such_module")) << r.out;
    const json& m = f["module:nvtrace_no_such_module"];
    EXPECT_EQ(m.value("status", ""), "info");
    EXPECT_EQ(m.value("value", ""), "not loaded");
    EXPECT_NE(m.value("meaning", "").find("modprobe nvtrace_no_such_module"), std::string::npos) << m.dump();
    EXPECT_NE(m.value("meaning", "").find("--future"), std::string::npos) << m.dump();
}

// Run as a user that is not root, tracefs (mode 0700), set_ftrace_filter and /dev/kmsg answer EACCES/EPERM: that
// is a permission, not a kernel limit. Doctor said "this kernel refuses function tracing", "no syscall
// tracepoints (CONFIG_FTRACE_SYSCALLS)" and printed an empty tracers line; each must say it could not look and
// that `sudo nvtrace doctor` tells.
TEST(LiveDoctor, UnprivilegedUserIsToldToRunWithSudoNotGivenKernelLimits) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
    const std::vector<std::string> as_nobody{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    auto argv = as_nobody;
    for (const char* a : {NVTRACE_BIN, "doctor", "--json"})
        argv.push_back(a);
    Ran r = run(argv);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto f = findings_by_id(r.out);
    ASSERT_TRUE(f.count("root")) << r.out;
    EXPECT_EQ(f["root"].value("value", ""), "no (euid 65534)");

    // What a kernel limit reads like in doctor's output (the root-only wording of each finding).
    const std::vector<std::string> kernel_limits{
        "this kernel refuses",      "CONFIG_FTRACE_SYSCALLS", "no function_graph in this kernel",
        "no usable function_graph", "cannot record ioctls",   "--event printk:console cannot work",
        "no kernel log in reports"};
    for (const auto& [id, finding] : f) {
        EXPECT_FALSE(finding.value("value", "").empty()) << id << ": " << finding.dump();
        for (const auto& claim : kernel_limits)
            EXPECT_EQ(finding.value("meaning", "").find(claim), std::string::npos)
                << id << " claims a kernel limit as an unprivileged user: " << finding.dump();
    }

    // Where this user cannot even enter tracefs (the default 0700), each tracefs finding says why and what to do.
    struct stat st {};
    ASSERT_EQ(::stat(kTracing.c_str(), &st), 0);
    if ((st.st_mode & S_IXOTH) == 0) {
        for (const char* id : {"tracers", "function_filters", "syscall_events", "printk_console", "nvidia_xid_event"}) {
            ASSERT_TRUE(f.count(id)) << id << " missing from\n" << r.out;
            EXPECT_EQ(f[id].value("status", ""), "info") << f[id].dump();
            EXPECT_NE(f[id].value("value", "").find("without root"), std::string::npos) << f[id].dump();
            EXPECT_NE(f[id].value("meaning", "").find("sudo nvtrace doctor"), std::string::npos) << f[id].dump();
        }
    }

    // The text output carries the same meanings.
    argv = as_nobody;
    argv.push_back(NVTRACE_BIN);
    argv.push_back("doctor");
    Ran t = run(argv);
    ASSERT_EQ(t.rc, 0) << t.err;
    for (const auto& claim : kernel_limits)
        EXPECT_EQ(t.out.find(claim), std::string::npos) << claim << " in\n" << t.out;
}

// With tracefs not mounted, doctor cannot look at the tracers, yet every --module line said "cannot work here (no
// usable function_graph)", a kernel limit it had not seen (fresh user). Run in a mount namespace of its own, where
// tracefs is unmounted: this machine's mounts are not changed.
TEST(LiveDoctor, TracefsNotMountedLeavesFunctionGraphUnknownNotRefused) {
    REQUIRE_LIVE();
    if (::access("/usr/bin/unshare", X_OK) != 0) GTEST_SKIP() << "needs unshare (util-linux)";
    const std::string script =
        fmt::format("umount {} 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; exec {} doctor --json",
                    kTracing, NVTRACE_BIN);
    Ran r = run({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script});
    ASSERT_EQ(r.rc, 0) << r.err;
    auto f = findings_by_id(r.out);
    ASSERT_TRUE(f.count("tracefs")) << r.out;
    ASSERT_EQ(f["tracefs"].value("value", ""), "not mounted") << "the namespace still has tracefs:\n" << r.out;
    for (const char* id : {"module:nvidia", "module:vgem", "module:null_blk"}) {
        ASSERT_TRUE(f.count(id)) << id << " missing from\n" << r.out;
        const std::string meaning = f[id].value("meaning", "");
        EXPECT_EQ(meaning.find("cannot work here"), std::string::npos) << f[id].dump();
        EXPECT_TRUE(meaning.find("tracefs is not mounted") != std::string::npos ||
                    meaning.find("built-in functions") != std::string::npos)
            << f[id].dump();
    }
    EXPECT_EQ(first_line(kTracing + "/tracing_on").empty(), false) << "tracefs must still be mounted here";
}

// printk:console is opt-in: with it on, a printk from an idle CPU panicked Debian's 6.1 kernel in the qemu
// guest (function_graph at the top level). The program reads its own instance's set_event while it runs: the
// run's events are there, printk:console is not, and meta.json says so. --event adds events to the same list,
// so the check can see one when it is there.
TEST(LiveRun, PrintkConsoleIsNotEnabledWithoutEventPrintkConsole) {
    REQUIRE_LIVE();
    auto before = tracefs_snapshot();
    // The program's parent is nvtrace, whose pid names the instance.
    const std::string show = "cat " + kTracing + "/instances/nvtrace-$PPID/set_event";
    std::string out = temp_dir();
    Ran plain = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--out", out, "--", "/bin/sh", "-c", show});
    ASSERT_EQ(plain.rc, 0) << plain.err;
    EXPECT_NE(plain.out.find("syscalls:sys_enter_ioctl"), std::string::npos) << plain.out;
    EXPECT_EQ(plain.out.find("printk:console"), std::string::npos) << plain.out;
    EXPECT_EQ(load_json(out + "/meta.json").value("printk_console", true), false);

    std::string out2 = temp_dir();
    Ran with = run({NVTRACE_BIN, "run", "-q", "--no-preload", "--event", "sched:sched_process_exec", "--out", out2,
                    "--", "/bin/sh", "-c", show});
    ASSERT_EQ(with.rc, 0) << with.err;
    EXPECT_NE(with.out.find("sched:sched_process_exec"), std::string::npos) << with.out;
    EXPECT_EQ(with.out.find("printk:console"), std::string::npos) << with.out;
    EXPECT_EQ(tracefs_snapshot(), before);
}
