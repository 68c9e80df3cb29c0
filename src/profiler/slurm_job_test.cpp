#include "profiler/slurm_job.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace strata::profiler {
namespace {

TEST(SlurmJob, KeepsSlurmsFactsOnly) {
  EXPECT_TRUE(is_slurm_fact("SLURM_JOB_ID=81234"));
  EXPECT_TRUE(is_slurm_fact("SLURM_JOB_ACCOUNT=chem"));
  EXPECT_TRUE(is_slurm_fact("STRATA_SLURM_TIME_LIMIT_S=60"));
  EXPECT_FALSE(is_slurm_fact("SLURM_JOB_IDX=1"));            // only the names themselves
  EXPECT_FALSE(is_slurm_fact("SLURM_SRUN_COMM_PORT=38333")); // the launch's wiring
  EXPECT_FALSE(is_slurm_fact("SLURM_PROCID=3"));             // differs per rank
}

TEST(SlurmJob, IdsOfArrayElementsAndHetJobParts) {
  EXPECT_EQ(slurm_job_id({}), "");
  EXPECT_EQ(slurm_job_id({{"SLURM_JOB_ID", "81234"}}), "81234");
  EXPECT_EQ(slurm_job_id({{"SLURM_JOB_ID", "81234"},
                          {"SLURM_ARRAY_JOB_ID", "81230"},
                          {"SLURM_ARRAY_TASK_ID", "4"}}),
            "81230_4");
  EXPECT_EQ(slurm_job_id({{"SLURM_JOB_ID", "81241"},
                          {"SLURM_HET_JOB_ID", "81240"},
                          {"SLURM_HET_JOB_OFFSET", "1"}}),
            "81240+1");
  // Slurm 22.05 names a component's step by the leader alone; the plugin adds which component.
  EXPECT_EQ(slurm_job_id({{"SLURM_JOB_ID", "81240"}, {"STRATA_SLURM_HET_PART", "81240+1"}}),
            "81240+1");
  EXPECT_TRUE(is_slurm_fact("STRATA_SLURM_HET_PART=81240+1"));
}

TEST(SlurmJob, FactsAndTheTimeLimit) {
  std::map<std::string, std::string> v{{"SLURM_JOB_ID", "7"},
                                       {"SLURM_STEP_ID", "0"},
                                       {"SLURM_JOB_PARTITION", "debug"},
                                       {"STRATA_SLURM_PARTITION", "other"},
                                       {"STRATA_SLURM_ACCOUNT", "chem"},
                                       {"SLURM_JOB_NUM_NODES", "2"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                       {"STRATA_SLURM_TIME_LIMIT_S", "60"},
                                       {"STRATA_SLURM_JOB_START", "1000"}};
  auto s = slurm_facts_of(v, false, 1061);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job_id, "7");
  EXPECT_EQ(s->step, "0");
  EXPECT_EQ(s->partition, "debug"); // Slurm's own variable wins
  EXPECT_EQ(s->account, "chem");
  EXPECT_EQ(s->nodes, 2u);
  EXPECT_EQ(s->tasks_per_node, "2(x2)");
  EXPECT_EQ(s->time_limit_s, 60);
  EXPECT_TRUE(s->ended_by_time_limit);
  // No QOS: absent, with the reason (the plugin asked slurmctld), never "".
  EXPECT_FALSE(s->qos);
  EXPECT_EQ(s->qos_unknown, "slurmctld gave the job no QOS (Slurm keeps QOS only with accounting "
                            "storage, slurmdbd)");
  v["STRATA_SLURM_QOS"] = "normal";
  EXPECT_EQ(slurm_facts_of(v, false, 1061)->qos, "normal");
  EXPECT_FALSE(slurm_facts_of(v, false, 1061)->qos_unknown);
  v.erase("STRATA_SLURM_QOS");
  EXPECT_FALSE(slurm_facts_of(v, false, 1059)->ended_by_time_limit); // before the limit
  EXPECT_FALSE(slurm_facts_of(v, true, 1061)->ended_by_time_limit);  // it finalized
  v.erase("STRATA_SLURM_TIME_LIMIT_S");
  EXPECT_FALSE(slurm_facts_of(v, false, 5000)->ended_by_time_limit); // no limit known
  EXPECT_FALSE(slurm_facts_of({{"PBS_JOBID", "1"}}, false, 0));
}

} // namespace
} // namespace strata::profiler
