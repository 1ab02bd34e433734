// Sanity of the knowledge tables: unique numbers and names per version range, the _IOC round trip, sizes
// that fit the size field, and spot checks against ../shared/reference/nvidia-driver.md.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "nvtrace/knowledge.hpp"

using namespace nvtrace;

namespace {

// No two entries share a key (number or name) with overlapping version ranges.
template <class T, class Key>
void expect_unique(std::span<const T> table, Key key, const char* what) {
    for (std::size_t i = 0; i < table.size(); ++i)
        for (std::size_t j = i + 1; j < table.size(); ++j)
            if (key(table[i]) == key(table[j])) {
                EXPECT_FALSE(table[i].versions.overlaps(table[j].versions))
                    << what << " " << key(table[i]) << " appears twice in overlapping version ranges";
            }
}

}  // namespace

TEST(KnowledgeTables, NumbersAndNamesAreUniqueWithinAVersionRange) {
    auto nr = [](const NvEscape& e) { return e.nr; };
    auto nm = [](const NvEscape& e) { return std::string(e.name); };
    expect_unique(rm_escapes(), nr, "RM escape");
    expect_unique(rm_escapes(), nm, "RM escape");
    expect_unique(os_escapes(), nr, "OS escape");
    expect_unique(os_escapes(), nm, "OS escape");
    expect_unique(
        uvm_ioctls(), [](const UvmIoctl& u) { return u.cmd; }, "UVM ioctl");
    expect_unique(
        uvm_ioctls(), [](const UvmIoctl& u) { return std::string(u.name); }, "UVM ioctl");
    expect_unique(
        nv_statuses(), [](const NvStatusInfo& s) { return s.value; }, "NV_STATUS");
    expect_unique(
        nv_statuses(), [](const NvStatusInfo& s) { return std::string(s.name); }, "NV_STATUS");
    expect_unique(
        rm_classes(), [](const RmClass& c) { return c.hclass; }, "class");
    expect_unique(
        rm_classes(), [](const RmClass& c) { return std::string(c.name); }, "class");
    expect_unique(
        xids(), [](const XidInfo& x) { return x.xid; }, "Xid");
    expect_unique(
        gdrdrv_ioctls(), [](const GdrdrvIoctl& g) { return g.nr; }, "gdrdrv");
    std::set<unsigned> drm_nrs;
    std::set<std::string> drm_names;
    for (const DrmIoctl& d : drm_ioctls()) {
        EXPECT_TRUE(drm_nrs.insert(d.nr).second) << d.name;
        EXPECT_TRUE(drm_names.insert(d.name).second) << d.name;
    }
}

TEST(KnowledgeTables, VersionRangesAreOrdered) {
    for (const NvEscape& e : rm_escapes())
        EXPECT_LE(e.versions.first, e.versions.last) << e.name;
    for (const NvEscape& e : os_escapes())
        EXPECT_LE(e.versions.first, e.versions.last) << e.name;
    for (const UvmIoctl& u : uvm_ioctls())
        EXPECT_LE(u.versions.first, u.versions.last) << u.name;
    for (const NvStatusInfo& s : nv_statuses())
        EXPECT_LE(s.versions.first, s.versions.last) << s.name;
    for (const XidInfo& x : xids())
        EXPECT_LE(x.versions.first, x.versions.last) << x.mnemonic;
}

TEST(KnowledgeTables, EscapesLiveInTheirLayerRange) {
    // _IOC_NR is 8 bits; OS-layer escapes are NV_IOCTL_BASE (200) and up, RM escapes below.
    for (const NvEscape& e : rm_escapes()) {
        EXPECT_LT(e.nr, kNvIoctlBase) << e.name;
        EXPECT_EQ(e.layer, EscapeLayer::rm) << e.name;
    }
    for (const NvEscape& e : os_escapes()) {
        EXPECT_GE(e.nr, kNvIoctlBase) << e.name;
        EXPECT_LE(e.nr, 255u) << e.name;
        EXPECT_EQ(e.layer, EscapeLayer::os) << e.name;
    }
}

TEST(KnowledgeTables, IocEncodingRoundTrips) {
    for (unsigned dir = 0; dir < 4; ++dir)
        for (unsigned size : {0u, 1u, 0x28u, 0x3fffu})
            for (unsigned type : {0u, 0x46u, 0x64u, 0xdau})
                for (unsigned nr : {0u, 0x2bu, 0xffu}) {
                    IocFields f = decode_ioc(encode_ioc(dir, type, nr, size));
                    EXPECT_EQ(f.dir, dir);
                    EXPECT_EQ(f.type, type);
                    EXPECT_EQ(f.nr, nr);
                    EXPECT_EQ(f.size, size);
                }
    // Every DRM entry's cmd decodes back to its table fields.
    for (const DrmIoctl& d : drm_ioctls()) {
        IocFields f = decode_ioc(d.cmd());
        EXPECT_EQ(f.type, kDrmIoctlBase) << d.name;
        EXPECT_EQ(f.nr, d.nr) << d.name;
        EXPECT_EQ(f.size, d.size) << d.name;
        EXPECT_EQ(f.dir, d.dir) << d.name;
        EXPECT_EQ(describe_ioctl(d.cmd()).name, d.name);
    }
}

TEST(KnowledgeTables, StructSizesFitTheIocSizeField) {
    // _IOC_SIZE has 14 bits: a struct the driver encodes in the cmd must be under 16 KiB (large RM payloads
    // go through NV_ESC_IOCTL_XFER_CMD instead).
    for (const NvEscape& e : rm_escapes()) {
        EXPECT_LT(e.size, 1u << 14) << e.name;
        EXPECT_LT(e.alt_size, 1u << 14) << e.name;
        if (e.size) {
            EXPECT_EQ(decode_ioc(encode_ioc(3, kNvIoctlMagic, e.nr, e.size)).size, e.size) << e.name;
        }
    }
    for (const NvEscape& e : os_escapes())
        EXPECT_LT(e.size, 1u << 14) << e.name;
    for (const GdrdrvIoctl& g : gdrdrv_ioctls()) {
        if (g.size_is_pointer) {
            EXPECT_EQ(g.size, 8u) << g.name;
        }
        EXPECT_LT(g.size, 1u << 14) << g.name;
    }
    // Sizes the reference gives as x86_64 cmds (nvidia-driver.md 1.2/1.3).
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x27, rm_escape(0x27)->size), 0xC0384627u);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x29, rm_escape(0x29)->size), 0xC0104629u);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x2A, rm_escape(0x2A)->size), 0xC020462Au);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x34, rm_escape(0x34)->size), 0xC01C4634u);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x4A, rm_escape(0x4A)->size), 0xC0B8464Au);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x4E, rm_escape(0x4E)->size), 0xC038464Eu);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0x57, rm_escape(0x57)->size), 0xC0404657u);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0xCE, os_escape(0xCE)->size), 0xC01046CEu);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0xD2, os_escape(0xD2)->size), 0xC04846D2u);
    EXPECT_EQ(encode_ioc(3, kNvIoctlMagic, 0xD9, os_escape(0xD9)->size), 0xCA3046D9u);
    EXPECT_EQ(encode_ioc(3, kGdrdrvIoctlMagic, 1, gdrdrv_ioctl(1)->size), 0xC028DA01u);
    EXPECT_EQ(encode_ioc(3, kGdrdrvIoctlMagic, 7, gdrdrv_ioctl(7)->size), 0xC020DA07u);
    EXPECT_EQ(encode_ioc(3, kGdrdrvIoctlMagic, 255, gdrdrv_ioctl(255)->size), 0xC008DAFFu);
}

TEST(KnowledgeTables, RmEscapesFromTheReference) {
    ASSERT_NE(rm_escape(0x27), nullptr);
    EXPECT_STREQ(rm_escape(0x27)->name, "NV_ESC_RM_ALLOC_MEMORY");
    EXPECT_EQ(rm_escape(0x27)->node, NvNode::device);  // NV_ACTUAL_DEVICE_ONLY
    EXPECT_STREQ(rm_escape(0x2B)->name, "NV_ESC_RM_ALLOC");
    EXPECT_TRUE(rm_escape(0x2B)->size_fits(32));  // NVOS21
    EXPECT_TRUE(rm_escape(0x2B)->size_fits(48));  // NVOS64 from 535.43.02
    EXPECT_FALSE(rm_escape(0x2B)->size_fits(40));
    EXPECT_TRUE(rm_escape(0x2B, DriverVersion{530, 41, 3})->size_fits(40));  // NVOS64 before paramsSize
    EXPECT_STREQ(rm_escape(0x4E)->name, "NV_ESC_RM_MAP_MEMORY");
    EXPECT_STREQ(os_escape(0xD3)->name, "NV_ESC_IOCTL_XFER_CMD");
    // 0x5F was renamed; the config escapes left in 595.
    EXPECT_STREQ(rm_escape(0x5F, DriverVersion{535, 104, 5})->name, "NV_ESC_RM_NVLOG_CTRL");
    EXPECT_STREQ(rm_escape(0x5F)->name, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC");
    EXPECT_EQ(rm_escape(0x32, DriverVersion{595, 45, 4}), nullptr);
    EXPECT_NE(rm_escape(0x32, DriverVersion{590, 48, 1}), nullptr);
    EXPECT_EQ(os_escape(0xDA, DriverVersion{535, 104, 5}), nullptr);  // WAIT_OPEN_COMPLETE from 550
    EXPECT_EQ(nv_escape_by_name("NV_ESC_RM_CONTROL")->nr, 0x2Au);
}

TEST(KnowledgeTables, UvmMapExternalAllocationAndItsHandler) {
    const UvmIoctl* u = uvm_ioctl(33);
    ASSERT_NE(u, nullptr);
    EXPECT_STREQ(u->name, "UVM_MAP_EXTERNAL_ALLOCATION");
    EXPECT_STREQ(u->handler, "uvm_api_map_external_allocation");
    EXPECT_EQ(u->route, UvmRoute::alloc_init_check);
    EXPECT_EQ(u->node, UvmNode::uvm);
    EXPECT_EQ(uvm_ioctl_by_name("UVM_MAP_EXTERNAL_ALLOCATION"), u);
    // The two exceptions to plain small numbers (uvm_linux_ioctl.h).
    EXPECT_STREQ(uvm_ioctl(0x30000001)->name, "UVM_INITIALIZE");
    EXPECT_EQ(uvm_ioctl(0x30000001)->route, UvmRoute::stack_no_init_check);
    EXPECT_STREQ(uvm_ioctl(0x30000002)->name, "UVM_DEINITIALIZE");
    EXPECT_STREQ(uvm_ioctl(56)->handler, "uvm_api_tools_init_event_tracker");
    EXPECT_EQ(uvm_ioctl(56)->node, UvmNode::tools);
    EXPECT_EQ(uvm_ioctl(73)->node, UvmNode::uvm);
    EXPECT_EQ(uvm_ioctl(80, DriverVersion{575, 64, 5}), nullptr);  // UVM_DISCARD from 580.65.06
    EXPECT_EQ(uvm_ioctl(54, DriverVersion{595, 45, 4}), nullptr);  // system-wide atomics gone in 595
    EXPECT_EQ(uvm_ioctl(1)->route, UvmRoute::not_routed);
}

TEST(KnowledgeTables, NvStatusSpotChecks) {
    EXPECT_EQ(nv_status_name(0x1E), "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(nv_status_name(0x0), "NV_OK");
    EXPECT_EQ(nv_status_name(0xFFFF), "NV_ERR_GENERIC");
    EXPECT_EQ(nv_status_name(0x1F), "NV_ERR_INVALID_ARGUMENT");
    EXPECT_EQ(nv_status_name(0x16), "NV_ERR_ILLEGAL_ACTION");
    EXPECT_EQ(nv_status_name(0x1B), "NV_ERR_INSUFFICIENT_PERMISSIONS");
    EXPECT_EQ(nv_status_name(0x29), "NV_ERR_INVALID_FLAGS");
    EXPECT_EQ(nv_status_name(0x2E), "NV_ERR_INVALID_LIMIT");
    EXPECT_EQ(nv_status_name(0x51), "NV_ERR_NO_MEMORY");
    EXPECT_EQ(nv_status_name(0x56), "NV_ERR_NOT_SUPPORTED");
    EXPECT_EQ(nv_status_name(0x10009), "NV_WARN_THRESHOLD_CROSSED");
    EXPECT_EQ(nv_status_string(0x1E), "Address not valid [NV_ERR_INVALID_ADDRESS]");
    EXPECT_EQ(nv_status_string(0xABCDEF), "Unknown error code!");
    EXPECT_FALSE(nv_status_name(0xABCDEF).has_value());
    EXPECT_EQ(nv_status_by_name("NV_ERR_INVALID_ADDRESS")->value, 0x1Eu);
    // 0x8B changed meaning in 595.
    EXPECT_STREQ(nv_status(0x8B, DriverVersion{590, 48, 1})->name, "NV_ERR_DMA_XFER_FAILED");
    EXPECT_STREQ(nv_status(0x8B)->name, "NV_ERR_OPERATION_ABORTED");
    EXPECT_EQ(nv_status(0x7C, DriverVersion{535, 104, 5}), nullptr);  // 0x7C.. are newer than 535
}

TEST(KnowledgeTables, RmClassSpotChecks) {
    EXPECT_EQ(rm_class_name(0x71), "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR");
    EXPECT_EQ(rm_class_name(0x41), "NV01_ROOT_CLIENT");
    EXPECT_EQ(rm_class_name(0x80), "NV01_DEVICE_0");
    EXPECT_EQ(rm_class_name(0x2080), "NV20_SUBDEVICE_0");
    EXPECT_EQ(rm_class_name(0x40), "NV01_MEMORY_LOCAL_USER");
    EXPECT_EQ(rm_class_name(0x90F1), "FERMI_VASPACE_A");
    EXPECT_EQ(rm_class_by_name("NV01_MEMORY_SYSTEM")->hclass, 0x3Eu);
    EXPECT_FALSE(rm_class_name(0x12345).has_value());
    EXPECT_EQ(rm_class(0xC96F, DriverVersion{550, 40, 7}), nullptr);  // Blackwell classes from 560
}

TEST(KnowledgeTables, XidSpotChecks) {
    ASSERT_NE(xid_info(79), nullptr);
    EXPECT_STREQ(xid_info(79)->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
    EXPECT_STRNE(xid_info(79)->meaning, "");
    EXPECT_STREQ(xid_info(13)->mnemonic, "ROBUST_CHANNEL_GR_EXCEPTION");
    EXPECT_STREQ(xid_info(31)->mnemonic, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT");
    EXPECT_STREQ(xid_info(48)->mnemonic, "ROBUST_CHANNEL_GPU_ECC_DBE");
    EXPECT_STREQ(xid_info(119)->mnemonic, "GSP_RPC_TIMEOUT");
    EXPECT_STREQ(xid_info(154)->mnemonic, "GPU_RECOVERY_ACTION_CHANGED");
    EXPECT_EQ(xid_info(109)->source, XidSource::catalog);
    EXPECT_STRNE(xid_info(109)->meaning, "");
    EXPECT_STREQ(xid_info(8)->mnemonic, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT");
    EXPECT_STREQ(xid_info(144, DriverVersion{550, 100})->mnemonic, "ROBUST_CHANNEL_KEY_ROTATION_ERROR");
    EXPECT_STREQ(xid_info(144)->mnemonic, "NVLINK_SAW_ERROR");
    EXPECT_EQ(xid_info(176, DriverVersion{580, 65, 6}), nullptr);
    EXPECT_EQ(xid_info(2), nullptr);  // unused
    EXPECT_EQ(xid_by_mnemonic("GSP_ERROR")->xid, 120u);
}

TEST(KnowledgeTables, VersionsParseAndPrint) {
    EXPECT_EQ(parse_driver_version("535.104.05"), (DriverVersion{535, 104, 5}));
    EXPECT_EQ(to_string(*parse_driver_version("535.104.05")), "535.104.05");
    EXPECT_EQ(to_string(*parse_driver_version("550.100")), "550.100");
    EXPECT_LT(*parse_driver_version("535.98"), *parse_driver_version("535.104.05"));
    EXPECT_FALSE(parse_driver_version("535.x").has_value());
    EXPECT_FALSE(parse_driver_version("").has_value());
    EXPECT_FALSE(parse_driver_version("1.2.3.4").has_value());
    EXPECT_EQ(to_string(VersionRange{}), "all versions checked");
    EXPECT_EQ(to_string(VersionRange{DriverVersion{535, 43, 2}, kNewestKnown}), "from 535.43.02");
}

// The 580 production branch (580.119.02 to 580.142, and 580.159.04 on the H200 machines) keeps 580.105.08's
// uvm_ioctl.h and nverror.h: UVM ioctls 9, 11, 18, 19 and Xids 166, 170 keep their 580 names there; 590.44.01
// removed the ioctls and renamed the Xids (open-gpu-kernel-modules tags 580.142 and 590.44.01).
TEST(KnowledgeTables, Branch580KeepsItsUvmIoctlsAndXidsAfterTheMainLineMovedOn) {
    for (DriverVersion d : {DriverVersion{580, 105, 8}, DriverVersion{580, 142, 0, 2}, DriverVersion{580, 159, 4}}) {
        ASSERT_NE(uvm_ioctl(9, d), nullptr) << to_string(d);
        EXPECT_STREQ(uvm_ioctl(9, d)->name, "UVM_RUN_TEST");
        ASSERT_NE(uvm_ioctl(11, d), nullptr) << to_string(d);
        EXPECT_STREQ(uvm_ioctl(11, d)->name, "UVM_REMOVE_SESSION");
        ASSERT_NE(uvm_ioctl(18, d), nullptr) << to_string(d);
        EXPECT_STREQ(uvm_ioctl(18, d)->name, "UVM_REGISTER_MPS_SERVER");
        ASSERT_NE(uvm_ioctl(19, d), nullptr) << to_string(d);
        EXPECT_STREQ(uvm_ioctl(19, d)->name, "UVM_REGISTER_MPS_CLIENT");
        ASSERT_NE(xid_info(166, d), nullptr) << to_string(d);
        EXPECT_STREQ(xid_info(166, d)->mnemonic, "NVLINK_SECURE_INTERRUPT_ERROR");
        ASSERT_NE(xid_info(170, d), nullptr) << to_string(d);
        EXPECT_STREQ(xid_info(170, d)->mnemonic, "ROBUST_CHANNEL_UNUSED_ERROR_170");
    }
    const DriverVersion d590{590, 44, 1};
    EXPECT_EQ(uvm_ioctl(9, d590), nullptr);
    EXPECT_EQ(uvm_ioctl(19, d590), nullptr);
    EXPECT_STREQ(xid_info(166, d590)->mnemonic, "NVLINK_SECURE_NVLE_ERROR");
    EXPECT_STREQ(xid_info(170, d590)->mnemonic, "NVLINK_SECURE_ERROR");
}

// The same kind on the older branches: an entry the main line dropped at the next branch stays to the end of its
// own branch (uvm_ioctl.h of 570.211.01; nverror.h of 535.288.01 and 550.163.01 still define these numbers).
TEST(KnowledgeTables, EntriesDroppedOnTheMainLineLastToTheirBranchEnd) {
    ASSERT_NE(uvm_ioctl(36, DriverVersion{570, 211, 1}), nullptr);
    EXPECT_STREQ(uvm_ioctl(36, DriverVersion{570, 211, 1})->name, "UVM_DEBUG_ACCESS_MEMORY");
    EXPECT_EQ(uvm_ioctl(36, DriverVersion{575, 51, 2}), nullptr);
    EXPECT_STREQ(xid_info(30, DriverVersion{535, 288, 1})->mnemonic, "ROBUST_CHANNEL_BAD_ADDR_ACCESS");
    EXPECT_STREQ(xid_info(139, DriverVersion{535, 288, 1})->mnemonic, "ROBUST_CHANNEL_FAST_PATH_ERROR");
    EXPECT_STREQ(xid_info(144, DriverVersion{550, 163, 1})->mnemonic, "ROBUST_CHANNEL_KEY_ROTATION_ERROR");
    EXPECT_EQ(to_string(VersionRange{kOldestKnown, DriverVersion{580, 0xffffffffu, 0xffffffffu, 3}}), "up to 580.x");
}
