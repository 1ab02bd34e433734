// gdrdrv: GDRCopy's kernel module, /dev/gdrdrv, magic 0xDA.
#include <array>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

// NVIDIA/gdrcopy src/gdrdrv/gdrdrv.h (gdrdrv 2.4 read directly; 2.5/2.6 additions from
// ../shared/reference/nvidia-driver.md section 5(f), HEAD fcec3ce) and the gdrdrv_ioctl() switch in
// src/gdrdrv/gdrdrv.c. Versions are gdrdrv versions. Most requests encode `struct ... *`, so their size
// field is 8 (a pointer), not the struct's size; the driver checks only _IOC_TYPE.
constexpr std::array kGdrdrv{
    GdrdrvIoctl{1, "GDRDRV_IOC_PIN_BUFFER", "GDRDRV_IOC_PIN_BUFFER_PARAMS", 40, false, "gdrdrv_pin_buffer", all()},
    GdrdrvIoctl{2, "GDRDRV_IOC_UNPIN_BUFFER", "GDRDRV_IOC_UNPIN_BUFFER_PARAMS", 8, true, "gdrdrv_unpin_buffer", all()},
    GdrdrvIoctl{3, "GDRDRV_IOC_GET_CB_FLAG", "GDRDRV_IOC_GET_CB_FLAG_PARAMS", 8, true, "gdrdrv_get_cb_flag", all()},
    GdrdrvIoctl{4, "GDRDRV_IOC_GET_INFO", "GDRDRV_IOC_GET_INFO_PARAMS", 8, true, "gdrdrv_get_info", all()},
    GdrdrvIoctl{5, "GDRDRV_IOC_GET_INFO_V2", "GDRDRV_IOC_GET_INFO_V2_PARAMS", 8, true, "gdrdrv_get_info_v2",
                since(v(2, 4))},
    GdrdrvIoctl{6, "GDRDRV_IOC_GET_ATTR", "GDRDRV_IOC_GET_ATTR_PARAMS", 8, true, "gdrdrv_get_attr", since(v(2, 4))},
    GdrdrvIoctl{7, "GDRDRV_IOC_PIN_BUFFER_V2", "GDRDRV_IOC_PIN_BUFFER_V2_PARAMS", 32, false, "gdrdrv_pin_buffer_v2",
                since(v(2, 5))},
    GdrdrvIoctl{8, "GDRDRV_IOC_REQ_MAPPING_TYPE", "GDRDRV_IOC_REQ_MAPPING_TYPE_PARAMS", 8, true,
                "gdrdrv_req_mapping_type", since(v(2, 5))},
    GdrdrvIoctl{255, "GDRDRV_IOC_GET_VERSION", "GDRDRV_IOC_GET_VERSION_PARAMS", 8, true, "gdrdrv_get_version", all()},
};

}  // namespace

std::span<const GdrdrvIoctl> gdrdrv_ioctls() {
    return kGdrdrv;
}

const GdrdrvIoctl* gdrdrv_ioctl(unsigned nr) {
    return find_versioned(
        gdrdrv_ioctls(), nr, [](const GdrdrvIoctl& e) { return e.nr; }, std::nullopt);
}

const GdrdrvIoctl* gdrdrv_ioctl_by_name(std::string_view name) {
    return find_by_name(gdrdrv_ioctls(), name, [](const GdrdrvIoctl& e) { return std::string_view(e.name); });
}

}  // namespace nvtrace
