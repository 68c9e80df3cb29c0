// What rank 0 writes as the job's global definitions: the definitions unified over the ranks,
// each rank's figures, and the clock (rank 0's, which every rank's times were corrected onto).
// No MPI.
#pragma once

#include "tracer/buffer.hpp"
#include "tracer/otf2_writer.hpp"
#include "tracer/rank_records.hpp"
#include "tracer/unify.hpp"

#include <cstdint>
#include <vector>

namespace strata::trace {

struct job_clock {
  uint64_t init_corrected = 0; // rank 0's time at MPI_Init, on the job's clock
  uint64_t init_mono = 0;      // the same instant on rank 0's own clock ...
  uint64_t init_real = 0;      // ... and on the wall clock (ns since the epoch)
};

// MPI regions come first (their roles from the tracer's classification), then user regions. A
// communicator of every rank in order is MPI_COMM_WORLD if it is the first one, "comm N"
// otherwise (a duplicate of the world is not the world). An archive without events starts and
// ends at MPI_Init. A rank that dropped events at the size limit dropped them after its last
// event written (the stop policy) or before its first (ring).
archive_definitions describe_job(const global_defs& global, const std::vector<rank_figures>& ranks,
                                 const job_clock& clock, limit_policy policy);

} // namespace strata::trace
