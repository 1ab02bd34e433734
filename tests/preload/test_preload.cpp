// libnvtrace_preload.so on this machine's kernel without tracefs: the marker fd is a temp file, the
// "devices" are files and FIFOs under a temp dir that the test-only NVTRACE_PRELOAD_TEST_DEVICE_PREFIX maps
// to /dev, the ioctls are real (FIONREAD and TCGETS succeed or fail with ENOTTY for real) and the NVIDIA
// parameter buffers are recorded ones built from the documented layouts.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

struct ProbeRun {
    int status = -1;
    std::vector<std::string> markers;            // lines of the marker file
    std::map<std::string, std::string> results;  // label -> "fd=.. ret=.. errno=.. [value=..]"
    std::string dir;
};

std::vector<std::string> lines_of(const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

// Runs preload_probe CASE with the library preloaded. `version` goes to NVTRACE_PRELOAD_DRIVER_VERSION;
// `marker` false leaves NVTRACE_TRACE_MARKER_FD unset.
ProbeRun run_probe(const std::string& which, const std::string& version = "595.45.04", bool marker = true) {
    ProbeRun r;
    char tmpl[] = "/tmp/nvtrace-preload-XXXXXX";
    r.dir = mkdtemp(tmpl);
    fs::create_directories(r.dir + "/dev");
    std::string marker_path = r.dir + "/marker";
    std::string out_path = r.dir + "/stdout";
    pid_t pid = fork();
    if (pid == 0) {
        int m = ::open(marker_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (m < 0 || o < 0 || dup2(o, 1) < 0) _exit(120);
        ::close(o);
        setenv("LD_PRELOAD", PRELOAD_LIB, 1);
        if (marker)
            setenv("NVTRACE_TRACE_MARKER_FD", std::to_string(m).c_str(), 1);
        else
            unsetenv("NVTRACE_TRACE_MARKER_FD");
        setenv("NVTRACE_PRELOAD_TEST_DEVICE_PREFIX", r.dir.c_str(), 1);
        setenv("NVTRACE_PRELOAD_DRIVER_VERSION", version.c_str(), 1);
        execl(PROBE_BIN, PROBE_BIN, which.c_str(), static_cast<char*>(nullptr));
        _exit(121);
    }
    waitpid(pid, &r.status, 0);
    r.markers = lines_of(marker_path);
    for (const auto& l : lines_of(out_path)) {
        std::istringstream in(l);
        std::string tag, label;
        in >> tag >> label;
        if (tag != "RESULT") continue;
        std::string rest;
        std::getline(in, rest);
        r.results[label] = rest.substr(1);
    }
    return r;
}

std::string fd_of(const ProbeRun& r, const std::string& label) {
    auto it = r.results.find(label);
    if (it == r.results.end()) return "?";
    auto s = it->second;
    return s.substr(3, s.find(' ') - 3);
}

class Preload : public ::testing::Test {
protected:
    void TearDown() override {
        for (const auto& d : dirs_)
            fs::remove_all(d);
    }
    ProbeRun run(const std::string& which, const std::string& version = "595.45.04", bool marker = true) {
        ProbeRun r = run_probe(which, version, marker);
        dirs_.push_back(r.dir);
        EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << "probe status " << r.status;
        return r;
    }
    std::vector<std::string> dirs_;
};

const std::string kStart = "nvtrace-preload start pid=";

// Non-device fds are passed through unchanged; their ioctls get markers with the path read at the call (the report
// names an ioctl's file from it: a /proc poll may have seen another file under the same number), nothing decoded.
TEST_F(Preload, NonDeviceFdsPassThroughUntouchedWithTheirPathReadAtTheCall) {
    ProbeRun r = run("plain");
    ASSERT_EQ(r.markers.size(), 7u);  // the start line, and enter + exit of the three ioctl() calls
    EXPECT_EQ(r.markers[0].rfind(kStart, 0), 0u);
    for (std::size_t i = 1; i < r.markers.size(); i += 2) {
        const std::string& enter = r.markers[i];
        EXPECT_EQ(enter.rfind("nvtrace-ioctl enter fd=", 0), 0u) << enter;
        EXPECT_TRUE(enter.find(" dev=pipe:[") != std::string::npos || enter.find(" dev=/dev/ptmx") != std::string::npos)
            << enter;
        EXPECT_EQ(enter.find(" name="), std::string::npos) << enter;
        EXPECT_EQ(enter.find(" hclass="), std::string::npos) << enter;
        EXPECT_EQ(r.markers[i + 1].rfind("nvtrace-ioctl exit fd=", 0), 0u) << r.markers[i + 1];
    }
    EXPECT_NE(r.markers[0].find(" driver=595.45.04"), std::string::npos) << r.markers[0];
    std::string fd = fd_of(r, "pipe_fionread");
    EXPECT_EQ(r.results["pipe_fionread"], "fd=" + fd + " ret=0 errno=1234 value=5");
    EXPECT_EQ(r.results["pipe_fionread_raw"], "fd=" + fd + " ret=0 errno=1234 value=5");
    EXPECT_EQ(r.results["pipe_tcgets"], "fd=" + fd + " ret=-1 errno=25");  // ENOTTY
    std::string pt = fd_of(r, "pty_tcgets");
    EXPECT_EQ(r.results["pty_tcgets"].rfind("fd=" + pt + " ret=0 errno=1234 value=", 0), 0u);
}

TEST_F(Preload, RealIoctlsOnADeviceFifoWriteExactMarkers) {
    ProbeRun r = run("fifo");
    std::string fd = fd_of(r, "fionread");
    std::string dev = r.dir + "/dev/nvidiactl";
    EXPECT_EQ(r.results["fionread"], "fd=" + fd + " ret=0 errno=1234 value=3");
    EXPECT_EQ(r.results["tcgets"], "fd=" + fd + " ret=-1 errno=25");
    std::vector<std::string> want{
        "nvtrace-ioctl enter fd=" + fd + " dev=" + dev + " cmd=0x541b",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0x541b ret=0",
        "nvtrace-ioctl enter fd=" + fd + " dev=" + dev + " cmd=0x5401",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0x5401 ret=-1 errno=25",
    };
    ASSERT_EQ(r.markers.size(), want.size() + 1);
    EXPECT_EQ(std::vector<std::string>(r.markers.begin() + 1, r.markers.end()), want);
}

TEST_F(Preload, DecodesRecordedRmParameterBuffers) {
    ProbeRun r = run("rm");
    std::string fd = fd_of(r, "alloc21"), gpu = fd_of(r, "allocmem");
    std::string ctl = r.dir + "/dev/nvidiactl", dev0 = r.dir + "/dev/nvidia0";
    auto enter = [&](const std::string& f, const std::string& d, const std::string& rest) {
        return "nvtrace-ioctl enter fd=" + f + " dev=" + d + " " + rest;
    };
    auto exit_ = [&](const std::string& f, const std::string& rest) {
        return "nvtrace-ioctl exit fd=" + f + " " + rest;
    };
    std::vector<std::string> want{
        enter(fd, ctl, "cmd=0xc020462b name=NV_ESC_RM_ALLOC hclass=0xa06f"),
        exit_(fd, "cmd=0xc020462b ret=-1 errno=25 status=0x1f"),
        enter(fd, ctl, "cmd=0xc030462b name=NV_ESC_RM_ALLOC hclass=0x80"),
        exit_(fd, "cmd=0xc030462b ret=-1 errno=25 status=0x22"),
        enter(fd, ctl, "cmd=0xc020462a name=NV_ESC_RM_CONTROL ctrl=0x20800110"),
        exit_(fd, "cmd=0xc020462a ret=-1 errno=25 status=0x56"),
        enter(fd, ctl, "cmd=0xc0104629 name=NV_ESC_RM_FREE"),
        exit_(fd, "cmd=0xc0104629 ret=-1 errno=25 status=0x0"),
        enter(fd, ctl, "cmd=0xc020462b name=NV_ESC_RM_ALLOC"),  // NULL: nothing read
        exit_(fd, "cmd=0xc020462b ret=-1 errno=25"),
        enter(fd, ctl, "cmd=0xc020462b name=NV_ESC_RM_ALLOC"),  // bad pointer: EFAULT to us, no crash
        exit_(fd, "cmd=0xc020462b ret=-1 errno=25"),
        enter(fd, ctl, "cmd=0xc018462b"),  // a size no layout has: nothing read
        exit_(fd, "cmd=0xc018462b ret=-1 errno=25"),
        enter(fd, ctl, "cmd=0xc01046d3 name=NV_ESC_IOCTL_XFER_CMD xfer_nr=0x2b xfer_size=0x20 hclass=0xa06f"),
        exit_(fd, "cmd=0xc01046d3 ret=-1 errno=25 status=0x1f"),
        enter(gpu, dev0, "cmd=0xc0384627 name=NV_ESC_RM_ALLOC_MEMORY hclass=0x71"),
        exit_(gpu, "cmd=0xc0384627 ret=-1 errno=25 status=0x1e"),
    };
    ASSERT_EQ(r.markers.size(), want.size() + 1);
    for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(r.markers[i + 1], want[i]) << "line " << i + 1;
    for (const char* label : {"alloc21", "alloc64", "control", "free", "null", "badptr", "badsize", "xfer", "allocmem"})
        EXPECT_NE(r.results[label].find(" ret=-1 errno=25"), std::string::npos) << label;
}

TEST_F(Preload, TheDriverVersionPicksTheLayoutWhereTheSizeDidNotChange) {
    // NVOS21 kept its 32 bytes but moved status from 24 to 28 at 535.43.02.
    ProbeRun old = run("rm", "530.41.03");
    ASSERT_GE(old.markers.size(), 3u);
    EXPECT_NE(old.markers[0].find(" driver=530.41.03"), std::string::npos);
    EXPECT_NE(old.markers[2].find(" status=0x24"), std::string::npos) << old.markers[2];
    // Unknown version: the hClass is read, the status is not guessed.
    ProbeRun unknown = run("rm", "unknown");
    ASSERT_GE(unknown.markers.size(), 3u);
    EXPECT_NE(unknown.markers[0].find(" driver=unknown"), std::string::npos);
    EXPECT_NE(unknown.markers[1].find(" hclass=0xa06f"), std::string::npos);
    EXPECT_EQ(unknown.markers[2].find("status="), std::string::npos) << unknown.markers[2];
    // NVOS54 is the same everywhere.
    EXPECT_NE(unknown.markers[6].find(" status=0x56"), std::string::npos) << unknown.markers[6];
}

TEST_F(Preload, DecodesUvmRmStatus) {
    ProbeRun r = run("uvm");
    std::string fd = fd_of(r, "initialize"), dev = r.dir + "/dev/nvidia-uvm";
    std::vector<std::string> want{
        "nvtrace-ioctl enter fd=" + fd + " dev=" + dev + " cmd=0x30000001 name=UVM_INITIALIZE",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0x30000001 ret=-1 errno=25 status=0x16",
        "nvtrace-ioctl enter fd=" + fd + " dev=" + dev + " cmd=0x22 name=UVM_FREE",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0x22 ret=-1 errno=25 status=0x1f",
        "nvtrace-ioctl enter fd=" + fd + " dev=" + dev + " cmd=0x23",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0x23 ret=-1 errno=25",
    };
    ASSERT_EQ(r.markers.size(), want.size() + 1);
    EXPECT_EQ(std::vector<std::string>(r.markers.begin() + 1, r.markers.end()), want);
    ProbeRun old = run("uvm", "580.65.06");  // UVM_FREE_PARAMS had rmStatus at 16 before 590
    ASSERT_EQ(old.markers.size(), 7u);
    EXPECT_EQ(old.markers[4], "nvtrace-ioctl exit fd=" + fd_of(old, "free") + " cmd=0x22 ret=-1 errno=25 status=0x3d");
}

TEST_F(Preload, DrmAndGdrdrvGetRequestMarkersOnly) {
    ProbeRun r = run("drm");
    std::string fd = fd_of(r, "drm_version"), g = fd_of(r, "gdr_version");
    std::vector<std::string> want{
        "nvtrace-ioctl enter fd=" + fd + " dev=" + r.dir + "/dev/dri/renderD128 cmd=0xc0406400",
        "nvtrace-ioctl exit fd=" + fd + " cmd=0xc0406400 ret=-1 errno=25",
        "nvtrace-ioctl enter fd=" + g + " dev=" + r.dir + "/dev/gdrdrv cmd=0xc008daff",
        "nvtrace-ioctl exit fd=" + g + " cmd=0xc008daff ret=-1 errno=25",
    };
    ASSERT_EQ(r.markers.size(), want.size() + 1);
    EXPECT_EQ(std::vector<std::string>(r.markers.begin() + 1, r.markers.end()), want);
}

TEST_F(Preload, NoMarkerFdMeansNothingAtAll) {
    ProbeRun r = run("fifo", "595.45.04", false);
    EXPECT_TRUE(r.markers.empty());
    EXPECT_EQ(r.results["fionread"], "fd=" + fd_of(r, "fionread") + " ret=0 errno=1234 value=3");
    EXPECT_EQ(r.results["tcgets"], "fd=" + fd_of(r, "fionread") + " ret=-1 errno=25");
}

TEST_F(Preload, NeverWritesIntoAFileThatReusedTheMarkerFd) {
    ProbeRun r = run("marker_reused");
    EXPECT_EQ(r.markers.size(), 1u);  // the start line only
    EXPECT_EQ(r.results["after_reuse"], "fd=" + fd_of(r, "after_reuse") + " ret=0 errno=1234 value=0");
    EXPECT_EQ(fs::file_size(r.dir + "/own_file"), 0u);
}

TEST_F(Preload, ThreadsWriteWholeLines) {
    ProbeRun r = run("threads");
    ASSERT_EQ(r.markers.size(), 1u + 2u * 2000u);
    std::size_t enters = 0, exits = 0;
    for (std::size_t i = 1; i < r.markers.size(); ++i) {
        const auto& l = r.markers[i];
        if (l.rfind("nvtrace-ioctl enter fd=", 0) == 0 && l.find(" cmd=0x541b") != std::string::npos) ++enters;
        if (l.rfind("nvtrace-ioctl exit fd=", 0) == 0 && l.size() > 8 && l.compare(l.size() - 6, 6, " ret=0") == 0)
            ++exits;
    }
    EXPECT_EQ(enters, 2000u);
    EXPECT_EQ(exits, 2000u);
}

}  // namespace
