#include "nvtrace/kernel_log.hpp"

#include <charconv>
#include <regex>

#include <fmt/format.h>

namespace nvtrace {

namespace {

template <class T>
bool parse_uint(std::string_view s, T& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
    return ec == std::errc{} && p == s.data() + s.size();
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// /dev/kmsg escapes non-printable bytes (and backslash) as \xNN (kernel/printk/printk.c, msg_add_ext_text).
std::string unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
            int hi = hex_digit(s[i + 2]), lo = hex_digit(s[i + 3]);
            if (hi >= 0 && lo >= 0) {
                out.push_back(static_cast<char>(hi * 16 + lo));
                i += 3;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

}  // namespace

Result<KmsgRecord> parse_kmsg_record(std::string_view record) {
    auto semi = record.find(';');
    if (semi == std::string_view::npos)
        return fail(Error::usage("kmsg record: expected '<prio>,<seq>,<ts_usec>,<flags>;<message>', found no ';'"));
    std::string_view header = record.substr(0, semi);
    std::string_view rest = record.substr(semi + 1);

    std::string_view parts[4];
    std::size_t n = 0;
    while (n < 4) {
        auto comma = header.find(',');
        parts[n++] = header.substr(0, comma);
        if (comma == std::string_view::npos) break;
        header.remove_prefix(comma + 1);
    }
    KmsgRecord r;
    unsigned prio = 0;
    if (n < 3 || !parse_uint(parts[0], prio) || !parse_uint(parts[1], r.seq) || !parse_uint(parts[2], r.ts_us))
        return fail(Error::usage(fmt::format("kmsg record: expected numeric prio,seq,ts_usec before ';', found '{}'",
                                             record.substr(0, semi))));
    r.level = static_cast<int>(prio & 7u);
    r.facility = static_cast<int>(prio >> 3);
    if (n >= 4 && !parts[3].empty()) r.flags = parts[3][0];

    auto nl = rest.find('\n');
    r.message = unescape(rest.substr(0, nl));
    while (nl != std::string_view::npos) {
        rest.remove_prefix(nl + 1);
        nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        if (line.size() > 1 && line[0] == ' ') {
            line.remove_prefix(1);
            auto eq = line.find('=');
            if (eq != std::string_view::npos)
                r.dict.emplace(std::string(line.substr(0, eq)), unescape(line.substr(eq + 1)));
        }
    }
    return r;
}

void classify_kernel_message(KernelLogMessage& msg) {
    const std::string& t = msg.text;
    msg.kind = "other";
    if (t.rfind("NVRM:", 0) == 0)
        msg.source = "NVRM";
    else if (t.rfind("nvidia-uvm:", 0) == 0 || t.rfind("nvidia_uvm:", 0) == 0)
        msg.source = "nvidia-uvm";
    else if (t.rfind("nvidia-peermem", 0) == 0 || t.rfind("nvidia_peermem", 0) == 0 || t.rfind("nv_peer_mem", 0) == 0)
        msg.source = "nvidia-peermem";
    else if (t.rfind("gdrdrv:", 0) == 0)
        msg.source = "gdrdrv";
    else if (msg.source.empty())
        msg.source = "kernel";

    if (msg.source != "NVRM") return;
    // "NVRM: Xid (PCI:0000:01:00): 79, pid=123, name=foo, GPU has fallen off the bus."
    // (open-gpu-kernel-modules src/nvidia/src/kernel/diagnostics/journal.c, nvErrorLog_va)
    static const std::regex xid(
        R"(^NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+)(?:, pid=('?[^,']*'?))?(?:, name=([^,]*))?,? ?(.*)$)");
    static const std::regex off_bus(R"(^NVRM: (?:GPU (?:at PCI:)?([0-9A-Fa-f:.]+): )?GPU has fallen off the bus)");
    std::smatch m;
    if (std::regex_search(t, m, xid)) {
        msg.kind = "xid";
        msg.fields["pci"] = m[1];
        msg.fields["xid"] = m[2];
        if (m[3].matched) {
            std::string pid = m[3];
            if (pid.size() >= 2 && pid.front() == '\'' && pid.back() == '\'') pid = pid.substr(1, pid.size() - 2);
            msg.fields["pid"] = pid;
        }
        if (m[4].matched) msg.fields["name"] = m[4];
        msg.fields["detail"] = m[5];
    } else if (std::regex_search(t, m, off_bus)) {
        msg.kind = "fallen_off_bus";
        if (m[1].matched) msg.fields["pci"] = m[1];
    }
}

}  // namespace nvtrace
