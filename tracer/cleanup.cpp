#include "cleanup.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string_view>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "procfs.hpp"
#include "runner.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"
#include "uprobes.hpp"

namespace nvtrace::tracer {

bool pid_alive(int pid) {
    return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

ProcessIdentity process_identity(int pid) {
    ProcessIdentity id;
    if (pid <= 0) return id;
    const std::string proc = fmt::format("/proc/{}", pid);
    char state = 0;
    unsigned long long start_ticks = 0;
    if (!read_proc_start(pid, state, start_ticks) || state == 'Z' || state == 'X') return id;
    const long tick = ::sysconf(_SC_CLK_TCK);
    id.start_boot_ns = static_cast<std::int64_t>(start_ticks) * (1'000'000'000LL / (tick > 0 ? tick : 100));
    id.exists = true;
    std::error_code ec;
    id.exe = std::filesystem::read_symlink(proc + "/exe", ec).string();
    if (ec) id.exe.clear();
    constexpr std::string_view deleted = " (deleted)";
    if (id.exe.size() > deleted.size() && id.exe.compare(id.exe.size() - deleted.size(), deleted.size(), deleted) == 0)
        id.exe.resize(id.exe.size() - deleted.size());
    std::ifstream comm_in(proc + "/comm");
    std::getline(comm_in, id.comm);
    return id;
}

bool owner_running(int pid, const ProcessIdentity& who, std::optional<std::int64_t> made_boot_ns, int self) {
    if (pid <= 0 || pid == self || !who.exists) return false;
    const bool nvtrace =
        who.exe.empty() ? who.comm == "nvtrace" : std::filesystem::path(who.exe).filename() == "nvtrace";
    if (!nvtrace) return false;
    // starttime is truncated to a clock tick (10 ms at USER_HZ 100) and an inode time to a jiffy (up to 10 ms):
    // a run makes its instance after it started, so its start is at most 20 ms "after" the instance's time.
    constexpr std::int64_t kSlackNs = 20'000'000;
    return !made_boot_ns || who.start_boot_ns <= *made_boot_ns + kSlackNs;
}

bool nvtrace_owner_running(int pid, std::optional<std::int64_t> made_boot_ns) {
    return owner_running(pid, process_identity(pid), made_boot_ns, ::getpid());
}

std::optional<std::int64_t> made_boot_ns(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    auto ns = [](const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec; };
    timespec real{}, boot{};
    ::clock_gettime(CLOCK_REALTIME, &real);
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    return std::min(ns(st.st_mtim), ns(st.st_ctim)) - (ns(real) - ns(boot));
}

Result<std::optional<JournalOwner>> journal_owner() {
    std::ifstream in(kJournalPath);
    if (!in) return std::optional<JournalOwner>{};
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("pid") || !j["pid"].is_number_integer())
        return fail(Error::environment(
            fmt::format("{} is not a journal nvtrace wrote (no pid); inspect it by hand", kJournalPath)));
    JournalOwner o;
    o.pid = j["pid"].get<int>();
    // The journal is written before the run's first top-level change, so its owner started before the file was.
    o.alive = nvtrace_owner_running(o.pid, made_boot_ns(kJournalPath));
    return std::optional<JournalOwner>{o};
}

namespace {

Result<void> restore_journal(CleanupResult& res, bool dry_run) {
    std::ifstream in(kJournalPath);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("files") || !j["files"].is_array())
        return fail(Error::environment(fmt::format("{}: not a readable journal", kJournalPath)));
    std::vector<std::pair<std::string, std::string>> saved;
    for (const auto& f : j["files"]) {
        if (!f.is_object() || !f.contains("file") || !f["file"].is_string() || !f.contains("content") ||
            !f["content"].is_string())
            return fail(Error::environment(fmt::format(
                "{}: not a readable journal (an entry of \"files\" is not {{file, content}})", kJournalPath)));
        saved.emplace_back(f["file"].get<std::string>(), f["content"].get<std::string>());
    }
    bool all_ok = true;
    for (const auto& [file, content] : restore_order(saved)) {
        CleanupAction a{fmt::format("restore top-level {}", file), false, ""};
        if (!dry_run) {
            auto r = restore_file(file, content);
            a.done = r.has_value();
            if (!r) {
                a.error = r.error().message;
                all_ok = false;
            }
        }
        res.actions.push_back(std::move(a));
    }
    if (!dry_run && all_ok) ::unlink(kJournalPath);
    return {};
}

int owner_of_instance(const std::string& name) {
    if (name.rfind("nvtrace-", 0) != 0) return -1;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + 8, &end, 10);
    return (end && *end == '\0' && pid > 0) ? static_cast<int>(pid) : -1;
}

}  // namespace

Result<CleanupResult> cleanup(bool dry_run) {
    if (::geteuid() != 0) return fail(Error::environment("needs root (run it with sudo)"));
    const char* dir = nullptr;
    if (tracefs_tracing_dir_is_mounted(false, &dir) != 1)
        return fail(Error::environment("tracefs is not mounted: there is no tracing state to restore"));
    CleanupResult res;
    auto owner = journal_owner();
    if (!owner) return fail(owner.error());
    if (*owner) {
        if ((*owner)->alive)
            res.kept.push_back(fmt::format("journal {} of running nvtrace pid {}", kJournalPath, (*owner)->pid));
        else if (auto r = restore_journal(res, dry_run); !r)
            return fail(r.error());
    }
    char** names = tracefs_instances("^nvtrace-");
    for (char** n = names; n && *n; ++n) {
        std::string name = *n;
        int pid = owner_of_instance(name);
        if (pid < 0) continue;
        const std::string inst_path = fmt::format("{}/instances/{}", dir, name);
        if (nvtrace_owner_running(pid, made_boot_ns(inst_path))) {
            res.kept.push_back(fmt::format("instance {} of running nvtrace pid {}", name, pid));
            continue;
        }
        // What is left of the killed run's program tree holds the instance's trace_marker (inherited as
        // NVTRACE_TRACE_MARKER_FD) and keeps it from being removed: those processes are ended first.
        const std::string inst_dir = fmt::format("{}/instances/{}", dir, name);
        const std::string marker = inst_dir + "/trace_marker";
        if (dry_run) {
            for (const auto& p : processes_holding(marker))
                res.actions.push_back(
                    {fmt::format("end pid {} ({}), left running by a killed run: it holds {}'s trace_marker", p.pid,
                                 p.comm, name),
                     false, ""});
        } else {
            for (const auto& [p, how] : end_holders(marker, std::chrono::seconds(2))) {
                CleanupAction e{fmt::format("end pid {} ({}), left running by a killed run: it holds {}'s trace_marker",
                                            p.pid, p.comm, name),
                                how != "still holds it", ""};
                if (!e.done) e.error = "still running after SIGTERM and SIGKILL (stuck in the kernel?)";
                res.actions.push_back(std::move(e));
            }
        }
        CleanupAction a{fmt::format("remove instance {}", name), false, ""};
        if (!dry_run) {
            tracefs_instance* inst = tracefs_instance_alloc(nullptr, name.c_str());
            if (!inst) {
                a.error = std::strerror(errno);
            } else {
                tracefs_trace_off(inst);
                tracefs_event_disable(inst, nullptr, nullptr);
                tracefs_tracer_clear(inst);
                // EBUSY while a process still holds one of its files open (the traced program of a killed run
                // dies with it, but not at the same instant): retry for up to a second.
                for (int tries = 0; tries < 20; ++tries) {
                    if (tracefs_instance_destroy(inst) == 0) {
                        a.done = true;
                        break;
                    }
                    a.error = std::strerror(errno);
                    if (errno != EBUSY) break;
                    ::usleep(50'000);
                }
                if (a.done) a.error.clear();
                if (!a.done && a.error == std::strerror(EBUSY)) {
                    std::vector<std::string> who;
                    for (const auto& p : processes_holding(inst_dir))
                        who.push_back(fmt::format("{} ({})", p.pid, p.comm));
                    if (!who.empty()) a.error += fmt::format(" (held open by pid {})", fmt::join(who, ", "));
                }
                tracefs_instance_free(inst);
            }
        }
        res.actions.push_back(std::move(a));
    }
    tracefs_list_free(names);
    // After the instances: a probe still enabled in a leftover instance could not be removed.
    for (auto& a : cleanup_uprobes(dry_run, res.kept))
        res.actions.push_back(std::move(a));
    return res;
}

}  // namespace nvtrace::tracer
