// Tier 2: an ioctl is named only from a sample taken in the same lifetime of its fd (FdLifetime in
// nvtrace/event.hpp). fd_reuse opens /etc/hostname as fd F, does FIONREAD, closes it, opens /dev/zero as F and does
// TCGETS, 100 times in one capture: a path polled from /proc at another moment used to name the FIONREAD "zero"
// in 5 of 5 runs. Needs root and tracefs.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "live_util.hpp"

using namespace nvtrace::live;

namespace {

constexpr unsigned kFionread = 0x541B, kTcgets = 0x5401;

struct Names {
    int named = 0, unknown = 0, wrong = 0, total = 0;
    std::string first_wrong;
};

// Every FIONREAD / TCGETS of the report against the file fd_reuse had open at that moment.
Names check_names(const nlohmann::json& rep, int& fionreads, int& tcgetses) {
    Names n;
    for (const auto& io : rep["ioctls"]) {
        const unsigned cmd = io["cmd"].get<unsigned>();
        if (cmd != kFionread && cmd != kTcgets) continue;
        const std::string want = cmd == kFionread ? "/etc/hostname" : "/dev/zero";
        (cmd == kFionread ? fionreads : tcgetses)++;
        ++n.total;
        if (io["fd_path"].is_null()) {
            ++n.unknown;
            EXPECT_TRUE(io["fd_path_unknown"].is_string()) << "an unknown path says why: " << io.dump();
            if (io["fd_path_unknown"].is_string()) {
                EXPECT_EQ(io["fd_path_unknown"].get<std::string>().rfind("unknown: ", 0), 0u) << io.dump();
            }
        } else if (io["fd_path"] == want) {
            ++n.named;
            EXPECT_TRUE(!io.contains("fd_path_unknown") || io["fd_path_unknown"].is_null()) << io.dump();
        } else {
            if (!n.wrong++) n.first_wrong = io.dump();
        }
    }
    return n;
}

nlohmann::json run_fd_reuse(const std::vector<std::string>& extra, const std::string& hold_ms, int cycles = 100) {
    std::string out = temp_dir();
    std::vector<std::string> argv{NVTRACE_BIN, "run", "-q", "--out", out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const std::string& a : {std::string("--"), std::string(FD_REUSE_BIN), std::to_string(cycles), hold_ms})
        argv.push_back(a);
    Ran r = run(argv);
    EXPECT_EQ(r.rc, 0) << r.err;
    if (r.rc != 0) return nlohmann::json::object();
    Ran v = run({"python3", VALIDATE_REPORT, REPORT_SCHEMA, out + "/report.json"});
    EXPECT_EQ(v.rc, 0) << v.out << v.err;
    nlohmann::json live = load_json(out + "/report.json");
    // The capture directory gives the same names offline (fd_paths.json, format 2).
    Ran rep = run({NVTRACE_BIN, "report", out, "--json"});
    EXPECT_EQ(rep.rc, 0) << rep.err;
    if (rep.rc == 0) {
        EXPECT_EQ(nlohmann::json::parse(rep.out)["ioctls"], live["ioctls"]);
    }
    EXPECT_EQ(load_json(out + "/fd_paths.json").value("format", 0), 2);
    return live;
}

}  // namespace

TEST(LiveFdLifetimes, ReopenedFdNeverNamesTheWrongFileIn100CyclesWithThePreload) {
    REQUIRE_LIVE();
    nlohmann::json rep = run_fd_reuse({}, "0");
    int fionreads = 0, tcgetses = 0;
    Names n = check_names(rep, fionreads, tcgetses);
    EXPECT_EQ(fionreads, 100);
    EXPECT_EQ(tcgetses, 100);
    EXPECT_EQ(n.wrong, 0) << "first: " << n.first_wrong;
    // The preload reads every fd's path at the call: all of them are named.
    EXPECT_EQ(n.named, 200) << n.unknown << " unknown";
}

TEST(LiveFdLifetimes, ReopenedFdNeverNamesTheWrongFileIn100CyclesWithoutThePreload) {
    REQUIRE_LIVE();
    nlohmann::json rep = run_fd_reuse({"--no-preload"}, "0");
    int fionreads = 0, tcgetses = 0;
    Names n = check_names(rep, fionreads, tcgetses);
    EXPECT_EQ(fionreads, 100);
    EXPECT_EQ(tcgetses, 100);
    EXPECT_EQ(n.wrong, 0) << "first: " << n.first_wrong;
    EXPECT_EQ(n.named + n.unknown, 200);
}

// Held open 25 ms each (2.5 polls): the /proc polls now fall inside the lifetimes and name them, still never
// across the reuse.
TEST(LiveFdLifetimes, PollsInsideALifetimeNameItWithoutThePreload) {
    REQUIRE_LIVE();
    nlohmann::json rep = run_fd_reuse({"--no-preload"}, "25", 20);
    int fionreads = 0, tcgetses = 0;
    Names n = check_names(rep, fionreads, tcgetses);
    EXPECT_EQ(fionreads, 20);
    EXPECT_EQ(tcgetses, 20);
    EXPECT_EQ(n.wrong, 0) << "first: " << n.first_wrong;
    EXPECT_GT(n.named, 20) << "polls every 10 ms inside 25 ms lifetimes name most ioctls (" << n.unknown << " unknown)";
}

// io_uring closes and opens fds with no close or openat syscall (IORING_OP_CLOSE, IORING_OP_OPENAT; with
// IORING_SETUP_SQPOLL without even io_uring_enter). uring_reopen opens /dev/null as fd F, FIONREAD on it, holds it
// 60 ms (polls see it), then closes F and opens /etc/hostname as F through the ring, then FIONREAD (raw syscall: the
// preload does not see it) and TCGETS (through libc) on F: the FIONREAD used to be named /dev/null (3 of 3 runs).
// From the process's first io_uring call on, its fds are of unknown lifetime: the raw FIONREAD after the reopen is
// unknown, saying io_uring (the TCGETS too without the preload; with it, the preload's readlink at that very call
// names it, /etc/hostname); the FIONREAD before the ring is named from the preload's readlink.
namespace {

void check_uring_reopen(const std::string& mode, bool preload) {
    std::string out = temp_dir();
    std::vector<std::string> argv{NVTRACE_BIN, "run", "-q", "--out", out};
    if (!preload) argv.emplace_back("--no-preload");
    for (const std::string& a : {std::string("--"), std::string(URING_REOPEN_BIN), mode})
        argv.push_back(a);
    Ran r = run(argv);
    if (r.rc == 77) GTEST_SKIP() << "this kernel refuses io_uring: " << r.err;
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    int fd = -1;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "fd %d", &fd), 1) << r.out;
    ASSERT_NE(r.out.find("reopened " + std::to_string(fd) + " as /etc/hostname"), std::string::npos) << r.out;
    Ran v = run({"python3", VALIDATE_REPORT, REPORT_SCHEMA, out + "/report.json"});
    EXPECT_EQ(v.rc, 0) << v.out << v.err;
    nlohmann::json rep = load_json(out + "/report.json");
    std::vector<nlohmann::json> on_fd;
    for (const auto& io : rep["ioctls"]) {
        const unsigned cmd = io["cmd"].get<unsigned>();
        if (io["fd"] == fd && (cmd == kFionread || cmd == kTcgets)) on_fd.push_back(io);
    }
    ASSERT_EQ(on_fd.size(), 3u) << rep["ioctls"].dump();
    const nlohmann::json &before = on_fd[0], &raw_after = on_fd[1], &libc_after = on_fd[2];
    EXPECT_EQ(before["cmd"], kFionread);
    EXPECT_EQ(raw_after["cmd"], kFionread);
    EXPECT_EQ(libc_after["cmd"], kTcgets);
    if (preload) {
        EXPECT_EQ(before["fd_path"], "/dev/null") << before.dump();
    } else {
        EXPECT_TRUE(before["fd_path"].is_null() || before["fd_path"] == "/dev/null") << before.dump();
    }
    // The preload's own readlink at a libc call names that call (its marker, not the lifetimes): the new file.
    if (preload && !libc_after["fd_path"].is_null()) {
        EXPECT_EQ(libc_after["fd_path"], "/etc/hostname") << libc_after.dump();
    }
    for (const nlohmann::json* io : {&raw_after, &libc_after}) {
        if (io == &libc_after && preload) continue;
        EXPECT_TRUE((*io)["fd_path"].is_null()) << "named after the file of another lifetime: " << io->dump();
        ASSERT_TRUE((*io)["fd_path_unknown"].is_string()) << io->dump();
        EXPECT_NE((*io)["fd_path_unknown"].get<std::string>().find("io_uring"), std::string::npos) << io->dump();
    }
    // fd_paths.json: the lifetime of F that the ring's first use begins is never named.
    nlohmann::json fds = load_json(out + "/fd_paths.json");
    int uring_spans = 0;
    for (const auto& l : fds["lifetimes"])
        if (l["fd"] == fd && (l["opened_by"] == "io_uring_setup" || l["opened_by"] == "io_uring_enter")) {
            ++uring_spans;
            EXPECT_TRUE(l["path"].is_null()) << l.dump();
            EXPECT_TRUE(l["until_ns"].is_null()) << "to the end of the run: " << l.dump();
        }
    EXPECT_GE(uring_spans, 1) << fds["lifetimes"].dump();
    // The capture directory gives the same names offline.
    Ran again = run({NVTRACE_BIN, "report", out, "--json"});
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["ioctls"], rep["ioctls"]);
}

}  // namespace

TEST(LiveFdLifetimes, FdReopenedThroughIoUringIsNeverNamedAfterTheOldFile) {
    REQUIRE_LIVE();
    check_uring_reopen("enter", true);
}

TEST(LiveFdLifetimes, FdReopenedThroughIoUringIsNeverNamedAfterTheOldFileWithoutThePreload) {
    REQUIRE_LIVE();
    check_uring_reopen("enter", false);
}

// IORING_SETUP_SQPOLL: the ring's kernel thread runs the close and the open; the program makes no syscall for them.
TEST(LiveFdLifetimes, FdReopenedThroughASubmissionQueueThreadIsNeverNamedAfterTheOldFile) {
    REQUIRE_LIVE();
    check_uring_reopen("sqpoll", true);
}
