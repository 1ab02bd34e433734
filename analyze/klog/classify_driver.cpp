// Classification of NVIDIA driver messages (NVRM, nvidia-uvm, nvidia-peermem, gdrdrv, nvidia-modeset).
// Every format below names the driver source that prints it (open-gpu-kernel-modules paths, 595.45.04, as listed
// in ../shared/reference/nvidia-driver.md section 6, unless said otherwise). Regexes run on at most
// kWindow bytes of a message: std::regex recurses per character.
#include <charconv>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "klog.hpp"
#include "nvtrace/kernel_log.hpp"

namespace nvtrace::klog {

namespace {

constexpr std::size_t kWindow = 2048;

bool search(const std::string& s, std::smatch& m, const std::regex& re) {
    return std::regex_search(s, m, re);
}

std::optional<std::uint32_t> parse_hex(std::string_view s) {
    if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") s.remove_prefix(2);
    if (s.empty() || s.size() > 8) return std::nullopt;
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

// The Xid detail: the text after "Xid (...): N, [pid=..., name=..., ]" (kernel_rc.c and the engine code that
// passes the message; shapes from real logs and nvidia-driver.md section 6.4).
void xid_detail_fields(const std::string& d, Fields& f) {
    static const std::regex ch(R"(\b(?:Ch|Channel(?: ID)?|ChID) (?:0x)?([0-9A-Fa-f]{4,8})\b)");
    static const std::regex intr(R"(\bintr ([0-9A-Fa-f]{8})\b)");
    static const std::regex mmu(
        R"(MMU Fault: ENGINE ((?:\S+ )*?)(\S+) faulted @ (0x[0-9A-Fa-f_]+)\. Fault is of type (\S+)(?: (\S+))?)");
    static const std::regex sm(R"(\(GPC (\d+), TPC (\d+), SM (\d+)\))");
    static const std::regex err(R"(errorString ([^,]+))");
    static const std::regex info(R"(\bInfo (0x[0-9A-Fa-f]+))");
    static const std::regex esr(R"(ESR ((?:0x[0-9A-Fa-f]+=0x[0-9A-Fa-f]+ ?)+))");
    static const std::regex cls(R"(\bClass (0x[0-9A-Fa-f]+|[0-9A-Fa-f]{8})\b)");
    static const std::regex sub(R"(\bSubchannel (0x[0-9A-Fa-f]+))");
    static const std::regex off(R"(\bOffset ([0-9A-Fa-f]{8})\b)");
    static const std::regex data(R"(\bData ([0-9A-Fa-f]{8})\b)");
    static const std::regex prev(R"(caused by previous Xid (\d+))");
    static const std::regex rpc(
        R"(Timeout after (\S+) of waiting for RPC response from GPU(\d+) GSP! Expected function (\d+) \((\w+)\)(?: sequence (\d+))?)");
    std::smatch m;
    if (search(d, m, ch)) f["channel"] = hex_norm(m[1].str());
    if (search(d, m, intr)) f["intr"] = hex_norm(m[1].str());
    if (search(d, m, mmu)) {
        std::string units_raw = m[1].str();
        std::string units(trim(units_raw));
        auto sp = units.find(' ');
        f["engine"] = units.substr(0, sp);
        if (sp != std::string::npos) f["unit"] = units.substr(sp + 1);
        f["client"] = m[2];
        f["fault_address"] = m[3];
        f["fault_type"] = m[4];
        if (m[5].matched) f["access_type"] = m[5];
    }
    if (search(d, m, sm)) {
        f["gpc"] = m[1];
        f["tpc"] = m[2];
        f["sm"] = m[3];
    }
    if (search(d, m, err)) f["error_string"] = std::string(trim(m[1].str()));
    if (search(d, m, info)) f["info"] = hex_norm(m[1].str());
    if (search(d, m, esr)) f["esr"] = std::string(trim(m[1].str()));
    if (search(d, m, cls)) f["class"] = hex_norm(m[1].str());
    if (search(d, m, sub)) f["subchannel"] = hex_norm(m[1].str());
    if (search(d, m, off)) f["offset"] = hex_norm(m[1].str());
    if (search(d, m, data)) f["data"] = hex_norm(m[1].str());
    if (search(d, m, prev)) f["previous_xid"] = m[1];
    if (search(d, m, rpc)) {
        f["rpc_timeout"] = m[1];
        f["gpu_index"] = m[2];
        f["rpc_function"] = m[3];
        f["rpc_name"] = m[4];
        if (m[5].matched) f["rpc_sequence"] = m[5];
    }
    if (d.find("fallen off the bus") != std::string::npos) f["fallen_off_bus"] = "true";
    // Xid 94/95 (contained/uncontained ECC errors): "Contained: SM (0x1). RST: No, D-RST: No" and the
    // Uncontained form; read by the key/value grammar (contained, contained_code, rst, d_rst).
    if (d.find("ontained: ") != std::string::npos || d.find("RST: ") != std::string::npos) {
        Fields kv;
        kv_fields(d, kv);
        for (const char* k : {"contained", "contained_code", "uncontained", "uncontained_code", "rst", "d_rst"})
            if (kv.count(k)) f.emplace(k, kv[k]);
    }
}

bool classify_xid(KernelLogMessage& msg, const std::string& flat) {
    // kernel_rc.c: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, <msg>" or without pid/name; MIG adds
    // " GPU-I:%02u[ GPU-CI:%02u]" inside the parentheses; old drivers omit "PCI:".
    static const std::regex xid(
        R"(^NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)((?: GPU-C?I:\d+)*)\): (\d+)(.*)$)");
    static const std::regex pidname(R"(^, pid=('[^']*'|[^,\s]*)(?:, name=([^,]*))?)");
    static const std::regex gi(R"(GPU-I:(\d+))");
    static const std::regex gci(R"(GPU-CI:(\d+))");
    std::smatch m;
    if (!search(flat, m, xid)) return false;
    msg.kind = "xid";
    auto& f = msg.fields;
    f["pci"] = m[1];
    f["xid"] = m[3];
    std::string mig = m[2];
    std::smatch g;
    if (std::regex_search(mig, g, gi)) f["gpu_instance"] = g[1];
    if (std::regex_search(mig, g, gci)) f["compute_instance"] = g[1];
    int xid_num = 0;
    std::from_chars(f["xid"].data(), f["xid"].data() + f["xid"].size(), xid_num);
    if (auto name = xid_name(xid_num)) f["xid_name"] = std::string(*name);
    std::string rest = m[4];
    std::smatch p;
    if (std::regex_search(rest, p, pidname)) {
        std::string pid = p[1];
        if (pid.size() >= 2 && pid.front() == '\'' && pid.back() == '\'') pid = pid.substr(1, pid.size() - 2);
        f["pid"] = pid;
        if (p[2].matched) f["name"] = std::string(trim(p[2].str()));
        rest = rest.substr(static_cast<std::size_t>(p.length(0)));
    }
    std::string_view detail = trim(rest);
    if (!detail.empty() && detail.front() == ',') detail = trim(detail.substr(1));
    f["detail"] = std::string(detail);
    xid_detail_fields(f["detail"], f);
    return true;
}

bool classify_api_mismatch(KernelLogMessage& msg, const std::string& flat) {
    // osapi.c (CHECK_VERSION_STR): "NVRM: API mismatch: the client '%s' (pid %u)\nNVRM: has the version %s, but
    // this kernel module has\nNVRM: the version %s. ..." (5xx), older: "the client has the version %s, but\nNVRM:
    // this kernel module has the version %s." Versions may lack the patch part ("595.84").
    if (flat.find("API mismatch") == std::string::npos) return false;
    static const std::regex client(
        R"(the client(?: '([^']*)' \(pid (\d+)\))? has the version (\d+(?:\.\d+)*),? but this kernel module has the version (\d+(?:\.\d+)*))");
    static const std::regex reverse(
        R"(kernel module has version (\d+(?:\.\d+)*),? but this NVIDIA driver component has version (\d+(?:\.\d+)*))");
    std::smatch m;
    msg.kind = "api_mismatch";
    if (search(flat, m, client)) {
        if (m[1].matched) msg.fields["client_name"] = m[1];
        if (m[2].matched) msg.fields["client_pid"] = m[2];
        msg.fields["client_version"] = m[3];
        msg.fields["kernel_version"] = m[4];
    } else if (search(flat, m, reverse)) {
        msg.fields["kernel_version"] = m[1];
        msg.fields["client_version"] = m[2];
    }
    return true;
}

bool classify_rm_init(KernelLogMessage& msg, const std::string& flat) {
    // osinit.c: "RmInitAdapter failed! (0x%x:0x%x:%d)" = (init status : NV_STATUS : line), with the
    // NV_DEV_PRINTF "GPU dddd:bb:dd.f: " prefix since ~4xx; nv.c: "rm_init_adapter failed, device minor number %d",
    // legacy (358.x) "rm_init_adapter failed for device bearing minor number %d".
    static const std::regex code(R"(RmInitAdapter failed! \((0x[0-9A-Fa-f]+):(0x[0-9A-Fa-f]+):(\d+)\))");
    static const std::regex minor(R"(rm_init_adapter failed(?:,| for) device (?:bearing )?minor number (\d+))");
    std::smatch m;
    if (search(flat, m, code)) {
        msg.kind = "rm_init_adapter_failed";
        msg.fields["code"] = fmt::format("{}:{}:{}", m[1].str(), m[2].str(), m[3].str());
        msg.fields["init_status"] = hex_norm(m[1].str());
        if (auto v = parse_hex(m[2].str())) add_status_fields(msg.fields, *v, "rm_");
        msg.fields["code_line"] = m[3];
    }
    if (search(flat, m, minor)) {
        msg.kind = "rm_init_adapter_failed";
        msg.fields["minor"] = m[1];
    }
    // Cut off where the next printk was glued on ("NVRM: GPU 0000:01:00.0: RmInitAdapt"): what is left is the
    // start of osinit.c's wording, so it is that message, marked truncated.
    constexpr std::string_view kWording = "RmInitAdapter failed! (";
    if (msg.kind != "rm_init_adapter_failed") {
        auto at = flat.rfind("RmInitAdapt");
        if (at != std::string::npos && at > 0 && flat[at - 1] == ' ' &&
            kWording.substr(0, flat.size() - at) == std::string_view(flat).substr(at)) {
            msg.kind = "rm_init_adapter_failed";
            msg.fields["truncated"] = "true";
        }
    }
    return msg.kind == "rm_init_adapter_failed";
}

bool classify_gsp(KernelLogMessage& msg, const std::string& flat) {
    // kernel_gsp.c _kgspIsHeartbeatTimedOut: "%s heartbeat timed out, currentTimeMs %u heartbeat %u
    // heartbeatWithOffsetMs %u diff %u timeout %u" (older: "Heartbeat timed out, ...").
    static const std::regex hb(
        R"((?:(\S+) )?[Hh]eartbeat timed out, currentTimeMs (\d+) heartbeat (\d+) heartbeatWithOffsetMs (\d+) diff (\d+) timeout (\d+))");
    std::smatch m;
    if (search(flat, m, hb)) {
        msg.kind = "gsp_timeout";
        auto& f = msg.fields;
        f["timeout_type"] = "heartbeat";
        std::string src = m[1].matched ? m[1].str() : "";
        if (src == "LibOS" || src == "GSP-RM") f["heartbeat_source"] = src;
        f["current_time_ms"] = m[2];
        f["heartbeat"] = m[3];
        f["heartbeat_with_offset_ms"] = m[4];
        f["diff_ms"] = m[5];
        f["timeout_ms"] = m[6];
        return true;
    }
    if (!is_gsp_timeout_banner(msg.text.substr(0, msg.text.find('\n')))) return false;
    msg.kind = "gsp_timeout";
    auto& f = msg.fields;
    f["timeout_type"] = "rpc";
    // _kgspLogRpcHistoryEntry: "    %c%-4d %-4d %-21.21s %10u 0x%016llx 0x%016llx 0x%016llx 0x%016llx %6llu%cs %c"
    // (entry, function, name, sequence, data0, data1, ts_start, ts_end, duration with unit u/m/' ' then 's',
    // and 'y' in the last column); drivers before the sequence column print the same without it.
    static const std::regex row(
        R"(^NVRM:\s+(-?\d+)\s+(\d+)\s+(\S+)\s+(?:(\d+)\s+)?(0x[0-9A-Fa-f]+)\s+(0x[0-9A-Fa-f]+)\s+(0x[0-9A-Fa-f]+)\s+(0x[0-9A-Fa-f]+)(?:\s+(\d+)([um]?)s)?(?:\s+(y))?\s*$)");
    static const std::regex event_heading(R"(RPC event history \(CPU <- GSP\))");
    static const std::regex cmd_heading(R"(RPC history \(CPU -> GSP\))");
    static const std::regex active(R"(GSP RPC buffer contains function (\d+) \((\w+)\) sequence (\d+))");
    std::string table = "rpc_history";
    std::size_t rows[2] = {0, 0};
    std::string_view text = msg.text;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t nl = text.find('\n', start);
        std::string line(text.substr(
            start, std::min<std::size_t>((nl == std::string_view::npos ? text.size() : nl) - start, kWindow)));
        start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        std::smatch r;
        if (std::regex_search(line, r, event_heading)) {
            table = "rpc_event_history";
        } else if (std::regex_search(line, r, cmd_heading)) {
            table = "rpc_history";
        } else if (std::regex_search(line, r, active)) {
            f["active_rpc_function"] = r[1];
            f["active_rpc_name"] = r[2];
            f["active_rpc_sequence"] = r[3];
        } else if (std::regex_search(line, r, row)) {
            std::string key = fmt::format("{}[{}].", table, r[1].str());
            f[key + "function"] = r[2];
            f[key + "name"] = r[3];
            if (r[4].matched) f[key + "sequence"] = r[4];
            f[key + "data0"] = r[5];
            f[key + "data1"] = r[6];
            f[key + "ts_start"] = r[7];
            f[key + "ts_end"] = r[8];
            if (r[9].matched) {
                std::uint64_t v = 0;
                std::string ds = r[9];
                std::from_chars(ds.data(), ds.data() + ds.size(), v);
                std::string unit = r[10];
                std::uint64_t us = unit == "u" ? v : unit == "m" ? v * 1000 : v * 1000000;
                f[key + "duration_us"] = std::to_string(us);
            }
            if (r[11].matched)
                f[key + (table == "rpc_history" ? "actively_polling" : "during_incomplete_rpc")] = "true";
            ++rows[table == "rpc_history" ? 0 : 1];
        }
    }
    f["rpc_history.rows"] = std::to_string(rows[0]);
    f["rpc_event_history.rows"] = std::to_string(rows[1]);
    return true;
}

bool classify_status(KernelLogMessage& msg, const std::string& flat) {
    auto& f = msg.fields;
    // nvassert.c: "nvAssertOkFailedNoLog: Assertion failed: <nvstatusToString> (0x%08X) returned from <expr> @
    // <file>:<line>", "nvCheckOkFailedNoLog: Check failed: ..."; nvstatusToString gives "<message> [<NAME>]"
    // (src/common/shared/nvstatus/nvstatus.c).
    static const std::regex ok_failed(
        R"((Assertion|Check) failed: (.*?) \((0x[0-9A-Fa-f]+)\) returned from (.*?) @ ([\w./-]+):(\d+))");
    static const std::regex failed(R"((Assertion|Check) failed: (.*?) @ ([\w./-]+):(\d+))");
    static const std::regex bracket(R"(\[(NV_(?:ERR|WARN)_\w+|NV_OK)\])");
    static const std::regex status_word(R"(\bstatus:? (0x[0-9A-Fa-f]+)\b)");
    static const std::regex err_colon(R"((?:[Ee]rror|failed)[^:]{0,100}: (0x[0-9A-Fa-f]+)\b)");
    static const std::regex vbios(R"(VBIOS version ([0-9A-Fa-f.]+[0-9A-Fa-f]))");
    std::smatch m;
    if (search(flat, m, vbios)) f["vbios_version"] = m[1];
    if (search(flat, m, ok_failed)) {
        msg.kind = "nv_status";
        f["check"] = m[1] == "Check" ? "check" : "assertion";
        if (auto v = parse_hex(m[3].str())) add_status_fields(f, *v, "");
        f["expr"] = m[4];
        f["file"] = m[5];
        f["src_line"] = m[6];
        return true;
    }
    if (search(flat, m, failed)) {
        msg.kind = "assertion_failed";
        f["check"] = m[1] == "Check" ? "check" : "assertion";
        f["expr"] = m[2];
        f["file"] = m[3];
        f["src_line"] = m[4];
        return true;
    }
    std::optional<std::uint32_t> code;
    if (search(flat, m, bracket)) code = nv_status_code(m[1].str());
    if (!code && search(flat, m, status_word)) code = parse_hex(m[1].str());
    if (!code && search(flat, m, err_colon)) code = parse_hex(m[1].str());
    if (code && *code != 0 && nv_status_info(*code)) {
        msg.kind = "nv_status";
        add_status_fields(f, *code, "");
        return true;
    }
    return false;
}

bool classify_nvrm_other(KernelLogMessage& msg, const std::string& flat) {
    auto& f = msg.fields;
    std::smatch m;
    // nv.c: "NVRM: loading %s" with pNVRM_ID from utils.mk GENERATE_NVIDSTRING: open "NVIDIA UNIX Open Kernel
    // Module for x86_64  595.45.04  Release Build  (user@host)  <date>", proprietary "NVIDIA UNIX x86_64 Kernel
    // Module  535.104.05  <date>" (nvidia-driver.md sections 6.2 and 7).
    static const std::regex banner(
        R"(^NVRM: loading NVIDIA UNIX (Open )?(?:(\S+) )?Kernel Module(?: for (\S+))?\s+(\d+(?:\.\d+)+)\s*(.*)$)");
    static const std::regex build(R"(^(\w+) Build\s+\(([^)]*)\)\s+(.*)$)");
    if (search(flat, m, banner)) {
        msg.kind = "driver_loaded";
        f["module"] = "nvidia";
        bool open = m[1].matched;
        f["flavour"] = open ? "open" : "proprietary";
        f["open"] = open ? "true" : "false";
        if (m[3].matched)
            f["arch"] = m[3];
        else if (m[2].matched)
            f["arch"] = m[2];
        f["version"] = m[4];
        std::string rest = m[5];
        std::smatch b;
        if (std::regex_search(rest, b, build)) {
            f["build_type"] = b[1];
            f["builder"] = b[2];
            f["build_date"] = std::string(trim(b[3].str()));
        } else if (!rest.empty()) {
            f["build_date"] = std::string(trim(rest));
        }
        return true;
    }
    // osmemdesc.c, in every driver version (nvidia-driver.md section 5(d)): up to 590.48.01
    // osCreateOsDescriptorFromIoMemory prints "osCreateOsDescriptorFromIoMemory(): phys range
    // 0x%016llx-0x%016llx overlaps with GPU BARs" with no newline (the next NVRM message is glued on; the
    // reader splits it off); from 595.44.02 osCheckGpuBarsOverlapAddrRange prints "... overlaps with GPU BAR0"
    // or "... with FB or GPU BAR2". Either way the call fails with NV_ERR_INVALID_ADDRESS.
    static const std::regex bar(
        R"((?:(\w+)\(\): )?phys range (0x[0-9A-Fa-f]+)-(0x[0-9A-Fa-f]+) overlaps with (.+?)\.?\s*$)");
    if (search(flat, m, bar)) {
        msg.kind = "bar_overlap";
        f["range_start"] = m[2];
        f["range_end"] = m[3];
        f["overlaps"] = m[4];
        std::string printer = m[1].matched ? m[1].str() : f.count("function") ? f["function"] : std::string{};
        if (!printer.empty()) f["printed_by"] = printer;
        if (printer == "osCreateOsDescriptorFromIoMemory")
            f["driver_range"] = "<=590.48.01";
        else if (printer == "osCheckGpuBarsOverlapAddrRange")
            f["driver_range"] = ">=595.44.02";
        add_status_fields(f, 0x1e, "result_");
        return true;
    }
    // nv.c probe reporting.
    static const std::regex probe(R"(The NVIDIA probe routine (failed|was not called) for (\d+) device)");
    if (search(flat, m, probe)) {
        msg.kind = "probe_failed";
        f["reason"] = m[1] == "failed" ? "failed" : "not_called";
        f["count"] = m[2];
        return true;
    }
    if (flat.find("None of the NVIDIA devices were initialized") != std::string::npos ||
        flat.find("No NVIDIA GPU found") != std::string::npos ||
        flat.find("No NVIDIA devices probed") != std::string::npos) {
        msg.kind = "probe_failed";
        f["reason"] = flat.find("None of") != std::string::npos ? "none_initialized" : "no_gpu";
        return true;
    }
    // nv.c (<= 4xx frontend): "nvidia_frontend_open: minor %d, module->open() failed, error %d".
    static const std::regex open_failed(R"(minor (\d+), module->open\(\) failed, error (-?\d+))");
    if (search(flat, m, open_failed)) {
        msg.kind = "device_open_failed";
        f["minor"] = m[1];
        f["errno"] = m[2];
        return true;
    }
    // osapi.c/osinit.c: the three-line "The NVIDIA GPU %04x:%02x:%02x.%x (PCI ID: %04x:%04x) installed in this
    // system has fallen off the bus and is not responding to commands."; NV_DEV_PRINTF "GPU has fallen off the
    // bus."; legacy "GPU at 0000:01:00.0 has fallen off the bus."
    if (flat.find("fallen off the bus") != std::string::npos) {
        static const std::regex pci(R"(\b([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\b)");
        static const std::regex pci_id(R"(PCI ID: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}))");
        msg.kind = "fallen_off_bus";
        if (search(flat, m, pci)) f["pci"] = m[1];
        if (search(flat, m, pci_id)) f["pci_id"] = m[1];
        return true;
    }
    // kernel_rc.c _krcLogUuidOnce: "NVRM: GPU at PCI:%04x:%02x:%02x: GPU-<uuid>".
    static const std::regex uuid(R"(^NVRM: GPU at PCI:([0-9A-Fa-f:.]+): (GPU-[0-9A-Fa-f-]+))");
    if (search(flat, m, uuid)) {
        msg.kind = "gpu_uuid";
        f["pci"] = m[1];
        f["uuid"] = m[2];
        return true;
    }
    // osmemdesc.c: "osCreateOsDescriptorFromIoMemory(): permission denied, allowPeermapping=%d".
    static const std::regex denied(R"(permission denied, allowPeermapping=(\d+))");
    if (search(flat, m, denied)) {
        msg.kind = "io_memory_denied";
        f["allow_peermapping"] = m[1];
        return true;
    }
    // os-mlock.c (nv_printf without a prefix): "Cannot map memory with base addr 0x%llx and size of 0x%llx pages".
    static const std::regex nomap(
        R"(Cannot map memory with base addr (0x[0-9A-Fa-f]+) and size of (0x[0-9A-Fa-f]+) pages)");
    if (search(flat, m, nomap)) {
        msg.kind = "io_memory_map_failed";
        f["base"] = m[1];
        f["pages"] = m[2];
        return true;
    }
    // nv-p2p.c: "Invalid argument in nv_p2p_get_pages,address or length are not aligned address=0x%llx, length=0x%llx".
    static const std::regex p2p(R"(not aligned address=(0x[0-9A-Fa-f]+), length=(0x[0-9A-Fa-f]+))");
    if (search(flat, m, p2p)) {
        msg.kind = "p2p_invalid_argument";
        f["address"] = m[1];
        f["length"] = m[2];
        return true;
    }
    // osapi.c/nv.c: "A GPU crash dump has been created. If possible, please run\nNVRM: nvidia-bug-report.sh as
    // root to collect this data before\nNVRM: the NVIDIA kernel module is unloaded." (one printk, 3 lines).
    if (flat.find("GPU crash dump has been created") != std::string::npos) {
        msg.kind = "crash_dump";
        return true;
    }
    // NVOC runtime (src/nvidia/src/libraries/nvoc/src/runtime.c __nvoc_objDelete): "Child class %s not freed from
    // parent class %s."
    static const std::regex nvoc(R"(Child class (\w+) not freed from parent class (\w+))");
    if (search(flat, m, nvoc)) {
        f["child_class"] = m[1];
        f["parent_class"] = m[2];
        return false;  // kind stays "other": a leak report, not a failure by itself
    }
    // GFW boot (gpu/gpu.c gpuWaitForGfwBootComplete_TU102): "failed to wait for GFW_BOOT: (progress 0x%x)".
    static const std::regex gfw(R"(GFW_BOOT: \(progress (0x[0-9A-Fa-f]+)\))");
    if (search(flat, m, gfw)) {
        msg.kind = "gfw_boot_timeout";
        f["gfw_boot_progress"] = m[1];
        return true;
    }
    return false;
}

void classify_uvm(KernelLogMessage& msg, const std::string& flat) {
    auto& f = msg.fields;
    std::smatch m;
    // uvm.c: "Loaded the UVM driver[ in %s mode], major device number %d" (UVM_INFO_PRINT).
    static const std::regex loaded(R"(Loaded the UVM driver(?: in (\S+) mode)?, major device number (\d+))");
    if (search(flat, m, loaded)) {
        msg.kind = "driver_loaded";
        f["module"] = "nvidia-uvm";
        if (m[1].matched) f["mode"] = m[1];
        f["major"] = m[2];
        return;
    }
    // uvm_common.h UVM_ERR_PRINT: "nvidia-uvm: <file>:<line> <func>[pid:<pid>] <msg>".
    static const std::regex err(R"(^nvidia[-_]uvm: ([\w.]+):(\d+) (\w+)\[pid:(\d+)\]\s*(.*)$)");
    if (search(flat, m, err)) {
        f["file"] = m[1];
        f["src_line"] = m[2];
        f["function"] = m[3];
        f["pid"] = m[4];
        msg.kind = "driver_error";
    }
    // uvm_test.c: "ioctl %d not found. Did you mean to insmod with uvm_enable_builtin_tests=1?"
    static const std::regex ioctl(R"(ioctl (\d+) not found)");
    if (search(flat, m, ioctl)) {
        msg.kind = "driver_error";
        f["ioctl"] = m[1];
    }
    KernelLogMessage tmp;
    tmp.text = msg.text;
    if (classify_status(tmp, flat)) {
        msg.kind = tmp.kind;
        for (auto& [k, v] : tmp.fields)
            f[k] = v;
    }
}

void classify_peermem(KernelLogMessage& msg, const std::string& flat) {
    // nvidia-peermem.c: "nvidia-peermem %s:%d ERROR %s" (peer_err/peer_dbg macros, no "NVRM:").
    static const std::regex err(R"(^nvidia-peermem (\w+):(\d+) (ERROR|DEBUG|INFO|WARNING) (.*)$)");
    std::smatch m;
    if (search(flat, m, err)) {
        msg.kind = m[3] == "ERROR" ? "driver_error" : "other";
        msg.fields["function"] = m[1];
        msg.fields["src_line"] = m[2];
        msg.fields["severity"] = m[3];
        if (m[4].str().find("invalid context") != std::string::npos) msg.fields["error"] = "invalid_context";
    }
}

void classify_gdrdrv(KernelLogMessage& msg, const std::string& flat) {
    // gdrdrv.c: gdr_err/gdr_info/gdr_dbg print "gdrdrv:%s:" __func__ then the message.
    static const std::regex line(R"(^gdrdrv:(\w+):\s*(.*)$)");
    std::smatch m;
    if (search(flat, m, line)) {
        msg.fields["function"] = m[1];
        std::string rest = m[2];
        if (rest.find("error") != std::string::npos || rest.find("fail") != std::string::npos ||
            rest.find("invalid") != std::string::npos)
            msg.kind = "driver_error";
    }
}

// nvkms (nvidia-modeset): nvEvoLogDev/nvEvoLogDisp print "nvidia-modeset: <LEVEL>: GPU:<n>: [<connector>: ]msg"
// (src/nvidia-modeset/src/nvkms-utils.c, levels ERROR/WARNING/INFO). Tuples of colon-separated values name
// their parts from the format string that printed them: "Failed to query display engine channel state:
// 0x%08x:%d:%d:0x%08x" (hwclass, instance, sd, ret; nvkms-evo1.c GetChannelState), "Lost display notification
// (%d:0x%08x)" (sd, val; nvkms-evo.c).
void modeset_fields(KernelLogMessage& msg, std::string_view rest) {
    auto& f = msg.fields;
    for (std::string_view lvl : {"ERROR: ", "WARNING: ", "INFO: "}) {
        if (rest.substr(0, lvl.size()) == lvl) {
            f["severity"] = std::string(lvl.substr(0, lvl.size() - 2));
            rest.remove_prefix(lvl.size());
            if (msg.kind == "other")
                msg.kind = lvl[0] == 'E' ? "driver_error" : lvl[0] == 'W' ? "driver_warning" : "other";
            break;
        }
    }
    if (rest.substr(0, 4) == "GPU:") {
        std::size_t i = 4;
        while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9')
            ++i;
        if (i > 4 && i + 1 < rest.size() && rest[i] == ':') {
            f["gpu"] = std::string(rest.substr(4, i - 4));
            rest = trim(rest.substr(i + 1));
        }
    }
    // Connector names from nvkms-dpy.c / the DRM connector types: DP-0, HDMI-1, DVI-D-0, eDP-1, LVDS-0, ...
    static const std::regex connector(R"(^((?:DP|HDMI|DVI-[DI]|eDP|LVDS|VGA|DSI|TV|USB-C|HDMI-A)-\d+): )");
    std::string r(rest.substr(0, kWindow));
    std::smatch m;
    if (std::regex_search(r, m, connector)) {
        f["connector"] = m[1];
        r = r.substr(static_cast<std::size_t>(m.length(0)));
    }
    f["message"] = r;
    static const std::regex tuple(R"((0x[0-9A-Fa-f]+|\d+)((?::(?:0x[0-9A-Fa-f]+|\d+))+))");
    if (std::regex_search(r, m, tuple)) {
        std::vector<std::string> parts{m[1].str()};
        std::string more = m[2];
        std::size_t start = 1;
        while (start <= more.size()) {
            std::size_t c = more.find(':', start);
            parts.push_back(more.substr(start, c == std::string::npos ? std::string::npos : c - start));
            if (c == std::string::npos) break;
            start = c + 1;
        }
        std::vector<std::string> names;
        if (r.find("display engine channel state") != std::string::npos && parts.size() == 4)
            names = {"class", "channel", "subdevice", "status"};
        else if (r.find("Lost display notification") != std::string::npos && parts.size() == 2)
            names = {"subdevice", "value"};
        f["tuple"] = m[0];
        for (std::size_t i = 0; i < parts.size(); ++i) {
            std::string v = parts[i].rfind("0x", 0) == 0 ? hex_norm(parts[i]) : parts[i];
            if (i < names.size())
                f[names[i]] = v;
            else
                f[fmt::format("tuple[{}]", i)] = v;
        }
        if (f.count("status"))
            if (auto code = parse_hex(f["status"]); code && *code && nv_status_info(*code))
                add_status_fields(f, *code, "");
    }
}

void classify_modeset(KernelLogMessage& msg, const std::string& flat) {
    // nvidia-modeset-linux.c: "Loading NVIDIA UNIX [Open ]Kernel Mode Setting Driver for %s  %s  ..."
    static const std::regex loaded(
        R"(Loading NVIDIA (?:UNIX )?(Open )?Kernel Mode Setting Driver for (\S+)\s+(\d+(?:\.\d+)+))");
    std::smatch m;
    if (search(flat, m, loaded)) {
        msg.kind = "driver_loaded";
        msg.fields["module"] = "nvidia-modeset";
        msg.fields["flavour"] = m[1].matched ? "open" : "proprietary";
        msg.fields["open"] = m[1].matched ? "true" : "false";
        msg.fields["arch"] = m[2];
        msg.fields["version"] = m[3];
        return;
    }
    std::string_view rest = flat;
    rest.remove_prefix(std::min<std::size_t>(rest.find(':') + 1, rest.size()));
    modeset_fields(msg, trim(rest));
}

// nvidia-drm through the DRM logging macros: "[drm:nv_drm_atomic_commit [nvidia_drm]] *ERROR* [nvidia-drm]
// [GPU ID 0x%08x] msg" (drm_print.c __drm_err prints "[drm:%ps] *ERROR* ", %ps adding " [module]" for a
// module symbol; nvidia-drm-priv.h NV_DRM_DEV_LOG_ERR adds "[nvidia-drm] [GPU ID 0x%08x] "). Also plain
// "nvidia-drm: msg" (pr_fmt).
void classify_drm(KernelLogMessage& msg, const std::string& flat) {
    auto& f = msg.fields;
    std::string_view r = flat;
    if (r.substr(0, 5) == "[drm:") {
        std::size_t close = r.find("]] ");
        std::size_t sp = r.find(" [");
        if (close != std::string_view::npos && sp != std::string_view::npos && sp < close) {
            f["function"] = std::string(r.substr(5, sp - 5));
            f["module"] = std::string(r.substr(sp + 2, close - sp - 2));
            r = trim(r.substr(close + 2));
        }
    }
    for (std::string_view lvl : {"*ERROR* ", "*WARNING* "})
        if (r.substr(0, lvl.size()) == lvl) {
            f["severity"] = std::string(lvl.substr(1, lvl.size() - 3));
            msg.kind = lvl[1] == 'E' ? "driver_error" : "driver_warning";
            r = trim(r.substr(lvl.size()));
        }
    if (r.substr(0, 13) == "[nvidia-drm] ") r = trim(r.substr(13));
    if (r.substr(0, 9) == "[GPU ID 0") {
        std::size_t close = r.find(']');
        if (close != std::string_view::npos) {
            f["gpu_id"] = hex_norm(r.substr(8, close - 8));
            r = trim(r.substr(close + 1));
        }
    }
    f["message"] = std::string(r);
    kv_fields(r, f);
}

}  // namespace

void add_status_fields(std::map<std::string, std::string>& fields, std::uint32_t code, const std::string& prefix) {
    fields[prefix + "status"] = fmt::format("0x{:x}", code);
    if (auto info = nv_status_info(code)) {
        fields[prefix + "status_name"] = std::string(info->name);
        fields[prefix + "status_message"] = std::string(info->message);
    }
}

std::string hex_norm(std::string_view digits) {
    if (digits.substr(0, 2) == "0x" || digits.substr(0, 2) == "0X") digits.remove_prefix(2);
    while (digits.size() > 1 && digits.front() == '0')
        digits.remove_prefix(1);
    std::string out = "0x";
    for (char c : digits)
        out.push_back(static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c));
    return out;
}

void classify_driver(KernelLogMessage& msg, const std::string& flat_in) {
    std::string flat = flat_in.substr(0, kWindow);
    if (msg.source == "NVRM") {
        std::size_t rest_at = nvrm_head(flat, msg.fields);
        std::string_view rest = std::string_view(flat).substr(std::min(rest_at, flat.size()));
        if (classify_xid(msg, flat)) return;
        bool known = classify_gsp(msg, flat) || classify_api_mismatch(msg, flat) || classify_rm_init(msg, flat) ||
                     classify_nvrm_other(msg, flat) || classify_status(msg, flat);
        if (msg.kind == "gsp_timeout" && msg.fields.count("rpc_history.rows")) return;  // table rows: own fields
        // Every NVRM body: its key/value runs, then a status among them that is a known NV_STATUS. Messages
        // whose own classifier already read every value are left as they are.
        if (msg.kind == "api_mismatch" || msg.kind == "gfw_boot_timeout" ||
            (msg.kind == "gsp_timeout" && msg.fields.count("diff_ms")))
            return;
        kv_fields(rest, msg.fields);
        auto& f = msg.fields;
        if (!f.count("status_name") && f.count("status") && !f.count("status_truncated")) {
            std::string v = f["status"];
            // A status that is no hex number ("status=0xqq") is no NV_STATUS: left as text.
            if (auto code = v.rfind("0x", 0) == 0 ? parse_hex(v) : std::nullopt;
                code && *code && nv_status_info(*code)) {
                add_status_fields(f, *code, "");
                if (!known) msg.kind = "nv_status";
            }
        }
        if (f.count("fn")) f.emplace("rpc_function", f["fn"]);
        if (f.count("sequence")) f.emplace("rpc_sequence", f["sequence"]);
        if (!known && f.count("register") && f.count("register_value")) msg.kind = "register_dump";
        return;
    }
    if (msg.source == "nvidia-drm") return classify_drm(msg, flat);
    if (msg.source == "nvidia-uvm") return classify_uvm(msg, flat);
    if (msg.source == "nvidia-peermem") return classify_peermem(msg, flat);
    if (msg.source == "gdrdrv") return classify_gdrdrv(msg, flat);
    if (msg.source == "nvidia-modeset") return classify_modeset(msg, flat);
}

}  // namespace nvtrace::klog
