// Slurm's facts of a job in its record (record::slurm_facts), from the variables each rank keeps
// (is_slurm_fact) and the record's status and times. No MPI, no Slurm here.
#pragma once

#include "profiler/record/record.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace strata::profiler {

// Whether "NAME=VALUE" of the environment is one of Slurm's facts of the job that the record
// keeps: SLURM_JOB_ID, its array and het-job parts, the step, cluster, user, account,
// partition, QOS, nodes and tasks per node, and what Strata's SPANK plugin adds (STRATA_SLURM_*).
bool is_slurm_fact(const char* kv);

// The job's id from Slurm's variables (those of slurm_job_id_variables): "81234", an array
// element "81230_4", a het job's part "81240+1"; "" when not a Slurm job.
std::string slurm_job_id(const std::map<std::string, std::string>& variables);
inline constexpr std::array<const char*, 6> slurm_job_id_variables{
    "SLURM_JOB_ID",     "SLURM_ARRAY_JOB_ID",   "SLURM_ARRAY_TASK_ID",
    "SLURM_HET_JOB_ID", "SLURM_HET_JOB_OFFSET", "STRATA_SLURM_HET_PART"};

// The record's "slurm" block from the kept variables; nothing when SLURM_JOB_ID is not among
// them. `end_unix_s` is the record's end; `finalized` whether the job finalized.
std::optional<record::slurm_facts>
slurm_facts_of(const std::map<std::string, std::string>& variables, bool finalized,
               std::int64_t end_unix_s);

} // namespace strata::profiler
