// nvtrace/ioctl.hpp: ioctl request numbers and ioctl records.
//
// Encoding (include/uapi/asm-generic/ioctl.h, x86-64): bits 0-7 nr, 8-15 type, 16-29 size,
// 30-31 direction (0 none, 1 write, 2 read, 3 read|write). Legacy tty/socket requests (0x54xx) predate
// the encoding and are named from include/uapi/asm-generic/ioctls.h.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// Name of a request number when nvtrace knows it (generic tty/file requests for now; the NVIDIA, UVM,
// gdrdrv and DRM tables arrive with issue 5).
std::optional<std::string> ioctl_name(std::uint64_t cmd);

// Pairs sys_enter_ioctl with the next sys_exit_ioctl of the same pid and links the root calls made in
// between. `stream.events` sorted by ts_ns; `calls` from build_call_graph.
std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls);

}  // namespace nvtrace
