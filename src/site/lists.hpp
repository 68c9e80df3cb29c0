// Jobs lists: filtered, sorted and paged job rows for the web interface and the reports' lists
// of critical jobs, with the query planning that keeps them fast at a million jobs (lists.cpp).
#pragma once

#include "site/period.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

class store;

// end_desc and end_asc break ties by job id (stable pages); latest orders by end time alone,
// which the period indexes deliver without sorting (reports' "latest critical jobs").
// By MPI %, CPU time, size or MPI time (summed over ranks: CPU time x MPI share, the MPI
// core-hours a job lost; no index of its own, so its matches are read and sorted): ties newest
// first. By exit code: the highest first, jobs whose code is not known last (no index either).
enum class job_order {
  end_desc,
  end_asc,
  mpi_percent_desc,
  cpu_time_desc,
  ranks_desc,
  latest,
  mpi_time_desc,
  exit_code_desc
};

struct job_filter {
  std::optional<period> when;
  std::optional<std::string> owner;      // exact owner name
  std::optional<std::string> text;       // substring of executable, or prefix of record id
  std::optional<std::string> language;   // "C/C++", "Fortran"
  std::optional<double> min_mpi_percent; // critical jobs
  std::optional<std::int64_t> min_ranks, max_ranks;
  std::optional<std::string> account, partition; // exact Slurm account, partition
  bool nonzero_exit = false;                     // only jobs whose known exit code is not 0
  job_order order = job_order::end_desc;
  std::int64_t limit = 100, offset = 0;
};

// Up to this many matches a jobs list is read through a filter's index and sorted; from
// this many, by walking the sort order's index (jobs_and_count). Sorting 200,000 entries of a
// covering index takes tens of milliseconds, while a walk of the sort order's index for an
// owner whose jobs sort late reads far more than the owner has.
inline constexpr std::int64_t list_plan_threshold = 100000;

struct job_page {
  std::vector<job_row> rows;
  std::int64_t matches = 0; // up to the cap asked for
};

std::vector<job_row> jobs(store& db, const job_filter& filter);
// A page of jobs and min(count_jobs(filter), cap). The count, bounded, comes first and decides
// how the page is read (lists.cpp, list_plan).
job_page jobs_and_count(store& db, const job_filter& filter, std::int64_t cap);
std::int64_t count_jobs(store& db, const job_filter& filter); // ignores order, limit, offset

} // namespace strata::site
