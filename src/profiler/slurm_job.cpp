#include "profiler/slurm_job.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace strata::profiler {

namespace {
const char* const slurm_facts_kept[] = {"SLURM_JOB_ID",
                                        "SLURM_ARRAY_JOB_ID",
                                        "SLURM_ARRAY_TASK_ID",
                                        "SLURM_HET_JOB_ID",
                                        "SLURM_HET_JOB_OFFSET",
                                        "SLURM_STEP_ID",
                                        "SLURM_CLUSTER_NAME",
                                        "SLURM_JOB_USER",
                                        "SLURM_JOB_ACCOUNT",
                                        "SLURM_JOB_PARTITION",
                                        "SLURM_JOB_QOS",
                                        "SLURM_JOB_NUM_NODES",
                                        "SLURM_JOB_NODELIST",
                                        "SLURM_STEP_TASKS_PER_NODE",
                                        "SLURM_TASKS_PER_NODE",
                                        "STRATA_SLURM_ACCOUNT",
                                        "STRATA_SLURM_QOS",
                                        "STRATA_SLURM_PARTITION",
                                        "STRATA_SLURM_TIME_LIMIT_S",
                                        "STRATA_SLURM_JOB_START",
                                        "STRATA_SLURM_HET_PART"};

std::string value_of(const std::map<std::string, std::string>& variables, const char* name) {
  const auto it = variables.find(name);
  return it != variables.end() ? it->second : std::string();
}

std::optional<std::int64_t> number_of(const std::string& text) {
  if (text.empty())
    return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0')
    return std::nullopt;
  return n;
}

// What Slurm (or the plugin, from slurmctld) says; the plugin's answer when the task lacks it.
std::string either(const std::map<std::string, std::string>& variables, const char* slurm,
                   const char* plugin) {
  std::string v = value_of(variables, slurm);
  return v.empty() ? value_of(variables, plugin) : v;
}
} // namespace

bool is_slurm_fact(const char* kv) {
  for (const char* name : slurm_facts_kept) {
    const size_t n = std::strlen(name);
    if (std::strncmp(kv, name, n) == 0 && kv[n] == '=')
      return true;
  }
  return false;
}

std::string slurm_job_id(const std::map<std::string, std::string>& variables) {
  std::string job = value_of(variables, "SLURM_JOB_ID");
  if (job.empty())
    return {};
  const std::string array = value_of(variables, "SLURM_ARRAY_JOB_ID");
  const std::string task = value_of(variables, "SLURM_ARRAY_TASK_ID");
  if (!array.empty() && !task.empty())
    return array + "_" + task;
  const std::string het = value_of(variables, "SLURM_HET_JOB_ID");
  const std::string offset = value_of(variables, "SLURM_HET_JOB_OFFSET");
  if (!het.empty() && !offset.empty())
    return het + "+" + offset;
  // A step in one component of a heterogeneous job: Slurm names only the leader, the plugin
  // asked slurmctld which component.
  if (std::string part = value_of(variables, "STRATA_SLURM_HET_PART"); !part.empty())
    return part;
  return job;
}

std::optional<record::slurm_facts>
slurm_facts_of(const std::map<std::string, std::string>& variables, bool finalized,
               std::int64_t end_unix_s) {
  record::slurm_facts s;
  s.job_id = slurm_job_id(variables);
  if (s.job_id.empty())
    return std::nullopt;
  s.step = value_of(variables, "SLURM_STEP_ID");
  if (s.step == "4294967291") // SLURM_BATCH_SCRIPT
    s.step = "batch";
  s.cluster = value_of(variables, "SLURM_CLUSTER_NAME");
  s.user = value_of(variables, "SLURM_JOB_USER");
  s.account = either(variables, "SLURM_JOB_ACCOUNT", "STRATA_SLURM_ACCOUNT");
  s.partition = either(variables, "SLURM_JOB_PARTITION", "STRATA_SLURM_PARTITION");
  if (std::string qos = either(variables, "SLURM_JOB_QOS", "STRATA_SLURM_QOS"); !qos.empty())
    s.qos = std::move(qos);
  // Slurm sets no SLURM_JOB_QOS in a task; the plugin asks slurmctld (its answer's start time
  // says it did), which has a QOS only where accounting storage (slurmdbd) keeps them.
  else if (!value_of(variables, "STRATA_SLURM_JOB_START").empty())
    s.qos_unknown = "slurmctld gave the job no QOS (Slurm keeps QOS only with accounting "
                    "storage, slurmdbd)";
  else
    s.qos_unknown = "Slurm did not say (no SLURM_JOB_QOS, and Strata's SPANK plugin did not set "
                    "the task up)";
  if (const auto nodes = number_of(value_of(variables, "SLURM_JOB_NUM_NODES")); nodes && *nodes > 0)
    s.nodes = static_cast<std::uint64_t>(*nodes);
  s.node_list = value_of(variables, "SLURM_JOB_NODELIST");
  s.tasks_per_node = either(variables, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
  s.time_limit_s = number_of(value_of(variables, "STRATA_SLURM_TIME_LIMIT_S"));
  const auto start = number_of(value_of(variables, "STRATA_SLURM_JOB_START"));
  s.ended_by_time_limit =
      !finalized && s.time_limit_s && start && *start > 0 && end_unix_s >= *start + *s.time_limit_s;
  return s;
}

} // namespace strata::profiler
