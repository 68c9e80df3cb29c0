/* The offload benchmark of the TAU over MRNet paper (Nataraj et al., Fig. 8): each iteration works
 * for PERIOD microseconds, offloads this rank's profile (strata_monitor_dump) and meets the others
 * at a barrier. The time beyond the work, per iteration, is the cost of an offload plus the
 * barrier; its maximum over the ranks is the mean worst offload time per round.
 *
 *   monitor_offload PERIOD_US ITERATIONS
 * Prints: "offload: ranks=P period_us=... iterations=... worst_us_per_round=... barrier_us=...
 * dump_us_mean=... dump_us_worst_rank=..." (barrier_us: the same loop with no offload, measured
 * first in the same job; dump_us: time inside strata_monitor_dump per round, mean over ranks and
 * on the rank that spent most). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/annotate.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Sleeps rather than spins: on this machine the ranks share two cores with the tool ranks, and
 * a spinning rank would measure the scheduler. */
static void work(double us) {
  if (us <= 0)
    return;
  struct timespec t = {(time_t)(us / 1e6), (long)((us - 1e6 * (long)(us / 1e6)) * 1e3)};
  nanosleep(&t, NULL);
}

static double dump_s; /* time inside strata_monitor_dump on this rank */

static double loop(int iterations, double period_us, int offload) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  for (int i = 0; i < iterations; ++i) {
    work(period_us);
    if (offload) {
      const double d0 = now_s();
      strata_monitor_dump();
      dump_s += now_s() - d0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const double extra = (now_s() - t0) - iterations * period_us * 1e-6;
  double worst = 0;
  MPI_Allreduce(&extra, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst / iterations * 1e6;
}

int main(int argc, char** argv) {
  const double period_us = argc > 1 ? atof(argv[1]) : 1000;
  const int iterations = argc > 2 ? atoi(argv[2]) : 200;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double barrier_us = loop(iterations, period_us, 0);
  const double worst_us = loop(iterations, period_us, 1);
  double dump_max = 0, dump_sum = 0;
  MPI_Reduce(&dump_s, &dump_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&dump_s, &dump_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("offload: ranks=%d period_us=%.0f iterations=%d worst_us_per_round=%.1f "
           "barrier_us=%.1f dump_us_mean=%.1f dump_us_worst_rank=%.1f\n",
           size, period_us, iterations, worst_us, barrier_us, dump_sum / size / iterations * 1e6,
           dump_max / iterations * 1e6);
  MPI_Finalize();
  return 0;
}
