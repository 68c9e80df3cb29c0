/* One MPI call in a loop, for the per-call cost of the call-site profile in C against the same
 * loop in Python (bench/python_loop.py, bench/run_python.sh). A plain MPI program.
 *
 * MPI is initialised with MPI_THREAD_MULTIPLE, as mpi4py does by default (a profile then counts
 * with atomic adds), so that the two languages pay for the same profile.
 *
 * Usage: callsite_loop CALL ITERATIONS [REPETITIONS]
 *   CALL: rank (MPI_Comm_rank) or self_barrier (MPI_Barrier on MPI_COMM_SELF)
 * Prints the best repetition: bench python lang=c call=CALL iterations=N ns_per_call=X
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "rank") != 0 && strcmp(argv[1], "self_barrier") != 0)) {
    fprintf(stderr, "usage: callsite_loop rank|self_barrier ITERATIONS [REPETITIONS]\n");
    return 2;
  }
  const int barrier = strcmp(argv[1], "self_barrier") == 0;
  const long iterations = atol(argv[2]);
  const int repetitions = argc > 3 ? atoi(argv[3]) : 5;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const double t0 = now_ns();
    if (barrier) {
      for (long i = 0; i < iterations; ++i)
        MPI_Barrier(MPI_COMM_SELF);
    } else {
      for (long i = 0; i < iterations; ++i)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    const double per_call = (now_ns() - t0) / (double)iterations;
    if (per_call < best)
      best = per_call;
  }
  if (rank == 0)
    printf("bench python lang=c call=%s iterations=%ld ns_per_call=%.1f\n", argv[1], iterations,
           best);
  MPI_Finalize();
  return 0;
}
