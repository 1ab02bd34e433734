// scenario-bar-reserve-map: reserve a GPU virtual range (cuMemAddressReserve), map 2 MiB of GPU 0's BAR1 (PCI
// resource1 as root, else a dma-buf of video memory: common/bar1_map.hpp) at that address with mmap(MAP_FIXED), and
// read it from a kernel
// (scenarios/bar-reserve-map/README.md). Documented result: the kernel faults with an illegal address, because a
// CPU mapping at a reserved address gives the GPU no page-table entry there.
// The driver API comes from libcuda.so.1 through dlopen, and the kernel is PTX text loaded with
// cuModuleLoadData: no nvcc, and the program still starts (and says "cannot run here") without a driver.
// Exit: 0 (the documented fault happened), 1 (anything else), 77.
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cctype>

#include "bar1_map.hpp"
#include "cuda_util.hpp"

namespace {

// ld.global of one u32 at src, stored at dst.
constexpr const char* kPtx = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry read_u32(.param .u64 src, .param .u64 dst)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    ld.global.u32 %r1, [%rd3];
    st.global.u32 [%rd4], %r1;
    ret;
}
)";

struct Driver {
    CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
    CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
    CUresult (*load)(CUmodule*, const void*) = nullptr;
    CUresult (*get_function)(CUfunction*, CUmodule, const char*) = nullptr;
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void**, void**) = nullptr;
    CUresult (*error_name)(CUresult, const char**) = nullptr;
    std::string name(CUresult r) const {
        const char* n = nullptr;
        return error_name && error_name(r, &n) == CUDA_SUCCESS && n ? n : std::to_string(r);
    }
};

template <class F>
void sym(void* lib, const char* name, F& out) {
    out = reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) scenario::cannot_run(trace, "dlopen libcuda.so.1: %s", ::dlerror());
    Driver d;
    sym(lib, "cuMemAddressReserve", d.reserve);
    sym(lib, "cuMemAddressFree", d.address_free);
    sym(lib, "cuModuleLoadData", d.load);
    sym(lib, "cuModuleGetFunction", d.get_function);
    sym(lib, "cuLaunchKernel", d.launch);
    sym(lib, "cuGetErrorName", d.error_name);
    if (!d.reserve || !d.load || !d.get_function || !d.launch)
        scenario::cannot_run(trace, "libcuda.so.1 lacks cuMemAddressReserve/cuModuleLoadData/cuLaunchKernel");

    constexpr std::size_t size = 2u << 20;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, 0) != cudaSuccess)
        scenario::cannot_run(trace, "cudaDeviceGetPCIBusId failed for device 0");
    std::string bdf = bus_id;
    for (char& c : bdf)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // resource1, else a dma-buf of video memory (common/bar1_map.hpp): an fd is needed for mmap(MAP_FIXED).
    std::string why;
    auto bar1 = scenario::open_bar1(bdf, size, true, why);
    if (!bar1) scenario::cannot_run(trace, "%s", why.c_str());
    int fd = bar1->fd;

    scenario::Tap tap(6);
    tap.note("BAR1 route: " + bar1->route + " (" + bar1->detail + ")");
    trace.result("bar1-route", bar1->route);
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));

    CUdeviceptr va = 0;
    trace.phase("cuMemAddressReserve");
    CUresult r = d.reserve(&va, size, size, 0, 0);
    trace.result("cuMemAddressReserve", d.name(r));
    tap.check(r == CUDA_SUCCESS, "cuMemAddressReserve(2 MiB)", d.name(r));
    if (r != CUDA_SUCCESS) return 1;

    trace.phase("mmap-bar1-fixed");
    void* p = ::mmap(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    trace.result("mmap-bar1-fixed", p == MAP_FAILED ? scenario::errno_name(errno) : "ok");
    tap.check(p != MAP_FAILED, "mmap(MAP_FIXED) of BAR1 at the reserved address",
              p == MAP_FAILED ? std::strerror(errno) : "");
    if (p == MAP_FAILED) return 1;

    trace.phase("cuModuleLoadData");
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    r = d.load(&mod, kPtx);
    if (r == CUDA_SUCCESS) r = d.get_function(&fn, mod, "read_u32");
    trace.result("cuModuleLoadData", d.name(r));
    tap.check(r == CUDA_SUCCESS, "the PTX kernel loads", d.name(r));
    if (r != CUDA_SUCCESS) return 1;

    void* out = nullptr;
    cudaMalloc(&out, 4);
    trace.phase("kernel-read");
    CUdeviceptr src = va, dst = reinterpret_cast<CUdeviceptr>(out);
    void* params[] = {&src, &dst};
    r = d.launch(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
    cudaError_t sync = r == CUDA_SUCCESS ? cudaDeviceSynchronize() : cudaErrorLaunchFailure;
    trace.result("kernel-read", r == CUDA_SUCCESS ? scenario::name(sync) : d.name(r));
    trace.phase_end();
    tap.check(sync == cudaErrorIllegalAddress, "the kernel's read of the reserved address faults (illegal address)",
              r == CUDA_SUCCESS ? scenario::name(sync) : d.name(r));
    ::munmap(p, size);
    ::close(fd);
    return tap.exit_status();
}
