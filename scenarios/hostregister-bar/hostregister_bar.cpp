// scenario-hostregister-bar: map 2 MiB of GPU 0's BAR1 (its PCI resource1 file as root, else a dma-buf of video
// memory, else gdrcopy: common/bar1_map.hpp) and cudaHostRegister
// it with cudaHostRegisterIoMemory (scenarios/hostregister-bar/README.md). Documented result: "invalid argument",
// because RM refuses an OS descriptor whose physical range overlaps a GPU BAR (NV_ERR_INVALID_ADDRESS).
// Exit: 0 (the documented failure happened), 1 (anything else), 77 (no driver or GPU, no route to a CPU mapping of
// BAR1).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cctype>

#include "bar1_map.hpp"
#include "cuda_util.hpp"

int main() {
    scenario::Trace trace;
    scenario::require_cuda(trace);
    constexpr std::size_t size = 2u << 20;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, 0) != cudaSuccess)
        scenario::cannot_run(trace, "cudaDeviceGetPCIBusId failed for device 0");
    std::string bdf = bus_id;
    for (char& c : bdf)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // resource1, else a dma-buf of video memory, else gdrcopy (common/bar1_map.hpp); the dma-buf and gdrcopy routes
    // allocate video memory first, so the context exists before the "init" phase.
    std::string why;
    auto bar1 = scenario::open_bar1(bdf, size, false, why);
    if (!bar1) scenario::cannot_run(trace, "%s", why.c_str());
    scenario::Tap tap(3);
    tap.note("BAR1 route: " + bar1->route + " (" + bar1->detail + ")");
    trace.result("bar1-route", bar1->route);
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    trace.phase("mmap-bar1");
    void* p = bar1->mapped ? bar1->mapped : ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, bar1->fd, 0);
    trace.result("mmap-bar1", p == MAP_FAILED ? scenario::errno_name(errno) : "ok");
    tap.check(p != MAP_FAILED, "mmap of 2 MiB of BAR1", p == MAP_FAILED ? std::strerror(errno) : "");
    if (p == MAP_FAILED) return 1;
    e = scenario::step(trace, "cudaHostRegister", [&] { return cudaHostRegister(p, size, cudaHostRegisterIoMemory); });
    tap.check(e == cudaErrorInvalidValue,
              "cudaHostRegister(cudaHostRegisterIoMemory) of BAR1 fails with invalid argument", scenario::name(e));
    if (e == cudaSuccess) cudaHostUnregister(p);
    if (!bar1->mapped) ::munmap(p, size);
    if (bar1->fd >= 0) ::close(bar1->fd);
    return tap.exit_status();
}
