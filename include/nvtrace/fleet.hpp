// nvtrace/fleet.hpp: many nodes' reports side by side (`nvtrace fleet`, docs/fleet.md), and the capture
// directory pattern of `nvtrace run --out` that puts one capture per node of a Slurm job (docs/run.md).
//
// A fleet is read as a stream: each report is read (read_report_file), reduced to a NodeDigest (a few hundred
// bytes plus one entry per distinct ioctl request, Xid, kernel-log error kind and check), and dropped before the
// next is read. Only two whole reports are ever held again: an outlier group's representative and the majority's,
// for the call-tree diff (diff_reports), one pair at a time.
//
// The signature that groups nodes (NodeSignature) holds only what does not depend on timing:
//   - the call paths: each call's path from its root of normalised frames (normalise_symbol: clone suffixes and
//     "[module]" stripped), an interrupt's subtree under the pseudo-root "[irq]" as `nvtrace diff` lifts it,
//     with the number of calls of each path;
//   - the ioctl sequences: for each thread, the requests it made in the order it made them, each as
//     "DEVICE REQUEST[ hclass=0x..][ ctrl=0x..]", repeats run-length counted ("pipe FIONREAD x3"); the threads'
//     sequences sorted, so thread ids and the interleaving of threads do not count.
//   - the API call sequences (Report::api_calls): for each thread, its API calls in entry order, each as its path
//     of API functions ("cudaMalloc > cuMemAlloc_v2"), repeats run-length counted, the threads' sequences sorted;
//     none for a report without API calls (its hash is unchanged).
// DEVICE is the fd's file with a pipe/socket/anon inode number dropped ("pipe:[5993]" -> "pipe"), "fd?" when the
// file is unknown; REQUEST is the decoded name, else the number in hex. Left out: durations, timestamps, pids,
// CPUs, return values and errors (shown per node, but an EAGAIN is not a different path), API call results, markers,
// kernel log.
//
// Thread-safety: pure functions on value types; the readers open only the files they are given.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/diff.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

inline constexpr const char* kFleetSchema = "nvtrace.fleet/1";

// ---- nvtrace run --out PATTERN --------------------------------------------------------------------------------

// getenv's shape: the value of a variable, nullptr when it is not set.
using EnvLookup = std::function<const char*(const char*)>;

struct OutPatternContext {
    EnvLookup env;     // SLURM_JOB_ID, SLURM_STEP_ID (or the older SLURM_STEPID), SLURMD_NODENAME
    std::string host;  // gethostname()
    long pid = 0;      // nvtrace's own pid
};

// Expands --out PATTERN: %j SLURM_JOB_ID, %s SLURM_STEP_ID, %n SLURMD_NODENAME (else the host name up to its
// first '.'), %h the host name, %p the pid, %% a '%'. Errors (ExitCode::usage) name the pattern: "%j needs
// SLURM_JOB_ID, which is not set (not inside a Slurm job step?)", an unknown "%x", a '%' at the end, a value that
// holds '/' or is "." or ".." (it would name another directory). A pattern without '%' is returned as it is.
Result<std::string> expand_out_pattern(std::string_view pattern, const OutPatternContext& context);

// The Slurm job step the process runs in, from its environment (Slurm's srun/sbatch "OUTPUT ENVIRONMENT
// VARIABLES"): {"job_id": SLURM_JOB_ID, "step_id": SLURM_STEP_ID, "node": SLURMD_NODENAME, "task_id": SLURM_PROCID,
// "local_task_id": SLURM_LOCALID, "node_id": SLURM_NODEID, "job_name": SLURM_JOB_NAME, "cluster":
// SLURM_CLUSTER_NAME}, each only when set (strings, as Slurm writes them); an empty object when none is.
std::map<std::string, std::string> slurm_environment(const EnvLookup& env);

// ---- the per-node digest ---------------------------------------------------------------------------------------

struct FleetIoctlStats {
    std::uint64_t count = 0;
    std::uint64_t errors = 0;                       // ret < 0, or an RM/UVM status other than NV_OK / 0x0
    std::map<std::string, std::uint64_t> by_error;  // "ENOTTY", "-25", "NV_ERR_INVALID_ARGUMENT" -> calls
};

struct NodeSignature {
    std::uint64_t hash = 0;        // XXH3-64 of the canonical text of the paths and sequences below
    std::uint64_t call_paths = 0;  // distinct call paths
    std::uint64_t calls = 0;       // calls counted in the paths
    std::uint64_t threads = 0;     // threads that made ioctls
    std::uint64_t ioctls = 0;      // ioctls in the sequences
};

struct NodeDigest {
    std::string report;     // the report.json read
    std::string node;       // environment.slurm.node, else environment.host, else the report's directory name
    std::string node_from;  // "slurm", "host" or "directory"
    std::optional<std::string> driver;   // NVIDIA driver version as check_environment reads it; nullopt: unknown
    std::optional<std::string> flavour;  // "open" / "proprietary"
    std::optional<std::string> kernel;   // environment.kernel (the release)
    // The program's result: "exit N", "signal N", "cannot run: REASON" (a scenario that said so), "unknown (no
    // meta.json beside the report)"; plus ", timed out".
    std::string result;
    bool checks_from_expect = false;  // the checks are fleet's --expect run, not the report's own
    CheckSummary checks;
    std::vector<std::string> failed_checks;            // ids
    std::vector<std::string> inconclusive_checks;      // ids
    std::map<std::string, std::uint64_t> xids;         // Xid number -> messages
    std::map<std::string, std::uint64_t> nvrm_errors;  // kernel-log kind of a driver error -> messages
    std::uint64_t ioctls = 0, ioctl_errors = 0;
    std::map<std::string, FleetIoctlStats> ioctl_requests;  // "DEVICE REQUEST" -> stats
    std::uint64_t calls = 0;
    bool complete = true;
    std::vector<std::string> incomplete;  // completeness.reasons
    ReportEnvironment environment;        // as recorded (small: kernel, modules, driver, slurm)
    NodeSignature signature;
};

// "pipe:[5993]" -> "pipe", "/dev/nvidia0" stays, no file -> "fd?".
std::string fleet_ioctl_device(const IoctlRecord& io);
// "DEVICE REQUEST" of the signature and the tables (REQUEST: the name, else 0x%x of cmd).
std::string fleet_ioctl_key(const IoctlRecord& io);

// The signature of a report (see the top of this file).
NodeSignature node_signature(const Report& report);
// The canonical text the hash is taken of: "call PATH xCOUNT" lines, sorted, then one "thread SEQ" line per
// thread, sorted. For tests and `fleet --signature-text` style debugging; as large as the report's distinct paths.
std::string node_signature_text(const Report& report);

// How the program ended, as the meta.json beside a report says (docs/formats.md "Capture directory": exit_code,
// signal, timed_out); a member is nullopt (false) where meta.json does not say, or says it with another type.
struct ProgramEnd {
    std::optional<std::int64_t> exit_code;
    std::optional<std::int64_t> signal;  // the signal number that ended it, when no exit code is given
    bool timed_out = false;              // nvtrace ended it at --timeout
};

// The digest of one report. `program`: from the meta.json beside it, nullptr when there is none. `expectations`:
// when given, the checks are run on the report (check_report) and replace the report's own.
NodeDigest digest_report(const Report& report, const std::string& report_path, const ProgramEnd* program,
                         const ExpectFile* expectations);

// ---- the fleet ------------------------------------------------------------------------------------------------

// Every report.json named or found below the given paths (directories are walked recursively, symbolic links to
// directories not followed), sorted by path, each once. Errors (ExitCode::usage): "PATH: no such file or
// directory", "DIR: no report.json below it", "PATH: not a regular file or directory".
Result<std::vector<std::string>> find_fleet_reports(const std::vector<std::string>& paths);

struct FleetOptions {
    const ExpectFile* expectations = nullptr;  // --expect
    DiffOptions diff;                          // for the outliers' call-tree diffs
    std::size_t max_diff_rows = 40;            // per outlier in the text (0 = all)
};

struct FleetGroup {
    std::string id;  // "A", "B", ... by size, largest first (ties: the group of the first node)
    std::uint64_t signature = 0;
    std::vector<std::size_t> nodes;  // indexes into FleetResult::nodes, in path order
    std::size_t representative = 0;  // its first node
};

// A value of the environment that differs between an outlier's representative and the majority's ("host" and
// "slurm.*" are left out: they name the node). Keys are flattened with '.' ("modules.nvidia.version").
struct EnvironmentChange {
    std::string key;
    // Each value as JSON text ("\"550.54.15\"", "8", "null" where absent), invalid UTF-8 replaced by U+FFFD.
    std::string majority, outlier;
};

// One request whose count or errors differ between two digests.
struct IoctlChange {
    std::string request;  // "DEVICE REQUEST"
    std::uint64_t majority_count = 0, outlier_count = 0;
    std::uint64_t majority_errors = 0, outlier_errors = 0;
};

struct OutlierComparison {
    std::size_t group = 0;  // index into FleetResult::groups
    std::vector<EnvironmentChange> environment;
    std::vector<IoctlChange> ioctls;  // by request
    std::optional<DiffResult> diff;   // call trees; nullopt when neither representative has calls
    std::string diff_note;            // why there is no diff, when there is none
};

struct FleetResult {
    std::vector<NodeDigest> nodes;  // in path order
    std::vector<FleetGroup> groups;
    // The majority: the group that holds more nodes than any other; nullopt when the largest groups tie (then
    // groups[0] is still the reference the others are compared against, and the text says so).
    std::optional<std::size_t> majority;
    std::vector<OutlierComparison> outliers;  // every group but groups[0]
    bool expect_failed = false;               // with expectations: some node has a failed check
};

// Reads every report (one at a time: digest, then drop), groups, and compares each other group's representative
// with groups[0]'s (the two reports read again for the diff). Errors: the first unreadable report (its path in
// the message, ExitCode::usage), an empty list.
Result<FleetResult> analyze_fleet(const std::vector<std::string>& reports, const FleetOptions& options);

// The groups and comparisons from digests alone (no call-tree diffs): what analyze_fleet does after reading.
FleetResult group_fleet(std::vector<NodeDigest> nodes);
std::vector<EnvironmentChange> environment_changes(const ReportEnvironment& majority, const ReportEnvironment& outlier);
std::vector<IoctlChange> ioctl_changes(const NodeDigest& majority, const NodeDigest& outlier);

// {"schema":"nvtrace.fleet/1","nodes":[...],"groups":[...],"majority":..,"outliers":[...]} (docs/fleet.md).
// Indented by one space, invalid UTF-8 replaced, no final newline.
std::string to_json_text(const FleetResult& f);

struct FleetTextOptions {
    bool colour = false;
    std::size_t max_diff_rows = 40;  // 0 = all
};
// The node table, the groups, and each outlier's comparison (docs/fleet.md).
std::string format_fleet_text(const FleetResult& f, const FleetTextOptions& options = {});

}  // namespace nvtrace
