// RM classes: the hClass of NV_ESC_RM_ALLOC (NVOS21/NVOS64 @12) and NV_ESC_RM_ALLOC_MEMORY (NVOS02 @12).
#include <array>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

// Values: src/common/sdk/nvidia/inc/class/clXXXX.h and nvos.h at 595.45.04; first releases from the
// open-gpu-kernel-modules history (515.43.04 to 595.45.04). Roles: ../shared/reference/nvidia-driver.md
// section 4 (escape.c, resource_list.h, the gVisor proxy's list of what a minimal CUDA program allocates).
// Aliases (same value, second name) are given in the role.
constexpr std::array kRmClasses{
    RmClass{0x0, "NV01_ROOT", "cl0000.h", "client root (= NV01_NULL_OBJECT); user allocations become NV01_ROOT_CLIENT",
            all()},
    RmClass{0x1, "NV01_ROOT_NON_PRIV", "cl0001.h", "client root; user allocations become NV01_ROOT_CLIENT", all()},
    RmClass{0x2, "NV01_CONTEXT_DMA", "cl0002.h", "legacy context DMA", all()},
    RmClass{0x5, "NV01_EVENT", "cl0005.h", "event", all()},
    RmClass{0x3E, "NV01_MEMORY_SYSTEM", "cl003e.h",
            "system memory; mappable allocations get an mmap context on /dev/nvidiactl", all()},
    RmClass{0x3F, "NV01_MEMORY_LOCAL_PRIVILEGED", "cl003f.h", "privileged video memory", all()},
    RmClass{0x40, "NV01_MEMORY_LOCAL_USER", "cl0040.h", "video memory (VID_HEAP_CONTROL ALLOC_SIZE)", all()},
    RmClass{0x41, "NV01_ROOT_CLIENT", "nvos.h", "the per-process RM client (hClient)", all()},
    RmClass{0x70, "NV01_MEMORY_VIRTUAL", "cl0070.h", "virtual memory object (= NV01_MEMORY_SYSTEM_DYNAMIC)", all()},
    RmClass{0x71, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR", "cl0071.h",
            "wraps user pages or IO memory (cudaHostRegister-style pinning, NV_ESC_RM_ALLOC_MEMORY)", all()},
    RmClass{0x76, "NV01_MEMORY_FRAMEBUFFER_CONSOLE", "cl0076.h", "console framebuffer", all()},
    RmClass{0x78, "NV01_EVENT_KERNEL_CALLBACK", "nvos.h", "kernel-callback event", all()},
    RmClass{0x79, "NV01_EVENT_OS_EVENT", "nvos.h", "event bound to an fd (after NV_ESC_ALLOC_OS_EVENT)", all()},
    RmClass{0x7E, "NV01_EVENT_KERNEL_CALLBACK_EX", "nvos.h", "kernel-callback event", all()},
    RmClass{0x80, "NV01_DEVICE_0", "cl0080.h", "device under the client", all()},
    RmClass{0x81, "NV01_MEMORY_LIST_SYSTEM", "cl84a0.h", "page-list system memory", all()},
    RmClass{0x82, "NV01_MEMORY_LIST_FBMEM", "cl84a0.h", "page-list video memory", all()},
    RmClass{0xB1, "NV01_MEMORY_HW_RESOURCES", "cl00b1.h", "hardware resources (compression, ...)", all()},
    RmClass{0xC2, "NV01_MEMORY_LOCAL_PHYSICAL", "cl00c2.h", "physical video memory handle", all()},
    RmClass{0xDE, "RM_USER_SHARED_DATA", "cl00de.h", "shared RM data page", all()},
    RmClass{0xE0, "NV_MEMORY_EXPORT", "cl00e0.h", "memory export (IPC)", all()},
    RmClass{0xF2, "IO_VASPACE_A", "cl00f2.h", "IOMMU VA space", all()},
    RmClass{0xF8, "NV_MEMORY_FABRIC", "cl00f8.h", "fabric (NVLink, IMEX) memory", all()},
    RmClass{0xFC, "FABRIC_VASPACE_A", "cl00fc.h", "fabric VA space", all()},
    RmClass{0xFD, "NV_MEMORY_MULTICAST_FABRIC", "cl00fd.h", "multicast fabric memory", since(v(525, 53))},
    RmClass{0xFE, "NV_MEMORY_MAPPER", "cl00fe.h", "asynchronous mapping object", since(v(525, 53))},
    RmClass{0x2080, "NV20_SUBDEVICE_0", "cl2080.h", "subdevice; target of NV2080_CTRL_* controls", all()},
    RmClass{0x503C, "NV50_THIRD_PARTY_P2P", "cl503c.h", "third-party P2P (nvidia_p2p, peer tokens)", all()},
    RmClass{0x50A0, "NV50_MEMORY_VIRTUAL", "cl50a0.h", "GPU VA reservation (hDma of MAP_MEMORY_DMA)", all()},
    RmClass{0x83DE, "GT200_DEBUGGER", "cl83de.h", "debugger (cuda-gdb)", all()},
    RmClass{0x900E, "MPS_COMPUTE", "cl900e.h", "MPS", all()},
    RmClass{0x9067, "FERMI_CONTEXT_SHARE_A", "cl9067.h", "TSG subcontext", all()},
    RmClass{0x90CE, "NV01_MEMORY_DEVICELESS", "cl90ce.h", "device-less memory", all()},
    RmClass{0x90E6, "GF100_SUBDEVICE_MASTER", "cl90e6.h", "subdevice master (error and ECC controls)", all()},
    RmClass{0x90F1, "FERMI_VASPACE_A", "cl90f1.h", "GPU VA space (hVaSpace of UVM_REGISTER_GPU_VASPACE)", all()},
    RmClass{0xA06C, "KEPLER_CHANNEL_GROUP_A", "cla06c.h", "TSG, channel group", all()},
    RmClass{0xC076, "GP100_UVM_SW", "clc076.h", "UVM software class", all()},
    RmClass{0xC0B5, "PASCAL_DMA_COPY_A", "clc0b5.h", "copy engine", all()},
    RmClass{0xC361, "VOLTA_USERMODE_A", "clc361.h", "usermode doorbell region", all()},
    RmClass{0xC365, "ACCESS_COUNTER_NOTIFY_BUFFER", "clc365.h", "used by nvidia-uvm", all()},
    RmClass{0xC369, "MMU_FAULT_BUFFER", "clc369.h", "used by nvidia-uvm", all()},
    RmClass{0xC36F, "VOLTA_CHANNEL_GPFIFO_A", "clc36f.h", "GPFIFO channel", all()},
    RmClass{0xC3B5, "VOLTA_DMA_COPY_A", "clc3b5.h", "copy engine", all()},
    RmClass{0xC3C0, "VOLTA_COMPUTE_A", "clc3c0.h", "compute engine", all()},
    RmClass{0xC461, "TURING_USERMODE_A", "clc461.h", "usermode doorbell region, CPU-mapped", all()},
    RmClass{0xC46F, "TURING_CHANNEL_GPFIFO_A", "clc46f.h", "GPFIFO channel", all()},
    RmClass{0xC561, "AMPERE_USERMODE_A", "clc561.h", "usermode doorbell region, CPU-mapped", all()},
    RmClass{0xC56F, "AMPERE_CHANNEL_GPFIFO_A", "clc56f.h", "GPFIFO channel", all()},
    RmClass{0xC574, "UVM_CHANNEL_RETAINER", "clc574.h", "used by nvidia-uvm", all()},
    RmClass{0xC5B5, "TURING_DMA_COPY_A", "clc5b5.h", "copy engine", all()},
    RmClass{0xC5C0, "TURING_COMPUTE_A", "clc5c0.h", "compute engine", all()},
    RmClass{0xC637, "AMPERE_SMC_PARTITION_REF", "clc637.h", "MIG GPU instance reference", all()},
    RmClass{0xC638, "AMPERE_SMC_EXEC_PARTITION_REF", "clc638.h", "MIG compute instance reference", all()},
    RmClass{0xC661, "HOPPER_USERMODE_A", "clc661.h", "usermode doorbell region, CPU-mapped", since(v(520, 61, 5))},
    RmClass{0xC6B5, "AMPERE_DMA_COPY_A", "clc6b5.h", "copy engine", all()},
    RmClass{0xC6C0, "AMPERE_COMPUTE_A", "clc6c0.h", "compute engine", all()},
    RmClass{0xC761, "BLACKWELL_USERMODE_A", "clc761.h", "usermode doorbell region, CPU-mapped", since(v(570, 86, 15))},
    RmClass{0xC7B5, "AMPERE_DMA_COPY_B", "clc7b5.h", "copy engine", all()},
    RmClass{0xC7C0, "AMPERE_COMPUTE_B", "clc7c0.h", "compute engine", all()},
    RmClass{0xC86F, "HOPPER_CHANNEL_GPFIFO_A", "clc86f.h", "GPFIFO channel", since(v(520, 61, 5))},
    RmClass{0xC8B5, "HOPPER_DMA_COPY_A", "clc8b5.h", "copy engine", since(v(520, 61, 5))},
    RmClass{0xC96F, "BLACKWELL_CHANNEL_GPFIFO_A", "clc96f.h", "GPFIFO channel", since(v(560, 28, 3))},
    RmClass{0xC9B5, "BLACKWELL_DMA_COPY_A", "clc9b5.h", "copy engine", since(v(560, 28, 3))},
    RmClass{0xC9C0, "ADA_COMPUTE_A", "clc9c0.h", "compute engine", since(v(520, 61, 5))},
    RmClass{0xCA6F, "BLACKWELL_CHANNEL_GPFIFO_B", "clca6f.h", "GPFIFO channel", since(v(570, 86, 15))},
    RmClass{0xCAB5, "BLACKWELL_DMA_COPY_B", "clcab5.h", "copy engine", since(v(570, 86, 15))},
    RmClass{0xCBC0, "HOPPER_COMPUTE_A", "clcbc0.h", "compute engine", since(v(520, 61, 5))},
    RmClass{0xCDC0, "BLACKWELL_COMPUTE_A", "clcdc0.h", "compute engine", since(v(560, 28, 3))},
    RmClass{0xCEC0, "BLACKWELL_COMPUTE_B", "clcec0.h", "compute engine", since(v(570, 86, 15))},
};

}  // namespace

std::span<const RmClass> rm_classes() {
    return kRmClasses;
}

const RmClass* rm_class(std::uint32_t hclass, std::optional<DriverVersion> version) {
    return find_versioned(
        rm_classes(), hclass, [](const RmClass& e) { return e.hclass; }, version);
}

const RmClass* rm_class_by_name(std::string_view name) {
    return find_by_name(rm_classes(), name, [](const RmClass& e) { return std::string_view(e.name); });
}

std::optional<std::string_view> rm_class_name(std::uint32_t hclass) {
    if (const RmClass* c = rm_class(hclass)) return c->name;
    return std::nullopt;
}

}  // namespace nvtrace
