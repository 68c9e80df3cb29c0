// Wasted MPI time of a job, from its record alone, with the reason in one sentence: the time
// over the machine model where the overhead module measured it (its call sites' wasted_s), else
// the time ranks spent waiting in routines every rank called, beyond the least busy rank's time
// in them (what a bulk-synchronous program loses to imbalance). The ranking of a period's jobs,
// users and programs by it (waste_ranking).
#pragma once

#include "profiler/record/record.hpp"
#include "site/lists.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace strata::site {
class store;
}

namespace strata::web {

struct job_waste {
  double wasted_s = 0; // summed over ranks: core-seconds
  double mpi_s = 0;    // the record's MPI time, summed over ranks
  std::string basis;   // "model" (over the machine model), "imbalance" (waiting), "none"
  std::string why;     // one sentence
};

job_waste waste_of(const record::job_record& r);

// Jobs' waste and program by job id: a job's record never changes once stored.
class waste_cache {
public:
  struct entry {
    job_waste waste;
    std::int64_t program_id = 0;
    std::string program;    // executable and arguments
    std::string executable; // alone, for a search of the jobs list
  };
  bool find(std::int64_t job_id, entry& out);
  void put(std::int64_t job_id, entry e);

private:
  std::mutex mutex_;
  std::map<std::int64_t, entry> entries_;
};

// The jobs of `filter` (its period and owner) ranked by wasted core-hours, with the users and
// programs of the jobs looked at ranked the same way. Waste is at most a job's MPI time: jobs
// are looked at by MPI time, most first, until no job left can enter the first `top`, or
// `max_looked_at` were read (the answer says which).
nlohmann::json waste_ranking(site::store& db, site::job_filter filter, waste_cache& cache,
                             std::int64_t top = 50, std::int64_t max_looked_at = 1000);

} // namespace strata::web
