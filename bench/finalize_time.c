/* Finalize time benchmark: how long MPI_Finalize takes (and how long from there to the process's
 * exit), so that running it with and without the `profile` module gives the time the profiler
 * spends at finalize reducing its counters over the ranks and writing the job record.
 *
 * A plain MPI program: it links only MPI and knows nothing of Strata. Before finalizing it makes
 * a mix of calls (point-to-point, non-blocking, a dozen collectives) so that the record has
 * about as many routines in it as a small real program's. Every rank then passes a barrier,
 * reads CLOCK_MONOTONIC (one clock for all processes of a host), calls MPI_Finalize, reads it
 * again, and reads it a last time in an atexit handler registered before MPI_Init (so it runs
 * after every handler that MPI or a tool registered later).
 *
 * Usage: finalize_time [--rounds N]   (N rounds of the call mix, default 20)
 *
 * Output, one line per rank (after MPI_Finalize, so plain stdout):
 *   bench fin rank=R size=S enter_ns=T0 return_ns=T1 exit_ns=T2
 * run_profile.sh takes max over ranks of T1 (T2) minus max over ranks of T0: from the last rank
 * entering MPI_Finalize to the last rank leaving it (reaching exit).
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int g_rank = -1, g_size = 0;
static long long g_enter, g_return;

static void report_at_exit(void) {
  if (g_rank < 0)
    return;
  long long t = now_ns();
  char line[200];
  int n = snprintf(line, sizeof line,
                   "bench fin rank=%d size=%d enter_ns=%lld return_ns=%lld exit_ns=%lld\n", g_rank,
                   g_size, g_enter, g_return, t);
  if (n > 0) {
    ssize_t w = write(STDOUT_FILENO, line, (size_t)n);
    (void)w;
  }
}

int main(int argc, char** argv) {
  int rounds = 20;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
      return 2;
    }
  }
  atexit(report_at_exit); /* before MPI_Init: runs after the handlers registered inside it */

  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  enum { len = 64 };
  double a[len], b[len];
  for (int i = 0; i < len; ++i)
    a[i] = rank + i;
  double* all = calloc((size_t)size, sizeof(double));
  double* all2 = calloc((size_t)size, sizeof(double));
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int r = 0; r < rounds; ++r) {
    MPI_Allreduce(a, b, len, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(a, b, len, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Bcast(b, len, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(a, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(a, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoall(all, 1, MPI_DOUBLE, all2, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Scan(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(a, len, MPI_DOUBLE, right, 1, b, len, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Request req[2];
    MPI_Irecv(b, len, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(a, len, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Status st[2];
    MPI_Waitall(2, req, st);
    if (size >= 2 && rank < 2) {
      if (rank == 0) {
        MPI_Send(a, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
        MPI_Recv(b, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(b, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
      }
    }
    double t = MPI_Wtime();
    (void)t;
  }
  free(all);
  free(all2);

  MPI_Barrier(MPI_COMM_WORLD);
  g_rank = rank;
  g_size = size;
  g_enter = now_ns();
  MPI_Finalize();
  g_return = now_ns();
  return 0;
}
