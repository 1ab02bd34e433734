// bar1_map.hpp: a CPU mapping of GPU 0's BAR1 for the BAR1 scenarios (hostregister-bar, bar-reserve-map), by the
// first route that works on this machine (docs/scenarios.md, "BAR1 routes"):
//   1. resource1: mmap of /sys/bus/pci/devices/BDF/resource1 (root; refused under kernel lockdown, missing where the
//      device is passed through without its resource files).
//   2. dma-buf: video memory from cudaMalloc exported with cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_
//      DMA_BUF_FD, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) and the dma-buf fd mmap'd: nv-dmabuf.c's
//      nv_dma_buf_mmap maps the BAR1 pages behind it (remap_pfn_range), or refuses with ENOTSUPP when RM did not
//      allow mmap for the handle (map_attrs.can_mmap).
//   3. gdrcopy: where /dev/gdrdrv and libgdrapi.so.2 exist, gdr_pin_buffer + gdr_map of the same video memory
//      (gdrapi.h); a mapping at an address gdrcopy chooses, so only for callers that need no fd.
// The route used is printed ("# BAR1 route: ...") and recorded ("nvtrace-result: bar1-route=ROUTE"). When none works,
// the reason of each is given, for "cannot run here". None of these has run on a GPU yet (docs/gpu-check.md).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace scenario {

struct Bar1Source {
    std::string route;       // "resource1", "dma-buf", "gdrcopy"
    std::string detail;      // the file, or what was exported
    int fd = -1;             // mmap-able at offset 0 (resource1, dma-buf); -1 for gdrcopy
    void* mapped = nullptr;  // gdrcopy: the mapping it made (size bytes)
};

namespace bar1_detail {

inline std::string errno_text(int e) {
    return e == 524 ? "ENOTSUPP (524)" : std::string(std::strerror(e));  // 524: the kernel's ENOTSUPP, no libc name
}

// `size` bytes of video memory aligned to 2 MiB (gdrcopy pins 64 KiB GPU pages; the dma-buf range must be
// page-aligned), once per process.
inline std::optional<CUdeviceptr> video_memory(std::size_t size, std::string& why) {
    static void* base = nullptr;
    constexpr std::size_t align = 2u << 20;
    if (!base) {
        cudaError_t e = cudaMalloc(&base, size + align);
        if (e != cudaSuccess) {
            why = std::string("cudaMalloc: ") + cudaGetErrorName(e);
            base = nullptr;
            return std::nullopt;
        }
    }
    auto p = reinterpret_cast<std::uintptr_t>(base);
    return static_cast<CUdeviceptr>((p + align - 1) & ~(static_cast<std::uintptr_t>(align) - 1));
}

// Maps and unmaps `size` bytes of fd once: a route whose mmap is refused is not the route.
inline bool try_map(int fd, std::size_t size, std::string& why) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        why = "mmap: " + errno_text(errno);
        return false;
    }
    ::munmap(p, size);
    return true;
}

inline std::optional<Bar1Source> resource1(const std::string& bdf, std::size_t size, std::string& why) {
    std::string path = "/sys/bus/pci/devices/" + bdf + "/resource1";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        why = path + ": " + errno_text(errno);
        return std::nullopt;
    }
    if (static_cast<std::size_t>(st.st_size) < size) {
        why = path + " is " + std::to_string(st.st_size) + " bytes, smaller than " + std::to_string(size);
        return std::nullopt;
    }
    if (::geteuid() != 0) {
        why = path + " needs root (nvtrace run --as-root)";
        return std::nullopt;
    }
    int fd = ::open(path.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0) {
        why = "open " + path + ": " + errno_text(errno);
        return std::nullopt;
    }
    if (!try_map(fd, size, why)) {
        why = path + ": " + why + " (kernel lockdown refuses PCI resource mmap)";
        ::close(fd);
        return std::nullopt;
    }
    return Bar1Source{"resource1", path + ", " + std::to_string(st.st_size) + " bytes", fd, nullptr};
}

inline std::optional<Bar1Source> dma_buf(std::size_t size, std::string& why) {
    using GetHandle = CUresult (*)(void*, CUdeviceptr, std::size_t, CUmemRangeHandleType, unsigned long long);
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        why = std::string("dlopen libcuda.so.1: ") + ::dlerror();
        return std::nullopt;
    }
    auto get = reinterpret_cast<GetHandle>(::dlsym(lib, "cuMemGetHandleForAddressRange"));
    if (!get) {
        why = "libcuda.so.1 has no cuMemGetHandleForAddressRange (CUDA 11.7+)";
        return std::nullopt;
    }
    auto dptr = video_memory(size, why);
    if (!dptr) return std::nullopt;
    int fd = -1;
    CUresult r =
        get(&fd, *dptr, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    if (r != CUDA_SUCCESS)  // drivers before the PCIe mapping flag take 0 (BAR1 on x86 anyway)
        r = get(&fd, *dptr, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS || fd < 0) {
        why = "cuMemGetHandleForAddressRange(DMA_BUF_FD): CUresult " + std::to_string(static_cast<int>(r));
        return std::nullopt;
    }
    if (!try_map(fd, size, why)) {
        why = "dma-buf of cudaMalloc memory: " + why + " (nv_dma_buf_mmap: RM did not allow mmap for this handle)";
        ::close(fd);
        return std::nullopt;
    }
    return Bar1Source{
        "dma-buf",
        "cuMemGetHandleForAddressRange(DMA_BUF_FD) of " + std::to_string(size) + " bytes of cudaMalloc memory", fd,
        nullptr};
}

inline std::optional<Bar1Source> gdrcopy(std::size_t size, std::string& why) {
    struct MemHandle {
        unsigned long h;  // gdrapi.h: typedef struct gdr_mh_s { unsigned long h; } gdr_mh_t
    };
    using Open = void* (*)();
    using Pin = int (*)(void*, unsigned long, std::size_t, std::uint64_t, std::uint32_t, MemHandle*);
    using Map = int (*)(void*, MemHandle, void**, std::size_t);
    struct stat st {};
    if (::stat("/dev/gdrdrv", &st) != 0) {
        why = "/dev/gdrdrv: " + errno_text(errno) + " (gdrdrv not loaded)";
        return std::nullopt;
    }
    void* lib = ::dlopen("libgdrapi.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        why = std::string("dlopen libgdrapi.so.2: ") + ::dlerror();
        return std::nullopt;
    }
    auto open = reinterpret_cast<Open>(::dlsym(lib, "gdr_open"));
    auto pin = reinterpret_cast<Pin>(::dlsym(lib, "gdr_pin_buffer"));
    auto map = reinterpret_cast<Map>(::dlsym(lib, "gdr_map"));
    if (!open || !pin || !map) {
        why = "libgdrapi.so.2 lacks gdr_open/gdr_pin_buffer/gdr_map";
        return std::nullopt;
    }
    auto dptr = video_memory(size, why);
    if (!dptr) return std::nullopt;
    void* g = open();
    if (!g) {
        why = "gdr_open failed";
        return std::nullopt;
    }
    MemHandle mh{};
    if (int rc = pin(g, static_cast<unsigned long>(*dptr), size, 0, 0, &mh); rc != 0) {
        why = "gdr_pin_buffer: " + std::to_string(rc);
        return std::nullopt;
    }
    void* va = nullptr;
    if (int rc = map(g, mh, &va, size); rc != 0 || !va) {
        why = "gdr_map: " + std::to_string(rc);
        return std::nullopt;
    }
    return Bar1Source{"gdrcopy", "gdr_pin_buffer + gdr_map of cudaMalloc memory", -1, va};
}

}  // namespace bar1_detail

// The first route that works, in the order above; `need_fd` leaves out gdrcopy. nullopt with every route's reason
// in `why` ("resource1: ...; dma-buf: ...; gdrcopy: ...").
inline std::optional<Bar1Source> open_bar1(const std::string& bdf, std::size_t size, bool need_fd, std::string& why) {
    std::string r1, r2, r3;
    if (auto s = bar1_detail::resource1(bdf, size, r1)) return s;
    if (auto s = bar1_detail::dma_buf(size, r2)) return s;
    if (need_fd) {
        why = "no CPU mapping of BAR1: resource1: " + r1 + "; dma-buf: " + r2 + "; gdrcopy: not usable (no fd to mmap)";
        return std::nullopt;
    }
    if (auto s = bar1_detail::gdrcopy(size, r3)) return s;
    why = "no CPU mapping of BAR1: resource1: " + r1 + "; dma-buf: " + r2 + "; gdrcopy: " + r3;
    return std::nullopt;
}

}  // namespace scenario
