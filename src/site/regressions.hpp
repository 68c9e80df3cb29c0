// Regressions: a job whose time per rank (wall, MPI, or one of its routines) lies beyond the
// noise of the same program's earlier runs at the same size is flagged when it is ingested.
//
// The test is a prediction interval from robust estimates: of the newest `window` complete
// earlier runs (at least `min_history`), those within 3.5 robust standard deviations
// (1.4826 * MAD) of their median are kept, and a run is flagged when it exceeds their mean by
// more than t(1 - alpha, n - 1) * sd * sqrt(1 + 1/n) (Student's t, Boost.Math): a run from the
// same distribution as the history lies beyond that with probability alpha, whatever the noise
// level; one earlier outlier does not widen the interval. Only slower is flagged. Routines
// whose history takes less than `routine_share` of the wall time are not tested (they move the
// job by less than that), the others each at alpha / (routines tested), so that a job's chance
// of a false alarm stays about 3 alpha. The noise has a floor of `noise_floor` of the mean: a
// history of identical times does not flag a run that is slower by a rounding.
#pragma once

#include "site/programs.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strata::site {

class store;

struct regression_options {
  int window = 20;     // earlier runs compared with
  int min_history = 5; // fewer: not tested
  double alpha = 0.01; // false-alarm chance per test
  double routine_share = 0.02;
  double noise_floor = 0.005; // of the history's mean
};

// The median of the values, which it reorders (the mean of the middle two of an even count).
double median_in_place(std::span<double> v);

// One quantity's test against its history.
struct noise_test {
  bool tested = false, flagged = false;
  int runs = 0;         // history runs kept
  double centre = 0;    // their mean
  double noise = 0;     // their standard deviation (at least the floor)
  double threshold = 0; // flagged above
  double score = 0;     // (value - centre) / noise
};
noise_test test_against_history(double value, const std::vector<double>& history, double alpha,
                                const regression_options& o = {});
// The same, with a buffer of the caller's for the medians (reused: no allocation per test).
noise_test test_against_history(double value, std::span<const double> history, double alpha,
                                const regression_options& o, std::vector<double>& work);

// One earlier run as the scorer keeps it: time per rank, whole job and per routine.
struct scored_run {
  std::int64_t end_time = 0;
  double wall = 0, mpi = 0;
  std::map<std::string, double> routines;
};

// The flag of a job against the earlier runs given (any order; the newest `window` are used),
// or nothing when it is within the noise or the history is too short. The plain statement of
// the test, by routine name; regression_scorer computes the same on interned, flat histories.
std::optional<regression_flag> score_run(const scored_run& run,
                                         const std::vector<scored_run>& history,
                                         const regression_options& o = {});

// Scores ingested jobs as they arrive: keeps each program's and size's newest runs, loaded
// once from the store (through a connection of its own, beside the writers) and extended with
// every job it scores, so that jobs of one ingest are each other's history without waiting
// for their commits. It flags exactly the jobs score_run flags against all their program's
// earlier runs at their size (up to ties in end time): those the store held and those it
// scored. Sizes of programs the store did not hold at its first look are not read from the
// store at all (their runs there can only be ones it scored), so that an ingest into a fresh
// store reads nothing back. Routine names are interned to small
// ids, each history is kept in end time order as flat rows, and the statistics run on buffers
// reused from job to job: scoring stays a small share of the ingest (docs/site-models.md,
// "Cost"). Not shared between threads.
class regression_scorer {
public:
  regression_scorer(std::unique_ptr<store> reader, regression_options o = {});
  ~regression_scorer();
  regression_scorer(const regression_scorer&) = delete;
  regression_scorer& operator=(const regression_scorer&) = delete;

  // Sets `regression` of the jobs that are regressions, taking them in end time order; each
  // complete job then joins its program's history. Throws store_error.
  void score(std::vector<stored_job*>& jobs);
  std::int64_t flagged() const;

private:
  struct state;
  std::unique_ptr<state> state_;
};

// The call sites that moved most in a flagged job (its record's call sites against the median
// of up to `history` earlier runs at its size that recorded call sites), largest move first;
// empty where the job recorded none (STRATA_PROFILE_CALLSITES). Throws store_error.
std::vector<moved_site> moved_call_sites(store& db, const regression_row& g, int history = 5);

// A stored job's time per rank as the scorer compares it.
scored_run scored_run_of(const stored_job& job);

} // namespace strata::site
