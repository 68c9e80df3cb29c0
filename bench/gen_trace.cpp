// Writes a large synthetic OTF2 archive for the analyzer benchmark: RANKS ranks in a ring, each
// iteration a user region "step" holding an Isend to the right, an Irecv from the left, a
// Waitall and an Allreduce, with a barrier every 16 iterations; 16 events per rank and
// iteration (17 with the barrier's share). Rank skews vary deterministically, so wait states
// appear. Usage: gen_trace DIR RANKS EVENTS
#include "analyzer/trace_builder.hpp"

#include <otf2/OTF2_Events.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DIR RANKS EVENTS\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const auto ranks = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const uint64_t events = std::strtoull(argv[3], nullptr, 10);
  if (ranks < 2 || events == 0) {
    std::fprintf(stderr, "need at least 2 ranks and 1 event\n");
    return 2;
  }
  using strata::analyze::trace_builder;
  trace_builder b(dir, ranks);
  const uint32_t step = b.region("Solver::step", false);
  const uint32_t isend = b.mpi("MPI_Isend");
  const uint32_t irecv = b.mpi("MPI_Irecv");
  const uint32_t waitall = b.mpi("MPI_Waitall");
  const uint32_t allreduce = b.mpi("MPI_Allreduce");
  const uint32_t barrier = b.mpi("MPI_Barrier");
  const uint32_t site_step = b.site("solver.cc", 120);
  const uint32_t site_isend = b.site("halo.cc", 41);
  const uint32_t site_irecv = b.site("halo.cc", 40);
  const uint32_t site_wait = b.site("halo.cc", 44);
  const uint32_t site_reduce = b.site("solver.cc", 131);
  const uint32_t site_barrier = b.site("solver.cc", 140);
  const uint64_t iterations = events / (16ULL * ranks) + 1;
  // Each iteration takes 10 us; rank r computes for a skew in [0, 3) us before communicating.
  for (uint32_t r = 0; r < ranks; ++r) {
    const uint32_t right = (r + 1) % ranks;
    const uint32_t left = (r + ranks - 1) % ranks;
    for (uint64_t i = 0; i < iterations; ++i) {
      const uint64_t t0 = 10'000 * i;
      const uint64_t skew = ((i * 7919 + r * 104729) % 3000);
      uint64_t t = t0 + skew;
      b.enter(r, t, step, site_step);
      b.enter(r, t + 10, irecv, site_irecv);
      b.irecv_request(r, t + 10, 2 * i);
      b.leave(r, t + 20, irecv);
      b.enter(r, t + 30, isend, site_isend);
      b.isend(r, t + 30, right, trace_builder::world, 0, 4096, 2 * i + 1);
      b.leave(r, t + 40, isend);
      b.enter(r, t + 50, waitall, site_wait);
      b.isend_complete(r, 3500 + t0, 2 * i + 1);
      b.irecv(r, 3500 + t0, left, trace_builder::world, 0, 4096, 2 * i);
      b.leave(r, 3500 + t0, waitall);
      b.enter(r, 3600 + t0 + skew, allreduce, site_reduce);
      b.collective_begin(r, 3600 + t0 + skew);
      b.collective_end(r, 7000 + t0, OTF2_COLLECTIVE_OP_ALLREDUCE, trace_builder::world,
                       OTF2_UNDEFINED_UINT32, 8, 8);
      b.leave(r, 7000 + t0, allreduce);
      b.leave(r, 7100 + t0, step);
      if (i % 16 == 15) {
        b.enter(r, 7200 + t0 + skew / 2, barrier, site_barrier);
        b.collective_begin(r, 7200 + t0 + skew / 2);
        b.collective_end(r, 9000 + t0, OTF2_COLLECTIVE_OP_BARRIER, trace_builder::world,
                         OTF2_UNDEFINED_UINT32, 0, 0);
        b.leave(r, 9000 + t0, barrier);
      }
    }
  }
  b.close();
  std::printf("%s: %u ranks, %llu iterations\n", dir.c_str(), ranks,
              static_cast<unsigned long long>(iterations));
  return 0;
}
