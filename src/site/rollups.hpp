// The store's per-day pre-aggregates (day_routines, day_classes, day_mpi, day_owners,
// day_shapes; site/schema.cpp): kept by every insert in the insert's transaction, so that
// reports and the web over whole UTC days read a few thousand rows instead of every job. Also
// the sums they hold (job_totals) and the size and MPI % classes they are keyed by.
#pragma once

#include "site/stored_job.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::site {

class store;

// Sums over a set of jobs. Counts of calls and bytes are summed in double precision (exact up
// to 2^53) so that no record can make a sum overflow. cpu_time_s is wall * ranks summed;
// pe_weighted weights ranks by it.
struct job_totals {
  std::int64_t jobs = 0, pes = 0;
  double cpu_time_s = 0, mpi_time_s = 0, overhead_s = 0, wall_time_s = 0;
  double pe_weighted = 0; // sum of ranks * cpu_time_s (divide by cpu_time_s: PEs weighted by time)
  std::int64_t mpi_calls = 0, mpi_bytes = 0;
  double instructions = 0, instructions_cpu_time_s = 0; // over jobs that counted instructions
};
void add_totals(job_totals& into, const job_totals& t);

// One group of jobs of one owner, language, size and CPU-time class, with the usage count of
// each routine group (bit g of job_row::routine_groups) as jobs and as CPU time. Every site
// breakdown of the automatic counter profiling paper (Figs. 5-9, 11) is a sum over these rows.
struct job_class_row {
  std::string owner, language;
  std::int64_t ranks = 0;
  int cpu_class = 0;
  job_totals totals;
  std::int64_t critical_jobs = 0; // mpi_percent above the threshold asked for
  std::vector<std::int64_t> group_jobs;
  std::vector<double> group_cpu_time_s;
};

// Routine sums of one owner (or of all, when owner is empty) over a period.
struct owner_routine_row {
  std::string owner, routine;
  std::int64_t jobs = 0, calls = 0, bytes = 0, count_sum = 0;
  double time_s = 0;
};

// One owner's figures in one week (weeks start Monday 00:00 UTC; week_start in epoch seconds).
struct owner_week_row {
  std::string owner;
  std::int64_t week_start = 0;
  job_totals totals;
};

// The paper's size class of a job as its smallest member: a power of two itself, any other
// size the smallest size above the power of two below it (5 for 5-7); 0 and 1 as they are.
std::int64_t size_class_of(std::int64_t ranks);

// day_mpi's bucket of an MPI %: b holds (b - 1, b], 0 holds everything up to 0 and 101
// everything above 100, so that "above T" for a whole T from 0 to 100 is "bucket above T".
int mpi_bucket(double mpi_percent);

// The day tables' sums of the jobs of one insert that were new (was_new[i]), upserted in key
// order (two writers then lock the rows they share in one order).
void add_day_rollups(store& db, const std::vector<stored_job>& jobs,
                     const std::vector<bool>& was_new);

// day_mpi, day_owners and day_shapes from the jobs and day_classes already stored, when the
// migration that adds them runs (site/schema.cpp).
void fill_site_days(store& db);

// The day tables' sum columns of job_totals, in job_totals' order.
const std::vector<std::string>& totals_sum_columns();

} // namespace strata::site
