// describe_ioctl: names a request number from the knowledge tables and explains its encoding.
#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "../json_values.hpp"
#include "table.hpp"

namespace nvtrace {

namespace {

// Legacy tty/file requests: include/uapi/asm-generic/ioctls.h, all of it (x86-64 uses the generic numbers). Most
// predate the _IOC encoding: type 'T' (0x54) with no direction or size. The _IOR/_IOW ones are encoded here with
// their x86-64 sizes (struct termios2: 44 bytes; unsigned int and int: 4). TIOCINQ is FIONREAD's other name: a
// number is named by its first entry, a name found by any.
constexpr std::array<std::pair<std::uint32_t, const char*>, 75> kGeneric{{
    {0x5401, "TCGETS"},         {0x5402, "TCSETS"},         {0x5403, "TCSETSW"},         {0x5404, "TCSETSF"},
    {0x5405, "TCGETA"},         {0x5406, "TCSETA"},         {0x5407, "TCSETAW"},         {0x5408, "TCSETAF"},
    {0x5409, "TCSBRK"},         {0x540A, "TCXONC"},         {0x540B, "TCFLSH"},          {0x540C, "TIOCEXCL"},
    {0x540D, "TIOCNXCL"},       {0x540E, "TIOCSCTTY"},      {0x540F, "TIOCGPGRP"},       {0x5410, "TIOCSPGRP"},
    {0x5411, "TIOCOUTQ"},       {0x5412, "TIOCSTI"},        {0x5413, "TIOCGWINSZ"},      {0x5414, "TIOCSWINSZ"},
    {0x5415, "TIOCMGET"},       {0x5416, "TIOCMBIS"},       {0x5417, "TIOCMBIC"},        {0x5418, "TIOCMSET"},
    {0x5419, "TIOCGSOFTCAR"},   {0x541A, "TIOCSSOFTCAR"},   {0x541B, "FIONREAD"},        {0x541B, "TIOCINQ"},
    {0x541C, "TIOCLINUX"},      {0x541D, "TIOCCONS"},       {0x541E, "TIOCGSERIAL"},     {0x541F, "TIOCSSERIAL"},
    {0x5420, "TIOCPKT"},        {0x5421, "FIONBIO"},        {0x5422, "TIOCNOTTY"},       {0x5423, "TIOCSETD"},
    {0x5424, "TIOCGETD"},       {0x5425, "TCSBRKP"},        {0x5427, "TIOCSBRK"},        {0x5428, "TIOCCBRK"},
    {0x5429, "TIOCGSID"},       {0x802C542A, "TCGETS2"},    {0x402C542B, "TCSETS2"},     {0x402C542C, "TCSETSW2"},
    {0x402C542D, "TCSETSF2"},   {0x542E, "TIOCGRS485"},     {0x542F, "TIOCSRS485"},      {0x80045430, "TIOCGPTN"},
    {0x40045431, "TIOCSPTLCK"}, {0x80045432, "TIOCGDEV"},   {0x5432, "TCGETX"},          {0x5433, "TCSETX"},
    {0x5434, "TCSETXF"},        {0x5435, "TCSETXW"},        {0x40045436, "TIOCSIG"},     {0x5437, "TIOCVHANGUP"},
    {0x80045438, "TIOCGPKT"},   {0x80045439, "TIOCGPTLCK"}, {0x80045440, "TIOCGEXCL"},   {0x5441, "TIOCGPTPEER"},
    {0x5450, "FIONCLEX"},       {0x5451, "FIOCLEX"},        {0x5452, "FIOASYNC"},        {0x5453, "TIOCSERCONFIG"},
    {0x5454, "TIOCSERGWILD"},   {0x5455, "TIOCSERSWILD"},   {0x5456, "TIOCGLCKTRMIOS"},  {0x5457, "TIOCSLCKTRMIOS"},
    {0x5458, "TIOCSERGSTRUCT"}, {0x5459, "TIOCSERGETLSR"},  {0x545A, "TIOCSERGETMULTI"}, {0x545B, "TIOCSERSETMULTI"},
    {0x545C, "TIOCMIWAIT"},     {0x545D, "TIOCGICOUNT"},    {0x5460, "FIOQSIZE"},
}};

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

std::string dir_text(unsigned dir) {
    switch (dir) {
        case 0:
            return "_IOC_NONE";
        case 1:
            return "_IOC_WRITE";
        case 2:
            return "_IOC_READ";
        default:
            return "_IOC_READ|_IOC_WRITE";
    }
}

std::string type_text(unsigned type) {
    if (type >= 0x21 && type < 0x7f) return fmt::format("0x{:02x} '{}'", type, static_cast<char>(type));
    return fmt::format("0x{:02x}", type);
}

std::string escape_detail(const NvEscape& e) {
    std::string s = e.layer == EscapeLayer::rm ? "RM escape" : "OS-layer escape";
    if (*e.param_struct) {
        s += fmt::format(", {}", e.param_struct);
        if (e.size) s += fmt::format(" ({} bytes{})", e.size, e.alt_size ? fmt::format(" or {}", e.alt_size) : "");
    }
    s += fmt::format(", on {}", to_string(e.node));
    s += fmt::format(", driver {}", to_string(e.versions));
    if (*e.note) s += fmt::format("; {}", e.note);
    return s;
}

std::string uvm_detail(const UvmIoctl& u) {
    std::string s =
        fmt::format("UVM ioctl on {}", u.node == UvmNode::tools ? "/dev/nvidia-uvm-tools" : "/dev/nvidia-uvm");
    if (*u.handler) s += fmt::format(", handler {}", u.handler);
    s += fmt::format(", {}", to_string(u.route));
    s += fmt::format(", driver {}", to_string(u.versions));
    return s;
}

std::string gdrdrv_detail(const GdrdrvIoctl& g) {
    return fmt::format("gdrdrv ioctl on /dev/gdrdrv, {} ({}), handler {}, gdrdrv {}", g.param_struct,
                       g.size_is_pointer ? "size field holds a pointer's 8 bytes" : fmt::format("{} bytes", g.size),
                       g.handler, to_string(g.versions));
}

std::string drm_detail(const DrmIoctl& d) {
    std::string s = "DRM core ioctl";
    if (*d.param_struct) s += fmt::format(", {} ({} bytes)", d.param_struct, d.size);
    s += fmt::format(", handler {}", d.handler);
    if (d.kernel.first != kOldestKnown) s += fmt::format(", Linux {}", to_string(d.kernel));
    return s;
}

bool is_nvidia_node(DeviceKind k) {
    return k == DeviceKind::nvidia_ctl || k == DeviceKind::nvidia_device;
}
bool is_uvm_node(DeviceKind k) {
    return k == DeviceKind::nvidia_uvm || k == DeviceKind::nvidia_uvm_tools;
}
bool is_drm_node(DeviceKind k) {
    return k == DeviceKind::drm || k == DeviceKind::accel;
}

// Each family's claim on a number, with the notes that go with it.
struct Claim {
    IoctlCandidate candidate;
    std::vector<std::string> notes;
    const NvEscape* escape = nullptr;
    const UvmIoctl* uvm = nullptr;
    const GdrdrvIoctl* gdrdrv = nullptr;
    const DrmIoctl* drm = nullptr;
};

std::optional<Claim> claim_generic(std::uint32_t c) {
    for (auto [num, name] : kGeneric)
        if (num == c) return Claim{{IoctlFamily::generic, name, "legacy tty/file request (asm-generic/ioctls.h)"}, {}};
    return std::nullopt;
}

std::optional<Claim> claim_nvidia(const IocFields& f, DeviceKind device) {
    if (f.type != kNvIoctlMagic) return std::nullopt;
    const NvEscape* e = nv_escape(f.nr, std::nullopt, f.size);
    if (!e) return std::nullopt;
    Claim c{{e->layer == EscapeLayer::rm ? IoctlFamily::nvidia_rm : IoctlFamily::nvidia_os, e->name, escape_detail(*e)},
            {}};
    c.escape = e;
    if (f.dir != 3)
        c.notes.push_back(
            fmt::format("NVIDIA user space issues _IOWR; direction {} is unusual (the driver reads "
                        "only nr and size)",
                        dir_text(f.dir)));
    if (!e->size_fits(f.size)) {
        std::string sizes;
        for (const NvEscape& x : e->layer == EscapeLayer::rm ? rm_escapes() : os_escapes())
            if (x.nr == e->nr && x.size)
                sizes +=
                    fmt::format("{}{} ({})", sizes.empty() ? "" : ", ",
                                x.alt_size ? fmt::format("{} or {}", x.size, x.alt_size) : fmt::format("{}", x.size),
                                to_string(x.versions));
        c.notes.push_back(
            fmt::format("size 0x{:x} ({}) matches no recorded size of {}: {}; from 595.44.02 the driver "
                        "rejects it with -EINVAL (\"NVRM: invalid {} structure size\")",
                        f.size, f.size, e->name, sizes.empty() ? "none recorded" : sizes, e->nr));
    } else if (e->size && (e->versions.first != kOldestKnown || e->versions.last != kNewestKnown)) {
        c.notes.push_back(fmt::format("size {} is that of driver {}", f.size, to_string(e->versions)));
    }
    if (e->nr == 211) c.notes.push_back("NV_ESC_IOCTL_XFER_CMD: the real escape is the inner cmd@0 of nv_ioctl_xfer_t");
    if (e->node == NvNode::device && device == DeviceKind::nvidia_ctl)
        c.notes.push_back(
            fmt::format("{} is accepted only on /dev/nvidiaN (NV_ACTUAL_DEVICE_ONLY): on "
                        "/dev/nvidiactl RM fails it",
                        e->name));
    if (e->node == NvNode::ctl && device == DeviceKind::nvidia_device) {
        if (e->nr == 0x2B)
            c.notes.push_back(
                "on /dev/nvidiaN NV_ESC_RM_ALLOC takes only event classes (NV01_EVENT*); others "
                "need /dev/nvidiactl");
        else
            c.notes.push_back(fmt::format("{} is accepted only on /dev/nvidiactl (NV_CTL_DEVICE_ONLY)", e->name));
    }
    return c;
}

std::optional<Claim> claim_uvm(std::uint32_t cmd, DeviceKind device) {
    const UvmIoctl* u = uvm_ioctl(cmd);
    if (!u) return std::nullopt;
    Claim c{{IoctlFamily::nvidia_uvm, u->name, uvm_detail(*u)}, {}};
    c.uvm = u;
    c.notes.push_back(
        "UVM numbers are plain (UVM_IOCTL_BASE(i) = i on Linux), not _IOC-encoded; the status is "
        "in the parameter struct's last field, rmStatus, and the syscall returns 0");
    if (u->node == UvmNode::tools && device == DeviceKind::nvidia_uvm)
        c.notes.push_back(fmt::format("{} is routed only on /dev/nvidia-uvm-tools", u->name));
    if (u->node == UvmNode::uvm && device == DeviceKind::nvidia_uvm_tools)
        c.notes.push_back(fmt::format("{} is routed only on /dev/nvidia-uvm", u->name));
    return c;
}

std::optional<Claim> claim_gdrdrv(const IocFields& f) {
    if (f.type != kGdrdrvIoctlMagic) return std::nullopt;
    const GdrdrvIoctl* g = gdrdrv_ioctl(f.nr);
    if (!g) return std::nullopt;
    Claim c{{IoctlFamily::gdrdrv, g->name, gdrdrv_detail(*g)}, {}};
    c.gdrdrv = g;
    if (f.size != g->size)
        c.notes.push_back(
            fmt::format("size 0x{:x} differs from the header's {} (gdrdrv checks only the type)", f.size, g->size));
    return c;
}

std::optional<Claim> claim_drm(const IocFields& f, DeviceKind device) {
    if (f.type != kDrmIoctlBase) return std::nullopt;
    if (f.nr >= kDrmCommandBase && f.nr < kDrmCommandEnd) {
        if (!is_drm_node(device)) return std::nullopt;
        Claim c{{IoctlFamily::drm_driver, fmt::format("DRM_COMMAND_BASE+0x{:02x}", f.nr - kDrmCommandBase),
                 "driver-specific DRM ioctl (0x40..0x9f); its name is in the driver's uapi header"},
                {}};
        return c;
    }
    const DrmIoctl* d = drm_ioctl(f.nr);
    if (!d) return std::nullopt;
    // Without a DRM path, insist on the direction too: 'd' is also the old pcmcia and devfs magic.
    if (!is_drm_node(device) && d->dir != f.dir) return std::nullopt;
    Claim c{{IoctlFamily::drm_core, d->name, drm_detail(*d)}, {}};
    c.drm = d;
    if (f.size != d->size)
        c.notes.push_back(
            fmt::format("size 0x{:x} differs from the header's {}: drm_ioctl() copies the shorter and "
                        "zero-fills the rest (old or new user space)",
                        f.size, d->size));
    return c;
}

}  // namespace

DeviceKind classify_device(std::string_view p) {
    // strace -yy decorations like "/dev/nvidia0<char 195:0>" keep the path before '<'.
    if (auto lt = p.find('<'); lt != std::string_view::npos) p = p.substr(0, lt);
    if (p == "/dev/nvidiactl") return DeviceKind::nvidia_ctl;
    if (p == "/dev/nvidia-uvm") return DeviceKind::nvidia_uvm;
    if (p == "/dev/nvidia-uvm-tools") return DeviceKind::nvidia_uvm_tools;
    if (starts_with(p, "/dev/nvidia") && all_digits(p.substr(11))) return DeviceKind::nvidia_device;
    if (starts_with(p, "/dev/nvidia")) return DeviceKind::nvidia_other;
    if (p == "/dev/gdrdrv") return DeviceKind::gdrdrv;
    if (starts_with(p, "/dev/dri/")) return DeviceKind::drm;
    if (starts_with(p, "/dev/accel/")) return DeviceKind::accel;
    if (starts_with(p, "/dev/tty") || starts_with(p, "/dev/pts/") || p == "/dev/console" || p == "/dev/ptmx")
        return DeviceKind::tty;
    if (p.empty()) return DeviceKind::unknown;
    return DeviceKind::other;
}

std::string_view to_string(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::unknown:
            return "unknown";
        case DeviceKind::nvidia_ctl:
            return "NVIDIA control node (/dev/nvidiactl)";
        case DeviceKind::nvidia_device:
            return "NVIDIA GPU node (/dev/nvidiaN)";
        case DeviceKind::nvidia_uvm:
            return "NVIDIA UVM (/dev/nvidia-uvm)";
        case DeviceKind::nvidia_uvm_tools:
            return "NVIDIA UVM tools (/dev/nvidia-uvm-tools)";
        case DeviceKind::nvidia_other:
            return "other NVIDIA node";
        case DeviceKind::gdrdrv:
            return "GDRCopy (/dev/gdrdrv)";
        case DeviceKind::drm:
            return "DRM node (/dev/dri/*)";
        case DeviceKind::accel:
            return "accel node (/dev/accel/accelN, major 261)";
        case DeviceKind::tty:
            return "terminal";
        case DeviceKind::other:
            break;
    }
    return "other";
}

std::string_view to_string(IoctlFamily family) {
    switch (family) {
        case IoctlFamily::unknown:
            return "unknown";
        case IoctlFamily::generic:
            return "generic";
        case IoctlFamily::nvidia_rm:
            return "nvidia_rm";
        case IoctlFamily::nvidia_os:
            return "nvidia_os";
        case IoctlFamily::nvidia_uvm:
            return "nvidia_uvm";
        case IoctlFamily::gdrdrv:
            return "gdrdrv";
        case IoctlFamily::drm_core:
            return "drm_core";
        case IoctlFamily::drm_driver:
            break;
    }
    return "drm_driver";
}

IoctlDescription describe_ioctl(std::uint64_t cmd, std::optional<std::string_view> device_path) {
    IoctlDescription d;
    d.cmd = cmd;
    d.fields = decode_ioc(cmd);
    const auto c = static_cast<std::uint32_t>(cmd);
    const IocFields& f = d.fields;
    d.encoding = fmt::format("_IOC({}, 0x{:02x}, 0x{:02x}, 0x{:02x})", dir_text(f.dir), f.type, f.nr, f.size);
    if (cmd > 0xffffffffULL)
        d.notes.push_back("bits above 31 are set; ioctl(2) passes an unsigned int, so only the low 32 bits count");
    if (device_path) {
        d.device_path = std::string(*device_path);
        d.device = classify_device(*device_path);
    }

    std::vector<Claim> claims;
    auto add = [&](std::optional<Claim> cl) {
        if (cl) claims.push_back(std::move(*cl));
    };
    switch (d.device) {
        case DeviceKind::nvidia_ctl:
        case DeviceKind::nvidia_device:
            add(claim_nvidia(f, d.device));
            break;
        case DeviceKind::nvidia_uvm:
        case DeviceKind::nvidia_uvm_tools:
            add(claim_uvm(c, d.device));
            break;
        case DeviceKind::gdrdrv:
            add(claim_gdrdrv(f));
            break;
        case DeviceKind::drm:
        case DeviceKind::accel:
            add(claim_drm(f, d.device));
            break;
        case DeviceKind::tty:
            add(claim_generic(c));
            break;
        case DeviceKind::other:
            // A file known to be none of the nodes whose tables nvtrace has (/dev/fb0, /dev/sda, a socket): an
            // NVIDIA, UVM, GDRCopy or DRM name would be made up ('F' is also the framebuffer's magic).
            add(claim_generic(c));
            if (claims.empty())
                d.notes.push_back(
                    fmt::format("{} is not an NVIDIA, UVM, GDRCopy, DRM or accel node: only generic "
                                "requests are named on it",
                                *device_path));
            break;
        case DeviceKind::unknown:
        case DeviceKind::nvidia_other:
            add(claim_generic(c));
            add(claim_nvidia(f, d.device));
            add(claim_uvm(c, d.device));
            add(claim_gdrdrv(f));
            add(claim_drm(f, d.device));
            break;
    }

    for (const Claim& cl : claims)
        d.candidates.push_back(cl.candidate);
    if (claims.size() == 1) {
        Claim& cl = claims.front();
        d.name = cl.candidate.name;
        d.family = cl.candidate.family;
        d.escape = cl.escape;
        d.uvm = cl.uvm;
        d.gdrdrv = cl.gdrdrv;
        d.drm = cl.drm;
        for (auto& n : cl.notes)
            d.notes.push_back(std::move(n));
    } else if (claims.size() > 1) {
        d.notes.push_back("several families use this number; give the fd's device path (--device) to decide");
    }

    // Explanations for what no table claims.
    if (claims.empty()) {
        if (is_nvidia_node(d.device) && f.type == kNvIoctlMagic)
            d.notes.push_back(
                fmt::format("escape 0x{:02x} is not in nvtrace's tables; from 595.44.02 the driver logs "
                            "\"NVRM:unknown NVRM ioctl command: 0x{:x}\" and returns -EINVAL",
                            f.nr, f.nr));
        else if (is_nvidia_node(d.device))
            d.notes.push_back("NVIDIA escapes use type 'F' (0x46); the driver reads only nr and size, never the type");
        else if (!device_path && f.type == kNvIoctlMagic && f.dir == 3)
            d.notes.push_back(
                fmt::format("type 'F' with _IOWR is NVIDIA's escape form, but nr 0x{:02x} is not a known "
                            "escape; 'F' is also the framebuffer magic",
                            f.nr));
        if (is_uvm_node(d.device) && c >= kUvmTestIoctlBase && c < kUvmTestIoctlBase + 256)
            d.notes.push_back(
                fmt::format("UVM test ioctl UVM_TEST_IOCTL_BASE({}): -ENOSYS unless nvidia-uvm was loaded "
                            "with uvm_enable_builtin_tests=1",
                            c - kUvmTestIoctlBase));
        else if (is_uvm_node(d.device))
            d.notes.push_back(
                "unknown UVM number: it falls through to uvm_test_ioctl(), which logs \"nvidia-uvm: "
                "ioctl N not found\" and returns -ENOSYS");
        if (is_drm_node(d.device) && f.type != kDrmIoctlBase) d.notes.push_back("DRM requests use type 'd' (0x64)");
    }
    if (f.dir == 0 && f.size == 0 && f.type == 0 && !d.uvm)
        d.notes.push_back("no direction, type or size: a plain number, as NVIDIA UVM uses on /dev/nvidia-uvm");
    return d;
}

nlohmann::json to_json(const IoctlDescription& d) {
    nlohmann::json j;
    j["cmd"] = fmt::format("0x{:08x}", d.cmd);
    j["cmd_decimal"] = d.cmd;
    j["encoding"] = {{"text", d.encoding},
                     {"dir", d.fields.dir},
                     {"dir_text", dir_text(d.fields.dir)},
                     {"type", d.fields.type},
                     {"type_text", type_text(d.fields.type)},
                     {"nr", d.fields.nr},
                     {"size", d.fields.size}};
    j["device_path"] = d.device_path ? nlohmann::json(*d.device_path) : nlohmann::json(nullptr);
    j["device"] = to_string(d.device);
    j["known"] = d.name.has_value();
    j["name"] = d.name ? nlohmann::json(*d.name) : nlohmann::json(nullptr);
    j["family"] = to_string(d.family);
    auto& cands = j["candidates"] = nlohmann::json::array();
    for (const auto& c : d.candidates)
        cands.push_back({{"family", to_string(c.family)}, {"name", c.name}, {"detail", c.detail}});
    j["notes"] = d.notes;
    if (d.escape) {
        j["param_struct"] = d.escape->param_struct;
        j["param_size"] = d.escape->size;
        j["node"] = to_string(d.escape->node);
        j["versions"] = to_string(d.escape->versions);
    } else if (d.uvm) {
        j["handler"] = d.uvm->handler;
        j["node"] = d.uvm->node == UvmNode::tools ? "/dev/nvidia-uvm-tools" : "/dev/nvidia-uvm";
        j["versions"] = to_string(d.uvm->versions);
    } else if (d.gdrdrv) {
        j["handler"] = d.gdrdrv->handler;
        j["param_struct"] = d.gdrdrv->param_struct;
        j["param_size"] = d.gdrdrv->size;
    } else if (d.drm) {
        j["handler"] = d.drm->handler;
        j["param_struct"] = d.drm->param_struct;
        j["param_size"] = d.drm->size;
    }
    return j;
}

std::string to_json_text(const IoctlDescription& d) {
    return to_json(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::uint64_t> ioctl_number_by_name(std::string_view name) {
    for (auto [num, n] : kGeneric)
        if (name == n) return num;
    if (const NvEscape* e = nv_escape_by_name(name)) return encode_ioc(3, kNvIoctlMagic, e->nr, e->size ? e->size : 0);
    if (const UvmIoctl* u = uvm_ioctl_by_name(name)) return u->cmd;
    if (const GdrdrvIoctl* g = gdrdrv_ioctl_by_name(name)) return encode_ioc(3, kGdrdrvIoctlMagic, g->nr, g->size);
    if (const DrmIoctl* d = drm_ioctl_by_name(name)) return d->cmd();
    return std::nullopt;
}

}  // namespace nvtrace
