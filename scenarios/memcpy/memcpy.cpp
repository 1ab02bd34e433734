// scenario-memcpy: cudaMemcpy host to device and back, from pageable (malloc) and from pinned (cudaMallocHost)
// memory, each call in its own phase (scenarios/memcpy/README.md). Exit: 0, 1 (a call failed or data differs), 77.
#include <cstdlib>
#include <cstring>

#include "cuda_util.hpp"

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    scenario::Tap tap(8);
    constexpr std::size_t size = 16u << 20;
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    void* dev = nullptr;
    e = scenario::step(trace, "cudaMalloc", [&] { return cudaMalloc(&dev, size); });
    tap.check(e == cudaSuccess, "cudaMalloc(16 MiB)", scenario::name(e));
    if (e != cudaSuccess) return 1;

    auto* pageable = static_cast<unsigned char*>(std::malloc(size));
    if (!pageable) return 1;
    std::memset(pageable, 0xa5, size);
    e = scenario::step(trace, "memcpy-h2d-pageable",
                       [&] { return cudaMemcpy(dev, pageable, size, cudaMemcpyHostToDevice); });
    tap.check(e == cudaSuccess, "cudaMemcpy H2D from pageable memory", scenario::name(e));
    std::memset(pageable, 0, size);
    e = scenario::step(trace, "memcpy-d2h-pageable",
                       [&] { return cudaMemcpy(pageable, dev, size, cudaMemcpyDeviceToHost); });
    tap.check(e == cudaSuccess && pageable[size - 1] == 0xa5, "cudaMemcpy D2H to pageable memory, data back",
              scenario::name(e));

    void* pinned = nullptr;
    e = scenario::step(trace, "cudaMallocHost", [&] { return cudaMallocHost(&pinned, size); });
    tap.check(e == cudaSuccess, "cudaMallocHost(16 MiB)", scenario::name(e));
    if (e != cudaSuccess) return 1;
    std::memset(pinned, 0x3c, size);
    e = scenario::step(trace, "memcpy-h2d-pinned",
                       [&] { return cudaMemcpy(dev, pinned, size, cudaMemcpyHostToDevice); });
    tap.check(e == cudaSuccess, "cudaMemcpy H2D from pinned memory", scenario::name(e));
    std::memset(pinned, 0, size);
    e = scenario::step(trace, "memcpy-d2h-pinned",
                       [&] { return cudaMemcpy(pinned, dev, size, cudaMemcpyDeviceToHost); });
    tap.check(e == cudaSuccess && static_cast<unsigned char*>(pinned)[0] == 0x3c,
              "cudaMemcpy D2H to pinned memory, data back", scenario::name(e));
    e = scenario::step(trace, "cudaFreeHost", [&] { return cudaFreeHost(pinned); });
    tap.check(e == cudaSuccess, "cudaFreeHost", scenario::name(e));
    cudaFree(dev);
    std::free(pageable);
    return tap.exit_status();
}
