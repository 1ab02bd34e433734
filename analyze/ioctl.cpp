#include "nvtrace/ioctl.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "nvtrace/knowledge.hpp"
#include "slot_ring.hpp"

namespace nvtrace {

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
            // The preload library writes space, backslash and non-printable bytes as \xHH (put_path).
            std::string dev;
            for (std::size_t i = 0; i < val.size(); ++i) {
                unsigned byte = 0;
                if (val[i] == '\\' && i + 3 < val.size() && val[i + 1] == 'x' &&
                    std::from_chars(val.data() + i + 2, val.data() + i + 4, byte, 16).ptr == val.data() + i + 4) {
                    dev.push_back(static_cast<char>(byte));
                    i += 3;
                } else {
                    dev.push_back(val[i]);
                }
            }
            if (!dev.empty()) m.dev = std::move(dev);
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

// (pid, fd) -> entries ordered by since_ns.
using FdHistory = std::map<std::pair<int, int>, std::vector<const FdPath*>>;

// The path of (pid, fd) at ts_ns, else why it is not known (FdPath in nvtrace/ioctl.hpp).
void path_at(const FdHistory& h, int pid, int fd, std::uint64_t ts_ns, const std::string& no_entry, IoctlRecord& r) {
    auto it = h.find({pid, fd});
    if (it == h.end()) {
        r.fd_path_unknown = no_entry;
        return;
    }
    const auto& v = it->second;
    auto after =
        std::upper_bound(v.begin(), v.end(), ts_ns, [](std::uint64_t t, const FdPath* p) { return t < p->since_ns; });
    if (after == v.begin()) {
        r.fd_path_unknown = no_entry;
        return;
    }
    const FdPath* best = *std::prev(after);
    if (best->until_ns && ts_ns >= *best->until_ns) {
        r.fd_path_unknown = "unknown: the fd changed during this ioctl";
        return;
    }
    if (best->path.empty()) {
        r.fd_path_unknown = best->unknown.empty() ? no_entry : best->unknown;
        return;
    }
    r.fd_path = best->path;
}

// The call that changes fds, by the syscall's name (x86-64 and the generic table; include/linux/syscalls.h).
enum class FdChange { none, new_fd, dup_to_ret, dup_to_newfd, fcntl, close, close_range, exec, io_uring };

FdChange fd_change_of(std::string_view name) {
    static constexpr std::string_view new_fd[] = {
        "open",         "openat",        "openat2",       "creat",        "open_by_handle_at",
        "socket",       "accept",        "accept4",       "epoll_create", "epoll_create1",
        "eventfd",      "eventfd2",      "memfd_create",  "memfd_secret", "timerfd_create",
        "inotify_init", "inotify_init1", "fanotify_init", "userfaultfd",  "perf_event_open",
        "pidfd_open",   "pidfd_getfd",   "fsopen",        "fsmount",      "fspick",
        "open_tree",    "signalfd",      "signalfd4"};
    for (auto n : new_fd)
        if (name == n) return FdChange::new_fd;
    if (name == "dup") return FdChange::dup_to_ret;
    if (name == "dup2" || name == "dup3") return FdChange::dup_to_newfd;
    if (name == "fcntl") return FdChange::fcntl;
    if (name == "close") return FdChange::close;
    if (name == "close_range") return FdChange::close_range;
    if (name == "execve" || name == "execveat") return FdChange::exec;
    // A ring's requests (IORING_OP_OPENAT, IORING_OP_CLOSE, IORING_OP_ACCEPT, IORING_OP_SOCKET,
    // IORING_OP_FIXED_FD_INSTALL) change the fd table of the task that submitted them, from io-wq workers or task
    // work after io_uring_enter has returned, and with IORING_SETUP_SQPOLL from the ring's kernel thread with no
    // syscall at all (io_uring/openclose.c, io_uring/sqpoll.c).
    if (name == "io_uring_setup" || name == "io_uring_enter") return FdChange::io_uring;
    return FdChange::none;
}

std::uint64_t arg_of(const FdCall& c, const char* name) {
    auto it = c.args.find(name);
    return it == c.args.end() ? ~std::uint64_t{0} : it->second;
}

}  // namespace

std::vector<FdPath> fd_paths_of(const EventStream& stream) {
    std::vector<FdPath> fds;
    if (stream.fd_lifetimes_recorded) {
        fds.reserve(stream.fd_lifetimes.size());
        for (const FdLifetime& l : stream.fd_lifetimes)
            fds.push_back({l.pid, l.fd, l.from_ns.value_or(0), l.path.value_or(""), l.until_ns,
                           l.path ? std::string() : (l.unknown.empty() ? "unknown: no sample" : l.unknown)});
        return fds;
    }
    fds.reserve(stream.fd_paths.size() + stream.fd_paths_reused.size());
    for (const auto& [key, path] : stream.fd_paths)
        fds.push_back({key.first, key.second, 0, path});
    for (const auto& [key, paths] : stream.fd_paths_reused)
        fds.push_back(
            {key.first, key.second, 0, "", std::nullopt, "unknown: fd reused during the run (several files seen)"});
    return fds;
}

std::string fd_path_unknown_default(const EventStream& stream) {
    if (stream.fd_lifetimes_recorded) return "unknown: not seen opened or sampled";
    if (!stream.fd_paths.empty() || !stream.fd_paths_reused.empty()) return "unknown: no sample of this fd";
    return "unknown: the source records no fd paths";
}

std::vector<FdLifetime> build_fd_lifetimes(const FdLifetimeInput& in) {
    auto process = [&](int tid) {
        auto it = in.process_of.find(tid);
        return it == in.process_of.end() ? tid : it->second;
    };
    auto placed = [&](int tid) { return in.process_of.count(tid) != 0; };
    struct Change {
        std::uint64_t enter_ns = 0, exit_ns = 0;
        const FdCall* call = nullptr;
        std::optional<int> dup_from;  // the source fd of a dup
        bool io_uring = false;        // the process's fds are of unknown lifetime from here to the end of the run
    };
    using Key = std::pair<int, int>;             // (process, fd)
    std::map<Key, std::vector<Change>> changes;  // per (process, fd), in call order
    std::set<Key> keys;
    // Whole-process changes (execve, close_range) and changes by threads not placed in a process: applied to
    // every (process, fd) they may concern once all keys are known.
    struct Wide {
        Change ch;
        std::optional<int> process;        // nullopt: any process (a thread not placed)
        std::optional<int> fd;             // nullopt: every fd
        std::uint64_t lo = 0, hi = ~0ull;  // close_range's [fd, max_fd]
    };
    std::vector<Wide> wide;
    for (const FdCall& c : in.calls) {
        FdChange kind = fd_change_of(c.name);
        if (kind == FdChange::none) continue;
        Change ch{c.enter_ns, c.exit_ns, &c, std::nullopt};
        std::optional<int> fd;
        switch (kind) {
            case FdChange::new_fd:
                // signalfd on an existing fd changes its mask only; it returns that same fd.
                if (c.ret < 0 || ((c.name == "signalfd" || c.name == "signalfd4") &&
                                  static_cast<std::int64_t>(static_cast<int>(arg_of(c, "ufd"))) == c.ret))
                    continue;
                fd = static_cast<int>(c.ret);
                break;
            case FdChange::dup_to_ret:
                if (c.ret < 0) continue;
                fd = static_cast<int>(c.ret);
                ch.dup_from = static_cast<int>(arg_of(c, "fildes"));
                break;
            case FdChange::dup_to_newfd: {
                const int oldfd = static_cast<int>(arg_of(c, "oldfd")), newfd = static_cast<int>(arg_of(c, "newfd"));
                if (c.ret < 0 || oldfd == newfd) continue;  // dup2(fd, fd) changes nothing
                fd = newfd;
                ch.dup_from = oldfd;
                break;
            }
            case FdChange::fcntl: {
                const std::uint64_t cmd = arg_of(c, "cmd");
                if (c.ret < 0 || (cmd != 0 /* F_DUPFD */ && cmd != 1030 /* F_DUPFD_CLOEXEC */)) continue;
                fd = static_cast<int>(c.ret);
                ch.dup_from = static_cast<int>(arg_of(c, "fd"));
                break;
            }
            case FdChange::close:
                if (c.ret == -9) continue;  // EBADF: there was nothing to close (any other result closed it)
                fd = static_cast<int>(arg_of(c, "fd"));
                break;
            case FdChange::close_range: {
                if (c.ret != 0 || (arg_of(c, "flags") & 4u) != 0) continue;  // CLOSE_RANGE_CLOEXEC closes nothing yet
                Wide w{ch, placed(c.pid) ? std::optional<int>(process(c.pid)) : std::nullopt, std::nullopt,
                       arg_of(c, "fd") & 0xffffffffu, arg_of(c, "max_fd") & 0xffffffffu};
                wide.push_back(w);
                continue;
            }
            case FdChange::exec:
                if (c.ret != 0) continue;  // a failed execve changes no fd
                wide.push_back({ch, placed(c.pid) ? std::optional<int>(process(c.pid)) : std::nullopt, std::nullopt});
                continue;
            case FdChange::io_uring:
                // From a ring's creation, or the first io_uring_enter of a process (a ring inherited or received),
                // whatever its result, to the end of the run: the tracepoints show neither the setup's flags
                // (SQPOLL) nor when a request punted to io-wq completes.
                if (c.name == "io_uring_setup" && c.ret < 0) continue;
                ch.io_uring = true;
                wide.push_back({ch, placed(c.pid) ? std::optional<int>(process(c.pid)) : std::nullopt, std::nullopt});
                continue;
            case FdChange::none:
                continue;
        }
        if (fd && *fd >= 0) {
            if (placed(c.pid) || c.pid <= 0) {
                changes[{process(c.pid), *fd}].push_back(ch);
                keys.insert({process(c.pid), *fd});
            } else {
                // Its own process is not known: the change is its own (pid, fd), and a split of that number in
                // every other process (added below).
                changes[{c.pid, *fd}].push_back(ch);
                keys.insert({c.pid, *fd});
                wide.push_back({ch, std::nullopt, *fd});
            }
        }
    }
    for (const FdSample& smp : in.samples)
        if (smp.fd >= 0) keys.insert({process(smp.pid), smp.fd});
    for (const Wide& w : wide)
        for (const Key& k : keys) {
            if (w.process && *w.process != k.first) continue;
            if (w.fd && *w.fd != k.second) continue;
            if (static_cast<std::uint64_t>(k.second) < w.lo || static_cast<std::uint64_t>(k.second) > w.hi) continue;
            auto& v = changes[k];
            // An unplaced thread's change already recorded under its own (pid, fd) is not added twice.
            if (!w.process && w.fd && k.first == w.ch.call->pid) continue;
            v.push_back(w.ch);
        }
    // Spans between consecutive changes.
    struct Span {
        FdLifetime life;
        std::optional<int> dup_from;
        std::uint64_t dup_at = 0;
        std::set<std::string> paths;  // from samples
        std::string path_from;
        bool io_uring = false;  // begun by the process's first io_uring call: never named
    };
    std::map<Key, std::vector<Span>> spans;
    for (const Key& k : keys) {
        auto& v = changes[k];
        std::stable_sort(v.begin(), v.end(), [](const Change& a, const Change& b) { return a.enter_ns < b.enter_ns; });
        auto& out = spans[k];
        Span first;
        first.life.pid = k.first;
        first.life.fd = k.second;
        out.push_back(first);
        for (const Change& ch : v) {
            out.back().life.until_ns = ch.enter_ns;
            Span next;
            next.life.pid = k.first;
            next.life.fd = k.second;
            next.life.from_ns = std::max(ch.exit_ns, ch.enter_ns);
            next.life.opened_by = ch.call->name;
            next.dup_from = ch.dup_from;
            next.dup_at = ch.enter_ns;
            next.io_uring = ch.io_uring;
            out.push_back(next);
            if (ch.io_uring) break;  // later changes begin spans nothing can name either
        }
    }
    auto span_at = [&](const Key& k, std::uint64_t begin, std::uint64_t end) -> Span* {
        auto it = spans.find(k);
        if (it == spans.end()) return nullptr;
        auto& v = it->second;
        // The last span starting at or before `begin` (the first one starts before the run).
        auto pos = std::upper_bound(v.begin() + 1, v.end(), begin,
                                    [](std::uint64_t t, const Span& sp) { return t < *sp.life.from_ns; });
        Span& sp = *std::prev(pos);
        if (sp.life.from_ns && begin < *sp.life.from_ns) return nullptr;
        if (sp.life.until_ns && end >= *sp.life.until_ns) return nullptr;  // reaches into the next change
        return &sp;
    };
    if (!in.changes_may_be_missing)
        for (const FdSample& smp : in.samples) {
            if (smp.fd < 0 || smp.path.empty()) continue;
            Span* sp = span_at({process(smp.pid), smp.fd}, smp.begin_ns, std::max(smp.begin_ns, smp.end_ns));
            if (!sp || sp->io_uring) continue;
            if (sp->paths.insert(smp.path).second && sp->paths.size() == 1) sp->path_from = smp.source;
        }
    // Paths: samples first, then dups from their source's span at the call, in time order (a source began earlier).
    std::vector<Span*> by_time;
    for (auto& [k, v] : spans)
        for (Span& sp : v) {
            by_time.push_back(&sp);
            if (sp.paths.size() == 1) {
                sp.life.path = *sp.paths.begin();
                sp.life.path_from = sp.path_from;
            }
        }
    std::stable_sort(by_time.begin(), by_time.end(), [](const Span* a, const Span* b) {
        return a->life.from_ns.value_or(0) < b->life.from_ns.value_or(0);
    });
    for (Span* sp : by_time) {
        if (sp->life.path || !sp->paths.empty() || !sp->dup_from || in.changes_may_be_missing) continue;
        if (Span* src = span_at({sp->life.pid, *sp->dup_from}, sp->dup_at, sp->dup_at); src && src->life.path) {
            sp->life.path = src->life.path;
            sp->life.path_from = "dup";
        }
    }
    // Why the others have none.
    for (auto& [k, v] : spans) {
        bool named_before = false;
        for (Span& sp : v) {
            if (!sp.life.path) {
                if (sp.io_uring)
                    sp.life.unknown = "unknown: the process uses io_uring, which can change its fds without a syscall";
                else if (in.changes_may_be_missing)
                    sp.life.unknown = "unknown: events were lost, a change of this fd may be missing";
                else if (sp.paths.size() > 1)
                    sp.life.unknown = "unknown: samples of this span name different files";
                else if (!sp.life.from_ns)
                    sp.life.unknown = "unknown: opened before the run";
                else if (named_before)
                    sp.life.unknown = "unknown: fd reused since the last sample";
                else
                    sp.life.unknown = "unknown: no sample while it was open";
            }
            named_before = named_before || sp.life.path.has_value();
        }
    }
    // One row per thread id of the process (and the process id itself).
    std::map<int, std::vector<int>> threads;
    for (const auto& [tid, pid] : in.process_of)
        threads[pid].push_back(tid);
    std::vector<FdLifetime> out;
    for (auto& [k, v] : spans) {
        std::vector<int> ids = threads.count(k.first) ? threads[k.first] : std::vector<int>{};
        if (std::find(ids.begin(), ids.end(), k.first) == ids.end()) ids.push_back(k.first);
        for (int id : ids)
            for (const Span& sp : v) {
                out.push_back(sp.life);
                out.back().pid = id;
            }
    }
    std::stable_sort(out.begin(), out.end(), [](const FdLifetime& a, const FdLifetime& b) {
        return std::make_tuple(a.pid, a.fd, a.from_ns.value_or(0)) <
               std::make_tuple(b.pid, b.fd, b.from_ns.value_or(0));
    });
    return out;
}

namespace {}  // namespace

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
        bool after_loss = false;   // events were lost while it could still return: its outcome is not known
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
    // The held records, in a ring of reused slots; push() gives a slot reset for a new record.
    struct Ring : SlotRing<Held> {
        Held& push_back() {
            Held& h = SlotRing<Held>::push_back();
            h.rec = IoctlRecord{};
            h.exit_marked = h.closed = h.after_loss = false;
            return h;
        }
    };
    Held* at(std::uint64_t seq) { return seq >= base && seq - base < held.size() ? &held[seq - base] : nullptr; }

    State(const std::map<int, std::string>& c, Sink s, std::string n)
        : comms(c), sink(std::move(s)), no_entry(std::move(n)) {}
    const std::map<int, std::string>& comms;
    FdHistory history;
    Sink sink;
    Ring held;  // records not yet handed out, in enter order; held.front() is number `base`
    std::uint64_t base = 0;
    std::unordered_map<int, Pid> pids;
    int last_pid = 0;
    Pid* last = nullptr;
    NameCache names;
    std::string no_entry;               // fd_path_unknown of an fd without entries
    std::optional<int> comm_pid;        // the pid whose comm `comm` is
    const std::string* comm = nullptr;  // comms[*comm_pid], null when it has none
    std::uint64_t outcomes_lost = 0;    // records whose outcome loss() made unknown
    std::string first_outcome_lost;
    // The record's exit may be another ioctl's: its outcome and exit become unknown.
    void forget_outcome(Held& h) {
        if (h.after_loss) return;
        h.after_loss = true;
        IoctlRecord& r = h.rec;
        if (outcomes_lost++ == 0)
            first_outcome_lost = fmt::format("pid {} fd {} cmd 0x{:x}{}", r.pid, r.fd, r.cmd,
                                             r.enter_ns ? fmt::format(" entered at {} ns", *r.enter_ns) : "");
        r.ret.reset();
        r.errno_name.reset();
        r.errno_text.reset();
        r.status.reset();
        r.exit_ns.reset();
        r.duration_ns.reset();
    }
};

IoctlCollector::IoctlCollector(const std::map<int, std::string>& comms, const std::vector<FdPath>& fd_paths, Sink sink,
                               std::string no_entry)
    : s_(std::make_unique<State>(comms, std::move(sink), std::move(no_entry))) {
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
            if (!r.exit_ns || h->after_loss) break;  // not returned in the data (or not known to): leave it
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
        // "<...>" is ftrace's placeholder for a pid missing from saved_cmdlines (kernel/trace/trace.c,
        // __trace_find_cmdline), not a name: the comm is not known ("").
        if (s.comm && *s.comm != "<...>") r.comm = *s.comm;
        r.fd = e->fd;
        r.cmd = e->cmd;
        if (e->arg_known) r.arg = e->arg;
        path_at(s.history, ev.pid, e->fd, ev.ts_ns, s.no_entry, r);
        if (!e->fd_path.empty()) {  // printed at this call (strace -y): no sample needed
            r.fd_path = e->fd_path;
            r.fd_path_unknown.reset();
        }
        auto& v = p.pending;
        for (auto m = v.rbegin(); m != v.rend(); ++m) {
            if (m->fd != e->fd || m->cmd != static_cast<std::uint32_t>(e->cmd)) continue;
            if (m->dev) {  // read at the call itself: better than any sample
                r.fd_path = m->dev;
                r.fd_path_unknown.reset();
            }
            r.hclass = m->hclass;
            r.ctrl = m->ctrl;
            if (m->ctrl)  // NVXXXX_CTRL_CMD(class, category, index): the class is bits 31..16
                if (auto cls = rm_class_name(*m->ctrl >> 16)) r.ctrl_class = std::string(*cls);
            if (m->name) r.name = std::move(m->name);  // the fallback when the number is not known
            v.erase(v.begin(), m.base());              // this one and the stale ones before it
            break;
        }
        if (const auto& known = s.names.get(e->cmd, r.fd_path)) r.name = known;
        if (ev.ts_known) r.enter_ns = ev.ts_ns;
        const std::uint64_t seq = s.base + s.held.size() - 1;
        p.open = seq;
        p.held.push_back(seq);
    } else if (const auto* x = std::get_if<IoctlExit>(&ev.body)) {
        State::Pid* p = s.find_pid(ev.pid);
        if (!p || !p->open) return;  // exit of an ioctl entered before the capture
        if (State::Held* h = s.at(*p->open); h && h->after_loss) {
            h->closed = true;  // this exit may be of a later ioctl whose enter was lost
        } else if (h) {
            h->rec.ret = x->ret;
            if (!x->errno_name.empty()) h->rec.errno_name = x->errno_name;
            if (!x->errno_text.empty()) h->rec.errno_text = x->errno_text;
            IoctlRecord& rec = h->rec;
            if (ev.ts_known) rec.exit_ns = ev.ts_ns;
            if (x->duration_ns) {
                rec.duration_ns = x->duration_ns;
                if (rec.enter_ns && !rec.exit_ns) rec.exit_ns = *rec.enter_ns + *x->duration_ns;
            } else if (rec.enter_ns && rec.exit_ns && *rec.exit_ns >= *rec.enter_ns) {
                rec.duration_ns = *rec.exit_ns - *rec.enter_ns;
            }
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

void IoctlCollector::loss(std::uint64_t since_ns, std::optional<std::uint64_t> until_ns) {
    State& s = *s_;
    // An ioctl still open: its exit, and the next enter of its task, may be among the lost events, so the
    // next exit of the task may be another ioctl's.
    for (auto& [pid, p] : s.pids)
        if (p.open)
            if (State::Held* h = s.at(*p.open)) s.forget_outcome(*h);
    // One already closed by an exit inside the lost span (an exit on another CPU, sorted before the mark) may have
    // been paired the same way.
    for (std::size_t i = 0; i < s.held.size(); ++i) {
        State::Held& h = s.held[i];
        const IoctlRecord& r = h.rec;
        if (!h.closed || !r.exit_ns || *r.exit_ns <= since_ns) continue;
        if (until_ns && r.enter_ns && *r.enter_ns >= *until_ns) continue;
        s.forget_outcome(h);
    }
}

std::uint64_t IoctlCollector::outcomes_lost() const {
    return s_->outcomes_lost;
}

const std::string& IoctlCollector::first_outcome_lost() const {
    return s_->first_outcome_lost;
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
        IoctlCollector c(
            stream.comms, fd_paths, [&](IoctlRecord&& r) { out.push_back(std::move(r)); },
            fd_path_unknown_default(stream));
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
                                    [&](std::uint64_t t, std::size_t i) { return t < ioctls[i].enter_ns.value_or(0); });
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
        // Unknown; with an errno the source printed but nvtrace has no number for (strace "= -1 EFOOBAR (...)"),
        // the call failed: say so, unlike a call whose exit was not seen.
        s += " ret=?";
        if (io.errno_name) s += fmt::format("({}: failed, errno number unknown)", *io.errno_name);
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
    if (ioctls_ == 0)
        first_pid_ = io.pid;
    else if (io.pid != first_pid_)
        several_tasks_ = true;
    ++ioctls_;
    if (options_.verbose) {
        lines_.push_back({io.pid, io.comm, format_ioctl_line(io, cost), 1});
        return;
    }
    std::string key = format_ioctl_line(io, std::nullopt);
    if (run_count_ > 0 && key == run_key_ && io.pid == run_pid_) {
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
    run_pid_ = io.pid;
    run_comm_ = io.comm;
    run_count_ = 1;
    run_cost_ = cost;
}

void IoctlSummary::end_run() {
    if (run_count_ == 0) return;
    if (folded_lines_ < options_.max_lines)
        lines_.push_back({run_pid_, run_comm_,
                          fmt::format("{}{}", run_key_, run_cost_ ? " " + kernel_part(*run_cost_) : ""), run_count_});
    else
        hidden_ioctls_ += run_count_;
    ++folded_lines_;
    run_count_ = 0;
}

std::vector<std::string> IoctlSummary::lines() {
    end_run();
    std::vector<std::string> out;
    out.reserve(lines_.size() + 1);
    for (const Line& l : lines_) {
        std::string task =
            several_tasks_
                ? fmt::format("{}/{}: ", l.comm.empty() || l.comm == "<...>" ? std::string("?") : l.comm, l.pid)
                : "";
        if (options_.verbose)
            out.push_back(task + l.text);
        else
            out.push_back(fmt::format("{:>6}x {}{}", l.count, task, l.text));
    }
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
