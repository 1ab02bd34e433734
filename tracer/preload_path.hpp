// preload_path.hpp: where nvtrace finds libnvtrace_preload.so (docs/preload.md).
#pragma once

#include <optional>
#include <string>

namespace nvtrace {

inline constexpr const char* kPreloadLibraryName = "libnvtrace_preload.so";

// The preload library to inject with LD_PRELOAD: $NVTRACE_PRELOAD when set (an empty value means none), else
// libnvtrace_preload.so next to the running executable (the build tree), else in ../lib/ beside it (the
// install tree: bin/nvtrace, lib/libnvtrace_preload.so). Returns an absolute path of a regular file the
// caller can read and that LD_PRELOAD can carry (no space or colon), or nullopt when there is none.
std::optional<std::string> find_preload_library();

}  // namespace nvtrace
