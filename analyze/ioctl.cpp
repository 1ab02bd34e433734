#include "nvtrace/ioctl.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <utility>

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

constexpr std::size_t kMaxPendingMarkers = 8;

}  // namespace

struct IoctlCollector::State {
    // What is kept per pid: one hash lookup per event (and none while the pid repeats).
    struct Pid {
        std::optional<std::uint64_t> open;  // sequence number of the ioctl in progress
        std::deque<std::uint64_t> held;     // sequence numbers of the pid's records still held, in order
        // Preload enter markers not yet matched to a sys_enter_ioctl (a signal handler's ioctl can nest inside
        // another's markers; more than a few pending means kernel events were lost).
        std::vector<PreloadMarker> pending;
    };
    struct Held {
        IoctlRecord rec;
        bool exit_marked = false;  // an exit marker was used
        bool closed = false;       // its exit was seen, or the pid entered another ioctl: no exit can come
    };
    Pid& pid(int p) {
        if (last && p == last_pid) return *last;
        last_pid = p;
        last = &pids[p];  // references into an unordered_map stay valid when it rehashes
        return *last;
    }
    Pid* find_pid(int p) {
        if (last && p == last_pid) return last;
        auto it = pids.find(p);
        return it == pids.end() ? nullptr : &it->second;
    }
    // The held records: a ring of slots reused record after record (a deque of records this size would
    // allocate one block per record).
    class Ring {
    public:
        bool empty() const { return size_ == 0; }
        std::size_t size() const { return size_; }
        Held& operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
        Held& front() { return slots_[head_]; }
        Held& push_back() {
            if (size_ == slots_.size()) grow();
            Held& h = (*this)[size_++];
            h.rec = IoctlRecord{};
            h.exit_marked = h.closed = false;
            return h;
        }
        void pop_front() {
            head_ = (head_ + 1) & (slots_.size() - 1);
            --size_;
        }

    private:
        void grow() {
            std::vector<Held> bigger(std::max<std::size_t>(64, slots_.size() * 2));
            for (std::size_t i = 0; i < size_; ++i)
                bigger[i] = std::move((*this)[i]);
            slots_ = std::move(bigger);
            head_ = 0;
        }
        std::vector<Held> slots_;  // a power of two
        std::size_t head_ = 0, size_ = 0;
    };
    Held* at(std::uint64_t seq) { return seq >= base && seq - base < held.size() ? &held[seq - base] : nullptr; }

    State(const std::map<int, std::string>& c, Sink s) : comms(c), sink(std::move(s)) {}
    const std::map<int, std::string>& comms;
    FdHistory history;
    Sink sink;
    Ring held;  // records not yet handed out, in enter order; held.front() is number `base`
    std::uint64_t base = 0;
    std::unordered_map<int, Pid> pids;
    int last_pid = 0;
    Pid* last = nullptr;
    NameCache names;
    std::optional<int> comm_pid;        // the pid whose comm `comm` is
    const std::string* comm = nullptr;  // comms[*comm_pid], null when it has none
};

IoctlCollector::IoctlCollector(const std::map<int, std::string>& comms, const std::vector<FdPath>& fd_paths, Sink sink)
    : s_(std::make_unique<State>(comms, std::move(sink))) {
    for (const FdPath& p : fd_paths)
        s_->history[{p.pid, p.fd}].push_back(&p);
    for (auto& [key, v] : s_->history)
        std::stable_sort(v.begin(), v.end(),
                         [](const FdPath* a, const FdPath* b) { return a->since_ns < b->since_ns; });
}

IoctlCollector::~IoctlCollector() = default;

void IoctlCollector::add(const Event& ev) {
    State& s = *s_;
    if (const auto* mk = std::get_if<Marker>(&ev.body)) {
        auto m = parse_preload_marker(mk->text);
        if (!m) return;
        if (m->half == PreloadMarker::Half::enter) {
            auto& v = s.pid(ev.pid).pending;
            if (v.size() == kMaxPendingMarkers) v.erase(v.begin());
            v.push_back(std::move(*m));
            return;
        }
        // Exit: the latest held record of this pid with the same fd and cmd whose kernel exit was seen.
        State::Pid* p = s.find_pid(ev.pid);
        if (!p) return;
        for (auto seq = p->held.rbegin(); seq != p->held.rend(); ++seq) {
            State::Held* h = s.at(*seq);
            if (!h) break;  // handed out already, as are all older ones
            IoctlRecord& r = h->rec;
            if (h->exit_marked || r.fd != m->fd || static_cast<std::uint32_t>(r.cmd) != m->cmd) continue;
            if (!r.exit_ns) break;  // the call it belongs to has not returned in the data: leave it
            h->exit_marked = true;
            if (m->status && m->ret == 0 && (!r.ret || *r.ret == 0)) r.status = status_text(*m->status);
            break;
        }
    } else if (const auto* e = std::get_if<IoctlEnter>(&ev.body)) {
        State::Pid& p = s.pid(ev.pid);
        if (p.open)
            if (State::Held* prev = s.at(*p.open)) prev->closed = true;  // its exit is not in the data
        IoctlRecord& r = s.held.push_back().rec;
        r.pid = ev.pid;
        if (s.comm_pid != ev.pid) {
            auto it = s.comms.find(ev.pid);
            s.comm_pid = ev.pid;
            s.comm = it != s.comms.end() ? &it->second : nullptr;
        }
        if (s.comm) r.comm = *s.comm;
        r.fd = e->fd;
        r.cmd = e->cmd;
        if (!s.history.empty()) r.fd_path = path_at(s.history, ev.pid, e->fd, ev.ts_ns);
        if (!e->fd_path.empty()) r.fd_path = e->fd_path;  // printed at this call (strace -y): no sample needed
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
        if (const auto& known = s.names.get(e->cmd, r.fd_path)) r.name = known;
        r.enter_ns = ev.ts_ns;
        const std::uint64_t seq = s.base + s.held.size() - 1;
        p.open = seq;
        p.held.push_back(seq);
    } else if (const auto* x = std::get_if<IoctlExit>(&ev.body)) {
        State::Pid* p = s.find_pid(ev.pid);
        if (!p || !p->open) return;  // exit of an ioctl entered before the capture
        if (State::Held* h = s.at(*p->open)) {
            h->rec.ret = x->ret;
            if (!x->errno_name.empty()) h->rec.errno_name = x->errno_name;
            if (!x->errno_text.empty()) h->rec.errno_text = x->errno_text;
            h->rec.exit_ns = ev.ts_ns;
            h->closed = true;
        }
        p->open.reset();
    } else {
        return;
    }
    // Hand out the oldest records that nothing can change any more: closed, and either given their exit marker
    // or older than the last kHeldRecords records (an exit marker follows its ioctl within a few events).
    while (!s.held.empty()) {
        const State::Held& h = s.held.front();
        if (!h.closed || (!h.exit_marked && s.held.size() <= kHeldRecords)) break;
        pop_front();
    }
}

void IoctlCollector::pop_front() {
    State& s = *s_;
    const int pid = s.held.front().rec.pid;
    s.sink(std::move(s.held.front().rec));
    s.held.pop_front();
    const std::uint64_t gone = s.base++;
    if (State::Pid* p = s.find_pid(pid)) {
        if (!p->held.empty() && p->held.front() == gone) p->held.pop_front();
        if (p->open == gone) p->open.reset();
    }
}

void IoctlCollector::finish() {
    while (!s_->held.empty())
        pop_front();
}

std::vector<IoctlRecord> collect_ioctls(const EventStream& stream, const std::vector<Call>& calls,
                                        const std::vector<FdPath>& fd_paths) {
    std::vector<IoctlRecord> out;
    {
        IoctlCollector c(stream.comms, fd_paths, [&](IoctlRecord&& r) { out.push_back(std::move(r)); });
        for (const Event& ev : stream.events)
            c.add(ev);
        c.finish();
    }
    link_ioctl_calls(out, calls);
    return out;
}

void link_ioctl_calls(std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls) {
    if (calls.empty()) return;
    std::unordered_map<int, std::vector<std::size_t>> by_pid;  // record indexes of each pid, in enter order
    for (std::size_t i = 0; i < ioctls.size(); ++i)
        by_pid[ioctls[i].pid].push_back(i);
    // Root calls of the same pid between enter and exit belong to that ioctl.
    for (const Call& c : calls) {
        if (c.parent || !c.entry_ns) continue;
        auto p = by_pid.find(c.pid);
        if (p == by_pid.end()) continue;
        auto& idx = p->second;  // sorted by enter_ns
        auto pos = std::upper_bound(idx.begin(), idx.end(), *c.entry_ns,
                                    [&](std::uint64_t t, std::size_t i) { return t < ioctls[i].enter_ns; });
        if (pos == idx.begin()) continue;
        IoctlRecord& r = ioctls[*std::prev(pos)];
        if (r.exit_ns && *c.entry_ns > *r.exit_ns) continue;
        if (!r.call) r.call = c.id;
        r.calls.push_back(c.id);
    }
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
        if (io.errno_name)  // as the source printed it (strace's -1 is libc's, not -errno)
            s += fmt::format("({})", *io.errno_name);
        else if (*io.ret < 0 && *io.ret >= -4095)
            if (const char* e = strerrorname_np(static_cast<int>(-*io.ret))) s += fmt::format("({})", e);
    }
    if (cost) s += " " + kernel_part(*cost);
    return s;
}

void IoctlSummary::add(const IoctlRecord& io, const std::optional<IoctlKernelCost>& cost) {
    ++ioctls_;
    if (options_.verbose) {
        lines_.push_back(format_ioctl_line(io, cost));
        return;
    }
    std::string key = format_ioctl_line(io, std::nullopt);
    if (run_count_ > 0 && key == run_key_) {
        ++run_count_;
        if (run_cost_ && cost) {
            run_cost_->calls += cost->calls;
            run_cost_->total_ns += cost->total_ns;
            run_cost_->unfinished += cost->unfinished;
            run_cost_->roots += cost->roots;
        }
        return;
    }
    end_run();
    run_key_ = std::move(key);
    run_count_ = 1;
    run_cost_ = cost;
}

void IoctlSummary::end_run() {
    if (run_count_ == 0) return;
    if (folded_lines_ < options_.max_lines)
        lines_.push_back(
            fmt::format("{:>6}x {}{}", run_count_, run_key_, run_cost_ ? " " + kernel_part(*run_cost_) : ""));
    else
        hidden_ioctls_ += run_count_;
    ++folded_lines_;
    run_count_ = 0;
}

std::vector<std::string> IoctlSummary::lines() {
    end_run();
    std::vector<std::string> out = lines_;
    if (!options_.verbose && folded_lines_ > options_.max_lines)
        out.push_back(fmt::format("   ... {} more line(s) ({} ioctls); -v prints every ioctl",
                                  folded_lines_ - options_.max_lines, hidden_ioctls_));
    return out;
}

std::vector<std::string> summarize_ioctls(const std::vector<IoctlRecord>& ioctls, const std::vector<Call>& calls,
                                          const IoctlSummaryOptions& options) {
    std::vector<IoctlKernelCost> costs;
    if (options.kernel_traced) costs = ioctl_kernel_costs(ioctls, calls);
    IoctlSummary summary(options);
    for (std::size_t i = 0; i < ioctls.size(); ++i)
        summary.add(ioctls[i], options.kernel_traced ? std::optional<IoctlKernelCost>(costs[i]) : std::nullopt);
    return summary.lines();
}

}  // namespace nvtrace
