// nvtrace/ioctl.hpp: ioctl request numbers and ioctl records.
//
// Encoding (include/uapi/asm-generic/ioctl.h, x86-64): bits 0-7 nr, 8-15 type, 16-29 size,
// 30-31 direction (0 none, 1 write, 2 read, 3 read|write). Legacy tty/socket requests (0x54xx) predate
// the encoding. Names come from the tables of nvtrace/knowledge.hpp (NVIDIA RM and OS-layer escapes, UVM,
// gdrdrv, DRM core, generic tty requests).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

struct IocFields {
    unsigned dir = 0;  // 0 none, 1 _IOC_WRITE, 2 _IOC_READ, 3 both
    unsigned type = 0;
    unsigned nr = 0;
    unsigned size = 0;
};

IocFields decode_ioc(std::uint64_t cmd);

// Name of a request number. With the path of the fd it was issued on ("/dev/nvidiactl",
// "/dev/nvidia-uvm", "/dev/dri/renderD128"), the device decides the family; without one, the number is
// named only when exactly one family nvtrace knows claims it (describe_ioctl in knowledge.hpp explains more).
std::optional<std::string> ioctl_name(std::uint64_t cmd, std::optional<std::string_view> device_path = std::nullopt);

// What the tracer knows of a process's fds: `path` was behind (pid, fd) from `since_ns` on (a /proc/<pid>/fd
// snapshot at start has since_ns 0; an openat seen in the trace has its exit time).
struct FdPath {
    int pid = -1;
    int fd = -1;
    std::uint64_t since_ns = 0;
    std::string path;
};

// One line written by libnvtrace_preload.so (docs/preload.md):
//   nvtrace-ioctl enter fd=5 dev=/dev/nvidiactl cmd=0xc020462b name=NV_ESC_RM_ALLOC hclass=0xa06f
//   nvtrace-ioctl exit fd=5 cmd=0xc020462b ret=0 status=0x1e
struct PreloadMarker {
    enum class Half : std::uint8_t { enter, exit };
    Half half = Half::enter;
    int fd = -1;
    std::uint32_t cmd = 0;
    std::optional<std::string> dev;   // enter: the fd's path when the call was made
    std::optional<std::string> name;  // enter: the request as the library named it
    std::optional<std::uint32_t> hclass, ctrl, xfer_nr, xfer_size;
    std::optional<std::int64_t> ret;      // exit: what ioctl() returned (-1 on failure)
    std::optional<int> err;               // exit: errno when ret is -1
    std::optional<std::uint32_t> status;  // exit: RM status / UVM rmStatus read from the parameters
};
// nullopt for any other text (phase markers, "nvtrace-preload start ...") and for malformed lines.
std::optional<PreloadMarker> parse_preload_marker(std::string_view text);

// Pairs sys_enter_ioctl with the next sys_exit_ioctl of the same pid and links the root calls made in
// between. Preload markers of the same pid fill in what the kernel events cannot carry: an enter marker
// just before a sys_enter_ioctl with the same fd and cmd gives the device path (and so the name), the hClass;
// an exit marker just after gives the RM/UVM status (as its NV_STATUS name, "0x..." when unknown; only when
// ioctl() returned 0, since the driver writes no status otherwise). Markers without a kernel record add no
// record. `stream.events` sorted by ts_ns; `calls` from build_call_graph. Names come from the number alone.
std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls);
// The same, with fd paths: each record gets the latest path of its (pid, fd) at or before its entry, and
// its name from that device.
std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls,
                                        const std::vector<FdPath>& fd_paths);

}  // namespace nvtrace
