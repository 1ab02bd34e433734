// Which kernel-log lines belong together. Sources of the shapes:
//   Oops/BUG reports: the kernel's arch/x86/mm/fault.c (show_fault_oops: "BUG: unable to handle page fault for
//     address: %px", "#PF: ...", "PGD ... P4D ..."), arch/x86/kernel/dumpstack.c (__die: "Oops: %04lx [#%d]",
//     show_regs, "Call Trace:", "<TASK>"), lib/dump_stack.c (dump_stack_print_info: "CPU: %d PID: %d Comm: %.20s
//     %s %s %.*s", "Hardware name: %s"), kernel/panic.c ("---[ end trace %016llx ]---").
//   Stack frames: arch/x86/kernel/dumpstack.c printk_stack_address: "%s %s%pBb" with "? " for unreliable
//     frames; %pBb prints "sym+off/len [module]" or, with CONFIG_STACKTRACE_BUILD_ID, "[module build-id]".
//     Kernels before 4.x printed " [<ffffffffa0b1c2d3>] ? sym+off/len [module]".
//   Raw stack words "%p: %016lx (%pB)"-shaped lines: seen in real logs (pop-os/pop#3363, NVIDIA/k8s-device-plugin#941).
//   GSP RPC timeout report: open-gpu-kernel-modules src/nvidia/src/kernel/gpu/gsp/kernel_gsp.c (_kgspLogRpcTimeout
//     banner, kgspLogRpcDebugInfo headings "GPU%d RPC history (CPU -> GSP):", _kgspLogRpcHistoryEntry rows).
#include <regex>

#include "klog.hpp"

namespace nvtrace::klog {

namespace {

bool starts(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool all_hex(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_hex(c)) return false;
    return true;
}
// Regexes run on at most this many bytes of a line (std::regex recurses per character).
constexpr std::size_t kRegexWindow = 512;
std::string window(std::string_view s) {
    return std::string(s.substr(0, kRegexWindow));
}

}  // namespace

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool is_report_banner(std::string_view body) {
    auto b = trim(body);
    if (starts(b, "------------[ cut here ]------------")) return true;
    // lib/ubsan.c before 5.x framed a report with a row of '=' (80 of them).
    return b.size() >= 20 && b.find_first_not_of('=') == std::string_view::npos;
}

bool is_oops_start(std::string_view body) {
    auto b = trim(body);
    // "BUG: " covers arch/x86/mm/fault.c's page-fault titles, "BUG: KASAN: ...", "BUG: sleeping function called
    // from invalid context", "BUG: scheduling while atomic", "BUG: soft lockup" (kernel/watchdog.c, also with
    // a "watchdog: " prefix); "UBSAN: " is lib/ubsan.c's title when the cut-here banner is missing.
    return starts(b, "BUG: ") || starts(b, "watchdog: BUG: ") || starts(b, "UBSAN: ") || starts(b, "kernel BUG at ") ||
           starts(b, "general protection fault") || starts(b, "Unable to handle kernel") ||
           starts(b, "invalid opcode: ") || starts(b, "WARNING: CPU: ") || is_report_banner(b) ||
           (starts(b, "Oops: ") && b.find("[#") != std::string_view::npos) || starts(b, "Kernel panic - not syncing");
}

bool is_oops_end(std::string_view body) {
    auto b = trim(body);
    return starts(b, "---[ end trace") || starts(b, "---[ end Kernel panic");
}

bool is_frame_line(std::string_view body) {
    auto b = trim(body);
    if (b == "<TASK>" || b == "</TASK>" || b == "<IRQ>" || b == "</IRQ>" || b == "<NMI>" || b == "</NMI>" ||
        b == "<EOI>" || b == "<SOFTIRQ>" || b == "</SOFTIRQ>")
        return true;
    static const std::regex frame(
        R"(^(?:\[<[0-9a-f]+>\] )?(?:\? )?[\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[[\w-]+(?: [0-9a-f]+)?\])?$)");
    return b.size() < kRegexWindow && std::regex_match(b.begin(), b.end(), frame);
}

bool is_oops_body(std::string_view body) {
    auto b = trim(body);
    static constexpr std::string_view heads[] = {
        "#PF: ",          "PGD ",           "P4D ",
        "PUD ",           "PMD ",           "PTE ",
        "Oops: ",         "CPU: ",          "Hardware name: ",
        "RIP: ",          "Code: ",         "RSP: ",
        "RAX: ",          "RDX: ",          "RBP: ",
        "R10: ",          "R13: ",          "FS: ",
        "CS: ",           "CR2: ",          "DR0: ",
        "DR3: ",          "PKRU: ",         "Modules linked in:",
        "Workqueue: ",    "Call Trace:",    "note: ",
        "Kernel panic",   "CR0: ",          "Tainted: ",
        "Stack:",         "WARNING: CPU: ", "EIP: ",
        "EAX: ",          "ESI: ",          "DS: ",
        "Kernel Offset:", "---[ end trace", "Process ",
        "pc : ",          "lr : ",          "sp : ",
        "IP: ",           "Read of size ",  "Write of size ",
        "RSP <",
    };
    for (auto h : heads)
        if (starts(b, h)) return true;
    return is_frame_line(b) || is_oops_start(b);
}

bool is_call_trace_start(std::string_view body) {
    auto b = trim(body);
    return b == "Call Trace:" || b == "Call trace:" || b == "Backtrace:";
}

bool is_stack_word(std::string_view body) {
    // "<16 hex>: <16 hex> (...)" or "<16 hex>: <16 hex> ..."
    auto b = trim(body);
    auto colon = b.find(": ");
    if (colon == std::string_view::npos || colon < 8 || colon > 16 || !all_hex(b.substr(0, colon))) return false;
    auto rest = b.substr(colon + 2);
    auto sp = rest.find(' ');
    if (sp == std::string_view::npos || sp < 8 || sp > 16 || !all_hex(rest.substr(0, sp))) return false;
    auto tail = rest.substr(sp + 1);
    return tail == "..." || (tail.size() >= 3 && tail.front() == '(' && tail.back() == ')');
}

bool is_gsp_timeout_banner(std::string_view body) {
    auto b = trim(body);
    return starts(b, "NVRM:") && b.find("GSP Timeout ***") != std::string_view::npos;
}

bool is_gsp_table_line(std::string_view body) {
    auto b = trim(body);
    if (!starts(b, "NVRM:")) return false;
    std::string w = window(b);
    static const std::regex heading(
        R"(^NVRM: (?:GPU\d+ )?(?:RPC (?:event )?history \(CPU (?:->|<-) GSP\):|GSP RPC buffer contains function))");
    static const std::regex header(R"(^NVRM:\s+entry\s+function\s)");
    static const std::regex row(R"(^NVRM:\s+-?\d+\s+\d+\s+\w+\s)");
    return std::regex_search(w, heading) || std::regex_search(w, header) || std::regex_search(w, row);
}

namespace {
bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

// "NVRM func: " (RmMsg-style debug prints without the colon after NVRM, e.g. "NVRM kbusVerifyBar2_GM107: ").
std::size_t nvrm_nocolon_len(std::string_view b) {
    if (!starts(b, "NVRM ")) return 0;
    std::size_t i = 5;
    while (i < b.size() && is_ident_char(b[i]))
        ++i;
    if (i == 5 || i >= b.size() || b[i] != ':') return 0;
    return 5;
}

bool is_driver_body(std::string_view body) {
    auto b = trim(body);
    // The prefixes the NVIDIA modules print (nv-printf, NV_PRINTF, nvkms, nvidia-drm's [drm:fn [nvidia_drm]],
    // nvidia-fs's "nvidia-fs:" pr_fmt), NVOC (nvidia.ko's object runtime), and the helpers' own modules.
    static constexpr std::string_view kStarts[] = {
        "NVRM:",           "NVOC:",           "nvidia-uvm:",    "nvidia_uvm:",
        "nvidia-peermem",  "nvidia_peermem:", "nv_peer_mem:",   "gdrdrv:",
        "nvidia-modeset:", "nvidia_modeset:", "nvidia-nvlink:", "nvidia-nvswitch",
        "nvidia-drm",      "nvidia-fs:",      "nvidia_fs:",     "Cannot map memory with base addr"};
    for (auto s : kStarts)
        if (starts(b, s)) return true;
    if (starts(b, "[drm:") && b.find("[nvidia_drm]]") != std::string_view::npos) return true;
    return nvrm_nocolon_len(b) != 0;
}

bool is_report_line(std::string_view body) {
    auto b = trim(body);
    return is_oops_start(b) || is_call_trace_start(b) || starts(b, "Oops: ") || is_stack_word(b) ||
           starts(b, "Modules linked in:") || starts(b, "Hardware name: ") || starts(b, "RIP: ") ||
           starts(b, "---[ end trace") || starts(b, "INFO: task ") ||
           (starts(b, "CPU: ") && b.find(" PID: ") != std::string_view::npos);
}

bool is_bare_kernel_body(std::string_view body) {
    if (is_driver_body(body)) return true;
    auto b = trim(body);
    return is_report_line(b) || starts(b, "[drm] ") || starts(b, "[drm:") || starts(b, "nvidia: module license") ||
           starts(b, "nvidia: loading out-of-tree module");
}

bool is_module_form(std::string_view body) {
    // pr_fmt's KBUILD_MODNAME ": " (lower-case module names), a subsystem's own prefix ("ACPI: ", "Bluetooth: ",
    // "ACPI Error: ", "ACPI BIOS Error (bug): " from include/acpi/acoutput.h), and dev_printk's
    // "<driver> <device>: " (drivers/base/core.c) where the device name holds a digit or ':' ("0000:00:0b.0",
    // "hci0", "1-1", "card0").
    auto b = trim(body);
    std::size_t i = 0;
    // '/' for arch prefixes ("x86/fpu: ", "x86/mm: ").
    while (i < b.size() && i < 32 && (is_ident_char(b[i]) || b[i] == '-' || b[i] == '.' || b[i] == '/'))
        ++i;
    if (i == 0 || !((b[0] >= 'a' && b[0] <= 'z') || (b[0] >= 'A' && b[0] <= 'Z'))) return false;
    auto rest = b.substr(i);
    auto has_message = [](std::string_view r) { return r.size() > 2 && r[0] == ':' && r[1] == ' ' && r[2] != ' '; };
    if (has_message(rest)) return true;
    for (std::string_view word : {" Error", " Warning", " Exception", " BIOS Error (bug)", " BIOS Warning (bug)"})
        if (starts(rest, word) && has_message(rest.substr(word.size()))) return true;
    if (rest.empty() || rest[0] != ' ') return false;
    bool device_like = false;
    // PCI names have colons inside: "0000:00:0b.0:" - take the last ':' before the next space.
    std::size_t sp = rest.find(' ', 1);
    std::string_view dev = rest.substr(1, sp == std::string_view::npos ? std::string_view::npos : sp - 1);
    if (dev.size() < 2 || dev.back() != ':') return false;
    dev.remove_suffix(1);
    // "EXT4-fs (sda1): " (a subsystem naming its device in parentheses).
    if (dev.size() > 2 && dev.front() == '(' && dev.back() == ')') dev = dev.substr(1, dev.size() - 2);
    for (char c : dev) {
        if (!(is_ident_char(c) || c == ':' || c == '.' || c == '-')) return false;
        if (c >= '0' && c <= '9') device_like = true;
    }
    return device_like && sp != std::string_view::npos && sp + 1 < rest.size();
}

std::size_t find_driver_start(std::string_view line) {
    // The earliest driver message start after a boundary (start, space, quote, bracket, '=' or ':'): the
    // rest of the line before it is a prefix this reader does not know (another tool's report, a quote).
    std::size_t best = std::string_view::npos;
    static constexpr std::string_view kTokens[] = {"NVRM", "nvidia-", "nvidia_", "nv_peer_mem:", "gdrdrv:", "[drm:"};
    for (auto tok : kTokens) {
        for (std::size_t at = line.find(tok); at != std::string_view::npos && at < best; at = line.find(tok, at + 1)) {
            char before = at == 0 ? ' ' : line[at - 1];
            bool boundary = before == ' ' || before == '"' || before == '\'' || before == '[' || before == ']' ||
                            before == '(' || before == '=' || before == ':' || before == '\t' || before == '`';
            if (boundary && is_driver_body(line.substr(at))) {
                best = at;
                break;
            }
        }
    }
    return best;
}

std::size_t find_glued_message(std::string_view body) {
    // A printk without its trailing newline gets the next message glued on (osmemdesc.c's BAR-overlap line up
    // to 590, NVOC's "... OBJGPU.NVRM: GPU ..."): "NVRM: " right after a non-space character.
    for (std::size_t at = body.find("NVRM: ", 1); at != std::string_view::npos; at = body.find("NVRM: ", at + 1)) {
        char before = body[at - 1];
        // rsyslog's "#012NVRM: " is an escaped newline, undone later, not a glued message.
        if (at >= 4 && body[at - 4] == '#' && body[at - 3] == '0') continue;
        if (before != ' ' && before != '\t' && before != '"' && before != '\'' && before != '(' && before != '[' &&
            before != '`')
            return at;
    }
    return std::string_view::npos;
}

bool continues_nvrm_text(std::string_view previous_last_line, std::string_view body) {
    auto prev = trim(previous_last_line);
    auto b = trim(body);
    if (!starts(prev, "NVRM:") || !starts(b, "NVRM:")) return false;
    if (!prev.empty() && (prev.back() == '.' || prev.back() == '!' || prev.back() == '?' || prev.back() == ':'))
        return false;
    auto rest = trim(b.substr(5));
    if (rest.empty()) return false;
    if (rest.front() == '(') return true;
    if (!(rest.front() >= 'a' && rest.front() <= 'z')) return false;
    // "nvidia_frontend_open: ...", "rm_init_adapter failed": a function name starts a new message.
    auto word_end = rest.find_first_of(" :(");
    auto word = rest.substr(0, word_end);
    if (word.find('_') != std::string_view::npos) return false;
    if (word_end != std::string_view::npos && rest[word_end] != ' ') return false;
    return true;
}

bool is_journal_marker(std::string_view trimmed) {
    return trimmed == "--" || trimmed.substr(0, 3) == "-- ";
}

bool is_elision(std::string_view trimmed) {
    return trimmed == "..." || trimmed == "[...]" || trimmed == "<snip>" || trimmed == "[snip]" || trimmed == "…" ||
           trimmed == "(...)";
}

}  // namespace nvtrace::klog
