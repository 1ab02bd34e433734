// The text summary's ioctl lines (format_ioctl_line, summarize_ioctls) and the RM control command taken
// from the preload marker.
#include <gtest/gtest.h>

#include "nvtrace/ioctl.hpp"

using namespace nvtrace;

namespace {

Call call(std::uint64_t id, std::optional<std::uint64_t> parent, std::uint64_t entry,
          std::optional<std::uint64_t> dur) {
    Call c;
    c.id = id;
    c.parent = parent;
    c.entry_ns = entry;
    c.duration_ns = dur;
    c.function = "f" + std::to_string(id);
    return c;
}

IoctlRecord rm_alloc() {
    IoctlRecord io;
    io.fd = 5;
    io.fd_path = "/dev/nvidiactl";
    io.cmd = 0xc030462b;
    io.name = "NV_ESC_RM_ALLOC";
    io.hclass = 0x41;
    io.status = "NV_OK";
    io.ret = 0;
    return io;
}

Event marker(std::uint64_t ts, int pid, std::string text) {
    return Event{ts, 0, pid, false, Marker{std::move(text)}};
}

}  // namespace

TEST(IoctlSummary, LineHasTheIssueShape) {
    IoctlKernelCost cost{37, 412'000, 0, 1};
    EXPECT_EQ(format_ioctl_line(rm_alloc(), cost),
              "nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0 (kernel: 37 calls, 412 us)");
    EXPECT_EQ(format_ioctl_line(rm_alloc(), std::nullopt),
              "nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
}

TEST(IoctlSummary, UnknownNamesClassesAndMissingExit) {
    IoctlRecord io;
    io.fd = 9;
    io.cmd = 0xc0104699;
    io.hclass = 0xfeed;  // not in the class table: the number only
    EXPECT_EQ(format_ioctl_line(io, IoctlKernelCost{}), "fd9 0xc0104699 hClass=0xfeed ret=? (kernel: 0 calls)");
}

TEST(IoctlSummary, NegativeReturnGetsItsErrnoName) {
    IoctlRecord io;
    io.fd = 0;
    io.fd_path = "/dev/pts/3";
    io.cmd = 0x5401;
    io.name = "TCGETS";
    io.ret = -25;
    EXPECT_EQ(format_ioctl_line(io, std::nullopt), "pts/3 TCGETS ret=-25(ENOTTY)");
}

TEST(IoctlSummary, DeviceShortNames) {
    IoctlRecord io;
    io.fd = 4;
    EXPECT_EQ(ioctl_device_short_name(io), "fd4");
    io.fd_path = "/dev/dri/renderD128";
    EXPECT_EQ(ioctl_device_short_name(io), "dri/renderD128");
    io.fd_path = "/dev/nvidia-uvm";
    EXPECT_EQ(ioctl_device_short_name(io), "nvidia-uvm");
    io.fd_path = "pipe:[1234]";
    EXPECT_EQ(ioctl_device_short_name(io), "pipe:[1234]");
}

TEST(IoctlSummary, RmControlCommandShownWithItsInterfaceClass) {
    IoctlRecord io = rm_alloc();
    io.name = "NV_ESC_RM_CONTROL";
    io.cmd = 0xc020462a;
    io.hclass.reset();
    io.ctrl = 0x20800110;
    io.ctrl_class = "NV20_SUBDEVICE_0";
    EXPECT_EQ(format_ioctl_line(io, std::nullopt),
              "nvidiactl NV_ESC_RM_CONTROL cmd=0x20800110(NV20_SUBDEVICE_0) status=NV_OK ret=0");
    io.ctrl_class.reset();
    EXPECT_EQ(format_ioctl_line(io, std::nullopt), "nvidiactl NV_ESC_RM_CONTROL cmd=0x20800110 status=NV_OK ret=0");
}

TEST(IoctlSummary, KernelCostCountsEveryCallOfEverySubtree) {
    // Root 1 (3 calls, 10 us), root 4 (1 call, 2 us) belong to one ioctl; root 5 has no exit.
    std::vector<Call> calls{call(1, std::nullopt, 100, 10'000),
                            call(2, 1, 200, 1'000),
                            call(3, 2, 300, 500),
                            call(4, std::nullopt, 20'000, 2'000),
                            call(5, std::nullopt, 30'000, std::nullopt),
                            call(6, 5, 30'100, 50)};
    IoctlRecord a = rm_alloc(), b = rm_alloc();
    a.calls = {1, 4};
    b.calls = {5};
    auto costs = ioctl_kernel_costs({a, b, rm_alloc()}, calls);
    ASSERT_EQ(costs.size(), 3u);
    EXPECT_EQ(costs[0].calls, 4u);
    EXPECT_EQ(costs[0].total_ns, 12'000u);
    EXPECT_EQ(costs[0].unfinished, 0u);
    EXPECT_EQ(costs[1].calls, 2u);
    EXPECT_EQ(costs[1].unfinished, 1u);
    EXPECT_EQ(costs[2].calls, 0u);
    EXPECT_EQ(
        format_ioctl_line(b, costs[1]),
        "nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0 (kernel: 2 calls, 1 without exit)");
}

TEST(IoctlSummary, DurationsChangeUnitAtTenMillisecondsAndOneSecond) {
    EXPECT_NE(format_ioctl_line(rm_alloc(), IoctlKernelCost{1, 9'999'000, 0, 1}).find("(kernel: 1 call, 9999 us)"),
              std::string::npos);
    EXPECT_NE(format_ioctl_line(rm_alloc(), IoctlKernelCost{1, 12'340'000, 0, 1}).find("12.3 ms"), std::string::npos);
    EXPECT_NE(format_ioctl_line(rm_alloc(), IoctlKernelCost{1, 1'234'000'000, 0, 1}).find("1.23 s"), std::string::npos);
}

TEST(IoctlSummary, ConsecutiveEqualLinesFoldWithSummedCosts) {
    std::vector<Call> calls{call(1, std::nullopt, 10, 1'000), call(2, std::nullopt, 20, 3'000),
                            call(3, std::nullopt, 30, 5'000)};
    std::vector<IoctlRecord> io(4, rm_alloc());
    io[0].calls = {1};
    io[1].calls = {2};
    io[2].status = "NV_ERR_INVALID_ARGUMENT";  // breaks the run
    io[3].calls = {3};
    auto lines = summarize_ioctls(io, calls, {});
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(
        lines[0],
        "     2x nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0 (kernel: 2 calls, 4 us)");
    EXPECT_EQ(lines[1],
              "     1x nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_ERR_INVALID_ARGUMENT ret=0 "
              "(kernel: 0 calls)");
    EXPECT_EQ(
        lines[2],
        "     1x nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0 (kernel: 1 call, 5 us)");

    IoctlSummaryOptions no_kernel;
    no_kernel.kernel_traced = false;
    EXPECT_EQ(summarize_ioctls(io, calls, no_kernel)[0],
              "     2x nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
}

// An ioctl-only run of a program with several processes printed the ioctls of all of them as one list: which
// process asked for what was in the JSON only. With more than one task each line names it, and only ioctls of
// one task fold; with one task the lines are unchanged.
TEST(IoctlSummary, IoctlsOfSeveralTasksNameTheirTaskAndFoldPerTask) {
    std::vector<IoctlRecord> io(4, rm_alloc());
    for (auto& r : io)
        r.comm = "python3", r.pid = 100;
    io[2].pid = 101, io[2].comm = "pt_main_thread";
    io[3].pid = 102, io[3].comm = "<...>";  // ftrace's name for a pid not in saved_cmdlines: not a comm
    IoctlSummaryOptions o;
    o.kernel_traced = false;
    auto lines = summarize_ioctls(io, {}, o);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0],
              "     2x python3/100: nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
    EXPECT_EQ(lines[1],
              "     1x pt_main_thread/101: nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
    EXPECT_EQ(lines[2], "     1x ?/102: nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
    o.verbose = true;
    lines = summarize_ioctls(io, {}, o);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[2],
              "pt_main_thread/101: nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
    // One task: no task column.
    io.resize(2);
    o.verbose = false;
    EXPECT_EQ(summarize_ioctls(io, {}, o)[0],
              "     2x nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
}

TEST(IoctlSummary, LongRunsStopAtTheLimitAndVerbosePrintsEveryIoctl) {
    // 100 ioctls alternating between two requests: nothing folds.
    std::vector<IoctlRecord> io;
    for (int i = 0; i < 100; ++i) {
        IoctlRecord r = rm_alloc();
        if (i % 2) r.name = "NV_ESC_RM_FREE", r.hclass.reset();
        io.push_back(r);
    }
    IoctlSummaryOptions o;
    o.kernel_traced = false;
    o.max_lines = 10;
    auto lines = summarize_ioctls(io, {}, o);
    ASSERT_EQ(lines.size(), 11u);
    EXPECT_EQ(lines[9], "     1x nvidiactl NV_ESC_RM_FREE status=NV_OK ret=0");
    EXPECT_EQ(lines[10], "   ... 90 more line(s) (90 ioctls); -v prints every ioctl");
    o.verbose = true;
    lines = summarize_ioctls(io, {}, o);
    ASSERT_EQ(lines.size(), 100u);
    EXPECT_EQ(lines[0], "nvidiactl NV_ESC_RM_ALLOC hClass=NV01_ROOT_CLIENT(0x41) status=NV_OK ret=0");
    // A million identical ioctls are one line.
    std::vector<IoctlRecord> same(1'000'000, rm_alloc());
    o.verbose = false;
    lines = summarize_ioctls(same, {}, o);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].substr(0, 9), "1000000x ");
}

TEST(IoctlSummary, PreloadMarkerCtrlFillsTheControlCommand) {
    EventStream s;
    s.events = {
        marker(9, 5,
               "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462a name=NV_ESC_RM_CONTROL ctrl=0x20800110"),
        Event{10, 0, 5, false, IoctlEnter{7, 0xc020462a, 0x7ffd0000}},
        Event{11, 0, 5, false, IoctlExit{0}},
        marker(12, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462a ret=0 status=0x0"),
        marker(19, 5,
               "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462a name=NV_ESC_RM_CONTROL ctrl=0xabcd0101"),
        Event{20, 0, 5, false, IoctlEnter{7, 0xc020462a, 0x7ffd0000}},
        Event{21, 0, 5, false, IoctlExit{0}},
        Event{30, 0, 5, false, IoctlEnter{7, 0xc020462a, 0x7ffd0000}},  // no marker (e.g. --no-preload)
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 3u);
    EXPECT_EQ(io[0].ctrl, 0x20800110u);
    EXPECT_EQ(io[0].ctrl_class, "NV20_SUBDEVICE_0");
    EXPECT_EQ(io[0].status, "NV_OK");
    EXPECT_EQ(io[1].ctrl, 0xabcd0101u);
    EXPECT_FALSE(io[1].ctrl_class.has_value());  // 0xabcd is no class nvtrace knows
    EXPECT_FALSE(io[2].ctrl.has_value());
    EXPECT_EQ(format_ioctl_line(io[0], std::nullopt),
              "nvidiactl NV_ESC_RM_CONTROL cmd=0x20800110(NV20_SUBDEVICE_0) status=NV_OK ret=0");
    EXPECT_EQ(format_ioctl_line(io[2], std::nullopt), "fd7 NV_ESC_RM_CONTROL ret=?");
}

// A fresh user's finding: strace "= -1 EFOOBAR (Weird)" (an errno name nvtrace has no number for: ret unknown)
// printed "ret=?", the same as a call whose exit was not seen, though the call failed.
TEST(IoctlSummary, AFailureWithAnErrnoOfUnknownNumberIsNotShownAsUnfinished) {
    IoctlRecord io;
    io.fd_path = "/dev/nvidiactl";
    io.cmd = 0xc020462a;
    io.name = "NV_ESC_RM_CONTROL";
    io.errno_name = "EFOOBAR";
    EXPECT_EQ(format_ioctl_line(io, std::nullopt),
              "nvidiactl NV_ESC_RM_CONTROL ret=?(EFOOBAR: failed, errno number unknown)");
    io.errno_name.reset();
    EXPECT_EQ(format_ioctl_line(io, std::nullopt), "nvidiactl NV_ESC_RM_CONTROL ret=?");
}
