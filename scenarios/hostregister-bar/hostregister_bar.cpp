// scenario-hostregister-bar: map 2 MiB of GPU 0's BAR1 (its PCI resource1 file, root only) and cudaHostRegister
// it with cudaHostRegisterIoMemory (scenarios/hostregister-bar/README.md). Documented result: "invalid argument",
// because RM refuses an OS descriptor whose physical range overlaps a GPU BAR (NV_ERR_INVALID_ADDRESS).
// Exit: 0 (the documented failure happened), 1 (anything else), 77 (no driver or GPU, not root, BAR1 too small).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cctype>

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
    std::string bar1 = "/sys/bus/pci/devices/" + bdf + "/resource1";
    if (::geteuid() != 0) scenario::cannot_run(trace, "mapping %s needs root (nvtrace run --as-root)", bar1.c_str());
    struct stat st {};
    if (::stat(bar1.c_str(), &st) != 0) scenario::cannot_run(trace, "%s: %s", bar1.c_str(), std::strerror(errno));
    if (static_cast<std::size_t>(st.st_size) < size)
        scenario::cannot_run(trace, "BAR1 of %s is %lld bytes, needs at least 2 MiB", bdf.c_str(),
                             static_cast<long long>(st.st_size));
    int fd = ::open(bar1.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0) scenario::cannot_run(trace, "open %s: %s", bar1.c_str(), std::strerror(errno));
    scenario::Tap tap(3);
    tap.note("BAR1 " + bar1 + ", " + std::to_string(st.st_size) + " bytes");
    cudaError_t e = scenario::step(trace, "init", [] { return cudaFree(nullptr); });
    tap.check(e == cudaSuccess, "cudaFree(0) creates the context", scenario::name(e));
    trace.phase("mmap-bar1");
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    trace.result("mmap-bar1", p == MAP_FAILED ? scenario::errno_name(errno) : "ok");
    tap.check(p != MAP_FAILED, "mmap of 2 MiB of BAR1", p == MAP_FAILED ? std::strerror(errno) : "");
    if (p == MAP_FAILED) return 1;
    e = scenario::step(trace, "cudaHostRegister", [&] { return cudaHostRegister(p, size, cudaHostRegisterIoMemory); });
    tap.check(e == cudaErrorInvalidValue,
              "cudaHostRegister(cudaHostRegisterIoMemory) of BAR1 fails with invalid argument", scenario::name(e));
    if (e == cudaSuccess) cudaHostUnregister(p);
    ::munmap(p, size);
    ::close(fd);
    return tap.exit_status();
}
