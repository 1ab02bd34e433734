// describe_ioctl: naming by number and by device path, and the encoding explained.
#include <gtest/gtest.h>

#include "../../../analyze/json_values.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/knowledge.hpp"

using namespace nvtrace;

TEST(DescribeIoctl, NamesNvidiaEscapesFromTheNumberAlone) {
    auto d = describe_ioctl(0xC020462B);  // _IOWR('F', 0x2b, NVOS21)
    EXPECT_EQ(d.name, "NV_ESC_RM_ALLOC");
    EXPECT_EQ(d.family, IoctlFamily::nvidia_rm);
    EXPECT_EQ(d.encoding, "_IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x20)");
    ASSERT_NE(d.escape, nullptr);
    EXPECT_EQ(describe_ioctl(0xC0384627).name, "NV_ESC_RM_ALLOC_MEMORY");
    EXPECT_EQ(describe_ioctl(0xC01046CE).name, "NV_ESC_ALLOC_OS_EVENT");
    EXPECT_EQ(describe_ioctl(0xC01046CE).family, IoctlFamily::nvidia_os);
}

TEST(DescribeIoctl, OldNvos64SizePicksTheOlderEntry) {
    auto d = describe_ioctl(encode_ioc(3, 0x46, 0x2b, 0x28));
    EXPECT_EQ(d.name, "NV_ESC_RM_ALLOC");
    ASSERT_NE(d.escape, nullptr);
    EXPECT_EQ(d.escape->alt_size, 40u);
    EXPECT_EQ(d.escape->versions.last, (DriverVersion{530, 41, 3}));
}

TEST(DescribeIoctl, SizeMismatchIsExplained) {
    auto d = describe_ioctl(encode_ioc(3, 0x46, 0x2a, 0x30));
    EXPECT_EQ(d.name, "NV_ESC_RM_CONTROL");
    bool said = false;
    for (const auto& n : d.notes)
        said = said || n.find("matches no recorded size") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(DescribeIoctl, UvmPlainNumbersAndDevicePaths) {
    auto d = describe_ioctl(0x21, "/dev/nvidia-uvm");
    EXPECT_EQ(d.name, "UVM_MAP_EXTERNAL_ALLOCATION");
    ASSERT_NE(d.uvm, nullptr);
    EXPECT_STREQ(d.uvm->handler, "uvm_api_map_external_allocation");
    EXPECT_EQ(d.encoding, "_IOC(_IOC_NONE, 0x00, 0x21, 0x00)");
    EXPECT_EQ(describe_ioctl(0x30000001).name, "UVM_INITIALIZE");
    // On an NVIDIA RM node the same number is no escape.
    EXPECT_FALSE(describe_ioctl(0x21, "/dev/nvidiactl").name.has_value());
    // A test ioctl is explained, not named.
    auto t = describe_ioctl(205, "/dev/nvidia-uvm");
    EXPECT_FALSE(t.name.has_value());
    ASSERT_FALSE(t.notes.empty());
    EXPECT_NE(t.notes.front().find("UVM_TEST_IOCTL_BASE(5)"), std::string::npos);
}

TEST(DescribeIoctl, DevicePathDecidesBetweenFamilies) {
    // 0x2b with type 'F' is NV_ESC_RM_ALLOC; on a DRM node it is nothing nvtrace knows.
    EXPECT_FALSE(describe_ioctl(0xC028462B, "/dev/dri/renderD128").name.has_value());
    EXPECT_EQ(describe_ioctl(0xC028462B, "/dev/nvidiactl").name, "NV_ESC_RM_ALLOC");
    // DRM driver-specific range only with a DRM or accel path.
    EXPECT_FALSE(describe_ioctl(encode_ioc(3, 0x64, 0x40, 0x10)).name.has_value());
    EXPECT_EQ(describe_ioctl(encode_ioc(3, 0x64, 0x40, 0x10), "/dev/accel/accel0").name, "DRM_COMMAND_BASE+0x00");
    EXPECT_EQ(describe_ioctl(0x40086409).name, "DRM_IOCTL_GEM_CLOSE");
    EXPECT_EQ(describe_ioctl(0xC02064B2, "/dev/dri/card0").name, "DRM_IOCTL_MODE_CREATE_DUMB");
    EXPECT_EQ(describe_ioctl(0xC00C642D).name, "DRM_IOCTL_PRIME_HANDLE_TO_FD");
    EXPECT_EQ(describe_ioctl(0xC008DA01 + 0x200000, "/dev/gdrdrv").name, "GDRDRV_IOC_PIN_BUFFER");  // 0xC028DA01
    EXPECT_EQ(describe_ioctl(0x541B, "/dev/pts/0").name, "FIONREAD");
}

TEST(DescribeIoctl, NodeRulesBecomeNotes) {
    auto d = describe_ioctl(0xC0384627, "/dev/nvidiactl");  // ALLOC_MEMORY belongs on /dev/nvidiaN
    EXPECT_EQ(d.name, "NV_ESC_RM_ALLOC_MEMORY");
    bool said = false;
    for (const auto& n : d.notes)
        said = said || n.find("NV_ACTUAL_DEVICE_ONLY") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(DescribeIoctl, UnknownNumbersStillGetTheirEncoding) {
    auto d = describe_ioctl(0xC0104699);
    EXPECT_FALSE(d.name.has_value());
    EXPECT_EQ(d.family, IoctlFamily::unknown);
    EXPECT_EQ(d.fields.type, 0x46u);
    EXPECT_EQ(d.fields.nr, 0x99u);
    EXPECT_EQ(d.fields.size, 0x10u);
    auto j = to_json(d);
    EXPECT_EQ(j["known"], false);
    EXPECT_EQ(j["encoding"]["nr"], 0x99);
}

TEST(DescribeIoctl, ClassifiesDevicePaths) {
    EXPECT_EQ(classify_device("/dev/nvidiactl"), DeviceKind::nvidia_ctl);
    EXPECT_EQ(classify_device("/dev/nvidia0"), DeviceKind::nvidia_device);
    EXPECT_EQ(classify_device("/dev/nvidia12<char 195:12>"), DeviceKind::nvidia_device);
    EXPECT_EQ(classify_device("/dev/nvidia-uvm"), DeviceKind::nvidia_uvm);
    EXPECT_EQ(classify_device("/dev/nvidia-uvm-tools"), DeviceKind::nvidia_uvm_tools);
    EXPECT_EQ(classify_device("/dev/nvidia-modeset"), DeviceKind::nvidia_other);
    EXPECT_EQ(classify_device("/dev/dri/renderD128"), DeviceKind::drm);
    EXPECT_EQ(classify_device("/dev/accel/accel0"), DeviceKind::accel);
    EXPECT_EQ(classify_device("/dev/gdrdrv"), DeviceKind::gdrdrv);
    EXPECT_EQ(classify_device("/tmp/x"), DeviceKind::other);
}

// The pty requests a python3 program on /dev/ptmx made were shown as "ptmx 0x80045430": every request of
// include/uapi/asm-generic/ioctls.h is named, the _IOR/_IOW ones with their x86-64 sizes.
TEST(DescribeIoctl, EveryAsmGenericTtyRequestIsNamed) {
    EXPECT_EQ(describe_ioctl(0x80045430, "/dev/ptmx").name, "TIOCGPTN");
    EXPECT_EQ(describe_ioctl(0x40045431, "/dev/ptmx").name, "TIOCSPTLCK");
    EXPECT_EQ(describe_ioctl(0x5441, "/dev/ptmx").name, "TIOCGPTPEER");
    EXPECT_EQ(describe_ioctl(0x540E).name, "TIOCSCTTY");
    EXPECT_EQ(describe_ioctl(0x5452).name, "FIOASYNC");
    EXPECT_EQ(describe_ioctl(0x802C542A).name, "TCGETS2");  // _IOR('T', 0x2A, struct termios2), 44 bytes
    EXPECT_EQ(describe_ioctl(0x5460).name, "FIOQSIZE");
    EXPECT_EQ(describe_ioctl(0x541B).name, "FIONREAD");  // not its alias TIOCINQ
    EXPECT_EQ(ioctl_number_by_name("TIOCINQ"), 0x541Bu);
    EXPECT_EQ(ioctl_number_by_name("TIOCGEXCL"), 0x80045440u);
}

TEST(DescribeIoctl, NumbersByName) {
    EXPECT_EQ(ioctl_number_by_name("NV_ESC_RM_ALLOC_MEMORY"), 0xC0384627u);
    EXPECT_EQ(ioctl_number_by_name("UVM_FREE"), 34u);
    EXPECT_EQ(ioctl_number_by_name("DRM_IOCTL_VERSION"), 0xC0406400u);
    EXPECT_EQ(ioctl_number_by_name("TCGETS"), 0x5401u);
    EXPECT_FALSE(ioctl_number_by_name("NO_SUCH_IOCTL").has_value());
}

TEST(DescribeIoctl, IoctlNameUsesTheDevicePath) {
    EXPECT_EQ(ioctl_name(0x21), "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_EQ(ioctl_name(0x21, "/dev/nvidia-uvm"), "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_FALSE(ioctl_name(0x21, "/dev/nvidiactl").has_value());
    EXPECT_EQ(ioctl_name(0xc028462bULL), "NV_ESC_RM_ALLOC");
}

// A fresh user's finding: strace -y's "ioctl(3</dev/fb0>, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2a, 0x20), ...)" was
// named NV_ESC_RM_CONTROL and "ioctl(7</dev/sda>, _IOC(0, 0, 0x2, 0x3000), ...)" UVM_DEINITIALIZE: on a file
// known to be no NVIDIA, UVM, GDRCopy or DRM node those names are made up ('F' is also the framebuffer's magic).
TEST(DescribeIoctl, NoDriverNameOnAFileKnownToBeAnotherDevice) {
    for (const char* path : {"/dev/fb0", "/dev/sda", "socket:[1234]"}) {
        IoctlDescription fb = describe_ioctl(0xc020462a, std::string_view(path));
        EXPECT_FALSE(fb.name) << path << ": " << *fb.name;
        IoctlDescription uvm = describe_ioctl(0x30000002, std::string_view(path));
        EXPECT_FALSE(uvm.name) << path << ": " << *uvm.name;
        ASSERT_FALSE(fb.notes.empty());
        EXPECT_NE(fb.notes.back().find("only generic requests are named"), std::string::npos) << fb.notes.back();
        EXPECT_EQ(describe_ioctl(0x5401, std::string_view(path)).name, "TCGETS");  // generic: any file
    }
    // The same numbers where they belong, and where the file is not known.
    EXPECT_EQ(describe_ioctl(0xc020462a, std::string_view("/dev/nvidiactl")).name, "NV_ESC_RM_CONTROL");
    EXPECT_EQ(describe_ioctl(0x30000002, std::string_view("/dev/nvidia-uvm")).name, "UVM_DEINITIALIZE");
}
