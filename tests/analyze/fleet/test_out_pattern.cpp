// nvtrace run --out PATTERN (analyze/fleet/out_pattern.cpp) and the Slurm environment of a report. The variables and
// their values are those Slurm 22.05's srun set in a 3-node job on one host (docs/fleet.md, tests/slurm):
// SLURM_JOB_ID=1, SLURM_STEP_ID=0, SLURMD_NODENAME=n1..n3.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "nvtrace/fleet.hpp"

namespace nvtrace {
namespace {

struct FakeEnv {
    std::map<std::string, std::string> vars;
    EnvLookup lookup() const {
        return [this](const char* name) -> const char* {
            auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        };
    }
};

OutPatternContext context(const FakeEnv& env, std::string host = "gpu17.cluster.example", long pid = 4242) {
    return {env.lookup(), std::move(host), pid};
}

TEST(OutPattern, ExpandsEverySlurmPatternInsideAJobStep) {
    FakeEnv env{{{"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "0"}, {"SLURMD_NODENAME", "n2"}}};
    auto r = expand_out_pattern("runs/%j/%s/%n-%h-%p-100%%", context(env));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, "runs/1234/0/n2-gpu17.cluster.example-4242-100%");
}

TEST(OutPattern, WithoutPercentTheTextIsKept) {
    FakeEnv env;
    auto r = expand_out_pattern("/shared/runs/plain dir", context(env));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "/shared/runs/plain dir");
}

TEST(OutPattern, NodeFallsBackToTheShortHostNameOutsideSlurm) {
    FakeEnv env;
    auto r = expand_out_pattern("runs/%n", context(env));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, "runs/gpu17");
    // A host name without a domain is used whole.
    r = expand_out_pattern("runs/%n", context(env, "node3"));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "runs/node3");
}

TEST(OutPattern, JobIdOutsideAJobIsAnErrorNamingTheVariable) {
    FakeEnv env;
    auto r = expand_out_pattern("runs/%j/%n", context(env));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ExitCode::usage);
    EXPECT_NE(r.error().message.find("SLURM_JOB_ID"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("runs/%j/%n"), std::string::npos) << r.error().message;
}

TEST(OutPattern, StepIdUnsetIsAnErrorNamingTheVariable) {
    FakeEnv env{{{"SLURM_JOB_ID", "7"}}};  // sbatch's batch script: a job, but no srun step
    auto r = expand_out_pattern("runs/%j.%s", context(env));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("SLURM_STEP_ID"), std::string::npos) << r.error().message;
}

TEST(OutPattern, OlderStepIdVariableIsRead) {
    FakeEnv env{{{"SLURM_JOB_ID", "7"}, {"SLURM_STEPID", "3"}}};
    auto r = expand_out_pattern("%j.%s", context(env));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, "7.3");
}

TEST(OutPattern, EmptyVariableCountsAsUnset) {
    FakeEnv env{{{"SLURM_JOB_ID", ""}}};
    EXPECT_FALSE(expand_out_pattern("%j", context(env)));
}

TEST(OutPattern, UnknownPatternAndTrailingPercentAreErrors) {
    FakeEnv env;
    auto r = expand_out_pattern("runs/%x", context(env));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("'%x'"), std::string::npos) << r.error().message;
    r = expand_out_pattern("runs/50%", context(env));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("at the end"), std::string::npos) << r.error().message;
}

TEST(OutPattern, ValueThatNamesAnotherDirectoryIsRefused) {
    FakeEnv env{{{"SLURMD_NODENAME", "../etc"}}};
    auto r = expand_out_pattern("runs/%n", context(env));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("SLURMD_NODENAME"), std::string::npos) << r.error().message;
    FakeEnv dots{{{"SLURM_JOB_ID", ".."}}};
    EXPECT_FALSE(expand_out_pattern("runs/%j", context(dots)));
}

TEST(SlurmEnvironment, TakesTheJobStepNodeAndTaskIdsThatAreSet) {
    FakeEnv env{{{"SLURM_JOB_ID", "1"},
                 {"SLURM_STEP_ID", "0"},
                 {"SLURMD_NODENAME", "n3"},
                 {"SLURM_PROCID", "2"},
                 {"SLURM_LOCALID", "0"},
                 {"SLURM_NODEID", "2"},
                 {"SLURM_JOB_NAME", "nvtrace"},
                 {"HOME", "/root"}}};
    auto j = slurm_environment(env.lookup());
    EXPECT_EQ(j, (std::map<std::string, std::string>{{"job_id", "1"},
                                                     {"step_id", "0"},
                                                     {"node", "n3"},
                                                     {"task_id", "2"},
                                                     {"local_task_id", "0"},
                                                     {"node_id", "2"},
                                                     {"job_name", "nvtrace"}}));
}

TEST(SlurmEnvironment, EmptyOutsideSlurm) {
    FakeEnv env{{{"HOME", "/root"}}};
    EXPECT_TRUE(slurm_environment(env.lookup()).empty());
    EXPECT_TRUE(slurm_environment(nullptr).empty());
}

}  // namespace
}  // namespace nvtrace
