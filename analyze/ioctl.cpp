#include "nvtrace/ioctl.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "nvtrace/knowledge.hpp"

namespace nvtrace {

IocFields decode_ioc(std::uint64_t cmd) {
    auto c = static_cast<std::uint32_t>(cmd);
    return {c >> 30, (c >> 8) & 0xffu, c & 0xffu, (c >> 16) & 0x3fffu};
}

std::optional<std::string> ioctl_name(std::uint64_t cmd, std::optional<std::string_view> device_path) {
    return describe_ioctl(cmd, device_path).name;
}

std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls) {
    return collect_ioctls(stream, calls, {});
}

namespace {

// (pid, fd) -> paths ordered by since_ns.
using FdHistory = std::map<std::pair<int, int>, std::vector<const FdPath*>>;

std::optional<std::string> path_at(const FdHistory& h, int pid, int fd, std::uint64_t ts_ns) {
    auto it = h.find({pid, fd});
    if (it == h.end()) return std::nullopt;
    const FdPath* best = nullptr;
    for (const FdPath* p : it->second)
        if (p->since_ns <= ts_ns) best = p;
    if (!best) return std::nullopt;
    return best->path;
}

}  // namespace

std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls,
                                        const std::vector<FdPath>& fd_paths) {
    FdHistory history;
    for (const FdPath& p : fd_paths)
        history[{p.pid, p.fd}].push_back(&p);
    for (auto& [key, v] : history)
        std::stable_sort(v.begin(), v.end(),
                         [](const FdPath* a, const FdPath* b) { return a->since_ns < b->since_ns; });

    std::vector<IoctlRecord> out;
    std::unordered_map<int, std::size_t> open;  // pid -> index of the ioctl in progress
    for (const Event& ev : stream.events) {
        if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) {
            IoctlRecord r;
            r.pid = ev.pid;
            if (auto it = stream.comms.find(ev.pid); it != stream.comms.end()) r.comm = it->second;
            r.fd = e->fd;
            r.cmd = e->cmd;
            r.fd_path = path_at(history, ev.pid, e->fd, ev.ts_ns);
            r.name = ioctl_name(e->cmd, r.fd_path);
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
