// scenario-managed: cudaMallocManaged of 16 MiB, touched by the CPU, then by the GPU (cudaMemset), then read by
// the CPU again (scenarios/managed/README.md). Exit: 0, 1, 77.
#include <cstring>

#include "cuda_util.hpp"

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    int managed = 0;
    cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0);
    if (!managed) scenario::cannot_run(trace, "device 0 does not support managed memory");
    scenario::Tap tap(5);
    constexpr std::size_t size = 16u << 20;
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    void* mem = nullptr;
    e = scenario::step(trace, "cudaMallocManaged", [&] { return cudaMallocManaged(&mem, size); });
    auto* p = static_cast<unsigned char*>(mem);
    tap.check(e == cudaSuccess, "cudaMallocManaged(16 MiB)", scenario::name(e));
    if (e != cudaSuccess) return 1;
    trace.phase("cpu-touch");
    std::memset(p, 1, size);
    trace.phase_end();
    tap.check(true, "CPU writes every page");
    e = scenario::step(trace, "gpu-touch", [&] {
        cudaError_t r = cudaMemset(p, 2, size);
        return r != cudaSuccess ? r : cudaDeviceSynchronize();
    });
    tap.check(e == cudaSuccess, "the GPU writes every page (cudaMemset, cudaDeviceSynchronize)", scenario::name(e));
    trace.phase("cpu-read");
    bool back = p[0] == 2 && p[size - 1] == 2;
    trace.result("cpu-read", back ? "gpu-data" : "stale");
    trace.phase_end();
    tap.check(back, "the CPU reads what the GPU wrote");
    cudaFree(p);
    return tap.exit_status();
}
