// nvtrace run --out PATTERN and the Slurm job step of the environment (nvtrace/fleet.hpp, docs/run.md).
//
// The variables are those Slurm sets for every task of a job step (srun(1) and sbatch(1), "OUTPUT ENVIRONMENT
// VARIABLES"): SLURM_JOB_ID, SLURM_STEP_ID (SLURM_STEPID kept for backward compatibility), SLURMD_NODENAME (the
// node the task runs on, as slurm.conf names it: one host may run several slurmd with -N NAME), SLURM_PROCID
// (the task's rank), SLURM_LOCALID (its rank on the node), SLURM_NODEID, SLURM_JOB_NAME, SLURM_CLUSTER_NAME.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "nvtrace/fleet.hpp"

namespace nvtrace {

namespace {

std::optional<std::string> lookup(const EnvLookup& env, const char* name) {
    if (!env) return std::nullopt;
    const char* v = env(name);
    if (!v || !*v) return std::nullopt;  // set but empty names nothing either
    return std::string(v);
}

}  // namespace

Result<std::string> expand_out_pattern(std::string_view pattern, const OutPatternContext& context) {
    std::string out;
    auto bad = [&](const std::string& why) { return fail(Error::usage(fmt::format("--out {}: {}", pattern, why))); };
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        char c = pattern[i];
        if (c != '%') {
            out += c;
            continue;
        }
        if (i + 1 == pattern.size())
            return bad("a '%' at the end (write %% for a '%'; the patterns: %j %s %n %h %p %%)");
        char k = pattern[++i];
        std::string value;
        const char* what = "";
        switch (k) {
            case '%':
                out += '%';
                continue;
            case 'j':
                what = "SLURM_JOB_ID";
                value = lookup(context.env, "SLURM_JOB_ID").value_or("");
                if (value.empty())
                    return bad(
                        "%j needs SLURM_JOB_ID, which is not set (not inside a Slurm job? run it under srun "
                        "or sbatch)");
                break;
            case 's':
                what = "SLURM_STEP_ID";
                value = lookup(context.env, "SLURM_STEP_ID").value_or("");
                if (value.empty()) value = lookup(context.env, "SLURM_STEPID").value_or("");
                if (value.empty())
                    return bad(
                        "%s needs SLURM_STEP_ID, which is not set (not inside a Slurm job step? run it "
                        "under srun)");
                break;
            case 'n':
                what = "SLURMD_NODENAME";
                value = lookup(context.env, "SLURMD_NODENAME").value_or("");
                if (value.empty()) {
                    what = "the host name";
                    if (context.host.empty()) return bad("%n: neither SLURMD_NODENAME nor the host name is known");
                    value = context.host.substr(0, context.host.find('.'));
                }
                break;
            case 'h':
                what = "the host name";
                if (context.host.empty()) return bad("%h: the host name is not known");
                value = context.host;
                break;
            case 'p':
                what = "the pid";
                value = std::to_string(context.pid);
                break;
            default:
                return bad(
                    fmt::format("unknown '%{}' (the patterns: %j job id, %s step id, %n node, %h host, "
                                "%p pid, %% a '%')",
                                k));
        }
        if (value.find('/') != std::string::npos || value == "." || value == "..")
            return bad(fmt::format("%{}: {} is '{}', which would name another directory", k, what, value));
        out += value;
    }
    return out;
}

std::map<std::string, std::string> slurm_environment(const EnvLookup& env) {
    std::map<std::string, std::string> j;
    static constexpr std::pair<const char*, const char*> kVars[] = {
        {"job_id", "SLURM_JOB_ID"},     {"step_id", "SLURM_STEP_ID"},       {"node", "SLURMD_NODENAME"},
        {"task_id", "SLURM_PROCID"},    {"local_task_id", "SLURM_LOCALID"}, {"node_id", "SLURM_NODEID"},
        {"job_name", "SLURM_JOB_NAME"}, {"cluster", "SLURM_CLUSTER_NAME"},
    };
    for (const auto& [key, var] : kVars)
        if (auto v = lookup(env, var)) j[key] = *v;
    if (!j.count("step_id"))
        if (auto v = lookup(env, "SLURM_STEPID")) j["step_id"] = *v;
    return j;
}

}  // namespace nvtrace
