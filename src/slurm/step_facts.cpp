#include "slurm/step_facts.hpp"

#include <slurm/slurm.h>

#include <dlfcn.h>

namespace strata::slurm {

std::vector<std::pair<std::string, std::string>> step_facts::environment() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!account.empty())
    out.emplace_back("STRATA_SLURM_ACCOUNT", account);
  if (!qos.empty())
    out.emplace_back("STRATA_SLURM_QOS", qos);
  if (!partition.empty())
    out.emplace_back("STRATA_SLURM_PARTITION", partition);
  if (time_limit_s >= 0)
    out.emplace_back("STRATA_SLURM_TIME_LIMIT_S", std::to_string(time_limit_s));
  if (start_s > 0)
    out.emplace_back("STRATA_SLURM_JOB_START", std::to_string(start_s));
  return out;
}

step_facts load_step_facts(std::uint32_t job_id) {
  step_facts facts;
  using load_fn = int (*)(job_info_msg_t**, std::uint32_t, std::uint16_t);
  using free_fn = void (*)(job_info_msg_t*);
  const auto load = reinterpret_cast<load_fn>(::dlsym(RTLD_DEFAULT, "slurm_load_job"));
  const auto release = reinterpret_cast<free_fn>(::dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg"));
  if (load == nullptr || release == nullptr)
    return facts;
  job_info_msg_t* message = nullptr;
  if (load(&message, job_id, SHOW_ALL) != 0 || message == nullptr)
    return facts;
  if (message->record_count > 0) {
    const slurm_job_info_t& job = message->job_array[0];
    facts.account = job.account != nullptr ? job.account : "";
    facts.qos = job.qos != nullptr ? job.qos : "";
    facts.partition = job.partition != nullptr ? job.partition : "";
    if (job.time_limit != INFINITE && job.time_limit != NO_VAL)
      facts.time_limit_s = static_cast<std::int64_t>(job.time_limit) * 60;
    facts.start_s = static_cast<std::int64_t>(job.start_time);
  }
  release(message);
  return facts;
}

} // namespace strata::slurm
