#include "capture.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kmsg_reader.hpp"
#include "nvtrace/raw_event_decoder.hpp"
#include "nvtrace/symbols.hpp"
#include "procfs.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"

namespace nvtrace::tracer {

namespace {

using Clock = std::chrono::steady_clock;

struct DrainContext {
    RawEventDecoder* decoder;
    std::vector<Event>* events;
};

int on_record(tep_event*, tep_record* rec, int, void* ctx) {
    auto* d = static_cast<DrainContext*>(ctx);
    if (rec->missed_events != 0) {
        Event lost;
        lost.ts_ns = rec->ts;
        lost.cpu = rec->cpu;
        LostEvents l;
        if (rec->missed_events > 0) l.count = static_cast<std::uint64_t>(rec->missed_events);
        lost.body = l;
        d->events->push_back(std::move(lost));
    }
    if (auto ev = d->decoder->decode(rec)) d->events->push_back(std::move(*ev));
    return 0;
}

std::string top_file(const char* name) {
    int size = 0;
    char* s = tracefs_instance_file_read(nullptr, name, &size);
    if (!s) return {};
    std::string out(s, size > 0 ? static_cast<std::size_t>(size) : 0);
    std::free(s);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

std::size_t count_filter_lines(tracefs_instance* inst) {
    int size = 0;
    char* s = tracefs_instance_file_read(inst, "set_ftrace_filter", &size);
    if (!s) return 0;
    std::istringstream in(std::string(s, static_cast<std::size_t>(size)));
    std::free(s);
    std::size_t n = 0;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#') ++n;
    return n;
}

std::vector<CpuBufferStats> delta(const std::vector<CpuBufferStats>& before, const std::vector<CpuBufferStats>& after) {
    std::vector<CpuBufferStats> out;
    for (const auto& a : after) {
        CpuBufferStats d = a;
        for (const auto& b : before)
            if (b.cpu == a.cpu && b.buffer == a.buffer) {
                d.overrun = a.overrun >= b.overrun ? a.overrun - b.overrun : 0;
                d.dropped_events = a.dropped_events >= b.dropped_events ? a.dropped_events - b.dropped_events : 0;
            }
        out.push_back(d);
    }
    return out;
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Blocks the termination signals for the whole capture so that they are handled in the drain loop, and
// restores the previous mask on every exit path.
class SignalBlock {
public:
    SignalBlock() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGINT);
        sigaddset(&set_, SIGTERM);
        sigaddset(&set_, SIGHUP);
        ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
    }
    ~SignalBlock() {
        // Discard what arrived after the loop stopped listening, then unblock.
        timespec zero{0, 0};
        while (::sigtimedwait(&set_, nullptr, &zero) > 0) {
        }
        ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    const sigset_t& set() const { return set_; }
    const sigset_t& old() const { return old_; }

private:
    sigset_t set_{}, old_{};
};

}  // namespace

Result<CaptureResult> capture(const CaptureOptions& opts) {
    if (opts.argv.empty()) return fail(Error::usage("no command given: nvtrace run [options] -- CMD [ARGS]"));
    if (::geteuid() != 0)
        return fail(Error::environment("nvtrace run needs root: tracefs is writable by root only (run it with sudo)"));
    const char* tracing_dir = nullptr;
    if (tracefs_tracing_dir_is_mounted(false, &tracing_dir) != 1)
        return fail(Error::environment("tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"));

    CaptureResult res;
    auto& meta = res.meta;
    meta["command"] = opts.argv;
    meta["modules"] = opts.modules;
    meta["events"] = opts.events;
    meta["started_utc"] = utc_now();
    meta["clock"] = "local";
    meta["tracing_dir"] = tracing_dir ? tracing_dir : "";

    auto inst_r = Instance::create();
    if (!inst_r) return fail(inst_r.error());
    Instance& inst = *inst_r;
    meta["instance"] = inst.name();

    // Where function_graph can run: the instance (>= ~6.11) or the top level under a journal.
    TopLevelJournal journal;
    tracefs_instance* fgraph = nullptr;  // instance that carries function_graph, nullptr = top level
    bool use_fgraph = !opts.modules.empty();
    std::string mode = "events";
    if (use_fgraph) {
        int sz = 0;
        char* avail = tracefs_instance_file_read(inst.get(), "available_tracers", &sz);
        std::string in_instance = avail ? std::string(avail, static_cast<std::size_t>(sz)) : "";
        std::free(avail);
        if (in_instance.find("function_graph") != std::string::npos) {
            fgraph = inst.get();
            mode = "function_graph (instance)";
        } else {
            if (!tracefs_tracer_available(tracing_dir, "function_graph"))
                return fail(Error::environment(
                    fmt::format("the function_graph tracer is not available in this kernel (available_tracers: {})",
                                top_file("available_tracers"))));
            std::string cur = top_file("current_tracer");
            if (cur != "nop")
                return fail(Error::environment(fmt::format(
                    "another tracer ('{}') is active at the top level; nvtrace will not take it over", cur)));
            mode = "function_graph (top level)";
        }
    }
    meta["tracer_mode"] = mode;
    for (const auto& m : opts.modules)
        if (!module_loaded(m))
            return fail(Error::environment(fmt::format("module {} is not loaded (load it first: modprobe {})", m, m)));

    // Event formats: only the systems nvtrace decodes, plus the user's (130 ms for two systems,
    // ../shared/reference/ci-environment.md section 4).
    std::set<std::string> systems{"ftrace", "syscalls"};
    for (const auto& e : opts.events) {
        auto colon = e.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == e.size())
            return fail(Error::usage(fmt::format("--event '{}': expected SYSTEM:EVENT", e)));
        systems.insert(e.substr(0, colon));
    }
    std::vector<const char*> sys_c;
    for (const auto& s : systems)
        sys_c.push_back(s.c_str());
    sys_c.push_back(nullptr);
    tep_handle* tep = tracefs_local_events_system(tracing_dir, sys_c.data());
    if (!tep) return fail(Error::environment("cannot read the event formats from tracefs"));
    struct TepFree {
        tep_handle* t;
        ~TepFree() { tep_free(t); }
    } tep_guard{tep};

    // Events in the private instance.
    if (tracefs_event_enable(inst.get(), "syscalls", "sys_enter_ioctl") < 0 ||
        tracefs_event_enable(inst.get(), "syscalls", "sys_exit_ioctl") < 0)
        return fail(
            Error::environment("cannot enable syscalls:sys_enter_ioctl/sys_exit_ioctl (no syscall tracepoints?)"));
    for (const auto& e : opts.events) {
        auto colon = e.find(':');
        std::string sys = e.substr(0, colon), name = e.substr(colon + 1);
        if (tracefs_event_enable(inst.get(), sys.c_str(), name.c_str()) < 0)
            return fail(Error::usage(fmt::format("--event {}: no such event in this kernel", e)));
    }
    tracefs_option_enable(inst.get(), TRACEFS_OPTION_EVENT_FORK);

    SignalBlock signals;
    std::string marker_path = inst.dir() + "/trace_marker";
    auto child_r = GatedChild::spawn(opts.argv, {{"NVTRACE_TRACE_MARKER", marker_path}}, signals.old());
    if (!child_r) return fail(child_r.error());
    GatedChild& child = *child_r;
    meta["pid"] = child.pid();
    std::string pid_s = std::to_string(child.pid());

    if (tracefs_instance_file_write(inst.get(), "set_event_pid", pid_s.c_str()) < 0)
        return fail(Error::environment("cannot write set_event_pid: " + kernel_error(inst.get())));

    std::size_t matched = 0;
    if (use_fgraph) {
        if (!fgraph) {
            for (const char* f :
                 {"tracing_on", "current_tracer", "set_ftrace_pid", "options/function-fork", "set_ftrace_filter"})
                if (auto r = journal.remember(f); !r) return fail(r.error());
        }
        for (std::size_t i = 0; i < opts.modules.size(); ++i) {
            std::string mod = opts.modules[i];
            for (char& c : mod)
                if (c == '-') c = '_';  // module names use '_' in :mod: (nvidia_uvm)
            unsigned flags = (i == 0 ? unsigned{TRACEFS_FL_RESET} : 0u) |
                             (i + 1 < opts.modules.size() ? unsigned{TRACEFS_FL_CONTINUE} : 0u);
            if (tracefs_function_filter(fgraph, nullptr, mod.c_str(), flags) < 0)
                return fail(Error::environment(fmt::format("cannot set the function filter :mod:{}: {} {}", mod,
                                                           std::strerror(errno), kernel_error(fgraph))));
        }
        matched = count_filter_lines(fgraph);
        meta["filter_functions"] = matched;
        if (matched == 0) return fail(Error::environment("the module filter matched no traceable function"));
        if (fgraph) {
            if (tracefs_instance_file_write(fgraph, "set_ftrace_pid", pid_s.c_str()) < 0)
                return fail(Error::environment("cannot write set_ftrace_pid: " + kernel_error(fgraph)));
            tracefs_option_enable(fgraph, TRACEFS_OPTION_FUNCTION_FORK);
            if (tracefs_tracer_set(fgraph, TRACEFS_TRACER_FUNCTION_GRAPH) < 0)
                return fail(Error::environment("cannot set function_graph in the instance: " + kernel_error(fgraph)));
        } else {
            if (auto r = journal.write("set_ftrace_pid", pid_s); !r) return fail(r.error());
            if (auto r = journal.write("options/function-fork", "1"); !r) return fail(r.error());
            if (auto r = journal.write("current_tracer", "function_graph"); !r) return fail(r.error());
            if (auto r = journal.write("tracing_on", "1"); !r) return fail(r.error());
        }
        if (opts.progress)
            fmt::print(stderr, "nvtrace: function_graph on {} ({} functions, {})\n", fmt::join(opts.modules, ", "),
                       matched, mode);
    }

    auto stats_before = read_buffer_stats(inst.get(), "instance");
    if (use_fgraph && !fgraph) {
        auto top = read_buffer_stats(nullptr, "top");
        stats_before.insert(stats_before.end(), top.begin(), top.end());
    }

    KmsgReader kmsg;
    if (auto r = kmsg.start(); !r) return fail(r.error());

    RawEventDecoder decoder(tep, opts.events);
    std::vector<Event> events;
    DrainContext dctx{&decoder, &events};
    auto drain = [&] {
        tracefs_iterate_raw_events(tep, inst.get(), nullptr, 0, on_record, &dctx);
        if (use_fgraph && !fgraph) tracefs_iterate_raw_events(tep, nullptr, nullptr, 0, on_record, &dctx);
    };

    tracefs_trace_on(inst.get());
    tracefs_printf(inst.get(), "nvtrace-start pid=%d\n", child.pid());
    auto t0 = Clock::now();
    if (auto r = child.release(); !r) return fail(Error::usage(fmt::format("{}: {}", opts.argv[0], r.error().message)));

    std::optional<ExitStatus> status;
    std::optional<Clock::time_point> kill_deadline;
    while (!status) {
        timespec tick{0, 10'000'000};  // 10 ms: keeps 100% of 2 M events at the default buffer size
        int sig = ::sigtimedwait(&signals.set(), nullptr, &tick);
        if (sig > 0 && !res.interrupted_by) {
            res.interrupted_by = sig;
            child.kill(sig);
            kill_deadline = Clock::now() + std::chrono::seconds(2);
        }
        if (opts.timeout_s && !kill_deadline && Clock::now() - t0 > std::chrono::duration<double>(*opts.timeout_s)) {
            meta["timed_out"] = true;
            child.kill(SIGTERM);
            kill_deadline = Clock::now() + std::chrono::seconds(2);
        }
        if (kill_deadline && Clock::now() > *kill_deadline) child.kill(SIGKILL);
        drain();
        kmsg.poll();
        status = child.poll_exit();
    }
    auto t1 = Clock::now();
    tracefs_printf(inst.get(), "nvtrace-end pid=%d\n", child.pid());

    // Counters first, then the final drain (ci-environment.md section 2).
    auto stats_after = read_buffer_stats(inst.get(), "instance");
    if (use_fgraph && !fgraph) {
        auto top = read_buffer_stats(nullptr, "top");
        stats_after.insert(stats_after.end(), top.begin(), top.end());
    }
    tracefs_trace_off(inst.get());
    if (use_fgraph && !fgraph) (void)journal.write("tracing_on", "0");  // journaled: restored just below
    drain();
    kmsg.poll();
    res.restore_failures = journal.restore();

    res.status = *status;
    meta["duration_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    meta["exit_code"] = status->exit_code ? nlohmann::json(*status->exit_code) : nlohmann::json(nullptr);
    meta["signal"] = status->signal ? nlohmann::json(*status->signal) : nlohmann::json(nullptr);
    meta["undecodable_records"] = decoder.undecodable();

    EventStream& st = res.stream;
    st.buffer_stats = delta(stats_before, stats_after);
    st.kmsg = std::move(kmsg.records());
    st.kmsg_overwritten = kmsg.overwritten();
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    st.events = std::move(events);

    tracefs_load_cmdlines(tracing_dir, tep);
    std::string child_comm = opts.argv[0].substr(opts.argv[0].find_last_of('/') + 1).substr(0, 15);
    for (const auto& ev : st.events) {
        if (ev.pid <= 0 || st.comms.count(ev.pid)) continue;
        const char* c = tep_data_comm_from_pid(tep, ev.pid);
        st.comms[ev.pid] = (c && std::strcmp(c, "<...>") != 0) ? c : (ev.pid == child.pid() ? child_comm : "<...>");
    }

    if (use_fgraph) {
        auto ks = read_file("/proc/kallsyms");
        if (!ks) return fail(ks.error());
        SymbolTable syms = SymbolTable::from_kallsyms(*ks);
        meta["unresolved_functions"] = syms.resolve(st);
    }
    return res;
}

}  // namespace nvtrace::tracer
