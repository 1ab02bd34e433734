// NVIDIA escapes: the request numbers of nvidia.ko on /dev/nvidiactl and /dev/nvidiaN, magic 'F'.
#include <array>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

constexpr NvNode ctl = NvNode::ctl;
constexpr NvNode dev = NvNode::device;
constexpr NvNode any = NvNode::any;
constexpr EscapeLayer rm = EscapeLayer::rm;
constexpr EscapeLayer os = EscapeLayer::os;

// RM escapes. Numbers: src/nvidia/arch/nvalloc/unix/include/nv_escape.h, every open-gpu-kernel-modules
// release from 515.43.04 to 595.45.04. Parameter structs and accepted sizes: the per-case checks and the
// RmValidateIoctl table in src/nvidia/arch/nvalloc/unix/src/escape.c (595.45.04); sizes measured by compiling
// src/common/sdk/nvidia/inc/nvos.h and nv-unix-nvos-params-wrappers.h of each release for x86_64. Node rules:
// NV_CTL_DEVICE_ONLY / NV_ACTUAL_DEVICE_ONLY in escape.c. Size 0 = variable or not recorded.
constexpr std::array kRmEscapes{
    NvEscape{0x27, "NV_ESC_RM_ALLOC_MEMORY", rm, "nv_ioctl_nvos02_parameters_with_fd", 56, 0, dev, all(),
             "NVOS02 + fd@48; hClass@12, status@40. hClass 0x71 (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR) pins user "
             "pages or IO memory (RmAllocOsDescriptor)"},
    NvEscape{0x28, "NV_ESC_RM_ALLOC_OBJECT", rm, "NVOS05_PARAMETERS", 20, 0, ctl, all(), "legacy object alloc"},
    NvEscape{0x29, "NV_ESC_RM_FREE", rm, "NVOS00_PARAMETERS", 16, 0, ctl, all(), "frees an RM object"},
    NvEscape{0x2A, "NV_ESC_RM_CONTROL", rm, "NVOS54_PARAMETERS", 32, 0, ctl, all(),
             "RM control; command in cmd@8 (e.g. 0x2080xxxx), status@28"},
    NvEscape{0x2B, "NV_ESC_RM_ALLOC", rm, "NVOS21_PARAMETERS or NVOS64_PARAMETERS", 32, 40, ctl, until(v(530, 41, 3)),
             "object alloc by hClass@12; NVOS64 was 40 bytes (no paramsSize) before 535.43.02; status@28 "
             "(NVOS21) or @36 (NVOS64). On /dev/nvidiaN only NV01_EVENT* classes"},
    NvEscape{0x2B, "NV_ESC_RM_ALLOC", rm, "NVOS21_PARAMETERS or NVOS64_PARAMETERS", 32, 48, ctl, since(v(535, 43, 2)),
             "object alloc by hClass@12; root classes are forced to NV01_ROOT_CLIENT; status@28 (NVOS21) or "
             "@40 (NVOS64). On /dev/nvidiaN only NV01_EVENT* classes"},
    NvEscape{0x32, "NV_ESC_RM_CONFIG_GET", rm, "", 0, 0, any, until(v(590, 48, 1)), "gone in 595"},
    NvEscape{0x33, "NV_ESC_RM_CONFIG_SET", rm, "", 0, 0, any, until(v(590, 48, 1)), "gone in 595"},
    NvEscape{0x34, "NV_ESC_RM_DUP_OBJECT", rm, "NVOS55_PARAMETERS", 28, 0, ctl, all(), ""},
    NvEscape{0x35, "NV_ESC_RM_SHARE", rm, "NVOS57_PARAMETERS", 24, 0, ctl, all(), ""},
    NvEscape{0x37, "NV_ESC_RM_CONFIG_GET_EX", rm, "", 0, 0, any, until(v(590, 48, 1)), "gone in 595"},
    NvEscape{0x38, "NV_ESC_RM_CONFIG_SET_EX", rm, "", 0, 0, any, until(v(590, 48, 1)), "gone in 595"},
    NvEscape{0x39, "NV_ESC_RM_I2C_ACCESS", rm, "NVOS_I2C_ACCESS_PARAMS", 32, 0, dev, all(), ""},
    NvEscape{0x41, "NV_ESC_RM_IDLE_CHANNELS", rm, "NVOS30_PARAMETERS", 56, 0, ctl, all(), ""},
    NvEscape{0x4A, "NV_ESC_RM_VID_HEAP_CONTROL", rm, "NVOS32_PARAMETERS", 184, 0, ctl, all(),
             "function 2 = ALLOC_SIZE, 27 = ALLOC_OS_DESCRIPTOR (RmCreateOsDescriptor)"},
    NvEscape{0x4D, "NV_ESC_RM_ACCESS_REGISTRY", rm, "NVOS38_PARAMETERS", 72, 0, ctl, all(), ""},
    NvEscape{0x4E, "NV_ESC_RM_MAP_MEMORY", rm, "nv_ioctl_nvos33_parameters_with_fd", 56, 0, ctl, all(),
             "CPU mapping: NVOS33 + fd@48 gets an mmap context, then the program mmap()s that fd; status@40"},
    NvEscape{0x4F, "NV_ESC_RM_UNMAP_MEMORY", rm, "NVOS34_PARAMETERS", 32, 0, ctl, all(), ""},
    NvEscape{0x52, "NV_ESC_RM_GET_EVENT_DATA", rm, "NVOS41_PARAMETERS", 16, 0, any, all(), "handled in rm_ioctl()"},
    NvEscape{0x54, "NV_ESC_RM_ALLOC_CONTEXT_DMA2", rm, "NVOS39_PARAMETERS", 56, 0, ctl, all(), ""},
    NvEscape{0x56, "NV_ESC_RM_ADD_VBLANK_CALLBACK", rm, "", 0, 0, any, all(), ""},
    NvEscape{0x57, "NV_ESC_RM_MAP_MEMORY_DMA", rm, "NVOS46_PARAMETERS", 56, 0, ctl, until(v(575, 64, 5)),
             "GPU VA mapping"},
    NvEscape{0x57, "NV_ESC_RM_MAP_MEMORY_DMA", rm, "NVOS46_PARAMETERS", 64, 0, ctl, since(v(580, 65, 6)),
             "GPU VA mapping; dmaOffset@48, status@56"},
    NvEscape{0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA", rm, "NVOS47_PARAMETERS", 40, 0, ctl, until(v(545, 29, 6)), ""},
    NvEscape{0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA", rm, "NVOS47_PARAMETERS", 48, 0, ctl, since(v(550, 40, 7)), ""},
    NvEscape{0x59, "NV_ESC_RM_BIND_CONTEXT_DMA", rm, "NVOS49_PARAMETERS", 16, 0, ctl, all(), ""},
    NvEscape{0x5C, "NV_ESC_RM_EXPORT_OBJECT_TO_FD", rm, "", 0, 0, any, all(), ""},
    NvEscape{0x5D, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD", rm, "", 0, 0, any, all(), ""},
    NvEscape{0x5E, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO", rm, "NVOS56_PARAMETERS", 40, 0, ctl, all(), ""},
    // 0x5F: NVLOG_CTRL from 535.54.03 on the 535 branch (checked to 535.288.01), renamed in 545.23.06.
    NvEscape{0x5F, "NV_ESC_RM_NVLOG_CTRL", rm, "", 0, 0, ctl, between(v(535, 54, 3), v(535, 288, 1)),
             "renamed NV_ESC_RM_LOCKLESS_DIAGNOSTIC in 545"},
    NvEscape{0x5F, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC", rm, "NV_LOCKLESS_DIAGNOSTIC_PARAMS", 4024, 0, ctl,
             between(v(545, 23, 6), v(565, 77)), "nvlog queries without the RM lock"},
    NvEscape{0x5F, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC", rm, "NV_LOCKLESS_DIAGNOSTIC_PARAMS", 15412, 0, ctl,
             since(v(570, 86, 15)), "nvlog queries without the RM lock"},
};

// OS-layer escapes, NV_IOCTL_BASE (200) + n. Numbers: kernel-open/common/inc/nv-ioctl-numbers.h and
// nv-ioctl-numa.h, 515.43.04 to 595.45.04. Structs: kernel-open/common/inc/nv-ioctl.h (sizes measured per
// release for x86_64); node rules and size checks: kernel-open/nvidia/nv.c nvidia_ioctl() (595.45.04).
constexpr std::array kOsEscapes{
    NvEscape{200, "NV_ESC_CARD_INFO", os, "nv_ioctl_card_info_t[]", 0, 0, ctl, all(),
             "an array of 72-byte nv_ioctl_card_info_t, one per GPU slot"},
    NvEscape{201, "NV_ESC_REGISTER_FD", os, "nv_ioctl_register_fd_t", 4, 0, any, all(),
             "ties this fd to a /dev/nvidiactl fd (ctl_fd@0)"},
    NvEscape{206, "NV_ESC_ALLOC_OS_EVENT", os, "nv_ioctl_alloc_os_event_t", 16, 0, any, all(),
             "handled in rm_ioctl(); Status@12"},
    NvEscape{207, "NV_ESC_FREE_OS_EVENT", os, "nv_ioctl_free_os_event_t", 16, 0, any, all(),
             "handled in rm_ioctl(); Status@12"},
    NvEscape{209, "NV_ESC_STATUS_CODE", os, "nv_ioctl_status_code_t", 12, 0, ctl, all(), ""},
    NvEscape{210, "NV_ESC_CHECK_VERSION_STR", os, "nv_ioctl_rm_api_version_t", 72, 0, ctl, all(),
             "user/kernel version check (rm_perform_version_check); a mismatch logs NVRM: API mismatch"},
    NvEscape{211, "NV_ESC_IOCTL_XFER_CMD", os, "nv_ioctl_xfer_t", 16, 0, any, all(),
             "wraps a larger request: the driver uses the inner cmd@0 and size@4 (up to 16384 bytes)"},
    NvEscape{212, "NV_ESC_ATTACH_GPUS_TO_FD", os, "NvU32[]", 0, 0, ctl, all(), "an array of GPU ids"},
    NvEscape{213, "NV_ESC_QUERY_DEVICE_INTR", os, "nv_ioctl_query_device_intr_t", 8, 0, dev, all(), ""},
    NvEscape{214, "NV_ESC_SYS_PARAMS", os, "nv_ioctl_sys_params_t", 8, 0, ctl, all(), ""},
    NvEscape{215, "NV_ESC_NUMA_INFO", os, "nv_ioctl_numa_info_t", 560, 0, dev, all(), "size recorded from 590"},
    NvEscape{216, "NV_ESC_SET_NUMA_STATUS", os, "nv_ioctl_set_numa_status_t", 4, 0, dev, all(),
             "size recorded from 590"},
    NvEscape{217, "NV_ESC_EXPORT_TO_DMABUF_FD", os, "nv_ioctl_export_to_dma_buf_fd_t", 2600, 0, dev, until(v(565, 77)),
             "nv_dma_buf_export"},
    NvEscape{217, "NV_ESC_EXPORT_TO_DMABUF_FD", os, "nv_ioctl_export_to_dma_buf_fd_t", 2608, 0, dev,
             since(v(570, 86, 15)), "nv_dma_buf_export"},
    NvEscape{218, "NV_ESC_WAIT_OPEN_COMPLETE", os, "nv_ioctl_wait_open_complete_t", 8, 0, any, since(v(550, 40, 7)),
             "handled before the device is ready"},
};

constexpr auto nr_of = [](const NvEscape& e) { return e.nr; };
constexpr auto name_of = [](const NvEscape& e) { return std::string_view(e.name); };

}  // namespace

std::span<const NvEscape> rm_escapes() {
    return kRmEscapes;
}
std::span<const NvEscape> os_escapes() {
    return kOsEscapes;
}

const NvEscape* rm_escape(unsigned nr, std::optional<DriverVersion> version) {
    return find_versioned(rm_escapes(), nr, nr_of, version);
}

const NvEscape* os_escape(unsigned nr, std::optional<DriverVersion> version) {
    return find_versioned(os_escapes(), nr, nr_of, version);
}

const NvEscape* nv_escape(unsigned nr, std::optional<DriverVersion> version, std::optional<unsigned> size) {
    auto table = nr >= kNvIoctlBase ? os_escapes() : rm_escapes();
    if (size && !version) {
        // The newest entry whose recorded size fits, else the newest entry.
        const NvEscape* best = nullptr;
        for (const NvEscape& e : table)
            if (e.nr == nr && e.size != 0 && e.size_fits(*size) && (!best || best->versions.last < e.versions.last))
                best = &e;
        if (best) return best;
    }
    return find_versioned(table, nr, nr_of, version);
}

const NvEscape* nv_escape_by_name(std::string_view name) {
    if (const NvEscape* e = find_by_name(rm_escapes(), name, name_of)) return e;
    return find_by_name(os_escapes(), name, name_of);
}

std::string_view to_string(NvNode node) {
    switch (node) {
        case NvNode::ctl:
            return "/dev/nvidiactl";
        case NvNode::device:
            return "/dev/nvidiaN";
        case NvNode::any:
            break;
    }
    return "either";
}

}  // namespace nvtrace
