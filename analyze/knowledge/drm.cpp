// DRM core ioctls, magic 'd', on /dev/dri/cardN, /dev/dri/renderDN and /dev/accel/accelN.
#include <array>

#include "table.hpp"

namespace nvtrace {

using namespace knowledge_detail;

namespace {

constexpr unsigned W = 1;   // _IOC_WRITE
constexpr unsigned R = 2;   // _IOC_READ
constexpr unsigned RW = 3;  // _IOC_READ | _IOC_WRITE

// Numbers and structs: include/uapi/drm/drm.h (the kernel's, as shipped in libdrm 2.4.114's drm.h; sizes
// measured on x86_64 from that header); DRM_IOCTL_SYNCOBJ_EVENTFD (0xCF) arrived in Linux 6.6 (drm-misc-next
// for 6.6). Handlers: the drm_ioctls[] table in drivers/gpu/drm/drm_ioctl.c. Kernel versions: every entry
// without one is in 6.1, the oldest kernel nvtrace targets (Debian 12); older kernels are not recorded.
// Accel nodes (/dev/accel/accelN, major 261) go through the same drm_ioctl() and table.
constexpr std::array kDrm{
    DrmIoctl{0x00, "DRM_IOCTL_VERSION", RW, "struct drm_version", 64, "drm_version", all()},
    DrmIoctl{0x01, "DRM_IOCTL_GET_UNIQUE", RW, "struct drm_unique", 16, "drm_getunique", all()},
    DrmIoctl{0x02, "DRM_IOCTL_GET_MAGIC", R, "struct drm_auth", 4, "drm_getmagic", all()},
    DrmIoctl{0x07, "DRM_IOCTL_SET_VERSION", RW, "struct drm_set_version", 16, "drm_setversion", all()},
    DrmIoctl{0x09, "DRM_IOCTL_GEM_CLOSE", W, "struct drm_gem_close", 8, "drm_gem_close_ioctl", all()},
    DrmIoctl{0x0a, "DRM_IOCTL_GEM_FLINK", RW, "struct drm_gem_flink", 8, "drm_gem_flink_ioctl", all()},
    DrmIoctl{0x0b, "DRM_IOCTL_GEM_OPEN", RW, "struct drm_gem_open", 16, "drm_gem_open_ioctl", all()},
    DrmIoctl{0x0c, "DRM_IOCTL_GET_CAP", RW, "struct drm_get_cap", 16, "drm_getcap", all()},
    DrmIoctl{0x0d, "DRM_IOCTL_SET_CLIENT_CAP", W, "struct drm_set_client_cap", 16, "drm_setclientcap", all()},
    DrmIoctl{0x11, "DRM_IOCTL_AUTH_MAGIC", W, "struct drm_auth", 4, "drm_authmagic", all()},
    DrmIoctl{0x1e, "DRM_IOCTL_SET_MASTER", 0, "", 0, "drm_setmaster_ioctl", all()},
    DrmIoctl{0x1f, "DRM_IOCTL_DROP_MASTER", 0, "", 0, "drm_dropmaster_ioctl", all()},
    DrmIoctl{0x2d, "DRM_IOCTL_PRIME_HANDLE_TO_FD", RW, "struct drm_prime_handle", 12, "drm_prime_handle_to_fd_ioctl",
             all()},
    DrmIoctl{0x2e, "DRM_IOCTL_PRIME_FD_TO_HANDLE", RW, "struct drm_prime_handle", 12, "drm_prime_fd_to_handle_ioctl",
             all()},
    DrmIoctl{0x3a, "DRM_IOCTL_WAIT_VBLANK", RW, "union drm_wait_vblank", 24, "drm_wait_vblank_ioctl", all()},
    DrmIoctl{0xb2, "DRM_IOCTL_MODE_CREATE_DUMB", RW, "struct drm_mode_create_dumb", 32, "drm_mode_create_dumb_ioctl",
             all()},
    DrmIoctl{0xb3, "DRM_IOCTL_MODE_MAP_DUMB", RW, "struct drm_mode_map_dumb", 16, "drm_mode_mmap_dumb_ioctl", all()},
    DrmIoctl{0xb4, "DRM_IOCTL_MODE_DESTROY_DUMB", RW, "struct drm_mode_destroy_dumb", 4, "drm_mode_destroy_dumb_ioctl",
             all()},
    DrmIoctl{0xbf, "DRM_IOCTL_SYNCOBJ_CREATE", RW, "struct drm_syncobj_create", 8, "drm_syncobj_create_ioctl", all()},
    DrmIoctl{0xc0, "DRM_IOCTL_SYNCOBJ_DESTROY", RW, "struct drm_syncobj_destroy", 8, "drm_syncobj_destroy_ioctl",
             all()},
    DrmIoctl{0xc1, "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD", RW, "struct drm_syncobj_handle", 16,
             "drm_syncobj_handle_to_fd_ioctl", all()},
    DrmIoctl{0xc2, "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE", RW, "struct drm_syncobj_handle", 16,
             "drm_syncobj_fd_to_handle_ioctl", all()},
    DrmIoctl{0xc3, "DRM_IOCTL_SYNCOBJ_WAIT", RW, "struct drm_syncobj_wait", 32, "drm_syncobj_wait_ioctl", all()},
    DrmIoctl{0xc4, "DRM_IOCTL_SYNCOBJ_RESET", RW, "struct drm_syncobj_array", 16, "drm_syncobj_reset_ioctl", all()},
    DrmIoctl{0xc5, "DRM_IOCTL_SYNCOBJ_SIGNAL", RW, "struct drm_syncobj_array", 16, "drm_syncobj_signal_ioctl", all()},
    DrmIoctl{0xca, "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT", RW, "struct drm_syncobj_timeline_wait", 40,
             "drm_syncobj_timeline_wait_ioctl", all()},
    DrmIoctl{0xcb, "DRM_IOCTL_SYNCOBJ_QUERY", RW, "struct drm_syncobj_timeline_array", 24, "drm_syncobj_query_ioctl",
             all()},
    DrmIoctl{0xcc, "DRM_IOCTL_SYNCOBJ_TRANSFER", RW, "struct drm_syncobj_transfer", 32, "drm_syncobj_transfer_ioctl",
             all()},
    DrmIoctl{0xcd, "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL", RW, "struct drm_syncobj_timeline_array", 24,
             "drm_syncobj_timeline_signal_ioctl", all()},
    DrmIoctl{0xcf, "DRM_IOCTL_SYNCOBJ_EVENTFD", RW, "struct drm_syncobj_eventfd", 24, "drm_syncobj_eventfd_ioctl",
             since(v(6, 6))},
};

}  // namespace

std::uint64_t DrmIoctl::cmd() const {
    return encode_ioc(dir, kDrmIoctlBase, nr, size);
}

std::span<const DrmIoctl> drm_ioctls() {
    return kDrm;
}

const DrmIoctl* drm_ioctl(unsigned nr) {
    for (const DrmIoctl& e : kDrm)
        if (e.nr == nr) return &e;
    return nullptr;
}

const DrmIoctl* drm_ioctl_by_name(std::string_view name) {
    for (const DrmIoctl& e : kDrm)
        if (name == e.name) return &e;
    return nullptr;
}

}  // namespace nvtrace
