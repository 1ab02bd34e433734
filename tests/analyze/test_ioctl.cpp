#include "nvtrace/ioctl.hpp"

#include <gtest/gtest.h>

#include "event_builders.hpp"

using namespace nvtrace;
using namespace nvtrace::test;

TEST(Ioctl, DecodesTheGenericEncoding) {
    // _IOWR('F', 0x2b, 0x28) as seen for NVIDIA escapes in strace output: dir 3, type 0x46, nr 0x2b, size 0x28.
    IocFields f = decode_ioc(0xc028462bULL);
    EXPECT_EQ(f.dir, 3u);
    EXPECT_EQ(f.type, 0x46u);
    EXPECT_EQ(f.nr, 0x2bu);
    EXPECT_EQ(f.size, 0x28u);
}

TEST(Ioctl, NamesLegacyTtyRequests) {
    EXPECT_EQ(ioctl_name(0x541B), "FIONREAD");
    EXPECT_EQ(ioctl_name(0x5401), "TCGETS");
    EXPECT_FALSE(ioctl_name(0xdeadbeef).has_value());
}

TEST(Ioctl, NamesDriverRequestsFromTheKnowledgeTables) {
    // 0x2b with the 40-byte NVOS64 of drivers before 535.43.02, as in strace-nvidia-ioctl-libva.txt.
    EXPECT_EQ(ioctl_name(0xc028462b), "NV_ESC_RM_ALLOC");
    EXPECT_EQ(ioctl_name(0x21, "/dev/nvidia-uvm"), "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_FALSE(ioctl_name(0x21, "/dev/dri/card0").has_value());
}

TEST(Ioctl, FdPathsNameTheRequestByDevice) {
    EventStream s;
    s.events = {
        Event{10, 0, 5, false, IoctlEnter{7, 0x21, 0}},
        Event{11, 0, 5, false, IoctlExit{0}},
        Event{20, 0, 5, false, IoctlEnter{7, 0x21, 0}},
        Event{21, 0, 5, false, IoctlExit{0}},
    };
    // fd 7 was /dev/nvidia-uvm until ts 15, then a DRM node.
    std::vector<FdPath> paths{{5, 7, 0, "/dev/nvidia-uvm"}, {5, 7, 15, "/dev/dri/renderD128"}};
    auto io = collect_ioctls(s, {}, paths);
    ASSERT_EQ(io.size(), 2u);
    EXPECT_EQ(io[0].fd_path, "/dev/nvidia-uvm");
    EXPECT_EQ(io[0].name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(io[1].fd_path, "/dev/dri/renderD128");
    EXPECT_FALSE(io[1].name.has_value());
    // Without paths the plain number alone still names it.
    EXPECT_EQ(collect_ioctls(s, {})[1].name, "UVM_MAP_EXTERNAL_ALLOCATION");
}

TEST(Ioctl, PairsEnterAndExitPerPidAndLinksRootCalls) {
    EventStream s;
    s.comms[5] = "prog";
    s.events = {
        Event{10, 0, 5, false, IoctlEnter{3, 0x541B, 0x7ffd}},
        Event{11, 1, 6, false, IoctlEnter{4, 0x5401, 0}},
        entry(12, 5, "drv_ioctl", 0),
        exit_(13, 5, "drv_ioctl", 0, 12, 13),
        Event{14, 0, 5, false, IoctlExit{0}},
        Event{15, 1, 6, false, IoctlExit{-25}},
        Event{20, 0, 5, false, IoctlEnter{3, 0x541B, 0}},
    };
    std::vector<Call> calls;
    Call c;
    c.id = 1;
    c.pid = 5;
    c.entry_ns = 12;
    c.duration_ns = 1;
    calls.push_back(c);
    auto io = collect_ioctls(s, calls);
    ASSERT_EQ(io.size(), 3u);
    EXPECT_EQ(io[0].pid, 5);
    EXPECT_EQ(io[0].comm, "prog");
    EXPECT_EQ(io[0].name, "FIONREAD");
    EXPECT_EQ(io[0].ret, 0);
    EXPECT_EQ(io[0].call, 1u);
    EXPECT_EQ(io[1].ret, -25);
    EXPECT_FALSE(io[1].call.has_value());
    EXPECT_FALSE(io[2].ret.has_value());  // exit not seen
    EXPECT_FALSE(io[2].exit_ns.has_value());
}
