// analyze/klog/klog.hpp: internals of the kernel-log reader (nvtrace/kernel_log.hpp is the API).
//
// Three layers, each pure and unit-tested on its own:
//   line_prefix.cpp   one physical line -> its prefix (timestamp, host, level) and the message body
//   structure.cpp     which bodies continue or belong to an earlier message (oops, call traces, GSP tables)
//   classify_*.cpp    a logical message's text -> source, kind, fields
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvtrace {
struct KernelLogMessage;
}

namespace nvtrace::klog {

// ---- knowledge tables (nvidia_tables.cpp: views of analyze/knowledge's NV_STATUS and Xid tables) ----
struct NvStatusInfo {
    std::string_view name;     // "NV_ERR_INVALID_ADDRESS"
    std::string_view message;  // "Address not valid"
};
std::optional<NvStatusInfo> nv_status_info(std::uint32_t code);
std::optional<std::uint32_t> nv_status_code(std::string_view name);
std::optional<std::string_view> xid_name(int xid);

// ---- line prefixes (line_prefix.cpp) ----
struct LinePrefix {
    std::string format;                  // "dmesg", "dmesg-ctime", "dmesg-iso", "journal", "journal-monotonic",
                                         // "syslog", "syslog-dmesg", "syslog-iso", "kmsg"; empty: no prefix
    std::optional<std::uint64_t> ts_ns;  // kernel monotonic time, when the line carries it
    std::string wall_time;               // as printed: "Fri Aug 30 11:43:09 2024", "Jun 30 11:07:05", ISO-8601
    std::string host;                    // syslog/journal host
    std::string ident;                   // syslog/journal tag ("kernel" for kernel lines)
    int level = -1;                      // from "<N>" (dmesg -r, kmsg) or "kern  :err   : " (dmesg -x)
    // The syslog facility from the same: "<N>" is facility * 8 + level (util-linux dmesg -r, LOG_MAKEPRI), dmesg -x
    // names it ("user  :warn  : "). -1: not printed. Other than 0 (kern): written from user space.
    int facility = -1;
    std::size_t body = 0;          // offset of the message in the line
    bool quoted = false;           // the prefix was found after "> " or indentation (other tools' output)
    bool syslog_evidence = false;  // space-padded day or "#012" escapes: rsyslog, not journalctl
    std::string unknown_prefix;    // text before the message start that no recogniser read (kept)
};

// Recognises the prefix of one physical line (no trailing newline). kmsg records are not handled here.
LinePrefix parse_line_prefix(std::string_view line);

// rsyslog's control-character escapes: "#012" is '\n' (octal, three digits, values below 040).
std::string unescape_syslog_octal(std::string_view s);

// Parses "[ 1843.308145]" at the start of s (the brackets included); returns ns and the length consumed.
std::optional<std::pair<std::uint64_t, std::size_t>> parse_bracket_seconds(std::string_view s);

// ---- message structure (structure.cpp) ----
bool is_oops_start(std::string_view body);  // "BUG: unable to handle ...", "general protection fault", ...
bool is_oops_body(std::string_view body);   // "#PF:", "Oops:", "CPU: n PID:", "RIP:", registers, frames, ...
bool is_oops_end(std::string_view body);    // "---[ end trace ... ]---"
bool is_call_trace_start(std::string_view body);
bool is_frame_line(std::string_view body);  // " ? nv_foo+0x1/0x2 [nvidia]", " <TASK>", " [<ffff...>] fn+..."
bool is_stack_word(std::string_view body);  // "00000000943b0fda: ffff99da19bf0008 (0xffff99da19bf0008)"
bool is_gsp_timeout_banner(std::string_view body);
bool is_gsp_table_line(std::string_view body);  // RPC history headings, column header and rows
bool is_driver_body(std::string_view body);     // NVRM / nvidia-uvm / peermem / gdrdrv / modeset / drm messages
// "NVRM func: ..." (no colon after NVRM): 5, the length of "NVRM "; else 0.
std::size_t nvrm_nocolon_len(std::string_view body);
// "------------[ cut here ]------------" or lib/ubsan.c's old row of '=': a report follows.
bool is_report_banner(std::string_view body);
// Lines of a kernel report (banner, title, "CPU: N PID:", "Hardware name:", "Call Trace:", "RIP:", ...).
bool is_report_line(std::string_view body);
// A body that may stand alone without a prefix (a kernel line quoted without its timestamp, `dmesg -t`).
bool is_bare_kernel_body(std::string_view body);
// "module: msg", "ACPI Error: msg", "driver 0000:00:0b.0: msg": the generic shapes of kernel messages.
bool is_module_form(std::string_view body);
// Offset of the earliest driver message start inside a line (after a word boundary), or npos.
std::size_t find_driver_start(std::string_view line);
// Offset of an "NVRM: " glued onto the end of a previous message that had no newline, or npos.
std::size_t find_glued_message(std::string_view body);
// A same-timestamp NVRM line continuing the previous NVRM line: older kernels print each line of a multi-line
// printk as its own record with the same timestamp (e.g. the API mismatch text of osapi.c).
bool continues_nvrm_text(std::string_view previous_last_line, std::string_view body);
// Lines that stand for removed text: "...", "[...]", "<snip>".
bool is_elision(std::string_view trimmed);
// A line journalctl writes itself, not a journal entry (systemd src/shared/logs-show.c and journalctl.c): "-- Boot
// 1a2b...ff --" and "-- Reboot --" between boots, "-- No entries --", "-- Logs begin at T, end at T. --" and
// "-- Journal begins at T, ends at T. --" (the header of older versions), and `journalctl -x`'s catalog text,
// every line of it prefixed "-- ". `trimmed`: the line without surrounding blanks.
bool is_journal_marker(std::string_view trimmed);

// ---- the grammar of message bodies (grammar.cpp) ----
using Fields = std::map<std::string, std::string>;
// Reads "NVRM: [GPUn ][GPU dddd:bb:dd[.f]: ][function[_CHIP]: ]" (also "NVRM func:" and "NVOC:") into
// gpu_index, pci, function, chip; returns the offset of the rest, 0 when `flat` is not an NVRM message.
std::size_t nvrm_head(std::string_view flat, Fields& f);
// Key/value runs of a body: "k=v; k=v", "k = v", "NAME(i) = v" (register, register_index, register_value),
// "k: v,  k: v" (keys in snake case; "SM (0x1)" also gives k_code), "<word> <number>" ("fn 10"). Keys already
// in `f` are kept. A fixed-width value list whose last value is shorter and ends the text: k_truncated.
void kv_fields(std::string_view rest, Fields& f);
// errno as "-2", "(-2)", "error -2", "-ENOENT", "errno=22": fields errno ("-2") and errno_name ("ENOENT").
void errno_fields(std::string_view text, Fields& f);
std::string_view errno_name_of(int e);  // 2 or -2 -> "ENOENT"; kernel-internal 512.. too; "" when unknown
std::optional<int> errno_by_name(std::string_view name);

// ---- classification (classify_driver.cpp, classify_kernel.cpp, classify_tool.cpp) ----
// `flat`: the message with continuation lines joined by spaces and repeated "NVRM: " prefixes removed.
std::string flatten(std::string_view text);
void classify_driver(KernelLogMessage& msg, const std::string& flat);  // source already set
bool classify_kernel(KernelLogMessage& msg, const std::string& flat);  // oops, call trace, module loader, ...
bool classify_tool_output(KernelLogMessage& msg, const std::string& flat);
bool is_tool_output_line(std::string_view line);

// Small helpers shared by the classifiers.
std::string_view trim(std::string_view s);
std::string hex_norm(std::string_view digits);  // "0000003a" -> "0x3a", "0x0000001E" -> "0x1e"
void add_status_fields(std::map<std::string, std::string>& fields, std::uint32_t code, const std::string& prefix);

}  // namespace nvtrace::klog
