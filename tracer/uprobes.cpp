#include "uprobes.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "stderr_note.hpp"
#include "tracefs_cxx.h"

namespace nvtrace::tracer {

namespace {

constexpr const char* kJournalPrefix = "uprobes-";

bool ident_char(char c, bool first) {
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    return first ? alpha : alpha || (c >= '0' && c <= '9');
}

std::string errno_text(int e) {
    return std::strerror(e);
}

// The kernel's reason, when error_log has one, as " (reason)".
std::string kernel_reason() {
    std::string why = kernel_error(nullptr);
    return why.empty() ? "" : " (" + why + ")";
}

tracefs_dynevent* alloc_event(std::string_view group, const UprobeDef& d) {
    std::string g(group);
    const char* args = d.fetchargs.empty() ? nullptr : d.fetchargs.c_str();
    return d.is_return ? tracefs_uretprobe_alloc(g.c_str(), d.event.c_str(), d.path.c_str(), d.offset, args)
                       : tracefs_uprobe_alloc(g.c_str(), d.event.c_str(), d.path.c_str(), d.offset, args);
}

// The probe GROUP/EVENT as the kernel lists it now, or nullptr (caller frees).
tracefs_dynevent* find_event(const std::string& group, const std::string& event, bool is_return) {
    return tracefs_dynevent_get(is_return ? TRACEFS_DYNEVENT_URETPROBE : TRACEFS_DYNEVENT_UPROBE, group.c_str(),
                                event.c_str());
}

// Removes one probe (disabling it in every instance first: an enabled probe cannot be removed). "" on success.
std::string destroy_event(tracefs_dynevent* ev, const std::string& group, const std::string& event, bool is_return) {
    tracefs_error_clear(nullptr);
    if (tracefs_dynevent_destroy(ev, true) == 0) return {};
    int e = errno;
    std::string why = kernel_reason();
    // Gone already (removed by hand, or a retry): nothing is left to remove.
    if (tracefs_dynevent* still = find_event(group, event, is_return); still) {
        tracefs_dynevent_free(still);
        return fmt::format("cannot remove uprobe {}/{}: {}{}", group, event, errno_text(e), why);
    }
    return {};
}

}  // namespace

std::string uprobe_definition(std::string_view group, const UprobeDef& d) {
    std::string s = fmt::format("{}:{}/{} {}:0x{:x}", d.is_return ? 'r' : 'p', group, d.event, d.path, d.offset);
    if (!d.fetchargs.empty()) s += " " + d.fetchargs;
    return s;
}

bool is_probe_identifier(std::string_view name) {
    if (name.empty() || name.size() > kMaxEventName) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (!ident_char(name[i], i == 0)) return false;
    return true;
}

std::string uprobe_group(int pid, std::string_view tag) {
    return tag.empty() ? fmt::format("nvtrace_{}", pid) : fmt::format("nvtrace_{}_{}", pid, tag);
}

std::optional<int> uprobe_group_owner(std::string_view group) {
    constexpr std::string_view prefix = "nvtrace_";
    if (group.substr(0, prefix.size()) != prefix || !is_probe_identifier(group)) return std::nullopt;
    std::string_view rest = group.substr(prefix.size());
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9')
        ++digits;
    if (digits == 0 || digits > 9 || rest[0] == '0') return std::nullopt;
    if (digits < rest.size() && (rest[digits] != '_' || digits + 1 == rest.size())) return std::nullopt;
    return std::atoi(std::string(rest.substr(0, digits)).c_str());
}

Result<void> uprobes_supported() {
    if (!tracefs_file_exists(nullptr, "uprobe_events"))
        return fail(Error::environment(
            "this kernel has no uprobe events (tracefs uprobe_events is missing: CONFIG_UPROBE_EVENTS is off)"));
    return {};
}

UprobeSet::UprobeSet(std::string group, std::string journal_dir)
    : group_(std::move(group)), journal_dir_(std::move(journal_dir)) {}

UprobeSet::~UprobeSet() {
    for (const auto& line : remove_all())
        note("nvtrace: {}; run sudo nvtrace cleanup\n", line);
}

std::string UprobeSet::journal_path() const {
    return fmt::format("{}/{}{}.json", journal_dir_, kJournalPrefix, group_);
}

Result<void> UprobeSet::persist() const {
    std::error_code ec;
    std::filesystem::create_directories(journal_dir_, ec);
    nlohmann::json j;
    j["pid"] = ::getpid();
    j["group"] = group_;
    j["probes"] = nlohmann::json::array();
    for (const auto& d : defs_)
        j["probes"].push_back(
            {{"event", d.event}, {"return", d.is_return}, {"definition", uprobe_definition(group_, d)}});
    const std::string path = journal_path(), tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (!out)
            return fail(
                Error::environment(fmt::format("cannot write the uprobe journal {}: {}", tmp, errno_text(errno))));
        out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        if (!out.flush()) return fail(Error::environment(fmt::format("cannot write the uprobe journal {}", tmp)));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return fail(Error::environment(fmt::format("cannot write the uprobe journal {}: {}", path, errno_text(errno))));
    return {};
}

Result<void> UprobeSet::add(const UprobeDef& d) {
    if (!is_probe_identifier(group_))
        return fail(Error::internal(fmt::format("uprobe group '{}' is not a C identifier", group_)));
    if (!is_probe_identifier(d.event))
        return fail(Error::usage(fmt::format("uprobe event name '{}': expected a C identifier of at most {} characters",
                                             d.event, kMaxEventName)));
    if (d.path.empty() || d.path[0] != '/' || d.path.find_first_of(" \t\n") != std::string::npos)
        return fail(Error::usage(
            fmt::format("uprobe {}: expected an absolute path without white space, found '{}'", d.event, d.path)));
    for (const auto& have : defs_)
        if (have.event == d.event)
            return fail(Error::internal(fmt::format("uprobe {}/{} is defined twice", group_, d.event)));
    tracefs_dynevent* ev = alloc_event(group_, d);
    if (!ev)
        return fail(Error::environment(
            fmt::format("cannot describe uprobe {}: {}", uprobe_definition(group_, d), errno_text(errno))));
    // The journal holds the probe before the kernel does: a SIGKILL between the two leaves a journal entry for
    // a probe that may not exist, which cleanup finds gone, never a probe nobody knows about.
    defs_.push_back(d);
    events_.push_back(ev);
    if (auto r = persist(); !r) {
        defs_.pop_back();
        events_.pop_back();
        tracefs_dynevent_free(ev);
        return r;
    }
    tracefs_error_clear(nullptr);
    if (tracefs_dynevent_create(ev) != 0) {
        int e = errno;
        std::string why = kernel_reason();
        defs_.pop_back();
        events_.pop_back();
        tracefs_dynevent_free(ev);
        (void)persist();
        return fail(Error::environment(
            fmt::format("the kernel refused uprobe '{}': {}{}", uprobe_definition(group_, d), errno_text(e), why)));
    }
    return {};
}

Result<void> UprobeSet::enable(tracefs_instance* inst, std::size_t first) {
    for (std::size_t i = first; i < defs_.size(); ++i) {
        const UprobeDef& d = defs_[i];
        std::string file = fmt::format("events/{}/{}/enable", group_, d.event);
        tracefs_error_clear(inst);
        if (tracefs_instance_file_write(inst, file.c_str(), "1") < 0) {
            int e = errno;
            return fail(Error::environment(
                fmt::format("cannot enable uprobe {}/{}: {}{}", group_, d.event, errno_text(e), kernel_reason())));
        }
    }
    return {};
}

std::vector<std::string> UprobeSet::remove_all() {
    std::vector<std::string> failed;
    std::vector<UprobeDef> left_defs;
    std::vector<tracefs_dynevent*> left_events;
    for (std::size_t i = defs_.size(); i-- > 0;) {
        std::string err = destroy_event(events_[i], group_, defs_[i].event, defs_[i].is_return);
        if (err.empty()) {
            tracefs_dynevent_free(events_[i]);
            continue;
        }
        failed.push_back(std::move(err));
        left_defs.insert(left_defs.begin(), defs_[i]);
        left_events.insert(left_events.begin(), events_[i]);
    }
    bool had = !defs_.empty();
    defs_ = std::move(left_defs);
    events_ = std::move(left_events);
    if (defs_.empty()) {
        if (had) ::unlink(journal_path().c_str());
    } else {
        (void)persist();
    }
    return failed;
}

namespace {

struct JournaledProbe {
    std::string group, event;
    bool is_return = false;
};

// Removes GROUP/EVENT when it exists and was not handled yet (`seen`).
void remove_listed(const JournaledProbe& p, bool dry_run, std::vector<CleanupAction>& out,
                   std::set<std::string>& seen) {
    if (!seen.insert(fmt::format("{}/{}/{}", p.group, p.event, p.is_return)).second) return;
    tracefs_dynevent* ev = find_event(p.group, p.event, p.is_return);
    if (!ev) return;  // journaled but never created (killed in between), or already removed
    CleanupAction a{fmt::format("remove uprobe {}/{}", p.group, p.event), false, ""};
    if (!dry_run) {
        a.error = destroy_event(ev, p.group, p.event, p.is_return);
        a.done = a.error.empty();
    }
    tracefs_dynevent_free(ev);
    out.push_back(std::move(a));
}

}  // namespace

std::vector<CleanupAction> cleanup_uprobes(bool dry_run, std::vector<std::string>& kept,
                                           const std::string& journal_dir) {
    std::vector<CleanupAction> out;
    std::set<std::string> seen;
    if (!tracefs_file_exists(nullptr, "uprobe_events")) return out;
    // 1. The journals of runs that have ended.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(journal_dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kJournalPrefix, 0) != 0 || entry.path().extension() != ".json") continue;
        std::ifstream in(entry.path());
        auto j = nlohmann::json::parse(in, nullptr, false);
        if (j.is_discarded() || !j.contains("pid") || !j["pid"].is_number_integer() || !j.contains("group") ||
            !j["group"].is_string() || !j.contains("probes") || !j["probes"].is_array()) {
            out.push_back({fmt::format("read uprobe journal {}", entry.path().string()), false,
                           "not a journal nvtrace wrote (expected pid, group and probes); inspect it by hand"});
            continue;
        }
        const int pid = j["pid"].get<int>();
        const std::string group = j["group"].get<std::string>();
        if (nvtrace_owner_running(pid, made_boot_ns(entry.path().string()))) {
            kept.push_back(fmt::format("uprobes {} of running nvtrace pid {}", group, pid));
            continue;
        }
        // A journal can only name probes of an nvtrace group: nothing it says removes another tool's probe.
        if (!uprobe_group_owner(group)) {
            out.push_back({fmt::format("read uprobe journal {}", entry.path().string()), false,
                           fmt::format("group '{}' is not an nvtrace group; left alone", group)});
            continue;
        }
        bool ok = true;
        for (const auto& p : j["probes"]) {
            if (!p.is_object() || !p.contains("event") || !p["event"].is_string()) continue;
            JournaledProbe jp{group, p["event"].get<std::string>(), p.value("return", false)};
            std::size_t before = out.size();
            remove_listed(jp, dry_run, out, seen);
            if (out.size() > before && !out.back().done && !dry_run) ok = false;
        }
        if (!dry_run && ok) std::filesystem::remove(entry.path(), ec);
    }
    // 2. Probes still in a group of an nvtrace that has ended (a journal lost with /run, a copy of this run's).
    tracefs_dynevent** all = tracefs_dynevent_get_all(TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE, nullptr);
    for (tracefs_dynevent** e = all; e && *e; ++e) {
        char* system = nullptr;
        char* event = nullptr;
        enum tracefs_dynevent_type type = tracefs_dynevent_info(*e, &system, &event, nullptr, nullptr, nullptr);
        std::string g = system ? system : "", ev = event ? event : "";
        std::free(system);
        std::free(event);
        auto owner = uprobe_group_owner(g);
        if (!owner) continue;  // another tool's probe
        if (nvtrace_owner_running(*owner)) {
            kept.push_back(fmt::format("uprobe {}/{} of running nvtrace pid {}", g, ev, *owner));
            continue;
        }
        remove_listed({g, ev, type == TRACEFS_DYNEVENT_URETPROBE}, dry_run, out, seen);
    }
    tracefs_dynevent_list_free(all);
    return out;
}

}  // namespace nvtrace::tracer
