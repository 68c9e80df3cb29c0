#include "slurm/step_facts.hpp"

#include <slurm/slurm.h>

#include <dlfcn.h>

#include <cstdlib>

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
  if (!het_part.empty())
    out.emplace_back("STRATA_SLURM_HET_PART", het_part);
  return out;
}

namespace {

// The job ids in a heterogeneous job's id set: "47-48", "47,49" or a mix.
std::vector<std::uint32_t> ids_of(const char* set) {
  std::vector<std::uint32_t> ids;
  if (set == nullptr)
    return ids;
  const char* p = set;
  while (*p != '\0') {
    char* end = nullptr;
    const unsigned long first = std::strtoul(p, &end, 10);
    if (end == p)
      break;
    unsigned long last = first;
    p = end;
    if (*p == '-') {
      last = std::strtoul(p + 1, &end, 10);
      p = end;
    }
    for (unsigned long id = first; id <= last && ids.size() < 4096; ++id)
      ids.push_back(static_cast<std::uint32_t>(id));
    if (*p != ',')
      break;
    ++p;
  }
  return ids;
}

// Whether another component of the step's heterogeneous job runs a step of the same id: Slurm
// numbers a heterogeneous job's steps once for all components, so only a step over several
// components (`srun A : B`) appears in more than one.
bool step_spans_components(const slurm_job_info_t& job, std::uint32_t step_id) {
  using steps_fn =
      int (*)(time_t, std::uint32_t, std::uint32_t, job_step_info_response_msg_t**, std::uint16_t);
  using free_fn = void (*)(job_step_info_response_msg_t*);
  const auto steps = reinterpret_cast<steps_fn>(::dlsym(RTLD_DEFAULT, "slurm_get_job_steps"));
  const auto release =
      reinterpret_cast<free_fn>(::dlsym(RTLD_DEFAULT, "slurm_free_job_step_info_response_msg"));
  if (steps == nullptr || release == nullptr)
    return true; // not known: the whole job's name, as Slurm gives it
  for (const std::uint32_t other : ids_of(job.het_job_id_set)) {
    if (other == job.job_id)
      continue;
    job_step_info_response_msg_t* answer = nullptr;
    if (steps(0, other, step_id, &answer, SHOW_ALL) != 0 || answer == nullptr)
      return true;
    const bool found = answer->job_step_count > 0;
    release(answer);
    if (found)
      return true;
  }
  return false;
}

} // namespace

step_facts load_step_facts(std::uint32_t job_id, std::uint32_t step_id) {
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
    constexpr std::uint32_t first_special_step = 0xfffffff0U; // batch, interactive, extern...
    if (job.het_job_id != 0 && job.het_job_id != NO_VAL && job.het_job_offset != NO_VAL &&
        step_id < first_special_step && !step_spans_components(job, step_id))
      facts.het_part = std::to_string(job.het_job_id) + "+" + std::to_string(job.het_job_offset);
  }
  release(message);
  return facts;
}

} // namespace strata::slurm
