// `strata site mpi-t`: the MPI library's own variables (MPI_T) across the site's jobs, from
// the store's index of them (site/mpi_t_index.hpp). For each control variable that took more
// than one value among the chosen jobs (or the one named), each value with the jobs that ran
// with it, their number and their median MPI time per rank; and each performance variable
// aggregated over the jobs that read it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

class store;

struct mpi_t_query {
  std::optional<std::string> name; // a variable's name; "prefix*" matches by prefix
  std::optional<std::string> owner, executable;
  std::optional<std::int64_t> since; // jobs that ended from then on
  bool all = false;                  // every control variable, also those with one value
  std::size_t listed_jobs = 10;      // record ids listed per value, newest first
};

struct value_jobs {
  std::string value;
  std::int64_t jobs = 0;
  std::int64_t from_environment = 0; // of them, jobs whose environment set the value
  double median_mpi_s_per_rank = 0;
  std::vector<std::string> record_ids; // newest first, at most listed_jobs
};

struct cvar_summary {
  std::string name;
  std::vector<value_jobs> values; // most jobs first
};

struct pvar_summary {
  std::string name, var_class;
  std::int64_t jobs = 0;
  double median_sum = 0, total_sum = 0; // of each job's sum over its ranks
  double max = 0;                       // the largest value of any rank of any job
  std::string max_record_id;            // the job it was in
};

struct mpi_t_summary {
  std::int64_t jobs = 0;            // chosen jobs that carry MPI_T
  std::int64_t settings = 0;        // distinct sets of control variables among them
  std::int64_t cvar_names = 0;      // distinct control variables among them
  std::int64_t differing_names = 0; // of them, those with more than one value
  std::vector<cvar_summary> cvars;  // in name order
  std::vector<pvar_summary> pvars;  // in name order
};

// Throws store_error.
mpi_t_summary query_mpi_t(store& db, const mpi_t_query& q);

std::string render_mpi_t_text(const mpi_t_summary& s, const mpi_t_query& q);
std::string render_mpi_t_json(const mpi_t_summary& s);

} // namespace strata::site
