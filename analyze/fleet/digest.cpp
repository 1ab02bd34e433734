// One report reduced to a node's digest and its timing-free signature (nvtrace/fleet.hpp, docs/fleet.md).
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
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

std::string program_result(const Report& r, const nlohmann::json* meta) {
    if (r.source.cannot_run) return "cannot run: " + *r.source.cannot_run;
    if (!meta || !meta->is_object()) return "unknown (no meta.json beside the report)";
    std::string s = "unknown";
    if (auto e = meta->find("exit_code"); e != meta->end() && e->is_number_integer())
        s = fmt::format("exit {}", e->get<int>());
    else if (auto g = meta->find("signal"); g != meta->end() && g->is_number_integer())
        s = fmt::format("signal {}", g->get<int>());
    if (auto t = meta->find("timed_out"); t != meta->end() && t->is_boolean() && t->get<bool>()) s += ", timed out";
    return s;
}

// The call paths with their counts: path text -> calls. Paths are interned as (parent path, frame) so that a deep
// tree costs one map entry per distinct path, not a string per call.
std::map<std::string, std::uint64_t> call_paths(const std::vector<Call>& calls) {
    std::unordered_map<std::uint64_t, std::size_t> by_id;
    by_id.reserve(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i)
        by_id.emplace(calls[i].id, i);
    constexpr std::uint32_t kNone = 0xffffffffu;
    constexpr std::uint32_t kIrqRoot = 0;  // the "[irq]" pseudo-root
    std::vector<std::string> path_text{"[irq]"};
    std::vector<std::uint64_t> path_calls{0};
    std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> interned;
    std::vector<std::uint32_t> path_of(calls.size(), kNone);
    auto intern = [&](std::uint32_t parent, std::string frame) {
        auto [it, added] = interned.try_emplace({parent, frame}, static_cast<std::uint32_t>(path_text.size()));
        if (added) {
            path_text.push_back(parent == kNone ? frame : path_text[parent] + " > " + frame);
            path_calls.push_back(0);
        }
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
        if (p != kNone) ++path_calls[p];
    std::map<std::string, std::uint64_t> out;
    for (std::size_t p = 1; p < path_text.size(); ++p)
        if (path_calls[p]) out[path_text[p]] += path_calls[p];
    return out;
}

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
    for (const auto& [path, n] : call_paths(report.calls))
        text += fmt::format("call {} x{}\n", path, n);
    for (const auto& seq : ioctl_sequences(report.ioctls))
        text += fmt::format("thread {}\n", seq);
    for (const auto& seq : api_sequences(report.api_calls))
        text += fmt::format("api {}\n", seq);
    return text;
}

NodeSignature node_signature(const Report& report) {
    NodeSignature s;
    std::string text;
    auto paths = call_paths(report.calls);
    for (const auto& [path, n] : paths) {
        text += fmt::format("call {} x{}\n", path, n);
        s.calls += n;
    }
    s.call_paths = paths.size();
    auto seqs = ioctl_sequences(report.ioctls);
    for (const auto& seq : seqs)
        text += fmt::format("thread {}\n", seq);
    s.threads = seqs.size();
    s.ioctls = report.ioctls.size();
    // A report without API calls adds nothing: its hash is the one it had before API calls were part of it.
    for (const auto& seq : api_sequences(report.api_calls))
        text += fmt::format("api {}\n", seq);
    s.hash = XXH3_64bits(text.data(), text.size());
    return s;
}

NodeDigest digest_report(const Report& report, const std::string& report_path, const nlohmann::json* meta,
                         const ExpectFile* expectations) {
    NodeDigest d;
    d.report = report_path;
    d.environment = report.environment;
    d.node = slurm_or_host(d.environment, d.node_from, report_path);
    CheckEnvironment env = check_environment(report);
    if (env.driver) d.driver = to_string(*env.driver);
    d.flavour = env.flavour;
    if (d.environment.kernel) d.kernel = *d.environment.kernel;
    d.result = program_result(report, meta);
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
