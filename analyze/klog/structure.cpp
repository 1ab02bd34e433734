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

bool is_oops_start(std::string_view body) {
    auto b = trim(body);
    return starts(b, "BUG: unable to handle") || starts(b, "BUG: kernel NULL pointer dereference") ||
           starts(b, "kernel BUG at ") || starts(b, "general protection fault") ||
           starts(b, "Unable to handle kernel") || starts(b, "invalid opcode: ") ||
           starts(b, "------------[ cut here ]------------") ||
           (starts(b, "Oops: ") && b.find("[#") != std::string_view::npos);
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

bool is_driver_body(std::string_view body) {
    auto b = trim(body);
    return starts(b, "NVRM:") || starts(b, "nvidia-uvm:") || starts(b, "nvidia_uvm:") || starts(b, "nvidia-peermem") ||
           starts(b, "nvidia_peermem:") || starts(b, "nv_peer_mem:") || starts(b, "gdrdrv:") ||
           starts(b, "nvidia-modeset:") || starts(b, "nvidia-nvlink:") || starts(b, "nvidia-drm") ||
           starts(b, "Cannot map memory with base addr");
}

bool is_bare_kernel_body(std::string_view body) {
    if (is_driver_body(body)) return true;
    auto b = trim(body);
    return is_oops_start(b) || is_call_trace_start(b) || starts(b, "Oops: ") || is_stack_word(b) ||
           starts(b, "nvidia: module license") || starts(b, "nvidia: loading out-of-tree module");
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

bool is_elision(std::string_view trimmed) {
    return trimmed == "..." || trimmed == "[...]" || trimmed == "<snip>" || trimmed == "[snip]" || trimmed == "…" ||
           trimmed == "(...)";
}

}  // namespace nvtrace::klog
