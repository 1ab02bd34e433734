// The strace reader on the case file strace-nvidia-ioctl-libva.txt (intel/libva#575) and on variants.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "nvtrace/knowledge.hpp"

using namespace nvtrace;

namespace {

std::string read_case(const char* name) {
    std::ifstream in(std::string(NVTRACE_CASES_DIR) + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST(StraceCase, DecodesEveryIoctlOfTheLibvaCase) {
    std::string text = read_case("strace-nvidia-ioctl-libva.txt");
    ASSERT_FALSE(text.empty());
    StraceLog log = parse_strace(text, "strace-nvidia-ioctl-libva.txt");

    struct Want {
        int fd;
        unsigned nr;
        unsigned size;
        const char* name;
    };
    const Want want[] = {
        {14, 0xce, 0x10, "NV_ESC_ALLOC_OS_EVENT"},     {14, 0x2b, 0x28, "NV_ESC_RM_ALLOC"},
        {5, 0x4a, 0xb8, "NV_ESC_RM_VID_HEAP_CONTROL"}, {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},
        {5, 0x4e, 0x38, "NV_ESC_RM_MAP_MEMORY"},       {5, 0x2b, 0x28, "NV_ESC_RM_ALLOC"},
        {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},          {5, 0x2a, 0x20, "NV_ESC_RM_CONTROL"},
        {5, 0x4e, 0x38, "NV_ESC_RM_MAP_MEMORY"},
    };
    std::vector<const StraceIoctl*> complete;
    for (const auto& io : log.ioctls)
        if (!io.truncated) complete.push_back(&io);
    ASSERT_EQ(complete.size(), std::size(want));
    for (std::size_t i = 0; i < std::size(want); ++i) {
        const StraceIoctl& io = *complete[i];
        SCOPED_TRACE(io.line);
        EXPECT_EQ(io.fd, want[i].fd);
        ASSERT_TRUE(io.cmd.has_value());
        IocFields f = decode_ioc(*io.cmd);
        EXPECT_EQ(f.dir, 3u);
        EXPECT_EQ(f.type, 0x46u);
        EXPECT_EQ(f.nr, want[i].nr);
        EXPECT_EQ(f.size, want[i].size);
        EXPECT_EQ(io.ret, 0);
        EXPECT_FALSE(io.fd_path.has_value());  // fds 5 and 14 were opened before the excerpt
        EXPECT_EQ(describe_ioctl(*io.cmd).name, want[i].name);
    }
    // The last line stops mid-call: one truncated ioctl on fd 5 with no request and no result.
    ASSERT_EQ(log.ioctls.size(), std::size(want) + 1);
    const StraceIoctl& last = log.ioctls.back();
    EXPECT_TRUE(last.truncated);
    EXPECT_EQ(last.fd, 5);
    EXPECT_FALSE(last.cmd.has_value());
    EXPECT_FALSE(last.ret.has_value());
    EXPECT_TRUE(log.truncated);
    ASSERT_FALSE(log.diagnostics.empty());
    EXPECT_EQ(log.diagnostics.front().name, "strace_truncated_line");
    EXPECT_EQ(log.diagnostics.front().first_example, "strace-nvidia-ioctl-libva.txt:19: line ends mid-call");
    // Two opens of fd 15: /dev/nvidiactl, then (after close) /dev/nvidia0.
    ASSERT_EQ(log.opens.size(), 2u);
    EXPECT_EQ(log.opens[0].path, "/dev/nvidiactl");
    EXPECT_EQ(log.opens[0].fd, 15);
    EXPECT_EQ(log.opens[1].path, "/dev/nvidia0");
    EXPECT_EQ(log.lines, 19u);

    auto records = strace_ioctl_records(log);
    ASSERT_EQ(records.size(), log.ioctls.size());
    EXPECT_EQ(records[1].name, "NV_ESC_RM_ALLOC");
    EXPECT_FALSE(records.back().name.has_value());
}

TEST(StraceReader, FdPathsFromOpenatAndDashY) {
    const char* text =
        "1234  12:00:00.000001 openat(AT_FDCWD, \"/dev/nvidia-uvm\", O_RDWR|O_CLOEXEC) = 7\n"
        "1234  12:00:00.000002 ioctl(7, _IOC(_IOC_NONE, 0, 0x1, 0x3000), 0x7ffc) = 0 <0.000010>\n"
        "1234  12:00:00.000003 ioctl(7, _IOC(_IOC_NONE, 0, 0x21, 0), 0x7ffc) = 0\n"
        "[pid  1235] ioctl(9</dev/nvidiactl>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x27, 0x38), 0x7ffd) = 0\n"
        "ioctl(3, TCGETS, 0x7ffd) = -1 ENOTTY (Inappropriate ioctl for device)\n"
        "close(7) = 0\n"
        "ioctl(7, 0x21, 0) = -1 EBADF (Bad file descriptor)\n";
    StraceLog log = parse_strace(text);
    ASSERT_EQ(log.ioctls.size(), 5u);
    EXPECT_EQ(log.ioctls[0].cmd, 0x30000001u);  // UVM_INITIALIZE as strace prints it
    EXPECT_EQ(log.ioctls[0].fd_path, "/dev/nvidia-uvm");
    EXPECT_EQ(log.ioctls[0].pid, 1234);
    EXPECT_EQ(describe_ioctl(*log.ioctls[0].cmd, log.ioctls[0].fd_path).name, "UVM_INITIALIZE");
    EXPECT_EQ(describe_ioctl(*log.ioctls[1].cmd, log.ioctls[1].fd_path).name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(log.ioctls[2].fd_path, "/dev/nvidiactl");
    EXPECT_EQ(log.ioctls[2].pid, 1235);
    EXPECT_EQ(log.ioctls[3].cmd, 0x5401u);
    EXPECT_EQ(log.ioctls[3].ret, -1);
    EXPECT_EQ(log.ioctls[3].error, "ENOTTY (Inappropriate ioctl for device)");
    EXPECT_FALSE(log.ioctls[4].fd_path.has_value());  // closed
    EXPECT_FALSE(log.truncated);
    EXPECT_TRUE(log.diagnostics.empty());
}

TEST(StraceReader, UnfinishedAndResumedCallsPair) {
    const char* text =
        "[pid 10] ioctl(5, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), 0x7ff <unfinished ...>\n"
        "[pid 11] write(1, \"x, y)\", 5) = 5\n"
        "[pid 10] <... ioctl resumed>) = 0\n";
    StraceLog log = parse_strace(text);
    ASSERT_EQ(log.ioctls.size(), 1u);
    EXPECT_EQ(log.ioctls[0].ret, 0);
    EXPECT_FALSE(log.ioctls[0].truncated);
    EXPECT_EQ(log.ioctls[0].line, 1u);
}
