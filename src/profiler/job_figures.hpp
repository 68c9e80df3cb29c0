// A job's figures combined over its ranks: summed, with the spread over ranks, and the facts of
// the lowest reporting rank. Built at MPI_Finalize from the MPI reduction (packed_totals.hpp)
// and by `strata recover` from rank files (add_rank); to_record makes the job record of it.
// No MPI here.
#pragma once

#include "profiler/call_sites.hpp"
#include "profiler/rank_file.hpp"
#include "profiler/record/record.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::profiler {

struct spread {
  double min = 0;
  double sum = 0;
  double max = 0;
  int min_rank = -1;
  int max_rank = -1;
  void add(double value, int rank);
};

struct routine_total {
  uint64_t calls = 0;
  uint64_t time_ns = 0;
  uint64_t min_ns = UINT64_MAX;
  uint64_t max_ns = 0;
  uint64_t count_sum = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t size_hist[size_bins] = {};
  uint64_t comm_hist[comm_bins] = {};
  spread calls_per_rank;
  spread time_per_rank;
};

// The figures a rank's routine_slot, a packed_routine (packed_totals.hpp) and a routine_total
// share, combined the same way wherever ranks meet (add_rank, the reduction at finalize).
template <typename To, typename From> void add_routine_figures(To& to, const From& from) {
  to.calls += from.calls;
  to.time_ns += from.time_ns;
  to.min_ns = std::min(to.min_ns, from.min_ns);
  to.max_ns = std::max(to.max_ns, from.max_ns);
  to.count_sum += from.count_sum;
  to.bytes_sent += from.bytes_sent;
  to.bytes_received += from.bytes_received;
  for (int b = 0; b < size_bins; ++b)
    to.size_hist[b] += from.size_hist[b];
  for (int b = 0; b < comm_bins; ++b)
    to.comm_hist[b] += from.comm_hist[b];
}

template <typename To, typename From> void copy_routine_figures(To& to, const From& from) {
  to.calls = from.calls;
  to.time_ns = from.time_ns;
  to.min_ns = from.min_ns;
  to.max_ns = from.max_ns;
  to.count_sum = from.count_sum;
  to.bytes_sent = from.bytes_sent;
  to.bytes_received = from.bytes_received;
  std::copy_n(from.size_hist, size_bins, to.size_hist);
  std::copy_n(from.comm_hist, comm_bins, to.comm_hist);
}

struct job_figures {
  rank_header facts{}; // the lowest reporting rank's header: job, user, program, MPI
  int ranks = 0;       // the job's size
  int ranks_reported = 0;
  bool partial = false;
  job_status status = job_status::finalized;
  int status_detail = 0;
  // The latest end of the ranks added by add_rank (strata recover): 0 when none is known.
  int64_t end_unix_ns = 0;
  std::vector<std::string> host_names;
  double wall_s = 0;     // the longest rank
  double mpi_s = 0;      // summed over ranks
  double overhead_s = 0; // summed over ranks
  spread mpi_percent;    // per rank
  uint64_t counters_in_mpi[max_counters] = {};
  uint64_t counters_outside_mpi[max_counters] = {};
  std::map<std::string, routine_total> routines; // only routines called somewhere
  std::vector<callsite_total> callsites;         // longest wasted time, then time, first
  uint64_t callsites_dropped = 0;
  int64_t model_clamped_calls = -1; // the overhead module: lookups outside the model's grid
  // Rank 0's time in the profiler at MPI_Finalize up to the job's figures (the collectives that
  // build the record); negative when not measured (strata recover).
  double finalize_s = -1;
  // Whether the bytes that untimed polls completed are estimated from the timed polls (the
  // profile's lean polls, STRATA_PROFILE_POLLS): 1 yes, 0 no, negative unknown (strata recover).
  int poll_bytes_estimated = -1;
  // The event clock as checked at finalize over the ranks (clock_check.hpp); absent: not
  // checked (strata recover).
  std::optional<record::clock_facts> clock;
};

// Wall and MPI time of one rank from its header and slots.
double rank_wall_seconds(const rank_header& h);
// A rank's end on the wall clock: the end its handlers marked, else (a rank killed without a
// word) its latest call's exit; 0 when neither is known.
int64_t rank_end_unix_ns(const rank_header& h, const std::vector<std::string>& names,
                         const std::vector<routine_slot>& slots);
double rank_mpi_seconds(const std::vector<std::string>& names,
                        const std::vector<routine_slot>& slots);

// Adds one rank file's figures (for recover).
void add_rank(job_figures& job, const rank_data& rank);

// The job record (strata.job/1) of these figures: record::to_json writes it.
record::job_record to_record(const job_figures& job);

} // namespace strata::profiler
