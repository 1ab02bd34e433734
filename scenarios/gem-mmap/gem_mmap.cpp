// scenario-gem-mmap [--device /dev/dri/cardN]: the mmap rules of a DRM GEM buffer object
// (scenarios/gem-mmap/README.md).
//
// Creates a dumb BO, asks for its fake mmap offset (DRM_IOCTL_MODE_MAP_DUMB) and tries the mappings whose outcome
// the DRM core documents: a shared mapping (zero filled; what is written survives munmap and a new mmap), an
// over-long one, one starting in the middle of the BO, MAP_PRIVATE, offset 0, the offset of a destroyed BO (EINVAL)
// and the offset through another open file of the same device (EACCES). Each step is one phase; each outcome is
// a result marker for the expectations (path.expect) and a TAP line. Default device: the first /dev/dri/card* whose
// driver is vgem. Exit: 0, 1 (a TAP test failed), 77 (no usable device).
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <libdrm/drm.h>
#include <libdrm/drm_mode.h>

#include <cstdint>
#include <string>

#include "../common/scenario_util.hpp"

namespace {

using scenario::Tap;
using scenario::Trace;

constexpr std::uint32_t kWidth = 64, kHeight = 64, kBpp = 32;  // 16 KiB, 4 pages
constexpr long kPage = 4096;

int drm_ioctl(int fd, unsigned long request, void* arg) {
    int r;
    do
        r = ::ioctl(fd, request, arg);
    while (r == -1 && (errno == EINTR || errno == EAGAIN));
    return r == -1 ? errno : 0;
}

std::string driver_name(int fd) {
    char name[64] = {};
    drm_version v{};
    v.name = name;
    v.name_len = sizeof name - 1;
    if (drm_ioctl(fd, DRM_IOCTL_VERSION, &v) != 0) return "";
    return std::string(name, v.name_len < sizeof name ? v.name_len : sizeof name - 1);
}

struct Bo {
    std::uint32_t handle = 0;
    std::uint64_t size = 0;
    std::uint64_t offset = 0;
};

int create_bo(int fd, Bo& bo) {
    drm_mode_create_dumb c{};
    c.width = kWidth;
    c.height = kHeight;
    c.bpp = kBpp;
    if (int e = drm_ioctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &c)) return e;
    bo.handle = c.handle;
    bo.size = c.size;
    return 0;
}

int map_offset(int fd, Bo& bo) {
    drm_mode_map_dumb m{};
    m.handle = bo.handle;
    if (int e = drm_ioctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &m)) return e;
    bo.offset = m.offset;
    return 0;
}

int destroy_bo(int fd, const Bo& bo) {
    drm_mode_destroy_dumb d{};
    d.handle = bo.handle;
    return drm_ioctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &d);
}

// mmap's outcome as an errno name ("ok" on success); the mapping in `out` when it succeeded.
std::string try_mmap(std::size_t length, int prot, int flags, int fd, std::uint64_t offset, void** out = nullptr) {
    void* p = ::mmap(nullptr, length, prot, flags, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return scenario::errno_name(errno);
    if (out)
        *out = p;
    else
        ::munmap(p, length);
    return "ok";
}

}  // namespace

int main(int argc, char** argv) {
    Trace trace;
    std::string device;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--device" && i + 1 < argc) {
            device = argv[++i];
        } else {
            std::fprintf(stderr, "usage: %s [--device /dev/dri/cardN]\n", argv[0]);
            return 2;
        }
    }

    trace.phase("open");
    int fd = -1;
    std::string driver;
    if (!device.empty()) {
        fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) scenario::cannot_run(trace, "cannot open %s: %s", device.c_str(), std::strerror(errno));
        driver = driver_name(fd);
        if (driver.empty())
            scenario::cannot_run(trace, "%s is not a DRM device (DRM_IOCTL_VERSION failed)", device.c_str());
    } else {
        for (int n = 0; n < 64 && fd < 0; ++n) {
            std::string path = "/dev/dri/card" + std::to_string(n);
            int f = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
            if (f < 0) continue;
            if (driver_name(f) == "vgem") {
                fd = f;
                device = path;
                driver = "vgem";
            } else {
                ::close(f);
            }
        }
        if (fd < 0)
            scenario::cannot_run(trace,
                                 "no vgem device among /dev/dri/card*: load it (modprobe vgem) or name a GEM "
                                 "device with --device /dev/dri/cardN");
    }
    Tap tap(14);
    tap.note("device " + device + ", driver " + driver);
    trace.result("driver", driver);

    trace.phase("create");
    Bo bo;
    int e = create_bo(fd, bo);
    if (e == ENOSYS || e == EOPNOTSUPP || e == EINVAL)
        scenario::cannot_run(trace, "%s (%s) has no dumb buffers: DRM_IOCTL_MODE_CREATE_DUMB gave %s", device.c_str(),
                             driver.c_str(), scenario::errno_name(e).c_str());
    trace.result("create-dumb", scenario::errno_name(e));
    tap.check(e == 0 && bo.size >= static_cast<std::uint64_t>(kWidth * kHeight * kBpp / 8),
              "DRM_IOCTL_MODE_CREATE_DUMB 64x64x32 gives a BO of at least 16 KiB",
              "error " + scenario::errno_name(e) + ", size " + std::to_string(bo.size));
    if (e != 0) return 1;
    const std::size_t size = static_cast<std::size_t>(bo.size);

    trace.phase("map-offset");
    e = map_offset(fd, bo);
    trace.result("map-dumb", scenario::errno_name(e));
    tap.check(e == 0 && bo.offset != 0 && bo.offset % kPage == 0,
              "DRM_IOCTL_MODE_MAP_DUMB gives a page-aligned fake offset", "offset " + std::to_string(bo.offset));
    if (e != 0) return 1;

    trace.phase("mmap-shared");
    void* map = nullptr;
    std::string r = try_mmap(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.offset, &map);
    trace.result("mmap-shared", r);
    tap.check(r == "ok", "mmap(MAP_SHARED) of the whole BO succeeds", r);
    if (r != "ok") return 1;
    bool zero = true;
    const auto* bytes = static_cast<const volatile unsigned char*>(map);
    for (std::size_t i = 0; i < size; ++i)
        zero = zero && bytes[i] == 0;  // faults every page in
    trace.result("zero-filled", zero ? "yes" : "no");
    tap.check(zero, "a new BO reads as zeros");
    static_cast<volatile unsigned char*>(map)[kPage + 1] = 0x5a;

    trace.phase("munmap");
    ::munmap(map, size);

    trace.phase("mmap-again");
    r = try_mmap(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.offset, &map);
    trace.result("mmap-again", r);
    if (r != "ok") map = nullptr;
    bool kept = r == "ok" && static_cast<const volatile unsigned char*>(map)[kPage + 1] == 0x5a;
    trace.result("survives-remap", kept ? "yes" : "no");
    tap.check(kept, "a byte written before munmap reads back through a new mapping", r);

    trace.phase("mmap-over-long");
    r = try_mmap(size + kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.offset);
    trace.result("mmap-over-long", r);
    tap.check(r == "EINVAL", "a mapping one page longer than the BO gives EINVAL", r);

    trace.phase("mmap-middle");
    r = try_mmap(size - kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.offset + kPage);
    trace.result("mmap-middle", r);
    tap.check(r == "EINVAL", "a mapping that starts one page into the BO gives EINVAL", r);

    trace.phase("mmap-private");
    r = try_mmap(size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, bo.offset);
    trace.result("mmap-private", r);
    tap.check(r == "EINVAL", "MAP_PRIVATE (read-write) gives EINVAL", r);

    trace.phase("mmap-private-ro");
    r = try_mmap(size, PROT_READ, MAP_PRIVATE, fd, bo.offset);
    trace.result("mmap-private-ro", r);
    tap.check(r == "EINVAL", "MAP_PRIVATE (read-only) gives EINVAL", r);

    trace.phase("mmap-offset-0");
    r = try_mmap(kPage, PROT_READ, MAP_SHARED, fd, 0);
    trace.result("mmap-offset-0", r);
    tap.check(r == "EINVAL", "offset 0 (no object there) gives EINVAL", r);

    trace.phase("open-other");
    int other = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
    if (other < 0)
        scenario::cannot_run(trace, "cannot open %s a second time: %s", device.c_str(), std::strerror(errno));
    trace.phase("mmap-other-file");
    r = try_mmap(size, PROT_READ | PROT_WRITE, MAP_SHARED, other, bo.offset);
    trace.result("mmap-other-file", r);
    tap.check(r == "EACCES", "the BO's offset through another open file gives EACCES", r);
    trace.phase("close-other");
    ::close(other);

    trace.phase("destroy-second-bo");
    Bo gone;
    e = create_bo(fd, gone);
    if (e == 0) e = map_offset(fd, gone);
    if (e == 0) e = destroy_bo(fd, gone);
    tap.check(e == 0, "a second BO is created, given an offset and destroyed", scenario::errno_name(e));
    trace.phase("mmap-closed-bo");
    r = e == 0 ? try_mmap(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, gone.offset) : "not-run";
    trace.result("mmap-closed-bo", r);
    tap.check(r == "EINVAL", "the offset of a destroyed BO gives EINVAL", r);

    trace.phase("destroy");
    if (map) ::munmap(map, size);
    e = destroy_bo(fd, bo);
    trace.result("destroy-dumb", scenario::errno_name(e));
    tap.check(e == 0, "DRM_IOCTL_MODE_DESTROY_DUMB", scenario::errno_name(e));
    trace.phase_end();
    ::close(fd);
    return tap.exit_status();
}
