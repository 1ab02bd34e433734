#include "doctor.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "cleanup.hpp"
#include "procfs.hpp"
#include "tracefs_cxx.h"

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
    f.push_back(
        {"tracefs", mounted ? "ok" : "fail", mounted ? dir : "not mounted",
         mounted ? "trace events can be recorded" : "mount it as root: mount -t tracefs nodev /sys/kernel/tracing"});

    std::string lockdown = first_line("/sys/kernel/security/lockdown");
    bool locked = lockdown.find("[none]") == std::string::npos && !lockdown.empty();
    f.push_back({"lockdown", lockdown.empty() ? "info" : (locked ? "warn" : "ok"),
                 lockdown.empty() ? "unknown" : lockdown,
                 lockdown.empty() ? "cannot tell (no /sys/kernel/security/lockdown)"
                 : locked         ? "kernel lockdown can refuse tracing features"
                                  : "no lockdown restrictions"});

    if (mounted) {
        std::string base = dir;
        std::string tracers = first_line(base + "/available_tracers");
        bool has_fgraph = tracers.find("function_graph") != std::string::npos;
        f.push_back({"tracers", has_fgraph ? "ok" : "warn", tracers,
                     has_fgraph ? "--module (function_graph) is possible"
                                : "no function_graph: --module cannot work; events and the kernel log still do"});
        // The function tracer can exist and still be refused (EPERM on our CI kernels).
        int fd = ::open((base + "/set_ftrace_filter").c_str(), O_RDONLY | O_CLOEXEC);
        int err = errno;
        if (fd >= 0) ::close(fd);
        f.push_back({"function_filters", fd >= 0 ? "ok" : "fail",
                     fd >= 0 ? "set_ftrace_filter readable" : fmt::format("set_ftrace_filter: {}", std::strerror(err)),
                     fd >= 0 ? "module filters (:mod:) can be set"
                             : "this kernel refuses function tracing: --module cannot work here"});
        if (root) {
            std::string name = fmt::format("nvtrace-{}", ::getpid());
            if (tracefs_instance* inst = tracefs_instance_create(name.c_str())) {
                int sz = 0;
                char* t = tracefs_instance_file_read(inst, "available_tracers", &sz);
                std::string in_inst = t ? trim(std::string(t, static_cast<std::size_t>(sz))) : "";
                std::free(t);
                bool ok = in_inst.find("function_graph") != std::string::npos;
                f.push_back({"function_graph_in_instance", ok ? "ok" : "info", in_inst,
                             ok ? "function_graph runs in nvtrace's private instance"
                                : "function_graph needs the top level: nvtrace journals and restores it"});
                tracefs_instance_destroy(inst);
                tracefs_instance_free(inst);
            } else {
                f.push_back({"instances", "fail", std::strerror(errno), "nvtrace run needs a private instance"});
            }
        }
        bool sys = ::access((base + "/events/syscalls/sys_enter_ioctl").c_str(), F_OK) == 0;
        f.push_back({"syscall_events", sys ? "ok" : "fail", sys ? "syscalls:sys_enter_ioctl present" : "absent",
                     sys ? "ioctls are recorded"
                         : "no syscall tracepoints (CONFIG_FTRACE_SYSCALLS): nvtrace run cannot record ioctls"});
        bool console = ::access((base + "/events/printk/console").c_str(), F_OK) == 0;
        f.push_back({"printk_console", console ? "ok" : "info", console ? "present" : "absent",
                     console ? "kernel-log lines can be recorded in the trace buffer"
                             : "kernel log comes from /dev/kmsg only"});
        bool xid = ::access((base + "/events/nvidia/nvidia_dev_xid").c_str(), F_OK) == 0;
        f.push_back({"nvidia_xid_event", xid ? "ok" : "info", xid ? "nvidia:nvidia_dev_xid present" : "absent",
                     xid ? "Xid errors can be recorded as events" : "Xids come from the kernel log"});
    }

    int kfd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int kerr = errno;
    if (kfd >= 0) ::close(kfd);
    f.push_back({"kmsg", kfd >= 0 ? "ok" : "warn", kfd >= 0 ? "/dev/kmsg readable" : std::strerror(kerr),
                 kfd >= 0 ? "kernel-log lines of the run are captured" : "no kernel log in reports"});

    std::vector<std::string> modules{"nvidia",         "nvidia_uvm", "nvidia_modeset", "nvidia_drm",
                                     "nvidia_peermem", "gdrdrv",     "vgem",           "null_blk"};
    for (const auto& m : extra_modules)
        if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.push_back(m);
    for (const auto& m : modules) {
        bool loaded = module_loaded(m);
        std::string v = first_line("/sys/module/" + m + "/version");
        std::string taint = first_line("/sys/module/" + m + "/taint");
        f.push_back(
            {"module:" + m, loaded ? "ok" : "info",
             loaded
                 ? fmt::format("loaded{}{}", v.empty() ? "" : " version " + v, taint.empty() ? "" : " taint " + taint)
                 : "not loaded",
             loaded ? fmt::format("--module {} can trace it", m) : fmt::format("--module {} needs it loaded", m)});
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
                     ok ? fmt::format("libcuda.so.1, CUDA {}.{}", ver / 1000, (ver % 1000) / 10) : "libcuda.so.1 found",
                     "CUDA programs can reach the driver"});
        ::dlclose(h);
    } else {
        f.push_back(
            {"cuda_driver", "info", "libcuda.so.1 not found", "CUDA programs fail with cudaErrorInsufficientDriver"});
    }

    auto owner = journal_owner();
    if (!owner) {
        f.push_back({"journal", "fail", owner.error().message, "inspect it by hand"});
    } else if (*owner) {
        bool alive = (*owner)->alive;
        f.push_back({"journal", alive ? "warn" : "fail",
                     fmt::format("/run/nvtrace/journal.json of pid {} ({})", (*owner)->pid, alive ? "running" : "gone"),
                     alive ? "another nvtrace run holds the top-level state"
                           : "a killed run left changes: run nvtrace cleanup"});
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
