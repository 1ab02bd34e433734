// Who owns a leftover named after a pid (tracer/cleanup.hpp owner_running): a running nvtrace only when the pid is
// an nvtrace process that started before the leftover was made. A pid reused by another program, or by an nvtrace
// started later, was kept as "owner still running" (any process with that pid counted).
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cleanup.hpp"

using nvtrace::tracer::owner_running;
using nvtrace::tracer::ProcessIdentity;

namespace {
constexpr std::int64_t kSec = 1'000'000'000LL;
ProcessIdentity proc(std::string exe, std::string comm, std::int64_t start_s) {
    return ProcessIdentity{true, std::move(exe), std::move(comm), start_s * kSec};
}
}  // namespace

TEST(OwnerRunning, PidReusedByAnotherProgramOrALaterNvtraceIsNotTheOwner) {
    const std::int64_t made = 100 * kSec;
    // The run that made it: an nvtrace started before, an installed or a rebuilt (deleted) binary alike.
    EXPECT_TRUE(owner_running(42, proc("/usr/local/bin/nvtrace", "nvtrace", 99), made, 7));
    EXPECT_TRUE(owner_running(42, proc("/work/build/tracer/nvtrace", "nvtrace", 100), made, 7));
    // Without a time for the leftover (a probe group), the program alone decides.
    EXPECT_TRUE(owner_running(42, proc("/usr/bin/nvtrace", "nvtrace", 500), std::nullopt, 7));
    // The pid is another program's now: `sleep 300 & mkdir instances/nvtrace-$!`, and pid 1.
    EXPECT_FALSE(owner_running(42, proc("/usr/bin/sleep", "sleep", 99), made, 7));
    EXPECT_FALSE(owner_running(1, proc("/usr/lib/systemd/systemd", "systemd", 0), made, 7));
    EXPECT_FALSE(owner_running(42, proc("/usr/bin/nvtrace-wrapper", "nvtrace", 99), made, 7));
    // An nvtrace that started after the leftover was made reused the pid of the run that made it.
    EXPECT_FALSE(owner_running(42, proc("/usr/bin/nvtrace", "nvtrace", 101), made, 7));
    // The caller is never the owner (cleanup, doctor); a gone process or pid 0 neither.
    EXPECT_FALSE(owner_running(7, proc("/usr/bin/nvtrace", "nvtrace", 99), made, 7));
    EXPECT_FALSE(owner_running(42, ProcessIdentity{}, made, 7));
    EXPECT_FALSE(owner_running(0, proc("/usr/bin/nvtrace", "nvtrace", 99), made, 7));
    // An executable that cannot be read: its comm decides.
    EXPECT_TRUE(owner_running(42, proc("", "nvtrace", 99), made, 7));
    EXPECT_FALSE(owner_running(42, proc("", "sleep", 99), made, 7));
}

// /proc's answer for this process: its executable, comm, and a start before now and before a file made now.
TEST(OwnerRunning, ProcessIdentityOfThisProcessIsReadFromProc) {
    ProcessIdentity me = nvtrace::tracer::process_identity(::getpid());
    ASSERT_TRUE(me.exists);
    EXPECT_EQ(me.exe, std::filesystem::read_symlink("/proc/self/exe").string());
    EXPECT_FALSE(me.comm.empty());
    timespec boot{};
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    EXPECT_GT(me.start_boot_ns, 0) << "starttime (field 22) of a process started after boot";
    EXPECT_LE(me.start_boot_ns, boot.tv_sec * kSec + boot.tv_nsec);
    const std::string f = ::testing::TempDir() + "/owner_made_now";
    std::ofstream(f) << "x";
    auto made = nvtrace::tracer::made_boot_ns(f);
    ASSERT_TRUE(made.has_value());
    EXPECT_LE(me.start_boot_ns, *made + 20'000'000);
    std::filesystem::remove(f);
    EXPECT_FALSE(nvtrace::tracer::process_identity(-1).exists);
}
