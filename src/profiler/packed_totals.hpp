// The figures MPI_Finalize reduces over the ranks, packed into one flat buffer so that one
// message per rank up the finalize tree (site_reduction.hpp), combined with `combine_packed` at
// every rank, replaces one reduction per kind of figure (sums, minima, maxima, minima and maxima
// with their rank): with oversubscribed ranks every collective or round needs ranks scheduled,
// so their number sets the record's write time. No MPI here; the unit tests check that the
// packed path and `add_rank` (strata recover) give the same job totals, in any order of
// combining.
#pragma once

#include "profiler/job_figures.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// Job-wide figures: of one rank, or combined over ranks. Only 8-byte fields: no padding.
struct packed_job {
  uint64_t routine_count; // packed_routine rows after this header, the same on every rank
  uint64_t mpi_ns;        // sum
  uint64_t overhead_ns;   // sum
  uint64_t wall_ns;       // max
  double mpi_percent_sum;
  double mpi_percent_min;
  uint64_t mpi_percent_min_rank;
  double mpi_percent_max;
  uint64_t mpi_percent_max_rank;
  uint64_t counters_in_mpi[max_counters];      // sum
  uint64_t counters_outside_mpi[max_counters]; // sum
  uint64_t callsites_dropped;                  // sum
  uint64_t model_clamped;                      // sum
};

// One routine: of one rank, or combined over ranks. Minima and maxima with their rank keep the
// lower rank on ties (as MPI_MINLOC/MPI_MAXLOC do), so the operation is commutative.
struct packed_routine {
  uint64_t calls;
  uint64_t time_ns;
  uint64_t count_sum;
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t size_hist[size_bins];
  uint64_t comm_hist[comm_bins];
  uint64_t min_ns; // min
  uint64_t max_ns; // max
  uint64_t calls_min, calls_min_rank, calls_max, calls_max_rank;
  uint64_t time_min_ns, time_min_rank, time_max_ns, time_max_rank;
};

static_assert(sizeof(packed_job) % sizeof(uint64_t) == 0);
static_assert(sizeof(packed_routine) % sizeof(uint64_t) == 0);

// The buffer: one packed_job, then routine_count packed_routine rows, in 64-bit words.
using packed_totals = std::vector<uint64_t>;
size_t packed_words(uint64_t routine_count);

// MPI time of one rank in ns (MPI_Init and MPI_Finalize bracket it and are left out).
uint64_t rank_mpi_ns(const std::vector<std::string>& names, const routine_slot* slots,
                     size_t count);
// Wall time of one rank in ns: MPI_Init's return to MPI_Finalize (or the last call seen).
uint64_t rank_wall_ns(const rank_header& h);

// This rank's figures, with a row for each of `functions` (indices into names and slots; the
// same list, in the same order, on every rank, including routines this rank never called).
packed_totals pack_rank(const rank_header& header, int rank, const std::vector<std::string>& names,
                        const routine_slot* slots, const std::vector<int>& functions);

// inout := in (+) inout, element-wise by meaning. Both buffers must have the same routine count:
// returns false and leaves inout alone when they do not.
bool combine_packed(const uint64_t* in, uint64_t* inout);

// The combined figures into `job`: routines by name (those of `functions` called on some rank),
// wall, MPI and overhead time, MPI % spread, counters, dropped call sites. Returns the summed
// count of calls outside the machine model's grid.
uint64_t unpack_totals(const packed_totals& all, const std::vector<std::string>& names,
                       const std::vector<int>& functions, job_figures& job);

// The first collective at finalize (MPI_Allreduce with MPI_MAX) agrees on the layout of the
// reduction: per function, whether this rank called it.
std::vector<uint32_t> reduction_layout(const routine_slot* slots, size_t functions);

struct reduction_plan {
  std::vector<int> functions; // called on some rank: the rows of every rank's packed buffer
};
// The plan from the layout combined over ranks.
reduction_plan plan_reduction(const std::vector<uint32_t>& layout, size_t functions);

// Rank 0's job figures once the figures (`all`, combined over `ranks_reported` ranks) and their
// host names and call sites (merged, site_reduction.hpp) are in: the figures, the host names,
// the call sites in the record's order, rank 0's facts, and the calls outside the model's grid
// when the calls were compared with a model. Fewer ranks than the job's make a partial record.
void complete_at_root(job_figures& job, const packed_totals& all,
                      const std::vector<std::string>& names, const std::vector<int>& functions,
                      const ranks_summary& texts, const rank_header& facts, int world_size,
                      int ranks_reported, bool compared_with_model);

} // namespace strata::profiler
