#include "procfs.hpp"

#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace nvtrace::tracer {

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::environment(fmt::format("cannot open {}: {}", path, std::strerror(errno))));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

namespace {
std::optional<std::string> first_line(const std::string& path) {
    auto t = read_file(path);
    if (!t) return std::nullopt;
    auto s = t->substr(0, t->find('\n'));
    return s;
}
}  // namespace

bool module_loaded(const std::string& module) {
    std::string name = module;
    for (char& c : name)
        if (c == '-') c = '_';
    std::ifstream f("/sys/module/" + name + "/initstate");
    std::string state;
    if (f >> state) return state == "live";
    // Built-in modules have no initstate; /sys/module/M exists for them only with parameters.
    return false;
}

nlohmann::json environment_info(const std::vector<std::string>& modules) {
    nlohmann::json env;
    utsname u{};
    if (uname(&u) == 0) {
        env["kernel"] = u.release;
        env["kernel_version"] = u.version;
        env["machine"] = u.machine;
    }
    nlohmann::json mods = nlohmann::json::object();
    for (const auto& m : modules) {
        std::string name = m;
        for (char& c : name)
            if (c == '-') c = '_';
        nlohmann::json mj;
        mj["loaded"] = module_loaded(name);
        if (auto v = first_line("/sys/module/" + name + "/version")) mj["version"] = *v;
        if (auto v = first_line("/sys/module/" + name + "/srcversion")) mj["srcversion"] = *v;
        if (auto v = first_line("/sys/module/" + name + "/taint")) mj["taint"] = *v;
        mods[name] = mj;
    }
    env["modules"] = mods;
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build ..." (nv.c)
    if (auto v = first_line("/proc/driver/nvidia/version")) {
        env["nvidia_driver_banner"] = *v;
        env["nvidia_driver_flavour"] = v->find("Open Kernel Module") != std::string::npos ? "open" : "proprietary";
    } else {
        env["nvidia_driver_banner"] = nullptr;
    }
    return env;
}

}  // namespace nvtrace::tracer
