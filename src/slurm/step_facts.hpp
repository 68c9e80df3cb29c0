// The facts of a Slurm job that its tasks' environment does not carry (account, QOS and the
// time limit without accounting, the job's start), asked of slurmctld once per step by the
// SPANK plugin and handed to the tasks it sets up as STRATA_SLURM_* variables, which the job
// record keeps (docs/job-record.md, "slurm").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::slurm {

struct step_facts {
  std::string account, qos, partition;
  std::int64_t time_limit_s = -1; // -1: none (unlimited) or not known
  std::int64_t start_s = 0;       // the job's start, Unix seconds; 0: not known
  // "<leader>+<offset>" when the step runs in one component of a heterogeneous job (`srun
  // --het-group=N` in a batch script): Slurm 22.05 tells such a step's tasks only the leader's
  // id. Empty for a step over every component (`srun A : B`), which is the whole job's.
  std::string het_part;
  std::vector<std::pair<std::string, std::string>> environment() const;
};

// Through libslurm's slurm_load_job, found in the process (slurmstepd has it): no link to
// libslurm, whose second copy in slurmstepd would not share its state. Empty when unknown.
// `job_id` is the id slurmstepd runs the step under (a heterogeneous job's component's own id).
step_facts load_step_facts(std::uint32_t job_id, std::uint32_t step_id);

} // namespace strata::slurm
