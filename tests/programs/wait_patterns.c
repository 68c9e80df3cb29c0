/* Every wait state the analyzer knows, on purpose, for comparing analyses of one trace (run with
 * 4 or more ranks; DELAY ms, default 20): a late sender and a late receiver (MPI_Ssend), waits at
 * N x N (Allreduce) and at a barrier, a late broadcast root and an early reduce root, receives
 * from MPI_ANY_SOURCE, non-blocking receives completed out of their posting order, and the same
 * on sub-communicators (even and odd ranks, then pairs). */
#include "busy_wait.h"
#include <mpi.h>
#include <stdlib.h>

static void patterns(MPI_Comm comm, int delay_ms) {
  int rank, size, buf[64] = {0}, sum = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2)
    return;
  /* Late sender: rank 1 computes before it sends to 0. */
  if (rank == 1) {
    busy_ms(delay_ms);
    MPI_Send(buf, 8, MPI_INT, 0, 1, comm);
  } else if (rank == 0) {
    MPI_Recv(buf, 8, MPI_INT, 1, 1, comm, MPI_STATUS_IGNORE);
  }
  /* Late receiver: rank 0's synchronous send waits until rank 1 posts its receive. */
  if (rank == 0) {
    MPI_Ssend(buf, 8, MPI_INT, 1, 2, comm);
  } else if (rank == 1) {
    busy_ms(delay_ms);
    MPI_Recv(buf, 8, MPI_INT, 0, 2, comm, MPI_STATUS_IGNORE);
  }
  /* N x N and barrier: the last rank is late. */
  if (rank == size - 1)
    busy_ms(delay_ms);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0)
    busy_ms(delay_ms);
  MPI_Barrier(comm);
  /* Late broadcast: the root is late; early reduce: the root is early. */
  if (rank == 0)
    busy_ms(delay_ms);
  MPI_Bcast(buf, 4, MPI_INT, 0, comm);
  if (rank != size - 1)
    busy_ms(delay_ms);
  MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, size - 1, comm);
  /* Wildcard sources: rank 0 takes one message from every other rank, in whatever order they
   * come (the tag keeps them apart from the messages that follow). */
  if (rank == 0) {
    for (int i = 1; i < size; ++i)
      MPI_Recv(buf, 8, MPI_INT, MPI_ANY_SOURCE, 10, comm, MPI_STATUS_IGNORE);
  } else {
    busy_ms(delay_ms * (size - rank) / size);
    MPI_Send(buf, 8, MPI_INT, 0, 10, comm);
  }
  /* Out of order: rank 0 posts A then B (same source and tag) and completes B first. */
  if (rank == 0) {
    MPI_Request req[2];
    MPI_Irecv(buf, 8, MPI_INT, 1, 3, comm, &req[0]);
    MPI_Irecv(buf + 8, 8, MPI_INT, 1, 3, comm, &req[1]);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Request req[2];
    busy_ms(delay_ms);
    MPI_Isend(buf, 8, MPI_INT, 0, 3, comm, &req[0]);
    busy_ms(delay_ms);
    MPI_Isend(buf + 8, 8, MPI_INT, 0, 3, comm, &req[1]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  }
  /* A ring of non-blocking exchanges completed with Waitany. */
  MPI_Request ring[2];
  MPI_Irecv(buf + 16, 8, MPI_INT, (rank + size - 1) % size, 4, comm, &ring[0]);
  if (rank % 2)
    busy_ms(delay_ms / 2);
  MPI_Isend(buf + 24, 8, MPI_INT, (rank + 1) % size, 4, comm, &ring[1]);
  for (int i = 0; i < 2; ++i) {
    int index;
    MPI_Waitany(2, ring, &index, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) {
  int delay_ms = argc > 1 ? atoi(argv[1]) : 20;
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  patterns(MPI_COMM_WORLD, delay_ms);
  MPI_Comm half, pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  patterns(half, delay_ms);
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, -rank, &pair);
  patterns(pair, delay_ms);
  MPI_Comm_free(&pair);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
