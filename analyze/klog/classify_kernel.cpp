// Classification of the kernel's own messages that matter around GPU drivers: Oops/BUG reports, call traces,
// raw stack-word dumps, module-loader errors, device (dev_printk) lines. Sources of the formats: see
// structure.cpp; the module loader's "%s: Unknown symbol %s (err %d)" and "%s: disagrees about version of symbol
// %s" are in kernel/module/main.c (kernel/module.c before 5.19); "%s: module license '%s' taints kernel." in
// the same file; dev_printk "<driver> <device>: <msg>" in drivers/base/core.c; drm "[drm] Initialized %s %d.%d.%d
// %s for %s on minor %d" in drivers/gpu/drm/drm_drv.c.
#include <cctype>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "klog.hpp"
#include "nvtrace/kernel_log.hpp"

namespace nvtrace::klog {

namespace {

constexpr std::size_t kWindow = 1024;

std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t nl = text.find('\n', start);
        std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        out.emplace_back(trim(text.substr(start, std::min(end - start, kWindow))));
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    return out;
}

// "? _nv012865rm+0x77/0x330 [nvidia 1a2b...]" -> fields frame[i], frame[i].module, .build_id, .reliable
void add_frames(const std::vector<std::string>& lines, std::map<std::string, std::string>& f) {
    static const std::regex frame(
        R"(^(?:\[<([0-9a-f]+)>\] )?(\? )?([\w.$]+)\+(0x[0-9a-f]+)/(0x[0-9a-f]+)(?: \[([\w-]+)(?: ([0-9a-f]+))?\])?$)");
    std::size_t n = 0, nvidia = 0;
    for (const auto& l : lines) {
        std::smatch m;
        if (!std::regex_match(l, m, frame)) continue;
        std::string key = fmt::format("frame[{}]", n++);
        f[key] = fmt::format("{}+{}/{}", m[3].str(), m[4].str(), m[5].str());
        if (m[2].matched) f[key + ".reliable"] = "false";
        if (m[6].matched) {
            f[key + ".module"] = m[6];
            if (m[6].str().rfind("nvidia", 0) == 0 || m[6] == "gdrdrv" || m[6] == "nv_peer_mem") ++nvidia;
        }
        if (m[7].matched) f[key + ".build_id"] = m[7];
        if (m[1].matched) f[key + ".address"] = "0x" + m[1].str();
    }
    f["frames"] = std::to_string(n);
    if (nvidia) f["nvidia_frames"] = std::to_string(nvidia);
}

bool classify_oops(KernelLogMessage& msg) {
    auto lines = lines_of(msg.text);
    if (lines.empty() || !is_oops_start(lines[0])) return false;
    msg.kind = "oops";
    msg.source = "kernel";
    auto& f = msg.fields;
    const std::string& first = lines[0];
    static const std::regex pf(
        R"(^BUG: unable to handle (?:page fault|kernel paging request|kernel NULL pointer dereference) (?:for address: |at )([0-9a-fA-Fx]+))");
    static const std::regex bug_at(R"(^kernel BUG at ([^!]+)!)");
    static const std::regex oops(R"(^Oops: (\w+) \[#(\d+)\]\s*(.*)$)");
    static const std::regex cpu(
        R"(^CPU: (\d+) (?:UID: \d+ )?PID: (\d+) Comm: (.{1,20}?) (Not tainted|Tainted: [A-Z ]*[A-Z])\s+(\d\S*) ?(.*)$)");
    static const std::regex warn(R"(^WARNING: CPU: (\d+) PID: (\d+) at (\S+) (\S+))");
    static const std::regex rip(
        R"(^RIP: [0-9a-f]{4}:(?:\[<[0-9a-f]+>\] )?([\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+)(?: \[([\w-]+)(?: [0-9a-f]+)?\])?)");
    static const std::regex null_deref(R"(^BUG: kernel NULL pointer dereference, address: ([0-9a-fA-Fx]+))");
    std::smatch m;
    if (std::regex_search(first, m, null_deref)) {
        f["type"] = "null_pointer_dereference";
        f["fault_address"] = m[1];
    } else if (std::regex_search(first, m, pf)) {
        // Kernels before 4.x: "BUG: unable to handle kernel NULL pointer dereference at %p".
        f["type"] = first.find("NULL pointer") != std::string::npos ? "null_pointer_dereference" : "page_fault";
        f["fault_address"] = m[1];
    } else if (std::regex_search(first, m, bug_at)) {
        f["type"] = "bug";
        f["bug_at"] = m[1];
    } else if (first.rfind("general protection fault", 0) == 0) {
        f["type"] = "general_protection_fault";
    } else if (first.rfind("invalid opcode", 0) == 0) {
        f["type"] = "invalid_opcode";
    } else if (first.rfind("UBSAN: ", 0) == 0) {
        f["type"] = "ubsan";
    } else if (first.rfind("WARNING: ", 0) == 0 || is_report_banner(first)) {
        f["type"] = "warning";
    } else if (first.rfind("BUG: ", 0) == 0 || first.rfind("watchdog: BUG: ", 0) == 0) {
        f["type"] = "bug";
    } else if (first.rfind("Kernel panic", 0) == 0) {
        f["type"] = "panic";
    } else {
        f["type"] = "oops";
    }
    // The title: the first line after the banner. lib/ubsan.c ubsan_prologue: "UBSAN: %s in %s:%d:%d" (older
    // kernels "UBSAN: Undefined behaviour in %s:%d:%d"), then the check's own line, e.g. handle_out_of_bounds
    // "index %s is out of range for type %s", handle_shift_out_of_bounds "shift exponent %s is too large for
    // %u-bit type %s", handle_load_invalid_value "load of value %s is not a valid value for type %s".
    static const std::regex ubsan(R"(^UBSAN: (.+?) in (\S+?):(\d+):(\d+)\s*$)");
    static const std::regex index(R"(^index (-?\d+) is out of range for type '(.*)'$)");
    static const std::regex shift(R"(^shift exponent (-?\d+) is (?:too large|negative)(?: for \d+-bit type '(.*)')?)");
    static const std::regex load(R"(^load of value (\S+) is not a valid value for type '(.*)'$)");
    static const std::regex version_dir(R"((?:^|/)(\d{3}\.\d{2,3}(?:\.\d{2,3})?)/)");
    static const std::regex kasan(R"(^BUG: KASAN: ([\w-]+) in (\S+))");
    std::size_t title_at = is_report_banner(first) && lines.size() > 1 ? 1 : 0;
    const std::string& title = lines[title_at];
    if (!is_report_banner(title)) f["title"] = title;
    if (std::regex_search(title, m, ubsan)) {
        f["type"] = "ubsan";
        f["ubsan_check"] = m[1] == "Undefined behaviour" ? "undefined_behaviour" : m[1].str();
        f["file"] = m[2];
        f["src_line"] = m[3];
        f["column"] = m[4];
        std::string file = m[2];
        std::smatch v;
        if (std::regex_search(file, v, version_dir)) f["driver_version"] = v[1];
    } else if (std::regex_search(title, m, kasan)) {
        f["type"] = "kasan";
        f["kasan_check"] = m[1];
        f["function"] = m[2];
    } else if (title.rfind("BUG: ", 0) == 0 && f["type"] == "warning") {
        f["type"] = "bug";
    }
    for (std::size_t i = title_at + 1; i < lines.size() && i < title_at + 8; ++i) {
        const std::string& l = lines[i];
        if (std::regex_search(l, m, index)) {
            f["index"] = m[1];
            f["index_type"] = m[2];
        } else if (std::regex_search(l, m, shift)) {
            f["shift_exponent"] = m[1];
            if (m[2].matched) f["shift_type"] = m[2];
        } else if (std::regex_search(l, m, load)) {
            f["load_value"] = m[1];
            f["load_type"] = m[2];
        }
    }
    std::vector<std::string> frames;
    for (const auto& l : lines) {
        if (std::regex_search(l, m, oops)) {
            f["oops_code"] = m[1];
            f["oops_count"] = m[2];
            if (!m[3].str().empty()) f["oops_flags"] = m[3];
        } else if (std::regex_search(l, m, cpu)) {
            f["cpu"] = m[1];
            f["pid"] = m[2];
            f["comm"] = m[3];
            std::string t = m[4];
            if (t == "Not tainted") {
                f["tainted"] = "";
            } else {
                // "Tainted: P           OE    ": the flag letters, padding squeezed out.
                std::string flags;
                for (char c : t.substr(9))
                    if (c != ' ' || (!flags.empty() && flags.back() != ' ')) flags.push_back(c);
                f["tainted"] = std::string(trim(flags));
            }
            f["kernel"] = m[5];
            f["kernel_build"] = std::string(trim(m[6].str()));
        } else if (std::regex_search(l, m, warn)) {
            f["cpu"] = m[1];
            f["pid"] = m[2];
            f["warn_at"] = m[3];
            f["warn_function"] = m[4];
        } else if (l.rfind("Hardware name: ", 0) == 0) {
            f["hardware"] = l.substr(15);
        } else if (std::regex_search(l, m, rip)) {
            f["rip"] = m[1];
            if (m[2].matched) f["rip_module"] = m[2];
        } else if (l.rfind("Modules linked in:", 0) == 0) {
            f["modules_linked_in"] = std::string(trim(std::string_view(l).substr(18)));
        } else if (is_frame_line(l)) {
            frames.push_back(l);
        }
    }
    if (!frames.empty()) add_frames(frames, f);
    return true;
}

bool classify_call_trace(KernelLogMessage& msg) {
    auto lines = lines_of(msg.text);
    if (lines.empty() || !is_call_trace_start(lines[0])) return false;
    msg.kind = "call_trace";
    msg.source = "kernel";
    add_frames(lines, msg.fields);
    return true;
}

bool classify_stack_words(KernelLogMessage& msg) {
    auto lines = lines_of(msg.text);
    if (lines.empty() || !is_stack_word(lines[0])) return false;
    msg.kind = "call_trace";
    msg.source = "kernel";
    auto& f = msg.fields;
    f["trace_type"] = "stack_words";
    // "<slot>: <word> (<symbol+off/len [module]>)"; symbols may be proprietary RM's obfuscated "_nvNNNNNNrm".
    static const std::regex word(
        R"(^([0-9a-f]+): ([0-9a-f]+) \(([\w.$]+)\+(0x[0-9a-f]+)/(0x[0-9a-f]+)(?: \[([\w-]+)(?: [0-9a-f]+)?\])?\)$)");
    static const std::regex obfuscated(R"(^_nv\d{6}rm$)");
    std::size_t words = 0, syms = 0, obf = 0;
    for (const auto& l : lines) {
        if (!is_stack_word(l)) continue;
        ++words;
        std::smatch m;
        if (!std::regex_match(l, m, word)) continue;
        std::string key = fmt::format("symbol[{}]", syms++);
        f[key] = fmt::format("{}+{}/{}", m[3].str(), m[4].str(), m[5].str());
        f[key + ".value"] = "0x" + m[2].str();
        if (m[6].matched) f[key + ".module"] = m[6];
        std::string name = m[3];
        if (std::regex_match(name, obfuscated)) {
            f[key + ".obfuscated"] = "true";
            ++obf;
        }
    }
    f["words"] = std::to_string(words);
    f["symbols"] = std::to_string(syms);
    if (obf) f["obfuscated_symbols"] = std::to_string(obf);
    return true;
}

bool classify_module_loader(KernelLogMessage& msg, const std::string& flat) {
    static const std::regex unknown(R"(^([\w-]+): Unknown symbol (\S+) \(err (-?\d+)\))");
    static const std::regex disagrees(R"(^([\w-]+): disagrees about version of symbol (\S+))");
    static const std::regex taints(R"(^([\w-]+): module license '([^']*)' taints kernel)");
    static const std::regex verif(R"(^([\w-]+): module verification failed: (.*)$)");
    std::smatch m;
    if (std::regex_search(flat, m, unknown)) {
        msg.kind = "unknown_symbol";
        msg.fields["module"] = m[1];
        msg.fields["symbol"] = m[2];
        msg.fields["err"] = m[3];
        return true;
    }
    if (std::regex_search(flat, m, disagrees)) {
        msg.kind = "symbol_version_mismatch";
        msg.fields["module"] = m[1];
        msg.fields["symbol"] = m[2];
        return true;
    }
    if (std::regex_search(flat, m, taints)) {
        msg.kind = "module_taint";
        msg.fields["module"] = m[1];
        msg.fields["license"] = m[2];
        // nvidia-driver.md section 7: the proprietary nvidia.ko has license "NVIDIA"; the open one "Dual MIT/GPL".
        if (m[1] == "nvidia") msg.fields["flavour"] = m[2] == "NVIDIA" ? "proprietary" : "open";
        return true;
    }
    if (std::regex_search(flat, m, verif)) {
        msg.kind = "module_taint";
        msg.fields["module"] = m[1];
        msg.fields["verification"] = m[2];
        return true;
    }
    return false;
}

void device_fields(KernelLogMessage& msg, const std::string& flat) {
    static const std::regex dev(R"(^([\w-]+) ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]):? )");
    static const std::regex irq(R"(\birq (\d+) for (MSI(?:/MSI-X)?))");
    // drm_drv.c drm_dev_register: "[drm] Initialized %s %d.%d.%d %s for %s on minor %d" (the date went away
    // in 6.14: "[drm] Initialized %s %d.%d.%d for %s on minor %d").
    static const std::regex drm(
        R"(^\[drm\] Initialized ([\w-]+) (\d+\.\d+\.\d+)(?: (\d{8}))? for (\S+) on minor (\d+))");
    std::smatch m;
    auto& f = msg.fields;
    if (std::regex_search(flat, m, drm)) {
        msg.kind = "driver_loaded";
        f["module"] = m[1];
        f["version"] = m[2];
        if (m[3].matched) f["date"] = m[3];
        f["pci"] = m[4];
        f["minor"] = m[5];
        return;
    }
    // kernel/resource.c iomem_map_sanity_check: "resource sanity check: requesting [mem %pa-%pa], which spans
    // more than %s %pR"; its caller arch/x86/mm/ioremap.c then prints "caller %pS mapping multiple BARs" (joined
    // to it by the reader).
    static const std::regex sanity(
        R"(^resource sanity check: requesting \[mem (0x[0-9a-fA-F]+)-(0x[0-9a-fA-F]+)\], which spans more than (.+?) \[mem (0x[0-9a-fA-F]+)-(0x[0-9a-fA-F]+)(?: [^\]]*)?\])");
    static const std::regex caller(
        R"(^caller ([\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+)(?: \[([\w-]+)(?: [0-9a-f]+)?\])? mapping multiple BARs)");
    if (std::regex_search(flat, m, sanity)) {
        msg.kind = "resource_conflict";
        f["range_start"] = m[1];
        f["range_end"] = m[2];
        f["spans"] = m[3];
        f["resource_start"] = m[4];
        f["resource_end"] = m[5];
    }
    std::string last = flat.substr(flat.rfind("caller ") == std::string::npos ? 0 : flat.rfind("caller "));
    if (std::regex_search(last, m, caller)) {
        if (msg.kind == "other") msg.kind = "resource_conflict";
        f["caller"] = m[1];
        if (m[2].matched) f["caller_module"] = m[2];
    }
    if (msg.kind == "resource_conflict") return;
    std::string_view rest = flat;
    if (std::regex_search(flat, m, dev)) {
        f["driver"] = m[1];
        f["pci"] = m[2];
        rest.remove_prefix(static_cast<std::size_t>(m.length(0)));
        std::smatch i;
        if (std::regex_search(flat, i, irq)) {
            f["irq"] = i[1];
            f["irq_type"] = i[2];
        }
    }
    rest = trim(rest);
    // drm_print.c __drm_err/drm_dbg without a device: "[drm:%ps] *ERROR* msg", %ps adding " [module]".
    if (rest.substr(0, 5) == "[drm:") {
        std::size_t close = rest.find("] ");
        if (close != std::string_view::npos) {
            std::string_view inner = rest.substr(5, close - 5);
            if (auto sp = inner.find(" ["); sp != std::string_view::npos) {
                std::string_view mod = inner.substr(sp + 2);
                if (!mod.empty() && mod.back() == ']') mod.remove_suffix(1);
                f["module"] = std::string(mod);
                inner = inner.substr(0, sp);
            }
            f["function"] = std::string(inner);
            f.emplace("subsystem", "drm");
            rest = trim(rest.substr(close + 2));
        }
    }
    // DRM's device logging inside a dev_printk line: "[drm] *ERROR* fn(): msg", "[drm] fn(): msg".
    if (rest.substr(0, 6) == "[drm] ") {
        f.emplace("subsystem", "drm");
        rest = trim(rest.substr(6));
    }
    if (rest.substr(0, 8) == "*ERROR* ") {
        f["severity"] = "ERROR";
        rest = trim(rest.substr(8));
    }
    if (auto paren = rest.find("(): "); paren != std::string_view::npos && paren < 64) {
        bool ident = paren > 0;
        for (char c : rest.substr(0, paren))
            ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
        if (ident) {
            f["function"] = std::string(rest.substr(0, paren));
            rest = trim(rest.substr(paren + 4));
        }
    }
    std::string r(rest.substr(0, kWindow));
    // drivers/base/dd.c really_probe: "probe with driver %s failed with error %d".
    static const std::regex probe(R"(^probe with driver (\S+) failed with error (-?\d+))");
    // drivers/base/firmware_loader/main.c: "Direct firmware load for %s failed with error %d", "firmware: failed
    // to load %s (%d)"; drivers' own "Failed to request firmware: %d" / "Requesting ... firmware %s failed".
    static const std::regex fw_fail(
        R"((?:firmware: failed to load (\S+) \((-?\d+)\)|Direct firmware load for (\S+) failed with error (-?\d+)|[Ff]ailed to (?:request|load) firmware|[Rr]equesting (?:signed )?firmware (\S+) failed))");
    // A driver naming the firmware it loaded: "Firmware: %s, version: %s" (ivpu_fw.c), "firmware: direct-loading
    // firmware %s" (firmware_loader, with dynamic debug).
    static const std::regex fw_ok(R"(^(?:Firmware: (\S+?),? version: (\S+)|firmware: direct-loading firmware (\S+)))");
    if (std::regex_search(r, m, probe)) {
        msg.kind = "probe_failed";
        f["probe_driver"] = m[1];
        f["errno"] = m[2];
    } else if (std::regex_search(r, m, fw_fail)) {
        msg.kind = "firmware_load_failed";
        for (int g : {1, 3, 5})
            if (m[g].matched) f["firmware"] = m[g];
        for (int g : {2, 4})
            if (m[g].matched) f["errno"] = m[g];
    } else if (std::regex_search(r, m, fw_ok)) {
        msg.kind = "firmware_loaded";
        f["firmware"] = m[1].matched ? m[1].str() : m[3].str();
        if (m[2].matched) f["firmware_version"] = m[2];
    } else if (f.count("severity")) {
        msg.kind = "driver_error";
    }
    if (!f.count("driver") && !f.count("subsystem")) return;
    f.emplace("message", r);
}

}  // namespace

bool classify_kernel(KernelLogMessage& msg, const std::string& flat_in) {
    std::string flat = flat_in.substr(0, kWindow);
    if (classify_oops(msg) || classify_call_trace(msg) || classify_stack_words(msg) ||
        classify_module_loader(msg, flat))
        return true;
    if (msg.source == "kernel") device_fields(msg, flat);
    return false;
}

}  // namespace nvtrace::klog
