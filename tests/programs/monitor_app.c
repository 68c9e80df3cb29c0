/* For the monitor tests: even ranks send, odd ranks receive (two functional classes), everyone
 * reduces. Offloads at points the program chooses (strata_monitor_dump every 5 iterations,
 * MPI_Pcontrol(5) every 10). Usage: monitor_app [iterations] [abort|spin]
 *   abort: rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) half way.
 *   spin:  each iteration busy-works ~1 ms (for periodic offloads).
 *   sleep: each iteration sleeps 50 ms (a job that mostly computes: tool ranks must idle). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/annotate.h>
#include <string.h>
#include <time.h>

static void spin_ms(double ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 20;
  const char* mode = argc > 2 ? argv[2] : "";
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char buf[1000];
  long total = 0;
  for (int it = 0; it < iterations; ++it) {
    long mine = rank * 100 + it;
    if (rank % 2 == 0 && rank + 1 < size) {
      memset(buf, (rank + it) % 100, sizeof(buf));
      MPI_Send(buf, sizeof(buf), MPI_BYTE, rank + 1, it, MPI_COMM_WORLD);
    } else if (rank % 2 == 1) {
      MPI_Recv(buf, sizeof(buf), MPI_BYTE, rank - 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      mine += buf[0];
    }
    long sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    if (strcmp(mode, "abort") == 0 && rank == 1 && it == iterations / 2)
      MPI_Abort(MPI_COMM_WORLD, 3);
    if (strcmp(mode, "spin") == 0)
      spin_ms(1.0);
    if (strcmp(mode, "sleep") == 0) {
      struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
    if (it % 5 == 4)
      strata_monitor_dump();
    if (it % 10 == 9)
      MPI_Pcontrol(5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("monitor_app: ranks=%d iterations=%d checksum=%ld\n", size, iterations, total);
  MPI_Finalize();
  return 0;
}
