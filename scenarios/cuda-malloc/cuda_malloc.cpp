// scenario-cuda-malloc: cudaMalloc and cudaFree of 64 MiB, each in its own phase (scenarios/cuda-malloc/README.md).
// Exit: 0, 1 (a call failed), 77 (no driver or GPU).
#include "cuda_util.hpp"

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    scenario::Tap tap(3);
    // Context creation does most of the RM work; keep it out of the cudaMalloc phase.
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    void* p = nullptr;
    e = scenario::step(trace, "cudaMalloc", [&] { return cudaMalloc(&p, 64u << 20); });
    tap.check(e == cudaSuccess && p != nullptr, "cudaMalloc(64 MiB)", scenario::name(e));
    e = scenario::step(trace, "cudaFree", [&] { return cudaFree(p); });
    tap.check(e == cudaSuccess, "cudaFree", scenario::name(e));
    return tap.exit_status();
}
