// scenario-hostregister: cudaHostRegister of 16 MiB of ordinary (mmap'd, page-aligned) user memory, then
// cudaHostUnregister (scenarios/hostregister/README.md). Exit: 0, 1, 77.
#include <sys/mman.h>

#include "cuda_util.hpp"

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    scenario::Tap tap(3);
    constexpr std::size_t size = 16u << 20;
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) scenario::cannot_run(trace, "mmap of %zu bytes failed: %s", size, std::strerror(errno));
    e = scenario::step(trace, "cudaHostRegister", [&] { return cudaHostRegister(p, size, cudaHostRegisterDefault); });
    tap.check(e == cudaSuccess, "cudaHostRegister of ordinary user memory", scenario::name(e));
    e = scenario::step(trace, "cudaHostUnregister", [&] { return cudaHostUnregister(p); });
    tap.check(e == cudaSuccess, "cudaHostUnregister", scenario::name(e));
    ::munmap(p, size);
    return tap.exit_status();
}
