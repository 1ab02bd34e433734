// UVM ioctls: plain request numbers on /dev/nvidia-uvm and /dev/nvidia-uvm-tools.
#include <array>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

// Numbers: kernel-open/nvidia-uvm/uvm_ioctl.h (on Linux UVM_IOCTL_BASE(i) is i, so the cmd carries no
// _IOC direction, type or size) and uvm_linux_ioctl.h (UVM_INITIALIZE 0x30000001, UVM_DEINITIALIZE
// 0x30000002). Handlers and routing: the uvm_ioctl() switch in kernel-open/nvidia-uvm/uvm.c (node uvm) and
// uvm_tools_unlocked_ioctl() in uvm_tools.c (node tools). Walked over every open-gpu-kernel-modules release
// from 515.43.04 to 595.45.04, and the newest tag of each production branch (525.147.05, 535.288.01, 550.163.01,
// 570.211.01, 580.142: their uvm_ioctl.h is their branch point's, so an entry removed on the main line stays to the
// branch's end, branch_end()); "not routed" numbers are defined but fall through to uvm_test_ioctl()
// (-ENOSYS unless the module was loaded with uvm_enable_builtin_tests=1).
constexpr std::array kUvmIoctls{
    UvmIoctl{1, "UVM_RESERVE_VA", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{2, "UVM_RELEASE_VA", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{3, "UVM_REGION_COMMIT", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{4, "UVM_REGION_DECOMMIT", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{5, "UVM_REGION_SET_STREAM", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{6, "UVM_SET_STREAM_RUNNING", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{7, "UVM_SET_STREAM_STOPPED", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{9, "UVM_RUN_TEST", "", UvmNode::uvm, UvmRoute::not_routed, until(branch_end(580))},
    UvmIoctl{10, "UVM_ADD_SESSION", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{11, "UVM_REMOVE_SESSION", "", UvmNode::uvm, UvmRoute::not_routed, until(branch_end(580))},
    UvmIoctl{12, "UVM_ENABLE_COUNTERS", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{13, "UVM_MAP_COUNTER", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{14, "UVM_CREATE_EVENT_QUEUE", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{15, "UVM_REMOVE_EVENT_QUEUE", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{16, "UVM_MAP_EVENT_QUEUE", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{17, "UVM_EVENT_CTRL", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{18, "UVM_REGISTER_MPS_SERVER", "", UvmNode::uvm, UvmRoute::not_routed, until(branch_end(580))},
    UvmIoctl{19, "UVM_REGISTER_MPS_CLIENT", "", UvmNode::uvm, UvmRoute::not_routed, until(branch_end(580))},
    UvmIoctl{20, "UVM_GET_GPU_UUID_TABLE", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{21, "UVM_REGION_SET_BACKING", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{22, "UVM_REGION_UNSET_BACKING", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{23, "UVM_CREATE_RANGE_GROUP", "uvm_api_create_range_group", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{24, "UVM_DESTROY_RANGE_GROUP", "uvm_api_destroy_range_group", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{25, "UVM_REGISTER_GPU_VASPACE", "uvm_api_register_gpu_va_space", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{26, "UVM_UNREGISTER_GPU_VASPACE", "uvm_api_unregister_gpu_va_space", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{27, "UVM_REGISTER_CHANNEL", "uvm_api_register_channel", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{28, "UVM_UNREGISTER_CHANNEL", "uvm_api_unregister_channel", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{29, "UVM_ENABLE_PEER_ACCESS", "uvm_api_enable_peer_access", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{30, "UVM_DISABLE_PEER_ACCESS", "uvm_api_disable_peer_access", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{31, "UVM_SET_RANGE_GROUP", "uvm_api_set_range_group", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{33, "UVM_MAP_EXTERNAL_ALLOCATION", "uvm_api_map_external_allocation", UvmNode::uvm,
             UvmRoute::alloc_init_check, all()},
    UvmIoctl{34, "UVM_FREE", "uvm_api_free", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{35, "UVM_MEM_MAP", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{36, "UVM_DEBUG_ACCESS_MEMORY", "", UvmNode::uvm, UvmRoute::not_routed, until(branch_end(570))},
    UvmIoctl{37, "UVM_REGISTER_GPU", "uvm_api_register_gpu", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{38, "UVM_UNREGISTER_GPU", "uvm_api_unregister_gpu", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{39, "UVM_PAGEABLE_MEM_ACCESS", "uvm_api_pageable_mem_access", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS", "uvm_api_prevent_migration_range_groups", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS", "uvm_api_allow_migration_range_groups", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{42, "UVM_SET_PREFERRED_LOCATION", "uvm_api_set_preferred_location", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{43, "UVM_UNSET_PREFERRED_LOCATION", "uvm_api_unset_preferred_location", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{44, "UVM_ENABLE_READ_DUPLICATION", "uvm_api_enable_read_duplication", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{45, "UVM_DISABLE_READ_DUPLICATION", "uvm_api_disable_read_duplication", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{46, "UVM_SET_ACCESSED_BY", "uvm_api_set_accessed_by", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{47, "UVM_UNSET_ACCESSED_BY", "uvm_api_unset_accessed_by", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{51, "UVM_MIGRATE", "uvm_api_migrate", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{53, "UVM_MIGRATE_RANGE_GROUP", "uvm_api_migrate_range_group", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS", "uvm_api_enable_system_wide_atomics", UvmNode::uvm,
             UvmRoute::stack_init_check, until(v(590, 48, 1))},
    UvmIoctl{55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS", "uvm_api_disable_system_wide_atomics", UvmNode::uvm,
             UvmRoute::stack_init_check, until(v(590, 48, 1))},
    UvmIoctl{56, "UVM_TOOLS_INIT_EVENT_TRACKER", "uvm_api_tools_init_event_tracker", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", "uvm_api_tools_set_notification_threshold", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", "uvm_api_tools_event_queue_enable_events", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", "uvm_api_tools_event_queue_disable_events", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{60, "UVM_TOOLS_ENABLE_COUNTERS", "uvm_api_tools_enable_counters", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{61, "UVM_TOOLS_DISABLE_COUNTERS", "uvm_api_tools_disable_counters", UvmNode::tools,
             UvmRoute::stack_no_init_check, all()},
    UvmIoctl{62, "UVM_TOOLS_READ_PROCESS_MEMORY", "uvm_api_tools_read_process_memory", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{63, "UVM_TOOLS_WRITE_PROCESS_MEMORY", "uvm_api_tools_write_process_memory", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", "uvm_api_tools_get_processor_uuid_table", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION", "uvm_api_map_dynamic_parallelism_region", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{66, "UVM_UNMAP_EXTERNAL", "uvm_api_unmap_external", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{67, "UVM_TOOLS_FLUSH_EVENTS", "uvm_api_tools_flush_events", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{68, "UVM_ALLOC_SEMAPHORE_POOL", "uvm_api_alloc_semaphore_pool", UvmNode::uvm, UvmRoute::alloc_init_check,
             all()},
    UvmIoctl{69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES", "uvm_api_clean_up_zombie_resources", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU", "uvm_api_pageable_mem_access_on_gpu", UvmNode::uvm,
             UvmRoute::stack_init_check, all()},
    UvmIoctl{71, "UVM_POPULATE_PAGEABLE", "uvm_api_populate_pageable", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{72, "UVM_VALIDATE_VA_RANGE", "uvm_api_validate_va_range", UvmNode::uvm, UvmRoute::stack_init_check, all()},
    UvmIoctl{73, "UVM_CREATE_EXTERNAL_RANGE", "uvm_api_create_external_range", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{74, "UVM_MAP_EXTERNAL_SPARSE", "uvm_api_map_external_sparse", UvmNode::uvm, UvmRoute::stack_init_check,
             all()},
    UvmIoctl{75, "UVM_MM_INITIALIZE", "uvm_api_mm_initialize", UvmNode::uvm, UvmRoute::stack_no_init_check,
             since(v(535, 43, 2))},
    UvmIoctl{76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2", "uvm_api_tools_init_event_tracker_v2", UvmNode::tools,
             UvmRoute::stack_no_init_check, since(v(565, 57, 1))},
    UvmIoctl{77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2", "uvm_api_tools_get_processor_uuid_table_v2", UvmNode::uvm,
             UvmRoute::stack_init_check, since(v(565, 57, 1))},
    UvmIoctl{78, "UVM_ALLOC_DEVICE_P2P", "uvm_api_alloc_device_p2p", UvmNode::uvm, UvmRoute::stack_init_check,
             since(v(565, 57, 1))},
    UvmIoctl{79, "UVM_CLEAR_ALL_ACCESS_COUNTERS", "uvm_api_clear_all_access_counters", UvmNode::uvm,
             UvmRoute::stack_init_check, since(v(565, 57, 1))},
    UvmIoctl{80, "UVM_DISCARD", "uvm_api_discard", UvmNode::uvm, UvmRoute::stack_init_check, since(v(580, 65, 6))},
    UvmIoctl{2047, "UVM_IS_8_SUPPORTED", "", UvmNode::uvm, UvmRoute::not_routed, all()},
    UvmIoctl{0x30000001, "UVM_INITIALIZE", "uvm_api_initialize", UvmNode::uvm, UvmRoute::stack_no_init_check, all()},
    UvmIoctl{0x30000002, "UVM_DEINITIALIZE", "", UvmNode::uvm, UvmRoute::inline_case, all()},
};

}  // namespace

std::span<const UvmIoctl> uvm_ioctls() {
    return kUvmIoctls;
}

const UvmIoctl* uvm_ioctl(std::uint32_t cmd, std::optional<DriverVersion> version) {
    return find_versioned(
        uvm_ioctls(), cmd, [](const UvmIoctl& e) { return e.cmd; }, version);
}

const UvmIoctl* uvm_ioctl_by_name(std::string_view name) {
    return find_by_name(uvm_ioctls(), name, [](const UvmIoctl& e) { return std::string_view(e.name); });
}

std::string_view to_string(UvmRoute route) {
    switch (route) {
        case UvmRoute::stack_init_check:
            return "params on the stack; NV_ERR_ILLEGAL_ACTION before UVM_INITIALIZE";
        case UvmRoute::alloc_init_check:
            return "params kvmalloc'd; NV_ERR_ILLEGAL_ACTION before UVM_INITIALIZE";
        case UvmRoute::stack_no_init_check:
            return "params on the stack; allowed before UVM_INITIALIZE";
        case UvmRoute::inline_case:
            return "handled inline (returns 0)";
        case UvmRoute::not_routed:
            break;
    }
    return "defined but not routed: -ENOSYS unless uvm_enable_builtin_tests=1";
}

}  // namespace nvtrace
