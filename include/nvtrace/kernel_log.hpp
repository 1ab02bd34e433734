// nvtrace/kernel_log.hpp: kernel log records and their classification.
//
// Sources of the formats: /dev/kmsg records are described in the kernel's
// Documentation/ABI/testing/dev-kmsg ("<prio>,<seq>,<ts_usec>,<flags>[,..];<message>", continuation
// lines " KEY=value"). NVRM message wording: ../shared/reference/nvidia-driver.md (open-gpu-kernel-modules,
// kernel-open/nvidia/nv.c and src/nvidia/src/kernel/gpu/... for the Xid and "fallen off the bus" lines).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

namespace nvtrace {

struct KmsgRecord {
    int level = 6;     // prio & 7 (LOG_EMERG .. LOG_DEBUG)
    int facility = 0;  // prio >> 3; 0 = kernel, 1 = user (lines written to /dev/kmsg by root)
    std::uint64_t seq = 0;
    std::uint64_t ts_us = 0;  // CLOCK_MONOTONIC microseconds, as the record carries it
    char flags = '-';
    std::string message;                      // with the kernel's \xNN escapes undone
    std::map<std::string, std::string> dict;  // SUBSYSTEM=, DEVICE= continuation lines
};

// Parses one /dev/kmsg record. Errors name what was expected.
Result<KmsgRecord> parse_kmsg_record(std::string_view record);

// One logical kernel log message with its classification (DESIGN.md section 5, kernel_log).
struct KernelLogMessage {
    std::optional<std::uint64_t> ts_ns;  // monotonic ns (kmsg ts_usec * 1000) or trace clock for console events
    int level = 6;
    std::string source;  // "NVRM", "nvidia-uvm", "nvidia-peermem", "gdrdrv", "kernel", "user"
    std::string kind;    // "xid", "fallen_off_bus", "api_mismatch", "nv_status", "other", ...
    std::map<std::string, std::string> fields;
    std::string text;
    std::optional<std::uint64_t> seq;
    std::optional<std::uint64_t> call;  // id of the call running when it was printed, when known
};

// Classifies a message text (no prefix, e.g. "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen
// off the bus."): sets source, kind and fields.
void classify_kernel_message(KernelLogMessage& msg);

// A kernel log in any supported text format, split into logical messages (continuation lines joined) and
// classified. Never fails: lines that are not kernel log lines are counted in `diagnostics`.
struct KernelLogParse {
    std::vector<KernelLogMessage> messages;
    std::vector<Diagnostic> diagnostics;  // with "file:line: ..." first examples
    std::string format;                   // detected: "dmesg", "dmesg-ctime", "journal", "syslog", "kmsg", ...
};
KernelLogParse read_kernel_log(std::string_view text, std::string_view file_name);

}  // namespace nvtrace
