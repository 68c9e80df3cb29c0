// Programs and their runs in the store (schema version 8): what scaling models and regressions
// group jobs by. A program is an owner's executable with its arguments (argument_line of the
// record's argv), exactly as given: runs with other arguments are other experiments, since
// inputs decide how a program scales. Each stored job is one run of its program at its number
// of ranks (program_runs, keyed by program, ranks and end time), with its time per rank: the
// wall time (MPI_Init to MPI_Finalize, the longest rank) and the MPI time over the ranks.
// Flagged jobs keep why in `regressions` (the one writer and reader of its `moved` column).
#pragma once

#include "site/period.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace strata::site {

class store;
struct insert_result;

struct program {
  std::int64_t id = 0;
  std::string owner, executable, arguments;
};

struct program_run {
  std::int64_t job_id = 0, ranks = 0, end_time = 0;
  bool complete = false; // complete_run: partial and unfinished jobs are left out of models
  double wall_s = 0;     // per rank
  double mpi_s = 0;      // per rank
};

// The programs and runs of the new jobs of an insert (in its transaction): programs in key
// order (two writers then wait for each other's rows in one order), then the runs.
void add_program_runs(store& db, const std::vector<stored_job>& jobs, const insert_result& r);

// The programs and runs of the jobs stored before migration 8 (from their records' argv).
void fill_programs(store& db);

// Programs, optionally of one owner and executable, by owner, executable and arguments.
std::vector<program> find_programs(store& db, const std::optional<std::string>& owner,
                                   const std::optional<std::string>& executable);
std::optional<program> find_program(store& db, const std::string& owner,
                                    const std::string& executable, const std::string& arguments);
// The program a stored job is a run of (its arguments from the record when not set).
std::optional<program> program_of(store& db, const stored_job& job);

// The ids of the programs stored under the keys (owner, executable, arguments) given; keys
// without a program are left out. A few statements for any number of keys.
std::map<std::tuple<std::string, std::string, std::string>, std::int64_t>
program_ids_of(store& db,
               const std::vector<std::tuple<std::string, std::string, std::string>>& keys);

// The newest `limit` complete runs of each (program id, ranks) given, newest first.
std::map<std::pair<std::int64_t, std::int64_t>, std::vector<program_run>>
newest_runs(store& db, const std::vector<std::pair<std::int64_t, std::int64_t>>& sizes, int limit);

// A program's runs ending at or after `since`, by ranks, newest first within each size.
std::vector<program_run> runs_of(store& db, std::int64_t program_id, std::int64_t since = 0);

// The newest `limit` complete runs of a program at one size that ended before `before`.
std::vector<program_run> history_of(store& db, std::int64_t program_id, std::int64_t ranks,
                                    std::int64_t before, int limit);

// Each job's routines' times summed over its ranks (job_routines), for the jobs given.
std::map<std::int64_t, std::map<std::string, double>>
routine_times(store& db, const std::vector<std::int64_t>& job_ids);

// A flagged job as the report, the mail and the web show it.
struct regression_row {
  std::int64_t job_id = 0;
  program prog;
  std::string record_id;
  std::int64_t end_time = 0, ranks = 0;
  regression_flag flag;
  std::vector<moved_site> sites; // filled on request (moved_call_sites, site/regressions.hpp)
};

// Flagged jobs that ended in the period, of one owner or all, newest first.
std::vector<regression_row> regressions_in(store& db, const period& when,
                                           const std::optional<std::string>& owner,
                                           std::int64_t limit = 100);
std::int64_t count_regressions(store& db, const period& when,
                               const std::optional<std::string>& owner);
std::optional<regression_row> regression_of(store& db, std::int64_t job_id);

} // namespace strata::site
