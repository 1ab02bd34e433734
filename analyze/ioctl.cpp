#include "nvtrace/ioctl.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <utility>

#include <sys/mman.h>

#include <fmt/format.h>

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

constexpr std::string_view kPreloadPrefix = "nvtrace-ioctl ";

template <typename T>
std::optional<T> parse_number(std::string_view v) {
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        v.remove_prefix(2);
        base = 16;
    }
    T out{};
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return std::nullopt;
    return out;
}

}  // namespace

std::optional<PreloadMarker> parse_preload_marker(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r'))
        text.remove_suffix(1);
    if (text.substr(0, kPreloadPrefix.size()) != kPreloadPrefix) return std::nullopt;
    text.remove_prefix(kPreloadPrefix.size());
    PreloadMarker m;
    auto next = [&]() {
        auto sp = text.find(' ');
        std::string_view word = text.substr(0, sp);
        text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
        return word;
    };
    std::string_view half = next();
    if (half == "enter")
        m.half = PreloadMarker::Half::enter;
    else if (half == "exit")
        m.half = PreloadMarker::Half::exit;
    else
        return std::nullopt;
    bool have_fd = false, have_cmd = false;
    while (!text.empty()) {
        std::string_view word = next();
        if (word.empty()) continue;
        auto eq = word.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        std::string_view key = word.substr(0, eq), val = word.substr(eq + 1);
        if (key == "fd") {
            auto v = parse_number<int>(val);
            if (!v) return std::nullopt;
            m.fd = *v;
            have_fd = true;
        } else if (key == "cmd") {
            auto v = parse_number<std::uint32_t>(val);
            if (!v) return std::nullopt;
            m.cmd = *v;
            have_cmd = true;
        } else if (key == "dev") {
            m.dev = std::string(val);
        } else if (key == "name") {
            m.name = std::string(val);
        } else if (key == "ret") {
            if (!(m.ret = parse_number<std::int64_t>(val))) return std::nullopt;
        } else if (key == "errno") {
            m.err = parse_number<int>(val);
        } else if (key == "hclass") {
            m.hclass = parse_number<std::uint32_t>(val);
        } else if (key == "ctrl") {
            m.ctrl = parse_number<std::uint32_t>(val);
        } else if (key == "status") {
            m.status = parse_number<std::uint32_t>(val);
        } else if (key == "xfer_nr") {
            m.xfer_nr = parse_number<std::uint32_t>(val);
        } else if (key == "xfer_size") {
            m.xfer_size = parse_number<std::uint32_t>(val);
        }  // unknown keys: a newer library; ignored
    }
    if (!have_fd || !have_cmd) return std::nullopt;
    if (m.half == PreloadMarker::Half::exit && !m.ret) return std::nullopt;
    return m;
}

namespace {

std::string status_text(std::uint32_t v) {
    if (auto n = nv_status_name(v)) return std::string(*n);
    char buf[16];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v, 16);
    (void)ec;
    return "0x" + std::string(buf, p);
}

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

namespace {

// What collect_ioctls keeps per pid: one hash lookup per event (and none while the pid repeats).
struct PidIoctls {
    std::optional<std::size_t> open;   // index of the ioctl in progress
    std::vector<std::size_t> records;  // every record of the pid, in order (so by enter_ns)
    // Preload enter markers not yet matched to a sys_enter_ioctl (a signal handler's ioctl can nest inside
    // another's markers; more than a few pending means kernel events were lost).
    std::vector<PreloadMarker> pending;
};

// A large vector filled once from start to end (a million ioctl records is 350 MB): its pages are faulted in
// by one madvise(MADV_POPULATE_WRITE) call (Linux 5.14) rather than one page fault per 4 KiB page as the
// records are written. Only a hint: on older kernels the call fails and the pages fault in as before.
void prefault(const void* data, std::size_t bytes) {
    constexpr std::uintptr_t kPage = 4096;
    if (bytes < (16u << 20)) return;
    auto begin = (reinterpret_cast<std::uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
    auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(kPage - 1);
#ifdef MADV_POPULATE_WRITE
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#endif
}

class PidTable {
public:
    PidIoctls& at(int pid) {
        if (last_ && pid == last_pid_) return *last_;
        last_pid_ = pid;
        last_ = &map_[pid];  // references into an unordered_map stay valid when it rehashes
        return *last_;
    }
    PidIoctls* find(int pid) {
        if (last_ && pid == last_pid_) return last_;
        auto it = map_.find(pid);
        return it == map_.end() ? nullptr : &it->second;
    }

private:
    std::unordered_map<int, PidIoctls> map_;
    int last_pid_ = 0;
    PidIoctls* last_ = nullptr;
};

// ioctl_name() is a pure function of (cmd, device path) but builds a whole IoctlDescription: asked once per
// distinct pair.
class NameCache {
public:
    const std::optional<std::string>& get(std::uint64_t cmd, const std::optional<std::string>& path) {
        if (last_ && last_cmd_ == cmd && last_->path == path) return last_->name;
        auto& v = by_cmd_[cmd];
        Entry* hit = nullptr;
        for (auto& e : v)
            if (e.path == path) hit = &e;
        if (!hit) {
            v.push_back({path, ioctl_name(cmd, path ? std::optional<std::string_view>(*path) : std::nullopt)});
            hit = &v.back();
        }
        last_cmd_ = cmd;
        last_ = hit;
        return hit->name;
    }

private:
    struct Entry {
        std::optional<std::string> path;
        std::optional<std::string> name;
    };
    std::unordered_map<std::uint64_t, std::deque<Entry>> by_cmd_;  // deque: entries never move
    std::uint64_t last_cmd_ = 0;
    const Entry* last_ = nullptr;
};

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
    {
        std::size_t enters = 0;
        for (const Event& ev : stream.events)
            enters += std::holds_alternative<IoctlEnter>(ev.body);
        out.reserve(enters);
        prefault(out.data(), out.capacity() * sizeof(IoctlRecord));
    }
    constexpr std::size_t kMaxPending = 8;
    PidTable pids;
    NameCache names;
    std::optional<int> comm_pid;        // the pid whose comm `comm` is
    const std::string* comm = nullptr;  // stream.comms[*comm_pid], null when it has none
    std::vector<bool> exit_marked;      // per record: an exit marker was used
    exit_marked.reserve(out.capacity());
    for (const Event& ev : stream.events) {
        if (const auto* mk = std::get_if<Marker>(&ev.body)) {
            auto m = parse_preload_marker(mk->text);
            if (!m) continue;
            if (m->half == PreloadMarker::Half::enter) {
                auto& v = pids.at(ev.pid).pending;
                if (v.size() == kMaxPending) v.erase(v.begin());
                v.push_back(std::move(*m));
                continue;
            }
            // Exit: the latest record of this pid with the same fd and cmd whose kernel exit was seen.
            PidIoctls* p = pids.find(ev.pid);
            if (!p) continue;
            for (auto idx = p->records.rbegin(); idx != p->records.rend(); ++idx) {
                IoctlRecord& r = out[*idx];
                if (exit_marked[*idx] || r.fd != m->fd || static_cast<std::uint32_t>(r.cmd) != m->cmd) continue;
                if (!r.exit_ns) break;  // the call it belongs to has not returned in the data: leave it
                exit_marked[*idx] = true;
                if (m->status && m->ret == 0 && (!r.ret || *r.ret == 0)) r.status = status_text(*m->status);
                break;
            }
        } else if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) {
            PidIoctls& p = pids.at(ev.pid);
            IoctlRecord& r = out.emplace_back();
            r.pid = ev.pid;
            if (comm_pid != ev.pid) {
                auto it = stream.comms.find(ev.pid);
                comm_pid = ev.pid;
                comm = it != stream.comms.end() ? &it->second : nullptr;
            }
            if (comm) r.comm = *comm;
            r.fd = e->fd;
            r.cmd = e->cmd;
            if (!history.empty()) r.fd_path = path_at(history, ev.pid, e->fd, ev.ts_ns);
            auto& v = p.pending;
            for (auto m = v.rbegin(); m != v.rend(); ++m) {
                if (m->fd != e->fd || m->cmd != static_cast<std::uint32_t>(e->cmd)) continue;
                if (m->dev) r.fd_path = m->dev;  // read at the call itself: better than a /proc poll
                r.hclass = m->hclass;
                r.ctrl = m->ctrl;
                if (m->ctrl)  // NVXXXX_CTRL_CMD(class, category, index): the class is bits 31..16
                    if (auto cls = rm_class_name(*m->ctrl >> 16)) r.ctrl_class = std::string(*cls);
                if (m->name) r.name = std::move(m->name);  // the fallback when the number is not known
                v.erase(v.begin(), m.base());              // this one and the stale ones before it
                break;
            }
            if (const auto& known = names.get(e->cmd, r.fd_path)) r.name = known;
            r.enter_ns = ev.ts_ns;
            p.open = out.size() - 1;
            p.records.push_back(out.size() - 1);
            exit_marked.push_back(false);
        } else if (const auto* x = std::get_if<IoctlExit>(&ev.body)) {
            PidIoctls* p = pids.find(ev.pid);
            if (!p || !p->open) continue;  // exit of an ioctl entered before the capture
            IoctlRecord& r = out[*p->open];
            r.ret = x->ret;
            r.exit_ns = ev.ts_ns;
            p->open.reset();
        }
    }
    // Root calls of the same pid between enter and exit belong to that ioctl.
    for (const Call& c : calls) {
        if (c.parent || !c.entry_ns) continue;
        PidIoctls* p = pids.find(c.pid);
        if (!p || p->records.empty()) continue;
        auto& idx = p->records;  // sorted by enter_ns
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

std::vector<IoctlKernelCost> ioctl_kernel_costs(const std::vector<IoctlRecord>& ioctls,
                                                const std::vector<Call>& calls) {
    std::unordered_map<std::uint64_t, std::size_t> index_of;
    index_of.reserve(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i)
        index_of.emplace(calls[i].id, i);
    // Root of every call (parents usually come first; otherwise walk up), and calls per root.
    std::vector<std::uint64_t> root(calls.size(), 0);
    std::unordered_map<std::uint64_t, std::uint64_t> subtree;  // root id -> calls in its tree
    for (std::size_t i = 0; i < calls.size(); ++i) {
        std::size_t at = i;
        std::size_t guard = 0;
        while (calls[at].parent && guard++ < calls.size()) {
            auto p = index_of.find(*calls[at].parent);
            if (p == index_of.end()) break;  // parent not in the data: this call heads its own tree
            if (root[p->second] != 0) {
                at = p->second;
                break;
            }
            at = p->second;
        }
        root[i] = root[at] != 0 ? root[at] : calls[at].id;
        ++subtree[root[i]];
    }
    std::vector<IoctlKernelCost> out;
    out.reserve(ioctls.size());
    for (const auto& io : ioctls) {
        IoctlKernelCost c;
        c.roots = io.calls.size();
        for (std::uint64_t id : io.calls) {
            if (auto s = subtree.find(id); s != subtree.end()) c.calls += s->second;
            auto ix = index_of.find(id);
            if (ix != index_of.end() && calls[ix->second].duration_ns)
                c.total_ns += *calls[ix->second].duration_ns;
            else
                ++c.unfinished;
        }
        out.push_back(c);
    }
    return out;
}

std::string ioctl_device_short_name(const IoctlRecord& io) {
    if (!io.fd_path || io.fd_path->empty()) return fmt::format("fd{}", io.fd);
    std::string_view p = *io.fd_path;
    if (p.rfind("/dev/", 0) == 0) p.remove_prefix(5);
    return std::string(p);
}

namespace {

std::string short_duration(std::uint64_t ns) {
    if (ns < 10'000'000) return fmt::format("{} us", (ns + 500) / 1000);
    if (ns < 1'000'000'000) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

std::string kernel_part(const IoctlKernelCost& c) {
    std::string s = fmt::format("(kernel: {} call{}", c.calls, c.calls == 1 ? "" : "s");
    if (c.roots > c.unfinished) s += ", " + short_duration(c.total_ns);
    if (c.unfinished) s += fmt::format(", {} without exit", c.unfinished);
    return s + ")";
}

}  // namespace

std::string format_ioctl_line(const IoctlRecord& io, const std::optional<IoctlKernelCost>& cost) {
    std::string s = ioctl_device_short_name(io);
    s += ' ';
    s += io.name ? *io.name : fmt::format("0x{:x}", io.cmd);
    if (io.hclass) {
        if (auto n = rm_class_name(*io.hclass))
            s += fmt::format(" hClass={}(0x{:x})", *n, *io.hclass);
        else
            s += fmt::format(" hClass=0x{:x}", *io.hclass);
    }
    if (io.ctrl) {
        s += fmt::format(" cmd=0x{:x}", *io.ctrl);
        if (io.ctrl_class) s += fmt::format("({})", *io.ctrl_class);
    }
    if (io.status) s += " status=" + *io.status;
    if (!io.ret) {
        s += " ret=?";
    } else {
        s += fmt::format(" ret={}", *io.ret);
        if (*io.ret < 0 && *io.ret >= -4095)
            if (const char* e = strerrorname_np(static_cast<int>(-*io.ret))) s += fmt::format("({})", e);
    }
    if (cost) s += " " + kernel_part(*cost);
    return s;
}

std::vector<std::string> summarize_ioctls(const std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls,
                                          const IoctlSummaryOptions& options) {
    std::vector<IoctlKernelCost> costs;
    if (options.kernel_traced) costs = ioctl_kernel_costs(ioctls, calls);
    auto cost_of = [&](std::size_t i) {
        return options.kernel_traced ? std::optional<IoctlKernelCost>(costs[i]) : std::nullopt;
    };
    std::vector<std::string> out;
    if (options.verbose) {
        out.reserve(ioctls.size());
        for (std::size_t i = 0; i < ioctls.size(); ++i)
            out.push_back(format_ioctl_line(ioctls[i], cost_of(i)));
        return out;
    }
    std::size_t lines = 0, hidden_ioctls = 0;
    std::size_t i = 0;
    while (i < ioctls.size()) {
        std::string key = format_ioctl_line(ioctls[i], std::nullopt);
        std::optional<IoctlKernelCost> sum = cost_of(i);
        std::size_t j = i + 1;
        for (; j < ioctls.size() && format_ioctl_line(ioctls[j], std::nullopt) == key; ++j)
            if (sum) {
                sum->calls += costs[j].calls;
                sum->total_ns += costs[j].total_ns;
                sum->unfinished += costs[j].unfinished;
                sum->roots += costs[j].roots;
            }
        if (lines < options.max_lines)
            out.push_back(fmt::format("{:>6}x {}{}", j - i, key, sum ? " " + kernel_part(*sum) : ""));
        else
            hidden_ioctls += j - i;
        ++lines;
        i = j;
    }
    if (lines > options.max_lines)
        out.push_back(fmt::format("   ... {} more line(s) ({} ioctls); -v prints every ioctl",
                                  lines - options.max_lines, hidden_ioctls));
    return out;
}

}  // namespace nvtrace
