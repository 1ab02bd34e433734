#include "doctor.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cleanup.hpp"
#include "procfs.hpp"
#include "scenario.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"

namespace nvtrace::tracer {

namespace {

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    return s;
}

std::string first_line(const std::string& path) {
    auto t = read_file(path);
    return t ? trim(t->substr(0, t->find('\n'))) : std::string();
}

// EACCES/EPERM for a user that is not root say nothing about the kernel: the finding says it could not look.
bool denied(int err) {
    return err == EACCES || err == EPERM;
}

const char* const kAskRoot = "run `sudo nvtrace doctor` to know";

// The first line of a file, or the errno of the failed open/read (0 when it was read).
struct Line {
    std::string text;
    int err = 0;
};

Line read_line(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {{}, errno};
    std::string text;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.find('\n') == std::string::npos)
        text.append(buf, static_cast<std::size_t>(n));
    int err = n < 0 ? errno : 0;
    ::close(fd);
    if (err) return {{}, err};
    return {trim(text.substr(0, text.find('\n'))), 0};
}

// Whether a tracefs path exists: 1 yes, 0 no, -1 this user may not look (EACCES/EPERM, in *err).
int exists(const std::string& path, int* err) {
    if (::access(path.c_str(), F_OK) == 0) return 1;
    *err = errno;
    return denied(*err) ? -1 : 0;
}

std::string kernel_release() {
    utsname u{};
    return ::uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
}

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix) {
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

}  // namespace

std::vector<Finding> doctor(const std::vector<std::string>& extra_modules) {
    std::vector<Finding> f;
    bool root = ::geteuid() == 0;
    f.push_back({"root", root ? "ok" : "fail", root ? "yes" : fmt::format("no (euid {})", ::geteuid()),
                 root ? "nvtrace run can configure tracefs" : "nvtrace run needs root (sudo)"});

    const char* dir = nullptr;
    bool mounted = tracefs_tracing_dir_is_mounted(false, &dir) == 1;
    // nvtrace run creates instances/nvtrace-<pid> and writes control files: the directory must be writable.
    bool writable = mounted && ::access((std::string(dir) + "/instances").c_str(), W_OK) == 0;
    f.push_back({"tracefs",
                 !mounted   ? "fail"
                 : writable ? "ok"
                            : "fail",
                 mounted ? fmt::format("{} ({})", dir, writable ? "writable" : "not writable") : "not mounted",
                 !mounted   ? "nvtrace run cannot trace: mount it as root: mount -t tracefs nodev /sys/kernel/tracing"
                 : writable ? "nvtrace run can create its private instance and enable events"
                            : "nvtrace run cannot configure tracing as this user: run it as root"});

    Line lock = read_line("/sys/kernel/security/lockdown");
    const std::string& lockdown = lock.text;
    bool locked = lockdown.find("[none]") == std::string::npos && !lockdown.empty();
    if (lockdown.empty() && denied(lock.err) && !root) {
        f.push_back({"lockdown", "info", fmt::format("not readable without root ({})", std::strerror(lock.err)),
                     fmt::format("cannot tell without root whether kernel lockdown restricts tracing: {}", kAskRoot)});
    } else {
        f.push_back({"lockdown", lockdown.empty() ? "info" : (locked ? "warn" : "ok"),
                     lockdown.empty() ? "unknown" : lockdown,
                     lockdown.empty() ? "cannot tell (no /sys/kernel/security/lockdown)"
                     : locked         ? "kernel lockdown can refuse tracing features"
                                      : "no lockdown restrictions"});
    }

    // Whether --module, --filter and --graph-function can work: function_graph exists and filters are accepted.
    bool fgraph_usable = false;
    // Without root tracefs (mode 0700) cannot be read, and unmounted it cannot be looked at: whether function_graph
    // works is then unknown, not refused. `know`: what would tell.
    bool fgraph_unknown = !mounted;
    const std::string unknown_since = mounted ? fmt::format("needs root to tell: {}", kAskRoot)
                                              : std::string("is unknown: tracefs is not mounted (see tracefs)");
    if (mounted) {
        std::string base = dir;
        Line tl = read_line(base + "/available_tracers");
        const std::string& tracers = tl.text;
        bool has_fgraph = tracers.find("function_graph") != std::string::npos;
        if (denied(tl.err) && !root) {
            fgraph_unknown = true;
            f.push_back({"tracers", "info",
                         fmt::format("available_tracers not readable without root ({})", std::strerror(tl.err)),
                         fmt::format("cannot tell without root whether this kernel has function_graph (--module, "
                                     "--filter, --graph-function): {}",
                                     kAskRoot)});
        } else {
            f.push_back({"tracers", has_fgraph ? "ok" : "warn", tracers,
                         has_fgraph ? "--module, --filter and --graph-function can use function_graph"
                                    : "no function_graph in this kernel: --module, --filter and --graph-function "
                                      "cannot work; ioctl events and the kernel log still do"});
        }
        // The function tracer can exist and still be refused (EPERM on our CI kernels, as root).
        int fd = ::open((base + "/set_ftrace_filter").c_str(), O_RDONLY | O_CLOEXEC);
        int err = errno;
        if (fd >= 0) ::close(fd);
        if (fd < 0 && denied(err) && !root) {
            fgraph_unknown = true;
            f.push_back(
                {"function_filters", "info",
                 fmt::format("set_ftrace_filter not readable without root ({})", std::strerror(err)),
                 fmt::format("cannot tell without root whether this kernel allows function tracing: {}", kAskRoot)});
        } else {
            f.push_back(
                {"function_filters", fd >= 0 ? "ok" : "fail",
                 fd >= 0 ? "set_ftrace_filter readable" : fmt::format("set_ftrace_filter: {}", std::strerror(err)),
                 fd >= 0 ? "function filters (:mod:M, --filter) can be set and counted before the run"
                         : "this kernel refuses function tracing: --module, --filter and --graph-function "
                           "cannot work here"});
        }
        fgraph_usable = has_fgraph && fd >= 0;
        if (root) {
            std::string name = fmt::format("nvtrace-{}", ::getpid());
            if (tracefs_instance* inst = tracefs_instance_create(name.c_str())) {
                int sz = 0;
                char* t = tracefs_instance_file_read(inst, "available_tracers", &sz);
                std::string in_inst = t ? trim(std::string(t, static_cast<std::size_t>(sz))) : "";
                std::free(t);
                bool ok = in_inst.find("function_graph") != std::string::npos;
                f.push_back({"function_graph_in_instance",
                             ok           ? "ok"
                             : has_fgraph ? "info"
                                          : "fail",
                             in_inst,
                             ok ? "function_graph runs in nvtrace's private instance: the top level is not touched"
                             : has_fgraph
                                 ? "instances refuse function_graph: nvtrace run uses the top level, journals "
                                   "every file it changes in /run/nvtrace/journal.json and restores them; one such "
                                   "run at a time"
                                 : "function_graph is available neither in an instance nor at the top level: "
                                   "--module cannot work here"});
                tracefs_instance_destroy(inst);
                tracefs_instance_free(inst);
            } else {
                f.push_back({"instances", "fail", std::strerror(errno), "nvtrace run needs a private instance"});
            }
        }
        // An event this user may not look for: unknown, never "absent".
        int eerr = 0;
        auto unknown_event = [&](const char* id, const char* event) {
            f.push_back({id, "info", fmt::format("{} not visible without root ({})", event, std::strerror(eerr)),
                         fmt::format("cannot tell without root whether this kernel has {}: {}", event, kAskRoot)});
        };
        int sys = exists(base + "/events/syscalls/sys_enter_ioctl", &eerr);
        if (sys < 0 && !root) {
            unknown_event("syscall_events", "syscalls:sys_enter_ioctl");
        } else {
            f.push_back(
                {"syscall_events", sys > 0 ? "ok" : "fail", sys > 0 ? "syscalls:sys_enter_ioctl present" : "absent",
                 sys > 0 ? "ioctls are recorded"
                         : "no syscall tracepoints (CONFIG_FTRACE_SYSCALLS): nvtrace run cannot record ioctls"});
        }
        int console = exists(base + "/events/printk/console", &eerr);
        if (console < 0 && !root) {
            unknown_event("printk_console", "printk:console");
        } else {
            f.push_back({"printk_console", console > 0 ? "ok" : "info", console > 0 ? "present" : "absent",
                         console > 0 ? "--event printk:console puts kernel-log lines in the trace buffer (opt-in: off "
                                       "by default, it panicked Debian's 6.1 kernel with function_graph); without it "
                                       "the kernel log comes from /dev/kmsg"
                                     : "--event printk:console cannot work; the kernel log comes from /dev/kmsg"});
        }
        int xid = exists(base + "/events/nvidia/nvidia_dev_xid", &eerr);
        if (xid < 0 && !root) {
            unknown_event("nvidia_xid_event", "nvidia:nvidia_dev_xid");
        } else {
            f.push_back({"nvidia_xid_event", xid > 0 ? "ok" : "info",
                         xid > 0 ? "nvidia:nvidia_dev_xid present" : "absent",
                         xid > 0 ? "nvtrace run enables it: Xid errors are recorded as trace events"
                                 : "Xids come from the kernel log only"});
        }
    }

    int kfd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int kerr = errno;
    if (kfd >= 0) ::close(kfd);
    if (kfd < 0 && denied(kerr) && !root) {
        // dmesg_restrict: nvtrace run reads /dev/kmsg as root.
        f.push_back(
            {"kmsg", "info", fmt::format("/dev/kmsg not readable without root ({})", std::strerror(kerr)),
             fmt::format("cannot tell without root whether the run's kernel-log lines can be captured: {}", kAskRoot)});
    } else {
        f.push_back({"kmsg", kfd >= 0 ? "ok" : "warn", kfd >= 0 ? "/dev/kmsg readable" : std::strerror(kerr),
                     kfd >= 0 ? "kernel-log lines of the run are captured" : "no kernel log in reports"});
    }

    std::vector<std::string> modules{"nvidia",         "nvidia_uvm", "nvidia_modeset", "nvidia_drm",
                                     "nvidia_peermem", "gdrdrv",     "vgem",           "null_blk"};
    for (const auto& m : extra_modules)
        if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.push_back(m);
    for (const auto& m : modules) {
        std::string name = m;
        for (char& c : name)
            if (c == '-') c = '_';
        const std::string sys = "/sys/module/" + name;
        bool loaded = module_loaded(name);
        std::string id = "module:" + m;
        if (!loaded) {
            // Built-in modules have /sys/module/M (when they have parameters) but no initstate.
            bool builtin = module_state(name) == ModuleState::builtin;
            f.push_back({id, "info", builtin ? "built into the kernel" : "not loaded",
                         builtin ? fmt::format("--module {} matches nothing (built-in functions carry no [module]); "
                                               "use --filter GLOB",
                                               m)
                         : fgraph_usable
                             ? fmt::format("--module {} is refused until it is loaded (modprobe {}), or armed "
                                           "with --future",
                                           m, m)
                         : fgraph_unknown
                             ? fmt::format("--module {} needs the module loaded (modprobe {}) or armed with --future; "
                                           "whether function_graph works here {}",
                                           m, m, unknown_since)
                             : fmt::format("--module {} cannot work here (no usable function_graph); where it can, it "
                                           "needs the module loaded (modprobe {}) or armed with --future",
                                           m, m)});
            continue;
        }
        // In-tree modules have no version file (no MODULE_VERSION): they are the running kernel's.
        std::string v = first_line(sys + "/version");
        std::string src = first_line(sys + "/srcversion");
        std::string taint = first_line(sys + "/taint");
        std::string value =
            fmt::format("loaded, version {}{}{}", v.empty() ? fmt::format("of the kernel ({})", kernel_release()) : v,
                        src.empty() ? "" : ", srcversion " + src, taint.empty() ? "" : ", taint " + taint);
        if (fgraph_unknown) {
            f.push_back({id, "info", value, fmt::format("whether --module {} can trace it {}", m, unknown_since)});
            continue;
        }
        if (!fgraph_usable) {
            f.push_back({id, "warn", value, fmt::format("--module {} cannot work here (no usable function_graph)", m)});
            continue;
        }
        // The same dry-run count nvtrace run makes before it changes anything.
        std::size_t n = count_matches(nullptr, name.c_str());
        value += fmt::format(", {} traceable functions", n);
        f.push_back(
            {id, n > 0 ? "ok" : "fail", value,
             n > 0 ? fmt::format("--module {} traces these functions with function_graph", m)
                   : fmt::format("--module {} is refused: no function of it is in available_filter_functions", m)});
    }
    std::string banner = first_line("/proc/driver/nvidia/version");
    if (!banner.empty()) {
        bool open = banner.find("Open Kernel Module") != std::string::npos;
        f.push_back({"nvidia_driver", "ok", banner,
                     open ? "open kernel modules: function names are the open sources'"
                          : "proprietary modules: only the OS layer (nv_*, nvidia_*) has readable symbols"});
    } else {
        f.push_back({"nvidia_driver", "info", "no /proc/driver/nvidia/version", "CUDA scenarios cannot run here"});
    }
    auto nodes = list_dir("/dev", "nvidia");
    auto dri = list_dir("/dev/dri", "");
    auto accel = list_dir("/dev/accel", "");
    nodes.insert(nodes.end(), dri.begin(), dri.end());
    nodes.insert(nodes.end(), accel.begin(), accel.end());
    f.push_back({"device_nodes", nodes.empty() ? "info" : "ok",
                 nodes.empty() ? "none" : fmt::format("{}", fmt::join(nodes, " ")),
                 nodes.empty() ? "no GPU or DRM device nodes" : "driver device nodes present"});

    // The CUDA driver library (libcuda.so.1, installed with the driver) and its version.
    if (void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
        using GetVersion = int (*)(int*);
        int ver = 0;
        auto fn = reinterpret_cast<GetVersion>(::dlsym(h, "cuDriverGetVersion"));
        bool ok = fn && fn(&ver) == 0;
        f.push_back({"cuda_driver", ok ? "ok" : "warn",
                     ok ? fmt::format("libcuda.so.1, CUDA {}.{}", ver / 1000, (ver % 1000) / 10)
                        : "libcuda.so.1 loads, cuDriverGetVersion failed",
                     ok ? "CUDA programs (the CUDA scenarios) can reach the driver"
                        : "CUDA programs may fail before they reach the driver"});
        ::dlclose(h);
    } else {
        f.push_back(
            {"cuda_driver", "info", "libcuda.so.1 not found", "CUDA programs fail with cudaErrorInsufficientDriver"});
    }

    auto owner = journal_owner();
    if (!owner) {
        f.push_back({"journal", "fail", owner.error().message,
                     "a top-level run (function_graph) refuses to start until it is inspected by hand"});
    } else if (*owner) {
        bool alive = (*owner)->alive;
        f.push_back({"journal", alive ? "warn" : "fail",
                     fmt::format("{} of pid {} ({})", kJournalPath, (*owner)->pid, alive ? "running" : "gone"),
                     alive ? "another nvtrace run holds the top-level state: a top-level run waits for it (or --force)"
                           : "a killed run left top-level changes: a top-level run is refused until `nvtrace cleanup` "
                             "restores them"});
    } else {
        f.push_back({"journal", "ok", "none", "no run holds or left the top-level state journal"});
    }
    // What `nvtrace cleanup` would do (its own dry run): instances, probes and processes a killed run left.
    if (mounted && ::geteuid() == 0) {
        if (auto dry = cleanup(true); !dry) {
            f.push_back({"leftovers", "warn", dry.error().message, "could not look for what a killed run left"});
        } else if (dry->actions.empty()) {
            f.push_back({"leftovers", "ok", "none", "no killed run left an instance, probe or journal to remove"});
        } else {
            std::string what;
            for (const auto& a : dry->actions)
                what += (what.empty() ? "" : "; ") + a.what;
            f.push_back({"leftovers", "fail", what, "a killed run left these: `nvtrace cleanup` removes them"});
        }
    }
    return f;
}

nlohmann::json to_json(const std::vector<Finding>& findings) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& x : findings)
        j.push_back({{"id", x.id}, {"status", x.status}, {"value", x.value}, {"meaning", x.meaning}});
    return {{"schema", "nvtrace.doctor/1"}, {"findings", j}};
}

}  // namespace nvtrace::tracer
