// NV_STATUS: the status RM writes into a parameter struct (NvU32, nvstatus.h).
#include <array>

#include <fmt/format.h>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

// src/common/sdk/nvidia/inc/nvstatuscodes.h (also kernel-open/common/inc/nvstatuscodes.h), every
// open-gpu-kernel-modules release from 515.43.04 to 595.45.04. Messages are the strings nvstatusToString()
// (src/common/shared/nvstatus/nvstatus.c) prints before " [NAME]". 0x8B changed meaning in 595.45.04.
constexpr std::array kNvStatus{
    NvStatusInfo{0x0, "NV_OK", "Success", all()},
    NvStatusInfo{0x1, "NV_ERR_BROKEN_FB", "Frame-Buffer broken", all()},
    NvStatusInfo{0x2, "NV_ERR_BUFFER_TOO_SMALL", "Buffer passed in is too small", all()},
    NvStatusInfo{0x3, "NV_ERR_BUSY_RETRY", "System is busy, retry later", all()},
    NvStatusInfo{0x4, "NV_ERR_CALLBACK_NOT_SCHEDULED", "The requested callback API not scheduled", all()},
    NvStatusInfo{0x5, "NV_ERR_CARD_NOT_PRESENT", "Card not detected", all()},
    NvStatusInfo{0x6, "NV_ERR_CYCLE_DETECTED", "Call cycle detected", all()},
    NvStatusInfo{0x7, "NV_ERR_DMA_IN_USE", "Requested DMA is in use", all()},
    NvStatusInfo{0x8, "NV_ERR_DMA_MEM_NOT_LOCKED", "Requested DMA memory is not locked", all()},
    NvStatusInfo{0x9, "NV_ERR_DMA_MEM_NOT_UNLOCKED", "Requested DMA memory is not unlocked", all()},
    NvStatusInfo{0xA, "NV_ERR_DUAL_LINK_INUSE", "Dual-Link is in use", all()},
    NvStatusInfo{0xB, "NV_ERR_ECC_ERROR", "Generic ECC error", all()},
    NvStatusInfo{0xC, "NV_ERR_FIFO_BAD_ACCESS", "FIFO: Invalid access", all()},
    NvStatusInfo{0xD, "NV_ERR_FREQ_NOT_SUPPORTED", "Requested frequency is not supported", all()},
    NvStatusInfo{0xE, "NV_ERR_GPU_DMA_NOT_INITIALIZED", "Requested DMA not initialized", all()},
    NvStatusInfo{0xF, "NV_ERR_GPU_IS_LOST", "GPU lost from the bus", all()},
    NvStatusInfo{0x10, "NV_ERR_GPU_IN_FULLCHIP_RESET", "GPU currently in full-chip reset", all()},
    NvStatusInfo{0x11, "NV_ERR_GPU_NOT_FULL_POWER", "GPU not in full power", all()},
    NvStatusInfo{0x12, "NV_ERR_GPU_UUID_NOT_FOUND", "GPU UUID not found", all()},
    NvStatusInfo{0x13, "NV_ERR_HOT_SWITCH", "System in hot switch", all()},
    NvStatusInfo{0x14, "NV_ERR_I2C_ERROR", "I2C Error", all()},
    NvStatusInfo{0x15, "NV_ERR_I2C_SPEED_TOO_HIGH", "I2C Error: Speed too high", all()},
    NvStatusInfo{0x16, "NV_ERR_ILLEGAL_ACTION", "Current action is not allowed", all()},
    NvStatusInfo{0x17, "NV_ERR_IN_USE", "Generic busy error", all()},
    NvStatusInfo{0x18, "NV_ERR_INFLATE_COMPRESSED_DATA_FAILED", "Failed to inflate compressed data", all()},
    NvStatusInfo{0x19, "NV_ERR_INSERT_DUPLICATE_NAME", "Found a duplicate entry in the requested btree", all()},
    NvStatusInfo{0x1A, "NV_ERR_INSUFFICIENT_RESOURCES", "Ran out of a critical resource, other than memory", all()},
    NvStatusInfo{0x1B, "NV_ERR_INSUFFICIENT_PERMISSIONS", "The requester does not have sufficient permissions", all()},
    NvStatusInfo{0x1C, "NV_ERR_INSUFFICIENT_POWER", "Generic Error: Low power", all()},
    NvStatusInfo{0x1D, "NV_ERR_INVALID_ACCESS_TYPE", "This type of access is not allowed", all()},
    NvStatusInfo{0x1E, "NV_ERR_INVALID_ADDRESS", "Address not valid", all()},
    NvStatusInfo{0x1F, "NV_ERR_INVALID_ARGUMENT", "Invalid argument to call", all()},
    NvStatusInfo{0x20, "NV_ERR_INVALID_BASE", "Invalid base", all()},
    NvStatusInfo{0x21, "NV_ERR_INVALID_CHANNEL", "Given channel-id not valid", all()},
    NvStatusInfo{0x22, "NV_ERR_INVALID_CLASS", "Given class-id not valid", all()},
    NvStatusInfo{0x23, "NV_ERR_INVALID_CLIENT", "Given client not valid", all()},
    NvStatusInfo{0x24, "NV_ERR_INVALID_COMMAND", "Command passed is not valid", all()},
    NvStatusInfo{0x25, "NV_ERR_INVALID_DATA", "Invalid data passed", all()},
    NvStatusInfo{0x26, "NV_ERR_INVALID_DEVICE", "Current device is not valid", all()},
    NvStatusInfo{0x27, "NV_ERR_INVALID_DMA_SPECIFIER", "The requested DMA specifier is not valid", all()},
    NvStatusInfo{0x28, "NV_ERR_INVALID_EVENT", "Invalid event occurred", all()},
    NvStatusInfo{0x29, "NV_ERR_INVALID_FLAGS", "Invalid flags passed", all()},
    NvStatusInfo{0x2A, "NV_ERR_INVALID_FUNCTION", "Called function is not valid", all()},
    NvStatusInfo{0x2B, "NV_ERR_INVALID_HEAP", "Heap corrupted", all()},
    NvStatusInfo{0x2C, "NV_ERR_INVALID_INDEX", "Index invalid", all()},
    NvStatusInfo{0x2D, "NV_ERR_INVALID_IRQ_LEVEL", "Requested IRQ level is not valid", all()},
    NvStatusInfo{0x2E, "NV_ERR_INVALID_LIMIT", "Generic Error: Invalid limit", all()},
    NvStatusInfo{0x2F, "NV_ERR_INVALID_LOCK_STATE", "Requested lock state not valid", all()},
    NvStatusInfo{0x30, "NV_ERR_INVALID_METHOD", "Requested method not valid", all()},
    NvStatusInfo{0x31, "NV_ERR_INVALID_OBJECT", "Object not valid", all()},
    NvStatusInfo{0x32, "NV_ERR_INVALID_OBJECT_BUFFER", "Object buffer passed is not valid", all()},
    NvStatusInfo{0x33, "NV_ERR_INVALID_OBJECT_HANDLE", "Object handle is not valid", all()},
    NvStatusInfo{0x34, "NV_ERR_INVALID_OBJECT_NEW", "New object is not valid", all()},
    NvStatusInfo{0x35, "NV_ERR_INVALID_OBJECT_OLD", "Old object is not valid", all()},
    NvStatusInfo{0x36, "NV_ERR_INVALID_OBJECT_PARENT", "Object parent is not valid", all()},
    NvStatusInfo{0x37, "NV_ERR_INVALID_OFFSET", "The offset passed is not valid", all()},
    NvStatusInfo{0x38, "NV_ERR_INVALID_OPERATION", "Requested operation is not valid", all()},
    NvStatusInfo{0x39, "NV_ERR_INVALID_OWNER", "Owner not valid", all()},
    NvStatusInfo{0x3A, "NV_ERR_INVALID_PARAM_STRUCT", "Invalid structure parameter", all()},
    NvStatusInfo{0x3B, "NV_ERR_INVALID_PARAMETER", "At least one of the parameters passed is not valid", all()},
    NvStatusInfo{0x3C, "NV_ERR_INVALID_PATH", "The requested path is not valid", all()},
    NvStatusInfo{0x3D, "NV_ERR_INVALID_POINTER", "Pointer not valid", all()},
    NvStatusInfo{0x3E, "NV_ERR_INVALID_REGISTRY_KEY", "Found an invalid registry key", all()},
    NvStatusInfo{0x3F, "NV_ERR_INVALID_REQUEST", "Generic Error: Invalid request", all()},
    NvStatusInfo{0x40, "NV_ERR_INVALID_STATE", "Generic Error: Invalid state", all()},
    NvStatusInfo{0x41, "NV_ERR_INVALID_STRING_LENGTH", "The string length is not valid", all()},
    NvStatusInfo{0x42, "NV_ERR_INVALID_READ", "The requested read operation is not valid", all()},
    NvStatusInfo{0x43, "NV_ERR_INVALID_WRITE", "The requested write operation is not valid", all()},
    NvStatusInfo{0x44, "NV_ERR_INVALID_XLATE", "The requested translate operation is not valid", all()},
    NvStatusInfo{0x45, "NV_ERR_IRQ_NOT_FIRING", "Requested IRQ is not firing", all()},
    NvStatusInfo{0x46, "NV_ERR_IRQ_EDGE_TRIGGERED", "IRQ is edge triggered", all()},
    NvStatusInfo{0x47, "NV_ERR_MEMORY_TRAINING_FAILED", "Failed memory training sequence", all()},
    NvStatusInfo{0x48, "NV_ERR_MISMATCHED_SLAVE", "Slave mismatch", all()},
    NvStatusInfo{0x49, "NV_ERR_MISMATCHED_TARGET", "Target mismatch", all()},
    NvStatusInfo{0x4A, "NV_ERR_MISSING_TABLE_ENTRY", "Requested entry missing not found in the table", all()},
    NvStatusInfo{0x4B, "NV_ERR_MODULE_LOAD_FAILED", "Failed to load the requested module", all()},
    NvStatusInfo{0x4C, "NV_ERR_MORE_DATA_AVAILABLE", "There is more data available", all()},
    NvStatusInfo{0x4D, "NV_ERR_MORE_PROCESSING_REQUIRED", "More processing required for the given call", all()},
    NvStatusInfo{0x4E, "NV_ERR_MULTIPLE_MEMORY_TYPES", "Multiple memory types found", all()},
    NvStatusInfo{0x4F, "NV_ERR_NO_FREE_FIFOS", "No more free FIFOs found", all()},
    NvStatusInfo{0x50, "NV_ERR_NO_INTR_PENDING", "No interrupt pending", all()},
    NvStatusInfo{0x51, "NV_ERR_NO_MEMORY", "Out of memory", all()},
    NvStatusInfo{0x52, "NV_ERR_NO_SUCH_DOMAIN", "Requested domain does not exist", all()},
    NvStatusInfo{0x53, "NV_ERR_NO_VALID_PATH", "Caller did not specify a valid path", all()},
    NvStatusInfo{0x54, "NV_ERR_NOT_COMPATIBLE", "Generic Error: Incompatible types", all()},
    NvStatusInfo{0x55, "NV_ERR_NOT_READY", "Generic Error: Not ready", all()},
    NvStatusInfo{0x56, "NV_ERR_NOT_SUPPORTED", "Call not supported", all()},
    NvStatusInfo{0x57, "NV_ERR_OBJECT_NOT_FOUND", "Requested object not found", all()},
    NvStatusInfo{0x58, "NV_ERR_OBJECT_TYPE_MISMATCH", "Specified objects do not match", all()},
    NvStatusInfo{0x59, "NV_ERR_OPERATING_SYSTEM", "Generic operating system error", all()},
    NvStatusInfo{0x5A, "NV_ERR_OTHER_DEVICE_FOUND", "Found other device instead of the requested one", all()},
    NvStatusInfo{0x5B, "NV_ERR_OUT_OF_RANGE", "The specified value is out of bounds", all()},
    NvStatusInfo{0x5C, "NV_ERR_OVERLAPPING_UVM_COMMIT", "Overlapping unified virtual memory commit", all()},
    NvStatusInfo{0x5D, "NV_ERR_PAGE_TABLE_NOT_AVAIL", "Requested page table not available", all()},
    NvStatusInfo{0x5E, "NV_ERR_PID_NOT_FOUND", "Process-Id not found", all()},
    NvStatusInfo{0x5F, "NV_ERR_PROTECTION_FAULT", "Protection fault", all()},
    NvStatusInfo{0x60, "NV_ERR_RC_ERROR", "Generic RC error", all()},
    NvStatusInfo{0x61, "NV_ERR_REJECTED_VBIOS", "Given Video BIOS rejected/invalid", all()},
    NvStatusInfo{0x62, "NV_ERR_RESET_REQUIRED", "Reset required", all()},
    NvStatusInfo{0x63, "NV_ERR_STATE_IN_USE", "State in use", all()},
    NvStatusInfo{0x64, "NV_ERR_SIGNAL_PENDING", "Signal pending", all()},
    NvStatusInfo{0x65, "NV_ERR_TIMEOUT", "Call timed out", all()},
    NvStatusInfo{0x66, "NV_ERR_TIMEOUT_RETRY", "Call timed out, please retry later", all()},
    NvStatusInfo{0x67, "NV_ERR_TOO_MANY_PRIMARIES", "Too many primaries", all()},
    NvStatusInfo{0x68, "NV_ERR_UVM_ADDRESS_IN_USE", "Unified virtual memory requested address already in use", all()},
    NvStatusInfo{0x69, "NV_ERR_MAX_SESSION_LIMIT_REACHED", "Maximum number of sessions reached", all()},
    NvStatusInfo{0x6A, "NV_ERR_LIB_RM_VERSION_MISMATCH", "Library version doesn't match driver version", all()},
    NvStatusInfo{0x6B, "NV_ERR_PRIV_SEC_VIOLATION", "Priv security violation", all()},
    NvStatusInfo{0x6C, "NV_ERR_GPU_IN_DEBUG_MODE", "GPU currently in debug mode", all()},
    NvStatusInfo{0x6D, "NV_ERR_FEATURE_NOT_ENABLED", "Requested Feature functionality is not enabled", all()},
    NvStatusInfo{0x6E, "NV_ERR_RESOURCE_LOST", "Requested resource has been destroyed", all()},
    NvStatusInfo{0x6F, "NV_ERR_PMU_NOT_READY", "PMU is not ready or has not yet been initialized", all()},
    NvStatusInfo{0x70, "NV_ERR_FLCN_ERROR", "Generic falcon assert or halt", all()},
    NvStatusInfo{0x71, "NV_ERR_FATAL_ERROR", "Fatal/unrecoverable error", all()},
    NvStatusInfo{0x72, "NV_ERR_MEMORY_ERROR", "Generic memory error", all()},
    NvStatusInfo{0x73, "NV_ERR_INVALID_LICENSE", "License provided is rejected or invalid", all()},
    NvStatusInfo{0x74, "NV_ERR_NVLINK_INIT_ERROR", "Nvlink Init Error", all()},
    NvStatusInfo{0x75, "NV_ERR_NVLINK_MINION_ERROR", "Nvlink Minion Error", all()},
    NvStatusInfo{0x76, "NV_ERR_NVLINK_CLOCK_ERROR", "Nvlink Clock Error", all()},
    NvStatusInfo{0x77, "NV_ERR_NVLINK_TRAINING_ERROR", "Nvlink Training Error", all()},
    NvStatusInfo{0x78, "NV_ERR_NVLINK_CONFIGURATION_ERROR", "Nvlink Configuration Error", all()},
    NvStatusInfo{0x79, "NV_ERR_RISCV_ERROR", "Generic RISC-V assert or halt", all()},
    NvStatusInfo{0x7A, "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "Fabric Manager is not loaded", since(v(525, 53))},
    NvStatusInfo{0x7B, "NV_ERR_ALREADY_SIGNALLED", "Semaphore Surface value already >= requested wait value",
                 since(v(535, 43, 2))},
    NvStatusInfo{0x7C, "NV_ERR_QUEUE_TASK_SLOT_NOT_AVAILABLE",
                 "PMU RPC error due to no queue slot available for this event", since(v(550, 40, 7))},
    NvStatusInfo{0x7D, "NV_ERR_KEY_ROTATION_IN_PROGRESS", "Operation not allowed as key rotation is in progress",
                 since(v(550, 76))},
    NvStatusInfo{0x7E, "NV_ERR_TEST_ONLY_CODE_NOT_ENABLED", "Test-only code path not enabled", since(v(555, 42, 2))},
    NvStatusInfo{0x7F, "NV_ERR_SECURE_BOOT_FAILED", "GFW secure boot failed", since(v(560, 28, 3))},
    NvStatusInfo{0x80, "NV_ERR_INSUFFICIENT_ZBC_ENTRY", "No more ZBC entry for the client", since(v(560, 28, 3))},
    NvStatusInfo{0x81, "NV_ERR_NVLINK_FABRIC_NOT_READY",
                 "Nvlink Fabric Status or Fabric Probe is not yet complete, caller needs to retry",
                 since(v(570, 86, 15))},
    NvStatusInfo{0x82, "NV_ERR_NVLINK_FABRIC_FAILURE", "Nvlink Fabric Probe failed", since(v(570, 86, 15))},
    NvStatusInfo{0x83, "NV_ERR_GPU_MEMORY_ONLINING_FAILURE", "GPU Memory Onlining failed", since(v(570, 86, 15))},
    NvStatusInfo{0x84, "NV_ERR_REDUCTION_MANAGER_NOT_AVAILABLE", "Reduction Manager is not available",
                 since(v(570, 86, 15))},
    NvStatusInfo{0x85, "NV_ERR_THRESHOLD_CROSSED", "A fatal threshold has been crossed", since(v(575, 51, 2))},
    NvStatusInfo{0x86, "NV_ERR_RESOURCE_RETIREMENT_ERROR", "An error occurred while trying to retire a resource",
                 since(v(570, 133, 7))},
    NvStatusInfo{0x87, "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "NVLink fabric state cached by the driver is out of sync",
                 since(v(575, 51, 2))},
    NvStatusInfo{0x88, "NV_ERR_BUFFER_FULL", "Buffer is full", since(v(575, 51, 2))},
    NvStatusInfo{0x89, "NV_ERR_BUFFER_EMPTY", "Buffer is empty", since(v(575, 51, 2))},
    NvStatusInfo{0x8A, "NV_ERR_MC_FLA_OFFSET_TABLE_FULL", "Multicast FLA offset table has no available slots",
                 since(v(580, 65, 6))},
    NvStatusInfo{0x8B, "NV_ERR_DMA_XFER_FAILED", "DMA transfer failed", between(v(580, 105, 8), v(590, 48, 1))},
    NvStatusInfo{0x8B, "NV_ERR_OPERATION_ABORTED", "Operation has aborted", since(v(595, 45, 4))},
    NvStatusInfo{0x8C, "NV_ERR_DMA_XFER_FAILED", "DMA transfer failed", since(v(595, 45, 4))},
    NvStatusInfo{0xFFFF, "NV_ERR_GENERIC", "Failure: Generic Error", all()},
    NvStatusInfo{0x10001, "NV_WARN_HOT_SWITCH", "WARNING Hot switch", all()},
    NvStatusInfo{0x10002, "NV_WARN_INCORRECT_PERFMON_DATA", "WARNING Incorrect performance monitor data", all()},
    NvStatusInfo{0x10003, "NV_WARN_MISMATCHED_SLAVE", "WARNING Slave mismatch", all()},
    NvStatusInfo{0x10004, "NV_WARN_MISMATCHED_TARGET", "WARNING Target mismatch", all()},
    NvStatusInfo{0x10005, "NV_WARN_MORE_PROCESSING_REQUIRED", "WARNING More processing required for the call", all()},
    NvStatusInfo{0x10006, "NV_WARN_NOTHING_TO_DO", "WARNING Nothing to do", all()},
    NvStatusInfo{0x10007, "NV_WARN_NULL_OBJECT", "WARNING NULL object found", all()},
    NvStatusInfo{0x10008, "NV_WARN_OUT_OF_RANGE", "WARNING value out of range", all()},
    NvStatusInfo{0x10009, "NV_WARN_THRESHOLD_CROSSED", "WARNING Threshold has been crossed", since(v(575, 51, 2))},
};

}  // namespace

std::span<const NvStatusInfo> nv_statuses() {
    return kNvStatus;
}

const NvStatusInfo* nv_status(std::uint32_t value, std::optional<DriverVersion> version) {
    return find_versioned(
        nv_statuses(), value, [](const NvStatusInfo& e) { return e.value; }, version);
}

const NvStatusInfo* nv_status_by_name(std::string_view name) {
    return find_by_name(nv_statuses(), name, [](const NvStatusInfo& e) { return std::string_view(e.name); });
}

std::optional<std::string_view> nv_status_name(std::uint32_t value) {
    if (const NvStatusInfo* s = nv_status(value)) return s->name;
    return std::nullopt;
}

std::string nv_status_string(std::uint32_t value) {
    if (const NvStatusInfo* s = nv_status(value)) return fmt::format("{} [{}]", s->message, s->name);
    return "Unknown error code!";
}

}  // namespace nvtrace
