/* A program with known MPI calls and regions, for the trace tests (any even number of ranks >= 2;
 * the tests use 4). Lines the tests look for carry a MARK comment; the tests find them by it.
 *   argv[1]: iterations of the final loop (default 3): one MPI_Allreduce each, inside "loop".
 *   argv[2]: milliseconds to wait (after a barrier) before that loop (default 0). */
#include <mpi.h>
#include <strata/annotate.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 3;
  const long pause_ms = argc > 2 ? atol(argv[2]) : 0;
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int ints[10] = {0};
  double halo_out[100] = {0};
  double halo_in[100] = {0};
  MPI_Status status;

  strata_region_begin("p2p"); /* MARK:region_p2p */
  /* Rank 0 sends to 1 with tag 42; rank 1 receives from anyone with any tag. */
  if (rank == 0)
    MPI_Send(ints, 10, MPI_INT, 1, 42, MPI_COMM_WORLD); /* MARK:send */
  else if (rank == 1)                                   /* MARK-NEXT:recv_any */
    MPI_Recv(ints, 10, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);

  strata_region_begin("halo"); /* MARK:region_halo */
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  MPI_Request requests[2];
  MPI_Irecv(halo_in, 100, MPI_DOUBLE, prev, 5, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(halo_out, 100, MPI_DOUBLE, next, 5, MPI_COMM_WORLD, &requests[1]);
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE); /* MARK:waitall */
  strata_region_end("halo");

  /* Partners 0<->1, 2<->3 exchange with tag 9, then a receive posted before the matching send. */
  const int partner = rank ^ 1;
  MPI_Sendrecv(ints, 2, MPI_INT, partner, 9, halo_in, 4, MPI_DOUBLE, partner, 9, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Request one;
  MPI_Irecv(ints, 3, MPI_INT, partner, 11, MPI_COMM_WORLD, &one);
  MPI_Send(halo_out, 3, MPI_INT, partner, 11, MPI_COMM_WORLD);
  MPI_Wait(&one, MPI_STATUS_IGNORE);
  strata_region_end("p2p");

  strata_region_begin("collectives");
  MPI_Barrier(MPI_COMM_WORLD); /* MARK:barrier */
  MPI_Bcast(ints, 4, MPI_INT, 1, MPI_COMM_WORLD);
  double x = rank;
  double sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  /* Halves: even and odd world ranks; a message inside each from its rank 0 to its rank 1. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int half_rank = 0;
  int half_size = 1;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, half);
  if (half_rank == 0 && half_size > 1)
    MPI_Send(ints, 1, MPI_INT, 1, 3, half); /* MARK:half_send */
  else if (half_rank == 1)
    MPI_Recv(ints, 1, MPI_INT, 0, 3, half, MPI_STATUS_IGNORE);
  MPI_Comm_free(&half);
  strata_region_end("collectives");

  if (pause_ms > 0) {
    struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0) {
    }
  }
  for (int i = 0; i < iterations; ++i) {
    strata_region_begin("loop");
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    strata_region_end("loop");
  }
  if (rank == 0)
    printf("traced: done\n");
  MPI_Finalize();
  return 0;
}
