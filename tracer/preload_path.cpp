#include "preload_path.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace nvtrace {

namespace {

std::optional<std::string> usable(const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec) || ::access(p.c_str(), R_OK) != 0) return std::nullopt;
    auto abs = std::filesystem::absolute(p, ec);
    if (ec) return std::nullopt;
    std::string s = abs.lexically_normal().string();
    // ld.so splits LD_PRELOAD at spaces and colons: such a path cannot be preloaded.
    if (s.find_first_of(" :") != std::string::npos) return std::nullopt;
    return s;
}

}  // namespace

std::optional<std::string> find_preload_library() {
    if (const char* env = std::getenv("NVTRACE_PRELOAD")) {
        if (*env == '\0') return std::nullopt;
        return usable(env);
    }
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    auto dir = exe.parent_path();
    if (auto p = usable(dir / kPreloadLibraryName)) return p;
    return usable(dir / ".." / "lib" / kPreloadLibraryName);
}

}  // namespace nvtrace
