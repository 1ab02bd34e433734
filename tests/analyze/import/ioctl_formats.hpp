// The syscalls:sys_enter_ioctl and sys_exit_ioctl formats of the test capture (tests/data/capture_dir/fionread20)
// parsed into a tep, and raw records laid out as the kernel writes them (struct trace_entry, then the fields at
// the offsets of those formats: fd 16, cmd 24, arg 32; ret 16). For the decoder tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <event-parse.h>
#include <gtest/gtest.h>

namespace nvtrace::test {

struct IoctlFormats {
    tep_handle* tep = nullptr;
    int enter = 0, exit_ = 0;  // their common_type ids

    IoctlFormats() {
        const auto capture = std::filesystem::path(NVTRACE_TEST_DATA) / "capture_dir" / "fionread20";
        tep = tep_alloc();
        tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
        tep_set_long_size(tep, 8);
        for (const char* ev : {"sys_enter_ioctl", "sys_exit_ioctl"}) {
            std::ifstream in(capture / "events" / "syscalls" / ev / "format");
            std::ostringstream ss;
            ss << in.rdbuf();
            std::string text = ss.str();
            EXPECT_EQ(tep_parse_event(tep, text.data(), text.size(), "syscalls"), 0) << ev;
        }
        enter = tep_find_event_by_name(tep, "syscalls", "sys_enter_ioctl")->id;
        exit_ = tep_find_event_by_name(tep, "syscalls", "sys_exit_ioctl")->id;
    }
    ~IoctlFormats() { tep_free(tep); }
    IoctlFormats(const IoctlFormats&) = delete;
    IoctlFormats& operator=(const IoctlFormats&) = delete;

    // common_type, common_flags (0x08: hardirq), common_pid.
    static void header(std::vector<unsigned char>& b, int type, int pid, std::uint8_t flags = 0) {
        std::memcpy(b.data(), &type, 2);
        b[2] = flags;
        std::memcpy(b.data() + 4, &pid, 4);
    }
    std::vector<unsigned char> enter_record(int pid, std::uint64_t fd, std::uint64_t cmd, std::uint64_t arg,
                                            std::uint8_t flags = 0) const {
        std::vector<unsigned char> b(40, 0);
        header(b, enter, pid, flags);
        std::memcpy(b.data() + 16, &fd, 8), std::memcpy(b.data() + 24, &cmd, 8), std::memcpy(b.data() + 32, &arg, 8);
        return b;
    }
    std::vector<unsigned char> exit_record(int pid, std::int64_t ret, std::uint8_t flags = 0) const {
        std::vector<unsigned char> b(24, 0);
        header(b, exit_, pid, flags);
        std::memcpy(b.data() + 16, &ret, 8);
        return b;
    }
};

}  // namespace nvtrace::test
