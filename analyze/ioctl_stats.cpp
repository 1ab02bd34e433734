// Report::ioctl_stats: per (device, request) counts, errors and latency of the report's ioctls.
#include <algorithm>

#include <fmt/format.h>

#include "klog/klog.hpp"
#include "nvtrace/ioctl.hpp"

namespace nvtrace {

std::optional<std::string> ioctl_error_name(const IoctlRecord& io) {
    // strace prints the errno of a failed call (and of "= ? ERESTARTSYS", which has no ret): it is the error.
    if (io.errno_name) return io.errno_name;
    if (!io.ret) return std::nullopt;  // exit not seen: the outcome is not known
    if (*io.ret < 0) {
        // ret is the kernel's -errno (include/linux/err.h: -1..-MAX_ERRNO) from every reader: sys_exit_ioctl's
        // ret, and strace's "-1 ENAME" stored as -errno (libc's -1 is never a record's ret).
        if (*io.ret >= -4095)
            if (auto n = klog::errno_name_of(static_cast<int>(-*io.ret)); !n.empty()) return std::string(n);
        return fmt::format("ret={}", *io.ret);
    }
    // The RM writes its NV_STATUS into the parameters and ioctl() still returns 0 (the preload reads it there).
    if (io.status && *io.status != "NV_OK") return io.status;
    return std::nullopt;
}

namespace {

void count(IoctlStat& s, const IoctlRecord& io, const std::optional<std::string>& error) {
    ++s.count;
    if (!s.name && io.name) s.name = io.name;
    if (!io.ret && !io.errno_name && !io.exit_ns) ++s.unfinished;
    if (error) {
        ++s.errors;
        ++s.errors_by_name[*error];
    }
    if (!io.duration_ns) {
        ++s.latency_unknown;
        return;
    }
    const std::uint64_t d = *io.duration_ns;
    s.total_ns = s.total_ns.value_or(0) + d;
    s.min_ns = s.min_ns ? std::min(*s.min_ns, d) : d;
    s.max_ns = s.max_ns ? std::max(*s.max_ns, d) : d;
}

IoctlStat with_mean(IoctlStat s) {
    const std::uint64_t timed = s.count - s.latency_unknown;
    if (s.total_ns && timed > 0) s.mean_ns = *s.total_ns / timed;
    return s;
}

}  // namespace

void IoctlStats::add(const IoctlRecord& io) {
    Group* g = last_.group;
    if (!g || g->all.cmd != io.cmd || g->all.device != io.fd_path || (!io.fd_path && g->all.fd != io.fd)) {
        Key key{io.fd_path, io.fd_path ? -1 : io.fd, io.cmd};
        auto [it, fresh] = groups_.try_emplace(std::move(key));
        g = &it->second;
        if (fresh) {
            g->all.device = io.fd_path;
            if (!io.fd_path) g->all.fd = io.fd;
            g->all.cmd = io.cmd;
        }
        last_.group = g;
        last_.task = nullptr;
    }
    const std::optional<std::string> error = ioctl_error_name(io);
    count(g->all, io, error);
    IoctlStat* t = last_.task;
    if (!t || *t->pid != io.pid || *t->comm != io.comm) {
        auto [it, new_task] = g->tasks.try_emplace({io.pid, io.comm});
        t = &it->second;
        if (new_task) {
            t->device = g->all.device;
            t->fd = g->all.fd;
            t->cmd = io.cmd;
            t->pid = io.pid;
            t->comm = io.comm;
        }
        last_.task = t;
    }
    count(*t, io, error);
}

std::vector<IoctlStat> IoctlStats::rows() const {
    std::vector<IoctlStat> out;
    for (const auto& [key, g] : groups_) {
        out.push_back(with_mean(g.all));
        if (g.tasks.size() < 2) continue;
        for (const auto& [task, s] : g.tasks) {
            IoctlStat row = with_mean(s);
            row.name = g.all.name;  // the request's name, even when this task's first record had none
            out.push_back(std::move(row));
        }
    }
    return out;
}

std::vector<IoctlStat> ioctl_stats(const std::vector<IoctlRecord>& ioctls) {
    IoctlStats s;
    for (const IoctlRecord& io : ioctls)
        s.add(io);
    return s.rows();
}

}  // namespace nvtrace

namespace nvtrace {

namespace {

std::string us(const std::optional<std::uint64_t>& ns) {
    return ns ? fmt::format("{:.3f}", static_cast<double>(*ns) / 1e3) : std::string("unknown");
}

std::string row_text(const IoctlStat& s, const std::string& what) {
    std::string line = fmt::format("{:>9} {:>7} {:>13} {:>13} {:>13}  {}", s.count, s.errors, us(s.total_ns),
                                   us(s.mean_ns), us(s.max_ns), what);
    if (!s.errors_by_name.empty()) {
        std::vector<std::string> parts;
        for (const auto& [name, n] : s.errors_by_name)
            parts.push_back(fmt::format("{} x{}", name, n));
        line += "  errors: " + fmt::format("{}", fmt::join(parts, ", "));
    }
    if (s.latency_unknown > 0) {
        line += fmt::format("  {} without latency", s.latency_unknown);
        if (s.unfinished > 0) line += fmt::format(" ({} unfinished)", s.unfinished);
    }
    return line;
}

}  // namespace

std::vector<std::string> ioctl_stats_table(const std::vector<IoctlStat>& rows, bool verbose, std::size_t max_requests) {
    std::vector<std::string> out;
    // Each request's row and the index range of its task rows.
    struct Request {
        std::size_t at, tasks_end;
    };
    std::vector<Request> requests;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].pid) {
            if (!requests.empty()) requests.back().tasks_end = i + 1;
            continue;
        }
        requests.push_back({i, i + 1});
    }
    if (requests.empty()) return out;
    std::stable_sort(requests.begin(), requests.end(),
                     [&](const Request& a, const Request& b) { return rows[a.at].count > rows[b.at].count; });
    out.push_back(fmt::format("ioctl requests: {} (device, request), latency enter -> exit in us", requests.size()));
    out.push_back(
        fmt::format("{:>9} {:>7} {:>13} {:>13} {:>13}  {}", "count", "errors", "total", "mean", "max", "request"));
    std::size_t shown = 0;
    for (const Request& q : requests) {
        if (!verbose && shown == max_requests) break;
        ++shown;
        const IoctlStat& s = rows[q.at];
        IoctlRecord where;
        where.fd_path = s.device;
        where.fd = s.fd.value_or(-1);
        out.push_back(
            row_text(s, ioctl_device_short_name(where) + " " + (s.name ? *s.name : fmt::format("0x{:x}", s.cmd))));
        for (std::size_t t = q.at + 1; t < q.tasks_end; ++t) {
            const IoctlStat& ts = rows[t];
            const std::string comm = ts.comm && !ts.comm->empty() && *ts.comm != "<...>" ? *ts.comm : "?";
            out.push_back(row_text(ts, fmt::format("  {}/{}", comm, ts.pid.value_or(-1))));
        }
    }
    if (shown < requests.size()) {
        std::uint64_t hidden = 0;
        for (std::size_t i = shown; i < requests.size(); ++i)
            hidden += rows[requests[i].at].count;
        out.push_back(
            fmt::format("... {} more request(s) ({} ioctls); -v prints them all", requests.size() - shown, hidden));
    }
    return out;
}

}  // namespace nvtrace
