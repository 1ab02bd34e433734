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
    char flags = '-';         // '-', 'c' (a continuation starts), '+' (continues the last); '?' for any other field
    std::string message;      // with the kernel's \xNN escapes undone
    std::map<std::string, std::string> dict;  // SUBSYSTEM=, DEVICE= continuation lines
};

// Parses one /dev/kmsg record. Errors name what was expected.
Result<KmsgRecord> parse_kmsg_record(std::string_view record);

// One logical kernel log message with its classification (DESIGN.md section 5, kernel_log). The kinds and
// their fields are listed in docs/dmesg.md.
struct KernelLogMessage {
    std::optional<std::uint64_t> ts_ns;  // monotonic ns (kmsg ts_usec * 1000, dmesg "[ s.us]") or trace clock
    int level = 6;
    std::string source;  // "NVRM", "nvidia-uvm", "nvidia-peermem", "gdrdrv", "nvidia-modeset", "kernel", "user"
    std::string kind;    // "xid", "fallen_off_bus", "api_mismatch", "nv_status", "other", ...
    std::map<std::string, std::string> fields;
    std::string text;  // the message without its prefixes; continuation lines joined with '\n'
    std::optional<std::uint64_t> seq;
    std::optional<std::uint64_t> call;  // id of the call running when it was printed, when known
    // In a report: how `call` was found: "console" (printk:console in the trace buffer), "time" (kmsg time
    // mapped to the trace clock, attach_kernel_log_by_time), "none"; "" outside reports.
    std::string attached;
    std::optional<std::uint64_t> trace_ts_ns;  // kmsg time on the trace clock, when the offset is known
    // Set by read_kernel_log:
    bool level_known = true;  // false when the text format does not carry the level (dmesg without -r/-x)
    std::string wall_time;    // wall-clock time as printed: "Fri Aug 30 11:43:09 2024", "Jun 30 11:07:05", ISO-8601
    std::string host;         // syslog/journal host name
    std::uint32_t line = 0;   // 1-based line of the message's first physical line; 0 when not read from a file
};

// Classifies a message text (no prefix, e.g. "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen
// off the bus."; may hold several lines joined with '\n'): sets source, kind and fields. A preset source
// ("user": a /dev/kmsg record of facility other than 0, which user space wrote, the kernel ABI guaranteeing that
// user space cannot write facility 0 (Documentation/ABI/testing/dev-kmsg); another program's syslog line) is
// kept: a text that names a driver is read by that driver's grammar (kind and fields) and the driver goes into
// field `text_source`, since the driver did not print it.
void classify_kernel_message(KernelLogMessage& msg);

// A kernel log in any supported text format, split into logical messages (continuation lines joined) and
// classified. Never fails: lines that are not kernel log lines are counted in `diagnostics` (non_log_line,
// severity data_loss) and make `complete` false. Each line is read by finding a known message start (NVRM,
// nvidia-modeset:, [drm, a "module: " or "driver device: " form, a kernel report banner) and reading the
// prefix before it with the timestamp/host recognisers; a prefix none of them knows is kept (field
// line_prefix) and the message is still read.
// Formats (detected per line; docs/dmesg.md): "kmsg", "dmesg", "dmesg-ctime", "dmesg-iso", "journal",
// "journal-monotonic", "journal-unix", "syslog", "syslog-dmesg", "syslog-iso", "syslog-remote", "kernel-tag",
// "dmesg-reltime", "dmesg-delta", "bare" (a kernel message without any prefix, `dmesg -t`),
// "tool-output" (user-space tool lines pasted beside a kernel log; source "user").
struct KernelLogParse {
    std::vector<KernelLogMessage> messages;
    std::vector<Diagnostic> diagnostics;  // with "file:line: ..." first examples
    std::string format;           // the formats seen, in order of first appearance, joined by '+'; "unknown" when none
    std::uint64_t lines = 0;      // physical lines read
    std::uint64_t log_lines = 0;  // physical lines that belong to a message
    std::uint64_t unread_lines = 0;  // non-empty lines no recogniser could read (diagnostic non_log_line)
    // False when something is known to be missing: lines not read, elided lines, text cut off, malformed
    // records; `incomplete` says what, one line per diagnostic ("non_log_line x5 (first: f.log:8: ...)").
    bool complete = true;
    std::vector<std::string> incomplete;
};
KernelLogParse read_kernel_log(std::string_view text, std::string_view file_name);

// Whether read_kernel_log reads `line` (one physical line, no newline) as a kernel log line by its prefix or a
// driver/kernel-report message start (not counting the generic "module: msg" form, which prose can have): for
// format detection that must agree with the reader. Pure.
bool looks_like_kernel_log_line(std::string_view line);

// The parse as JSON: {"schema":"nvtrace.kernel_log/1","format":...,"messages":[...],"diagnostics":[...]}
// (docs/dmesg.md). Invalid UTF-8 in messages is replaced with U+FFFD.
std::string kernel_log_json(const KernelLogParse& parse, int indent = 2);

struct Call;  // report.hpp
// Attaches each message of `log` that has no call yet (attached != "console") to the call running at its
// time: its kmsg time plus `clock.offset_ns` on the trace clock, widened by the clock's uncertainty and the
// record's 1 us resolution. The message gets the deepest call whose [entry, entry + duration] holds that
// whole window, going down from the only root call that overlaps the window at all, and at each level only
// while exactly one child overlaps it and holds all of it. Two tasks in calls at that time, or a call that
// starts or ends inside the window, stop the descent (at the top: "none"): a /dev/kmsg record does not say
// which CPU or task printed it. Calls without a seen exit are never chosen. Messages whose `attached` is
// already set ("console") are left alone; the others get "time" or "none", and `trace_ts_ns` when the
// offset is known. `calls` as build_call_graph returns them. Pure; O(messages x (overlapping roots + children
// on the chain) + calls).
void attach_kernel_log_by_time(std::vector<KernelLogMessage>& log, const std::vector<Call>& calls,
                               const std::optional<KmsgClockOffset>& clock);

// Whether `kind` is one a KernelLogMessage can have: the kinds of docs/dmesg.md's table ("xid", "nv_status", ...,
// "command", "other"). Expectation files are checked against it (`log KIND`).
bool is_kernel_log_kind(std::string_view kind);

// One line for people: "<ts> <level> <source> <kind> key=value... | <text>" (docs/dmesg.md).
std::string format_kernel_log_message(const KernelLogMessage& msg);

}  // namespace nvtrace
