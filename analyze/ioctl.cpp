#include "nvtrace/ioctl.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

namespace nvtrace {

IocFields decode_ioc(std::uint64_t cmd) {
    auto c = static_cast<std::uint32_t>(cmd);
    return {c >> 30, (c >> 8) & 0xffu, c & 0xffu, (c >> 16) & 0x3fffu};
}

std::optional<std::string> ioctl_name(std::uint64_t cmd) {
    // include/uapi/asm-generic/ioctls.h (x86-64 uses the generic numbers).
    static constexpr std::array<std::pair<std::uint32_t, const char*>, 12> kGeneric{{
        {0x5401, "TCGETS"},
        {0x5402, "TCSETS"},
        {0x5403, "TCSETSW"},
        {0x540B, "TCFLSH"},
        {0x540F, "TIOCGPGRP"},
        {0x5410, "TIOCSPGRP"},
        {0x5413, "TIOCGWINSZ"},
        {0x5414, "TIOCSWINSZ"},
        {0x541B, "FIONREAD"},
        {0x5421, "FIONBIO"},
        {0x5451, "FIOCLEX"},
        {0x5450, "FIONCLEX"},
    }};
    if (cmd > 0xffffffffULL) return std::nullopt;
    for (auto [num, name] : kGeneric)
        if (num == cmd) return std::string(name);
    return std::nullopt;
}

std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls) {
    std::vector<IoctlRecord> out;
    std::unordered_map<int, std::size_t> open;  // pid -> index of the ioctl in progress
    for (const Event& ev : stream.events) {
        if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) {
            IoctlRecord r;
            r.pid = ev.pid;
            if (auto it = stream.comms.find(ev.pid); it != stream.comms.end()) r.comm = it->second;
            r.fd = e->fd;
            r.cmd = e->cmd;
            r.name = ioctl_name(e->cmd);
            r.enter_ns = ev.ts_ns;
            open[ev.pid] = out.size();
            out.push_back(std::move(r));
        } else if (const auto* x = std::get_if<IoctlExit>(&ev.body)) {
            auto it = open.find(ev.pid);
            if (it == open.end()) continue;  // exit of an ioctl entered before the capture
            IoctlRecord& r = out[it->second];
            r.ret = x->ret;
            r.exit_ns = ev.ts_ns;
            open.erase(it);
        }
    }
    // Root calls of the same pid between enter and exit belong to that ioctl.
    std::unordered_map<int, std::vector<std::size_t>> by_pid;
    for (std::size_t i = 0; i < out.size(); ++i)
        by_pid[out[i].pid].push_back(i);
    for (const Call& c : calls) {
        if (c.parent || !c.entry_ns) continue;
        auto it = by_pid.find(c.pid);
        if (it == by_pid.end()) continue;
        auto& idx = it->second;  // sorted by enter_ns
        auto pos = std::upper_bound(idx.begin(), idx.end(), *c.entry_ns,
                                    [&](std::uint64_t t, std::size_t i) { return t < out[i].enter_ns; });
        if (pos == idx.begin()) continue;
        IoctlRecord& r = out[*std::prev(pos)];
        if (r.exit_ns && *c.entry_ns > *r.exit_ns) continue;
        if (!r.call) r.call = c.id;
        r.calls.push_back(c.id);
    }
    return out;
}

}  // namespace nvtrace
