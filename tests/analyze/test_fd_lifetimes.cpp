// build_fd_lifetimes (nvtrace/ioctl.hpp) for processes that use io_uring: a ring's requests (IORING_OP_CLOSE,
// IORING_OP_OPENAT, ...) change the submitter's fd table with no syscall nvtrace records, from io-wq workers after
// io_uring_enter returned, and with IORING_SETUP_SQPOLL from the ring's kernel thread without io_uring_enter
// (io_uring/openclose.c, io_uring/sqpoll.c). The shapes below are the syscall tracepoints' records as
// syscalls:sys_enter_io_uring_setup (entries, params) and sys_enter_io_uring_enter (fd, to_submit, min_complete,
// flags, argp, argsz) give them; times in ns.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nvtrace/ioctl.hpp"

using namespace nvtrace;

namespace {

FdCall call(int tid, const char* name, std::uint64_t at, std::int64_t ret, std::map<std::string, std::uint64_t> args) {
    return FdCall{tid, name, at, at + 5, std::move(args), ret};
}
FdSample poll(int pid, int fd, std::uint64_t at, const char* path) {
    return FdSample{pid, fd, at, at + 5, path, "poll"};
}

// The lifetimes of (pid, fd), in order.
std::vector<FdLifetime> of(const std::vector<FdLifetime>& all, int pid, int fd) {
    std::vector<FdLifetime> out;
    for (const FdLifetime& l : all)
        if (l.pid == pid && l.fd == fd) out.push_back(l);
    return out;
}

constexpr const char* kUringUnknown = "unknown: the process uses io_uring, which can change its fds without a syscall";

}  // namespace

// The user's program: /dev/null at fd 5 (polled), a ring, then IORING_OP_CLOSE + IORING_OP_OPENAT("/etc/hostname")
// give fd 5 again with no close or openat syscall; a later poll sees /etc/hostname.
TEST(FdLifetimes, FdsOfAProcessAreUnknownFromItsRingToTheEndOfTheRun) {
    FdLifetimeInput in;
    in.process_of = {{10, 10}};
    in.calls = {call(10, "openat", 100, 5, {{"dfd", 0xffffff9c}}), call(10, "io_uring_setup", 300, 3, {{"entries", 4}}),
                call(10, "io_uring_enter", 400, 1, {{"fd", 3}, {"to_submit", 1}}),
                call(10, "io_uring_enter", 420, 1, {{"fd", 3}, {"to_submit", 1}})};
    in.samples = {poll(10, 5, 200, "/dev/null"), poll(10, 5, 500, "/etc/hostname")};
    auto l = of(build_fd_lifetimes(in), 10, 5);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[1].opened_by, "openat");
    EXPECT_EQ(l[1].path, std::optional<std::string>("/dev/null"));
    EXPECT_EQ(l[1].until_ns, std::optional<std::uint64_t>(300));
    EXPECT_EQ(l[2].opened_by, "io_uring_setup");
    EXPECT_EQ(l[2].from_ns, std::optional<std::uint64_t>(305));
    EXPECT_FALSE(l[2].until_ns) << "to the end of the run: SQPOLL is not visible in the record";
    EXPECT_FALSE(l[2].path) << "the poll after the ring names nothing";
    EXPECT_EQ(l[2].unknown, kUringUnknown);
}

// A ring inherited over fork (or received over a socket): the child's first io_uring_enter is the point.
TEST(FdLifetimes, InheritedRingMakesTheChildsFdsUnknownFromItsFirstEnter) {
    FdLifetimeInput in;
    in.process_of = {{10, 10}, {20, 20}};
    in.calls = {call(20, "io_uring_enter", 400, 1, {{"fd", 3}, {"to_submit", 1}})};
    in.samples = {poll(20, 4, 200, "/dev/zero"), poll(20, 4, 600, "/etc/hostname"), poll(10, 4, 600, "/dev/tty")};
    auto all = build_fd_lifetimes(in);
    auto child = of(all, 20, 4);
    ASSERT_EQ(child.size(), 2u);
    EXPECT_EQ(child[0].path, std::optional<std::string>("/dev/zero"));
    EXPECT_EQ(child[1].opened_by, "io_uring_enter");
    EXPECT_FALSE(child[1].path);
    EXPECT_EQ(child[1].unknown, kUringUnknown);
    // The parent never used the ring: a ring's requests change the submitter's fd table only.
    auto parent = of(all, 10, 4);
    ASSERT_EQ(parent.size(), 1u);
    EXPECT_EQ(parent[0].path, std::optional<std::string>("/dev/tty"));
}

// Changes recorded after the ring (a close, an openat) begin no lifetime that could be named: the fd table may
// have changed between any two of them.
TEST(FdLifetimes, RecordedChangesAfterTheRingNameNothing) {
    FdLifetimeInput in;
    in.process_of = {{10, 10}, {11, 10}};  // 11: a thread of 10
    in.calls = {call(11, "io_uring_setup", 100, 3, {}), call(10, "close", 200, 0, {{"fd", 5}}),
                call(10, "openat", 300, 5, {}), call(10, "dup2", 400, 6, {{"oldfd", 5}, {"newfd", 6}})};
    in.samples = {poll(10, 5, 350, "/etc/hostname"), FdSample{11, 6, 450, 450, "/etc/hostname", "preload"}};
    auto all = build_fd_lifetimes(in);
    for (int tid : {10, 11})
        for (int fd : {5, 6}) {
            auto l = of(all, tid, fd);
            ASSERT_EQ(l.size(), 2u) << tid << " " << fd;
            EXPECT_EQ(l[1].opened_by, "io_uring_setup");
            EXPECT_FALSE(l[1].path) << tid << " " << fd;
            EXPECT_FALSE(l[1].until_ns);
        }
}

// A failed io_uring_setup made no ring; a program without io_uring keeps its names.
TEST(FdLifetimes, FailedIoUringSetupChangesNothing) {
    FdLifetimeInput in;
    in.process_of = {{10, 10}};
    in.calls = {call(10, "openat", 100, 5, {}), call(10, "io_uring_setup", 300, -38 /* ENOSYS */, {})};
    in.samples = {poll(10, 5, 500, "/dev/null")};
    auto l = of(build_fd_lifetimes(in), 10, 5);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[1].path, std::optional<std::string>("/dev/null"));
    EXPECT_FALSE(l[1].until_ns);
}

// A thread the polls never placed in a process could be in any of them: its io_uring_enter makes every process's
// fds unknown from then on, as its other fd changes split that fd number everywhere.
TEST(FdLifetimes, IoUringOfAThreadNotPlacedConcernsEveryProcess) {
    FdLifetimeInput in;
    in.process_of = {{10, 10}, {20, 20}};
    in.calls = {call(99, "io_uring_enter", 300, 0, {{"fd", 3}})};
    in.samples = {poll(10, 4, 500, "/dev/zero"), poll(20, 7, 100, "/dev/null")};
    auto all = build_fd_lifetimes(in);
    auto a = of(all, 10, 4), b = of(all, 20, 7);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_FALSE(a[1].path);
    EXPECT_EQ(a[1].unknown, kUringUnknown);
    EXPECT_EQ(b[0].path, std::optional<std::string>("/dev/null"));
    EXPECT_FALSE(b[1].path);
}
