// nvtrace decode ioctl|status|class|xid <number>   (docs/decode.md)
#include <charconv>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "nvtrace/knowledge.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct DecodeArgs {
    std::string number;
    std::string device;
    std::string driver;
    bool json = false;
};

// "0x2b", "0X2B", "43"; the whole string, at most 64 bits.
std::optional<std::uint64_t> parse_number(std::string_view s) {
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

int usage_error(const std::string& what) {
    tracer::note("nvtrace decode: {}\n", what);
    return static_cast<int>(ExitCode::usage);
}

// The number, or an error message; `limit` is the largest value the family can hold.
std::optional<std::uint64_t> number_arg(const DecodeArgs& a, std::uint64_t limit, int& rc) {
    auto n = parse_number(a.number);
    if (!n) {
        rc = usage_error(fmt::format("'{}' is not a number (use decimal, or hex with 0x)", a.number));
        return std::nullopt;
    }
    if (*n > limit) {
        rc = usage_error(fmt::format("'{}' is out of range (at most 0x{:x})", a.number, limit));
        return std::nullopt;
    }
    return n;
}

std::optional<DriverVersion> driver_arg(const DecodeArgs& a, int& rc) {
    if (a.driver.empty()) return std::nullopt;
    auto v = parse_driver_version(a.driver);
    if (!v) rc = usage_error(fmt::format("'{}' is not a driver version (like 535.104.05)", a.driver));
    return v;
}

void print_json(const nlohmann::json& j) {
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

int do_ioctl(const DecodeArgs& a) {
    int rc = 0;
    auto n = number_arg(a, 0xffffffffULL, rc);
    if (!n) return rc;
    std::optional<std::string_view> dev;
    if (!a.device.empty()) dev = a.device;
    IoctlDescription d = describe_ioctl(*n, dev);
    if (a.json) {
        fmt::print("{}\n", to_json_text(d));
        return 0;
    }
    fmt::print("0x{:08x} ({})\n", d.cmd, d.cmd);
    fmt::print("  encoding: {}\n", d.encoding);
    fmt::print("    direction {} ({}), type 0x{:02x}, nr 0x{:02x} ({}), size 0x{:x} ({} bytes)\n", d.fields.dir,
               d.fields.dir == 0   ? "none"
               : d.fields.dir == 1 ? "write"
               : d.fields.dir == 2 ? "read"
                                   : "read|write",
               d.fields.type, d.fields.nr, d.fields.nr, d.fields.size, d.fields.size);
    if (d.device_path) fmt::print("  device: {} ({})\n", *d.device_path, to_string(d.device));
    if (d.name) {
        fmt::print("  name: {}\n", *d.name);
        fmt::print("  {}\n", d.candidates.front().detail);
    } else if (d.candidates.empty()) {
        fmt::print("  name: unknown: no table nvtrace has claims this number{}\n",
                   d.device_path ? " on this device" : "");
    } else {
        fmt::print("  name: ambiguous; candidates:\n");
        for (const auto& c : d.candidates)
            fmt::print("    {} ({}): {}\n", c.name, to_string(c.family), c.detail);
    }
    for (const auto& note : d.notes)
        fmt::print("  note: {}\n", note);
    return 0;
}

int do_status(const DecodeArgs& a) {
    int rc = 0;
    auto n = number_arg(a, 0xffffffffULL, rc);
    if (!n) return rc;
    auto ver = driver_arg(a, rc);
    if (rc) return rc;
    const NvStatusInfo* s = nv_status(static_cast<std::uint32_t>(*n), ver);
    if (a.json) {
        nlohmann::json j{{"value", fmt::format("0x{:x}", *n)}, {"known", s != nullptr}};
        j["name"] = s ? nlohmann::json(s->name) : nlohmann::json(nullptr);
        j["message"] = s ? nlohmann::json(s->message) : nlohmann::json(nullptr);
        j["versions"] = s ? nlohmann::json(to_string(s->versions)) : nlohmann::json(nullptr);
        print_json(j);
        return 0;
    }
    if (!s) {
        fmt::print("NV_STATUS 0x{:x}: unknown{}\n", *n, ver ? fmt::format(" in driver {}", to_string(*ver)) : "");
        return 0;
    }
    fmt::print("NV_STATUS 0x{:x} = {}: {} (driver {})\n", s->value, s->name, s->message, to_string(s->versions));
    return 0;
}

int do_class(const DecodeArgs& a) {
    int rc = 0;
    auto n = number_arg(a, 0xffffffffULL, rc);
    if (!n) return rc;
    auto ver = driver_arg(a, rc);
    if (rc) return rc;
    const RmClass* c = rm_class(static_cast<std::uint32_t>(*n), ver);
    if (a.json) {
        nlohmann::json j{{"hclass", fmt::format("0x{:x}", *n)}, {"known", c != nullptr}};
        j["name"] = c ? nlohmann::json(c->name) : nlohmann::json(nullptr);
        j["header"] = c ? nlohmann::json(c->header) : nlohmann::json(nullptr);
        j["role"] = c ? nlohmann::json(c->role) : nlohmann::json(nullptr);
        print_json(j);
        return 0;
    }
    if (!c) {
        fmt::print("hClass 0x{:x}: unknown (not among the common RM classes nvtrace lists)\n", *n);
        return 0;
    }
    fmt::print("hClass 0x{:x} = {} ({}): {}\n", c->hclass, c->name, c->header, c->role);
    return 0;
}

int do_xid(const DecodeArgs& a) {
    int rc = 0;
    auto n = number_arg(a, 0xffff, rc);
    if (!n) return rc;
    auto ver = driver_arg(a, rc);
    if (rc) return rc;
    const XidInfo* x = xid_info(static_cast<unsigned>(*n), ver);
    if (a.json) {
        nlohmann::json j{{"xid", *n}, {"known", x != nullptr}};
        j["mnemonic"] = x && *x->mnemonic ? nlohmann::json(x->mnemonic) : nlohmann::json(nullptr);
        j["meaning"] = x && *x->meaning ? nlohmann::json(x->meaning) : nlohmann::json(nullptr);
        j["action"] = x && *x->action ? nlohmann::json(x->action) : nlohmann::json(nullptr);
        j["source"] =
            x ? nlohmann::json(x->source == XidSource::header ? "nverror.h" : "xid catalog") : nlohmann::json(nullptr);
        print_json(j);
        return 0;
    }
    if (!x) {
        fmt::print("Xid {}: unknown\n", *n);
        return 0;
    }
    fmt::print("Xid {} = {} ({}, driver {})\n", x->xid, *x->mnemonic ? x->mnemonic : "(no public mnemonic)",
               x->source == XidSource::header ? "nverror.h" : "NVIDIA Xid catalog", to_string(x->versions));
    if (*x->meaning) fmt::print("  meaning: {}\n", x->meaning);
    if (*x->action) fmt::print("  usual action: {}\n", x->action);
    return 0;
}

void add_decode(CLI::App& app, int& exit_code) {
    CLI::App* cmd = app.add_subcommand("decode", "Name an ioctl number, NV_STATUS, RM class or Xid");
    cmd->require_subcommand(1);
    cmd->footer("Numbers in decimal or hex (0x..). Unknown numbers exit 0 and say \"unknown\". See docs/decode.md.");

    auto add = [&](const char* name, const char* help, const char* what, int (*fn)(const DecodeArgs&), bool device,
                   bool driver) {
        auto args = std::make_shared<DecodeArgs>();
        CLI::App* sub = cmd->add_subcommand(name, help);
        sub->add_option("number", args->number, what)->required();
        if (device)
            sub->add_option("-d,--device", args->device,
                            "Path of the fd's device (/dev/nvidiactl, /dev/nvidia-uvm, /dev/dri/renderD128, ...)");
        if (driver) sub->add_option("--driver", args->driver, "NVIDIA driver version, e.g. 535.104.05");
        sub->add_flag("--json", args->json, "Print JSON");
        sub->callback([args, fn, &exit_code] { exit_code = fn(*args); });
    };
    add("ioctl", "Name an ioctl request number and explain its encoding", "The request number (cmd)", do_ioctl, true,
        false);
    add("status", "Name an NV_STATUS value", "The NV_STATUS value", do_status, false, true);
    add("class", "Name an RM class (hClass)", "The hClass value", do_class, false, true);
    add("xid", "Explain an Xid number", "The Xid number", do_xid, false, true);
}

}  // namespace

NVTRACE_COMMAND(70, add_decode);

}  // namespace nvtrace::cli
