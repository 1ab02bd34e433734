// One report reduced to a node's digest and its timing-free signature (nvtrace/fleet.hpp, docs/fleet.md).
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "nvtrace/diff.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/knowledge.hpp"

namespace nvtrace {

namespace {

// Kernel-log kinds of a driver's own lines that are not errors: the load banner, the GPU's UUID, a firmware
// loaded, warnings (docs/dmesg.md's table). Xids are counted on their own.
bool informational_kind(const std::string& kind) {
    static const std::set<std::string> kKinds{"driver_loaded",  "gpu_uuid", "firmware_loaded",
                                              "driver_warning", "xid",      "command"};
    return kKinds.count(kind) > 0;
}

// A line of a driver (NVRM, nvidia-uvm, nvidia-modeset, nvidia-peermem, gdrdrv, ...) that reports an error: a
// classified error kind, or an unclassified line ("other") printed at KERN_ERR or worse.
bool driver_error(const KernelLogMessage& m) {
    if (m.source == "kernel" || m.source == "user") return false;
    if (informational_kind(m.kind)) return false;
    if (m.kind == "other") return m.level_known && m.level <= 3;
    return true;
}

// "ENOTTY" from ret -25 (the kernel's -errno), as printed when the source named it; an RM/UVM status other than
// NV_OK for a call that returned 0.
std::optional<std::string> ioctl_error(const IoctlRecord& io) {
    if (io.ret && *io.ret < 0) {
        if (io.errno_name) return *io.errno_name;
        if (*io.ret >= -4095)
            if (const char* n = ::strerrorname_np(static_cast<int>(-*io.ret))) return std::string(n);
        return fmt::format("ret={}", *io.ret);
    }
    if (io.status && *io.status != "NV_OK" && *io.status != "0x0" && *io.status != "0") return *io.status;
    return std::nullopt;
}

std::string slurm_or_host(const ReportEnvironment& env, std::string& from, const std::string& report_path) {
    if (env.slurm)
        if (auto n = env.slurm->find("node"); n != env.slurm->end() && !n->second.empty()) {
            from = "slurm";
            return n->second;
        }
    if (env.host && !env.host->empty()) {
        from = "host";
        return *env.host;
    }
    from = "directory";
    std::filesystem::path p(report_path);
    std::string dir = p.parent_path().filename().string();
    return dir.empty() ? p.filename().string() : dir;
}

std::string program_result(const Report& r, const ProgramEnd* program) {
    if (r.source.cannot_run) return "cannot run: " + *r.source.cannot_run;
    if (!program) return "unknown (no meta.json beside the report)";
    std::string s = "unknown";
    if (program->exit_code)
        s = fmt::format("exit {}", *program->exit_code);
    else if (program->signal)
        s = fmt::format("signal {}", *program->signal);
    if (program->timed_out) s += ", timed out";
    return s;
}

// The call paths with their counts, in the order of their texts ("f > g > h", std::string's order), each path
// once (two nodes with one text, a root named "[irq]" and the "[irq]" pseudo-root, are counted together). Paths are
// interned as (parent path, frame) so that a deep tree costs one node per distinct path, and a path's text is made
// only when it is given to `fn`: a tree nesting N calls deep holds N frames, not N paths of up to N frames each.
class CallPaths {
public:
    explicit CallPaths(const std::vector<Call>& calls) {
        std::unordered_map<std::uint64_t, std::size_t> by_id;
        by_id.reserve(calls.size());
        for (std::size_t i = 0; i < calls.size(); ++i)
            by_id.emplace(calls[i].id, i);
        std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> interned;
        std::vector<std::uint32_t> path_of(calls.size(), kNone);
        auto intern = [&](std::uint32_t parent, std::string frame) {
            auto [it, added] = interned.try_emplace({parent, frame}, static_cast<std::uint32_t>(nodes_.size()));
            if (added) nodes_.push_back({parent, std::move(frame), parent == kNone ? 1u : nodes_[parent].depth + 1, 0});
            return it->second;
        };
        std::vector<std::size_t> chain;
        for (std::size_t i = 0; i < calls.size(); ++i) {
            // Resolve the unresolved ancestors first, outermost first (parents need not come before children).
            chain.clear();
            for (std::size_t k = i; path_of[k] == kNone;) {
                chain.push_back(k);
                const Call& c = calls[k];
                if (!c.parent) break;
                auto p = by_id.find(*c.parent);
                if (p == by_id.end() || std::find(chain.begin(), chain.end(), p->second) != chain.end()) break;
                k = p->second;
            }
            for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                const Call& c = calls[*it];
                std::uint32_t parent = kNone;
                if (c.parent)
                    if (auto p = by_id.find(*c.parent); p != by_id.end() && path_of[p->second] != kNone)
                        parent = path_of[p->second];
                const bool parent_irq = c.parent && by_id.count(*c.parent) && calls[by_id.at(*c.parent)].irq;
                // An interrupt nests under whatever it arrived in: its subtree goes under "[irq]" (as diff lifts it).
                if (c.irq && !parent_irq) parent = kIrqRoot;
                path_of[*it] = intern(parent, normalise_symbol(c.function));
            }
        }
        for (std::uint32_t p : path_of)
            if (p != kNone) ++nodes_[p].calls;
        for (std::uint32_t p = 1; p < nodes_.size(); ++p)
            if (nodes_[p].calls) order_.push_back(p);
        std::sort(order_.begin(), order_.end(), [this](std::uint32_t a, std::uint32_t b) { return compare(a, b) < 0; });
    }

    // fn(text, calls) for each path in order.
    template <class Fn>
    void for_each(Fn&& fn) const {
        std::string text;
        for (std::size_t k = 0; k < order_.size();) {
            std::uint64_t n = 0;
            std::size_t same = k;
            for (; same < order_.size() && (same == k || compare(order_[k], order_[same]) == 0); ++same)
                n += nodes_[order_[same]].calls;
            text.clear();
            append_text(order_[k], text);
            fn(text, n);
            k = same;
        }
    }

private:
    static constexpr std::uint32_t kNone = 0xffffffffu;
    static constexpr std::uint32_t kIrqRoot = 0;  // the "[irq]" pseudo-root
    struct Node {
        std::uint32_t parent;
        std::string frame;
        std::uint32_t depth;  // a root is 1
        std::uint64_t calls;
    };
    std::vector<Node> nodes_{Node{kNone, "[irq]", 1, 0}};
    std::vector<std::uint32_t> order_;  // the paths with calls, by text
    mutable std::vector<std::uint32_t> chain_a_, chain_b_;

    void append_text(std::uint32_t n, std::string& out) const {
        std::vector<std::uint32_t> up;
        for (std::uint32_t k = n; k != kNone; k = nodes_[k].parent)
            up.push_back(k);
        for (auto it = up.rbegin(); it != up.rend(); ++it) {
            if (it != up.rbegin()) out += " > ";
            out += nodes_[*it].frame;
        }
    }

    // The texts of a and b compared as std::string compares them (bytes as unsigned char), without making them:
    // below the deepest node the two share, each text goes on with its frames joined by " > ".
    int compare(std::uint32_t a, std::uint32_t b) const {
        if (a == b) return 0;
        std::vector<std::uint32_t>& ca = chain_a_;
        std::vector<std::uint32_t>& cb = chain_b_;
        ca.clear();
        cb.clear();
        while (nodes_[a].depth > nodes_[b].depth) {
            ca.push_back(a);
            a = nodes_[a].parent;
        }
        while (nodes_[b].depth > nodes_[a].depth) {
            cb.push_back(b);
            b = nodes_[b].parent;
        }
        while (a != b) {
            ca.push_back(a);
            cb.push_back(b);
            a = nodes_[a].parent;
            b = nodes_[b].parent;
            if (a == kNone || b == kNone) break;  // two roots: nothing shared
        }
        // ca and cb hold, innermost first, the frames after the shared part (empty for an ancestor's side).
        if (ca.empty()) return cb.empty() ? 0 : -1;
        if (cb.empty()) return 1;
        std::size_t fa = ca.size(), fb = cb.size(), ia = 0, ib = 0;  // frame (counting down) and byte in it
        auto next = [this](const std::vector<std::uint32_t>& c, std::size_t& f, std::size_t& i) -> int {
            static constexpr std::string_view kSep = " > ";
            for (;;) {
                if (f == 0) return -1;
                const std::string& frame = nodes_[c[f - 1]].frame;
                if (i < frame.size()) return static_cast<unsigned char>(frame[i++]);
                if (f == 1) return -1;
                if (i < frame.size() + kSep.size()) return static_cast<unsigned char>(kSep[i++ - frame.size()]);
                --f;
                i = 0;
            }
        };
        for (;;) {
            const int x = next(ca, fa, ia), y = next(cb, fb, ib);
            if (x != y) return x < y ? -1 : 1;
            if (x < 0) return 0;
        }
    }
};

// Each thread's requests in its order, run-length counted; the threads' sequences sorted.
std::vector<std::string> ioctl_sequences(const std::vector<IoctlRecord>& ioctls) {
    std::map<int, std::vector<const IoctlRecord*>> by_thread;
    for (const auto& io : ioctls)
        by_thread[io.pid].push_back(&io);
    std::vector<std::string> out;
    for (auto& [pid, list] : by_thread) {
        std::stable_sort(list.begin(), list.end(),
                         [](const IoctlRecord* a, const IoctlRecord* b) { return a->enter_ns < b->enter_ns; });
        std::string seq, last;
        std::uint64_t run = 0;
        auto flush = [&] {
            if (!run) return;
            if (!seq.empty()) seq += ", ";
            seq += fmt::format("{} x{}", last, run);
        };
        for (const IoctlRecord* io : list) {
            std::string k = fleet_ioctl_key(*io);
            if (io->hclass) k += fmt::format(" hclass=0x{:x}", *io->hclass);
            if (io->ctrl) k += fmt::format(" ctrl=0x{:x}", *io->ctrl);
            if (run && k == last) {
                ++run;
                continue;
            }
            flush();
            last = std::move(k);
            run = 1;
        }
        flush();
        out.push_back(std::move(seq));
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Each thread's API calls (uprobe spans) in entry order, each as its path of API functions from the thread's
// top API call ("cudaMalloc > cuMemAlloc_v2"), run-length counted; the threads' sequences sorted. Results are left
// out as return values are (an error is shown per node, not another path).
std::vector<std::string> api_sequences(const std::vector<ApiCall>& calls) {
    std::unordered_map<std::uint64_t, std::size_t> at;  // id -> index
    at.reserve(calls.size());
    std::vector<std::string> path(calls.size());
    std::map<int, std::vector<std::size_t>> by_thread;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const ApiCall& c = calls[i];
        at.emplace(c.id, i);
        path[i] = c.function;
        if (c.parent)
            if (auto it = at.find(*c.parent); it != at.end()) path[i] = path[it->second] + " > " + c.function;
        by_thread[c.pid].push_back(i);
    }
    std::vector<std::string> out;
    for (auto& [pid, list] : by_thread) {
        std::stable_sort(list.begin(), list.end(),
                         [&](std::size_t x, std::size_t y) { return calls[x].entry_ns < calls[y].entry_ns; });
        std::string seq;
        std::size_t n = 0;
        for (std::size_t k = 0; k < list.size(); k += n) {
            n = 1;
            while (k + n < list.size() && path[list[k + n]] == path[list[k]])
                ++n;
            if (!seq.empty()) seq += ", ";
            seq += fmt::format("{} x{}", path[list[k]], n);
        }
        out.push_back(std::move(seq));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::string fleet_ioctl_device(const IoctlRecord& io) {
    if (!io.fd_path || io.fd_path->empty()) return "fd?";
    std::string d = ioctl_device_short_name(io);
    // "pipe:[599327]", "socket:[12]", "anon_inode:[eventfd]" keep their kind: the inode number differs per run.
    if (auto b = d.find(":["); b != std::string::npos && d.back() == ']') {
        std::string_view inner(d.data() + b + 2, d.size() - b - 3);
        if (!inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }))
            d.resize(b);
    }
    return d;
}

std::string fleet_ioctl_key(const IoctlRecord& io) {
    return fleet_ioctl_device(io) + " " + (io.name ? *io.name : fmt::format("0x{:x}", io.cmd));
}

std::string node_signature_text(const Report& report) {
    std::string text;
    CallPaths(report.calls).for_each([&](const std::string& path, std::uint64_t n) {
        text += fmt::format("call {} x{}\n", path, n);
    });
    for (const auto& seq : ioctl_sequences(report.ioctls))
        text += fmt::format("thread {}\n", seq);
    for (const auto& seq : api_sequences(report.api_calls))
        text += fmt::format("api {}\n", seq);
    return text;
}

NodeSignature node_signature(const Report& report) {
    NodeSignature s;
    // The hash of node_signature_text's text, fed line by line (XXH3's streaming form gives the one-shot hash):
    // the text of a deep tree's paths is never held whole.
    std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    if (!state) throw std::bad_alloc();
    XXH3_64bits_reset(state.get());
    std::string line;
    auto add = [&](std::string_view kind, std::string_view text, std::string_view tail) {
        line.clear();
        line.append(kind).append(" ").append(text).append(tail).append("\n");
        XXH3_64bits_update(state.get(), line.data(), line.size());
    };
    CallPaths(report.calls).for_each([&](const std::string& path, std::uint64_t n) {
        add("call", path, fmt::format(" x{}", n));
        s.calls += n;
        ++s.call_paths;
    });
    auto seqs = ioctl_sequences(report.ioctls);
    for (const auto& seq : seqs)
        add("thread", seq, "");
    s.threads = seqs.size();
    s.ioctls = report.ioctls.size();
    // A report without API calls adds nothing: its hash is the one it had before API calls were part of it.
    for (const auto& seq : api_sequences(report.api_calls))
        add("api", seq, "");
    s.hash = XXH3_64bits_digest(state.get());
    return s;
}

NodeDigest digest_report(const Report& report, const std::string& report_path, const ProgramEnd* program,
                         const ExpectFile* expectations) {
    NodeDigest d;
    d.report = report_path;
    d.environment = report.environment;
    d.node = slurm_or_host(d.environment, d.node_from, report_path);
    CheckEnvironment env = check_environment(report);
    if (env.driver) d.driver = to_string(*env.driver);
    d.flavour = env.flavour;
    if (d.environment.kernel) d.kernel = *d.environment.kernel;
    d.result = program_result(report, program);
    std::vector<Check> checks;
    if (expectations) {
        checks = check_report(report, *expectations);
        d.checks_from_expect = true;
    }
    const std::vector<Check>& cs = expectations ? checks : report.checks;
    d.checks = summarize(cs);
    for (const auto& c : cs) {
        if (c.result == "fail") d.failed_checks.push_back(c.id);
        if (c.result != "fail" && c.result != "pass") d.inconclusive_checks.push_back(c.id);
    }
    for (const auto& m : report.kernel_log) {
        if (m.kind == "xid") {
            auto x = m.fields.find("xid");
            ++d.xids[x == m.fields.end() ? std::string("?") : x->second];
        } else if (driver_error(m)) {
            ++d.nvrm_errors[m.kind];
        }
    }
    for (const auto& io : report.ioctls) {
        FleetIoctlStats& st = d.ioctl_requests[fleet_ioctl_key(io)];
        ++st.count;
        ++d.ioctls;
        if (auto e = ioctl_error(io)) {
            ++st.errors;
            ++st.by_error[*e];
            ++d.ioctl_errors;
        }
    }
    d.calls = report.calls.size();
    d.complete = report.completeness.complete;
    d.incomplete = report.completeness.reasons;
    d.signature = node_signature(report);
    return d;
}

}  // namespace nvtrace
