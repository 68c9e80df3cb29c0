/* completion_ring [ITERATIONS]
 * Nonblocking completion as real codes use it, on 2 or more ranks, ITERATIONS (default 3) times:
 * a ring of MPI_Irecv and MPI_Isend of 100 ints completed with
 *  1. MPI_Wait on the receive (a status) and on the send (MPI_STATUS_IGNORE);
 *  2. MPI_Waitall (MPI_STATUSES_IGNORE);
 *  3. MPI_Test polled on the receive until it completes, then MPI_Wait on the send;
 *  4. MPI_Waitany twice;
 *  5. persistent requests: MPI_Startall and MPI_Waitall;
 * then, once: a cancelled MPI_Irecv completed by MPI_Wait, a derived communicator (MPI_Comm_split
 * into even and odd ranks) with an MPI_Allreduce on it, and an MPI_Barrier.
 * Rank 0 prints the sum of what it received; every rank prints how many MPI_Test calls it made
 * (the only count that depends on timing). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 100 };

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 3;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out[N], in[N];
  long sum = 0;
  int tests = 0;
  MPI_Request requests[2], persistent[2];
  MPI_Status status;
  MPI_Recv_init(in, N, MPI_INT, left, 5, MPI_COMM_WORLD, &persistent[0]);
  MPI_Send_init(out, N, MPI_INT, right, 5, MPI_COMM_WORLD, &persistent[1]);
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < N; ++i)
      out[i] = rank + it + i;
    MPI_Irecv(in, N, MPI_INT, left, 1, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(out, N, MPI_INT, right, 1, MPI_COMM_WORLD, &requests[1]);
    MPI_Wait(&requests[0], &status);
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
    sum += in[0];

    MPI_Irecv(in, N, MPI_INT, left, 2, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(out, N, MPI_INT, right, 2, MPI_COMM_WORLD, &requests[1]);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    sum += in[0];

    MPI_Irecv(in, N, MPI_INT, left, 3, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(out, N, MPI_INT, right, 3, MPI_COMM_WORLD, &requests[1]);
    int done = 0;
    while (!done) {
      MPI_Test(&requests[0], &done, &status);
      ++tests;
    }
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
    sum += in[0];

    MPI_Irecv(in, N, MPI_INT, left, 4, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(out, N, MPI_INT, right, 4, MPI_COMM_WORLD, &requests[1]);
    for (int k = 0; k < 2; ++k) {
      int index = MPI_UNDEFINED;
      MPI_Waitany(2, requests, &index, &status);
    }
    sum += in[0];

    MPI_Startall(2, persistent);
    MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
    sum += in[0];
  }
  MPI_Request_free(&persistent[0]);
  MPI_Request_free(&persistent[1]);

  MPI_Request cancelled;
  MPI_Irecv(in, N, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &cancelled);
  MPI_Cancel(&cancelled);
  MPI_Wait(&cancelled, &status);

  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  long half_sum = 0;
  MPI_Allreduce(&sum, &half_sum, 1, MPI_LONG, MPI_SUM, half);
  MPI_Comm_free(&half);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf("completion_ring: ranks=%d sum=%ld half=%ld\n", size, sum, half_sum);
  fprintf(stderr, "completion_ring: rank %d tests=%d\n", rank, tests);
  MPI_Finalize();
  return 0;
}
