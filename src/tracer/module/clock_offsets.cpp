// The trace module's clock alignment: each rank's offset to rank 0's clock, measured at MPI_Init
// and again at finalize (tracer/clock.hpp corrects the times in between along the line).
#include "tracer/module/state.hpp"

#include <limits>

namespace strata::trace {

int64_t measure_offset(trace_state* s, double& uncertainty) {
  constexpr int rounds = 8;
  int64_t best_offset = 0;
  uint64_t best_rtt = std::numeric_limits<uint64_t>::max();
  const MPI_Comm comm = s->clock_comm;
  MPI_Barrier(comm);
  for (int peer = 1; peer < s->world_size; ++peer) {
    for (int k = 0; k < rounds; ++k) {
      uint64_t t = 0;
      if (s->rank == 0) {
        MPI_Recv(&t, 1, MPI_UINT64_T, peer, 1, comm, MPI_STATUS_IGNORE);
        t = s->host->now_ns();
        MPI_Send(&t, 1, MPI_UINT64_T, peer, 2, comm);
      } else if (s->rank == peer) {
        const uint64_t sent = s->host->now_ns();
        MPI_Send(&t, 1, MPI_UINT64_T, 0, 1, comm);
        MPI_Recv(&t, 1, MPI_UINT64_T, 0, 2, comm, MPI_STATUS_IGNORE);
        const uint64_t back = s->host->now_ns();
        if (back - sent < best_rtt) {
          best_rtt = back - sent;
          best_offset = static_cast<int64_t>(t) - static_cast<int64_t>(sent + (back - sent) / 2);
        }
      }
    }
  }
  uncertainty = s->rank == 0 ? 0.0 : static_cast<double>(best_rtt) / 2;
  return s->rank == 0 ? 0 : best_offset;
}

} // namespace strata::trace
