// uprobes.hpp: user-space probes (uprobe_events) that nvtrace creates, enables in its private instance and removes.
//
// The kernel keeps one global list of probes (uprobe_events, dynamic_events; kernel Documentation/trace/
// uprobetracer.rst); only enabling is per instance. So nvtrace creates probes only in its own group,
// nvtrace_<pid of nvtrace>[_<tag>] (a C identifier: the kernel's rule for group names, trace_probe.c
// is_good_system_name), writes each one to a journal (<journal dir>/uprobes-<group>.json) before creating it,
// and removes exactly those: on every exit path through UprobeSet's destructor, and after a SIGKILL through
// `nvtrace cleanup` (cleanup_uprobes). Probes of other groups are never created, enabled or removed.
// Probes are created through libtracefs's dynamic-event API (tracefs_uprobe_alloc, tracefs_dynevent_create;
// libtracefs 1.6.4); when the kernel refuses one, its reason from error_log is in the error.
// Thread-safety: one thread per UprobeSet; cleanup_uprobes must not run concurrently with another cleanup.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cleanup.hpp"
#include "nvtrace/error.hpp"
#include "tracefs_session.hpp"

struct tracefs_instance;
struct tracefs_dynevent;

namespace nvtrace::tracer {

// One probe point. `event` is the event's name inside the group: a C identifier of at most kMaxEventName
// characters (the kernel's MAX_EVENT_NAME_LEN less its NUL). `offset` is the file offset of the probed
// instruction in `path` (not its virtual address: uprobetracer.rst "the offset of the probepoint in the object").
struct UprobeDef {
    std::string event;
    bool is_return = false;    // r: (uretprobe: fires when the function returns; $retval is the result)
    std::string path;          // absolute path of the ELF file; no white space (the kernel splits on it)
    std::uint64_t offset = 0;  // file offset, bytes
    std::string fetchargs;     // space-separated fetch-args ("size=%si:u64 flags=%dx:x32"); "" for none
};

inline constexpr std::size_t kMaxEventName = 63;

// "p:GROUP/EVENT PATH:0xOFFSET FETCHARGS" as written to uprobe_events (and as libtracefs writes it).
std::string uprobe_definition(std::string_view group, const UprobeDef& d);

// nvtrace_<pid>, or nvtrace_<pid>_<tag> (tag: letters, digits, '_').
std::string uprobe_group(int pid, std::string_view tag = {});
// The pid in a group name nvtrace_<pid>[_<tag>]; nullopt for every other name (other tools' groups).
std::optional<int> uprobe_group_owner(std::string_view group);
// True when `name` is a valid event or group name for the kernel: [A-Za-z_][A-Za-z0-9_]*, at most kMaxEventName.
bool is_probe_identifier(std::string_view name);

// Whether this kernel has uprobe events (tracefs uprobe_events); the error says why not.
Result<void> uprobes_supported();

class UprobeSet {
public:
    // `journal_dir`: where uprobes-<group>.json is written (created when missing). Tests pass a temporary one.
    explicit UprobeSet(std::string group, std::string journal_dir = kJournalDir);
    UprobeSet(const UprobeSet&) = delete;
    UprobeSet& operator=(const UprobeSet&) = delete;
    ~UprobeSet();  // remove_all(); what could not be removed is printed to stderr

    // Journals `d`, then creates it. When the kernel refuses it, the journal entry is taken back and the
    // error carries the kernel's reason (error_log). A name already used in the group is refused.
    Result<void> add(const UprobeDef& d);
    // Enables the probes of the set from the `first`-th on (in the order added) in `inst` (events/<group>/<event>/
    // enable of that instance only): all by default; probes added later (uprobe_late.hpp) pass how many there were.
    Result<void> enable(tracefs_instance* inst, std::size_t first = 0);
    // Disables each probe in every instance and removes it, newest first; returns one line per probe that could
    // not be removed (the kernel refuses while another user, e.g. perf, holds it). The journal is deleted when
    // nothing is left. Called again, it retries what is left.
    std::vector<std::string> remove_all();

    const std::string& group() const { return group_; }
    const std::vector<UprobeDef>& probes() const { return defs_; }
    std::string journal_path() const;

private:
    Result<void> persist() const;
    std::string group_;
    std::string journal_dir_;
    std::vector<UprobeDef> defs_;
    std::vector<tracefs_dynevent*> events_;  // parallel to defs_
};

// What `nvtrace cleanup` does about probes of dead nvtrace runs: the probes named in each uprobes-*.json of a
// pid that has ended (only entries in an nvtrace_<pid> group), then any other probe left in a group
// nvtrace_<pid>[_tag] of a pid that has ended. Probes of running nvtrace processes go to `kept`.
std::vector<CleanupAction> cleanup_uprobes(bool dry_run, std::vector<std::string>& kept,
                                           const std::string& journal_dir = kJournalDir);

}  // namespace nvtrace::tracer
