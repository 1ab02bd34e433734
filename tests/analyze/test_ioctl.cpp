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

// ftrace prints "<...>" for a pid missing from saved_cmdlines (kernel/trace/trace.c, __trace_find_cmdline), and
// the live capture's comms hold it for such pids: it is no comm, yet the ioctl records kept it as one.
TEST(Ioctl, FtracePlaceholderCommIsNotKeptAsTheComm) {
    EventStream s;
    s.comms[5] = "<...>";
    s.comms[6] = "prog";
    s.events = {
        Event{10, 0, 5, false, IoctlEnter{3, 0x541B, 0}},
        Event{11, 0, 5, false, IoctlExit{0}},
        Event{12, 0, 6, false, IoctlEnter{3, 0x541B, 0}},
        Event{13, 0, 6, false, IoctlExit{0}},
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 2u);
    EXPECT_EQ(io[0].comm, "");  // not known
    EXPECT_EQ(io[1].comm, "prog");
    auto rows = ioctl_stats(io);
    ASSERT_EQ(rows.size(), 3u);  // the request, then one row per task
    EXPECT_EQ(rows[1].comm, "");
    EXPECT_EQ(rows[2].comm, "prog");
}

// ---- preload markers (docs/preload.md) -----------------------------------------------------------------------

namespace {

Event mark(std::uint64_t ts, int pid, std::string text) {
    return Event{ts, 0, pid, false, Marker{std::move(text)}};
}

}  // namespace

TEST(Ioctl, ParsesPreloadMarkers) {
    auto e = parse_preload_marker(
        "nvtrace-ioctl enter fd=5 dev=/dev/nvidiactl cmd=0xc020462b name=NV_ESC_RM_ALLOC hclass=0xa06f\n");
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->half, PreloadMarker::Half::enter);
    EXPECT_EQ(e->fd, 5);
    EXPECT_EQ(e->cmd, 0xc020462bu);
    EXPECT_EQ(e->dev, "/dev/nvidiactl");
    EXPECT_EQ(e->name, "NV_ESC_RM_ALLOC");
    EXPECT_EQ(e->hclass, 0xa06fu);
    EXPECT_FALSE(e->ctrl.has_value());
    auto x = parse_preload_marker("nvtrace-ioctl exit fd=5 cmd=0xc020462a ret=-1 errno=25 status=0x56 future=1");
    ASSERT_TRUE(x.has_value());
    EXPECT_EQ(x->half, PreloadMarker::Half::exit);
    EXPECT_EQ(x->ret, -1);
    EXPECT_EQ(x->err, 25);
    EXPECT_EQ(x->status, 0x56u);
    auto xf = parse_preload_marker(
        "nvtrace-ioctl enter fd=3 dev=/dev/nvidiactl cmd=0xc01046d3 name=NV_ESC_IOCTL_XFER_CMD xfer_nr=0x2b "
        "xfer_size=0x20 ctrl=0x20800110");
    ASSERT_TRUE(xf.has_value());
    EXPECT_EQ(xf->xfer_nr, 0x2bu);
    EXPECT_EQ(xf->xfer_size, 0x20u);
    EXPECT_EQ(xf->ctrl, 0x20800110u);
    EXPECT_FALSE(parse_preload_marker("nvtrace-phase: cudaMalloc").has_value());
    EXPECT_FALSE(parse_preload_marker("nvtrace-preload start pid=7 driver=595.45.04").has_value());
    EXPECT_FALSE(parse_preload_marker("nvtrace-ioctl enter dev=/dev/nvidiactl cmd=0x1").has_value());  // no fd
    EXPECT_FALSE(parse_preload_marker("nvtrace-ioctl exit fd=5 cmd=0x1").has_value());                 // no ret
    EXPECT_FALSE(parse_preload_marker("nvtrace-ioctl exit fd=x cmd=0x1 ret=0").has_value());
    EXPECT_FALSE(parse_preload_marker("nvtrace-ioctl middle fd=5 cmd=0x1").has_value());
}

TEST(Ioctl, PreloadMarkersFillDeviceHclassAndStatus) {
    EventStream s;
    s.events = {
        mark(9, 5, "nvtrace-ioctl enter fd=7 dev=/dev/nvidia0 cmd=0xc0384627 name=NV_ESC_RM_ALLOC_MEMORY hclass=0x71"),
        Event{10, 0, 5, false, IoctlEnter{7, 0xc0384627, 0x7ffd0000}},
        Event{11, 0, 5, false, IoctlExit{0}},
        mark(12, 5, "nvtrace-ioctl exit fd=7 cmd=0xc0384627 ret=0 status=0x1e"),
        mark(19, 5, "nvtrace-ioctl enter fd=8 dev=/dev/nvidia-uvm cmd=0x30000001 name=UVM_INITIALIZE"),
        Event{20, 0, 5, false, IoctlEnter{8, 0x30000001, 0x7ffd0000}},
        Event{21, 0, 5, false, IoctlExit{0}},
        mark(22, 5, "nvtrace-ioctl exit fd=8 cmd=0x30000001 ret=0 status=0x12345"),
    };
    // The /proc poll saw a different path for fd 7; the marker, written at the call, wins.
    auto io = collect_ioctls(s, {}, {{5, 7, 0, "/dev/null"}});
    ASSERT_EQ(io.size(), 2u);
    EXPECT_EQ(io[0].fd_path, "/dev/nvidia0");
    EXPECT_EQ(io[0].name, "NV_ESC_RM_ALLOC_MEMORY");
    EXPECT_EQ(io[0].hclass, 0x71u);
    EXPECT_EQ(io[0].status, "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(io[0].ret, 0);
    EXPECT_EQ(io[1].fd_path, "/dev/nvidia-uvm");
    EXPECT_EQ(io[1].name, "UVM_INITIALIZE");
    EXPECT_FALSE(io[1].hclass.has_value());
    EXPECT_EQ(io[1].status, "0x12345");  // not an NV_STATUS nvtrace knows
}

TEST(Ioctl, PreloadMarkersNeverInventRecords) {
    EventStream s;
    s.events = {
        mark(9, 5, "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462a name=NV_ESC_RM_CONTROL ctrl=0x1"),
        mark(12, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462a ret=0 status=0x0"),
    };
    EXPECT_TRUE(collect_ioctls(s, {}).empty());
}

TEST(Ioctl, PreloadMarkersPairOnlyWithTheSamePidFdAndCmd) {
    EventStream s;
    s.events = {
        mark(8, 6, "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462b hclass=0x1"),  // other pid
        mark(9, 5, "nvtrace-ioctl enter fd=9 dev=/dev/nvidiactl cmd=0xc020462b hclass=0x2"),  // other fd
        Event{10, 0, 5, false, IoctlEnter{7, 0xc020462b, 0}},
        Event{11, 0, 5, false, IoctlExit{0}},
        mark(12, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462a ret=0 status=0x1f"),  // other cmd
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 1u);
    EXPECT_FALSE(io[0].fd_path.has_value());
    EXPECT_FALSE(io[0].hclass.has_value());
    EXPECT_FALSE(io[0].status.has_value());
}

TEST(Ioctl, PreloadStatusOnlyWhenTheCallSucceeded) {
    EventStream s;
    s.events = {
        mark(9, 5, "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462b name=NV_ESC_RM_ALLOC hclass=0x80"),
        Event{10, 0, 5, false, IoctlEnter{7, 0xc020462b, 0}},
        Event{11, 0, 5, false, IoctlExit{-22}},
        mark(12, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462b ret=-1 errno=22 status=0x1f"),
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 1u);
    EXPECT_EQ(io[0].hclass, 0x80u);
    EXPECT_EQ(io[0].ret, -22);
    EXPECT_FALSE(io[0].status.has_value());  // the driver wrote no status
}

TEST(Ioctl, PreloadMarkersOfANestedSignalHandlerIoctl) {
    // ioctl A returns; before its exit marker a signal handler does ioctl B on the same fd and cmd.
    EventStream s;
    const char* enter = "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462a name=NV_ESC_RM_CONTROL";
    s.events = {
        mark(9, 5, std::string(enter) + " ctrl=0xa"),
        Event{10, 0, 5, false, IoctlEnter{7, 0xc020462a, 0}},
        Event{11, 0, 5, false, IoctlExit{0}},
        mark(12, 5, std::string(enter) + " ctrl=0xb"),
        Event{13, 0, 5, false, IoctlEnter{7, 0xc020462a, 0}},
        Event{14, 0, 5, false, IoctlExit{0}},
        mark(15, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462a ret=0 status=0x56"),  // B
        mark(16, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462a ret=0 status=0x0"),   // A
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 2u);
    EXPECT_EQ(io[0].status, "NV_OK");
    EXPECT_EQ(io[1].status, "NV_ERR_NOT_SUPPORTED");
}

TEST(Ioctl, AStaleEnterMarkerDoesNotStick) {
    // The kernel lost the first call's events: its enter marker must not decorate the next call on another fd,
    // and the next matching call takes its own (latest) marker.
    EventStream s;
    s.events = {
        mark(5, 5, "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462b hclass=0x1"),
        Event{6, 0, 5, false, LostEvents{}},
        mark(8, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462b ret=0 status=0x0"),
        Event{10, 0, 5, false, IoctlEnter{3, 0x541B, 0}},
        Event{11, 0, 5, false, IoctlExit{0}},
        mark(19, 5, "nvtrace-ioctl enter fd=7 dev=/dev/nvidiactl cmd=0xc020462b hclass=0x2"),
        Event{20, 0, 5, false, IoctlEnter{7, 0xc020462b, 0}},
        Event{21, 0, 5, false, IoctlExit{0}},
        mark(22, 5, "nvtrace-ioctl exit fd=7 cmd=0xc020462b ret=0 status=0x1f"),
    };
    auto io = collect_ioctls(s, {});
    ASSERT_EQ(io.size(), 2u);
    EXPECT_FALSE(io[0].hclass.has_value());
    EXPECT_FALSE(io[0].status.has_value());
    EXPECT_EQ(io[1].hclass, 0x2u);
    EXPECT_EQ(io[1].status, "NV_ERR_INVALID_ARGUMENT");
}

// collect_ioctls names each (cmd, device) pair once and keeps per-pid state: the same number on two devices,
// a preload name for a number nvtrace does not know, and two pids whose ioctls interleave.
TEST(Ioctl, NamesFollowTheDeviceAndPidsInterleave) {
    EventStream s;
    s.comms[5] = "five";
    s.comms[6] = "six";
    s.events = {
        Event{10, 0, 5, false, IoctlEnter{7, 0x21, 0}},  // fd 7 of pid 5: /dev/nvidia-uvm
        Event{11, 1, 6, false, IoctlEnter{7, 0x21, 0}},  // fd 7 of pid 6: a DRM node
        Event{12, 0, 5, false, IoctlExit{-1}},
        mark(13, 6, "nvtrace-ioctl enter fd=8 dev=/dev/nvidiactl cmd=0xc00846ff name=NV_ESC_FUTURE"),
        Event{14, 1, 6, false, IoctlExit{-2}},
        Event{15, 1, 6, false, IoctlEnter{8, 0xc00846ff, 0}},  // unknown number: the library's name
        Event{16, 0, 5, false, IoctlEnter{7, 0x21, 0}},
        Event{17, 1, 6, false, IoctlExit{0}},
        Event{18, 1, 6, false, IoctlEnter{8, 0xc00846ff, 0}},  // the same number without a marker: no name
        Event{19, 0, 5, false, IoctlExit{3}},
        Event{20, 1, 6, false, IoctlExit{4}},
        Event{21, 0, 7, false, IoctlExit{5}},  // a pid with no ioctl open
    };
    auto io = collect_ioctls(s, {}, {{5, 7, 0, "/dev/nvidia-uvm"}, {6, 7, 0, "/dev/dri/card0"}});
    ASSERT_EQ(io.size(), 5u);
    EXPECT_EQ(io[0].pid, 5);
    EXPECT_EQ(io[0].comm, "five");
    EXPECT_EQ(io[0].name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(io[0].ret, -1);
    EXPECT_EQ(io[1].pid, 6);
    EXPECT_EQ(io[1].comm, "six");
    EXPECT_FALSE(io[1].name.has_value());  // 0x21 on a DRM node is no UVM request
    EXPECT_EQ(io[1].ret, -2);
    EXPECT_EQ(io[2].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(io[2].name, "NV_ESC_FUTURE");
    EXPECT_EQ(io[2].ret, 0);
    EXPECT_EQ(io[3].pid, 5);
    EXPECT_EQ(io[3].name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(io[3].ret, 3);
    EXPECT_EQ(io[3].exit_ns, 19u);
    EXPECT_FALSE(io[4].fd_path.has_value());
    EXPECT_FALSE(io[4].name.has_value());
    EXPECT_EQ(io[4].ret, 4);
    EXPECT_EQ(io[4].exit_ns, 20u);
}
