// find_preload_library(): the NVTRACE_PRELOAD override and what it refuses.
#include "preload_path.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

namespace {

struct EnvGuard {
    EnvGuard() {
        if (const char* v = std::getenv("NVTRACE_PRELOAD")) old = v;
    }
    ~EnvGuard() {
        if (old)
            setenv("NVTRACE_PRELOAD", old->c_str(), 1);
        else
            unsetenv("NVTRACE_PRELOAD");
    }
    std::optional<std::string> old;
};

TEST(PreloadPath, EnvironmentOverrideWins) {
    EnvGuard g;
    setenv("NVTRACE_PRELOAD", PRELOAD_LIB, 1);
    EXPECT_EQ(nvtrace::find_preload_library(), std::string(PRELOAD_LIB));
}

TEST(PreloadPath, EmptyOverrideMeansNone) {
    EnvGuard g;
    setenv("NVTRACE_PRELOAD", "", 1);
    EXPECT_FALSE(nvtrace::find_preload_library().has_value());
}

TEST(PreloadPath, MissingOrUnpreloadableFilesAreRefused) {
    EnvGuard g;
    setenv("NVTRACE_PRELOAD", "/nonexistent/libnvtrace_preload.so", 1);
    EXPECT_FALSE(nvtrace::find_preload_library().has_value());
    setenv("NVTRACE_PRELOAD", "/tmp", 1);  // not a regular file
    EXPECT_FALSE(nvtrace::find_preload_library().has_value());
}

TEST(PreloadPath, WithoutOverrideLooksBesideTheExecutable) {
    EnvGuard g;
    unsetenv("NVTRACE_PRELOAD");
    // This test binary lives in tests/preload/, where no library is: nullopt, and no crash. (The nvtrace
    // binary and the library share build/tracer/, which the live tests exercise.)
    auto p = nvtrace::find_preload_library();
    if (p) {
        EXPECT_NE(p->find("libnvtrace_preload.so"), std::string::npos);
    }
}

}  // namespace
