/* requests [DELAY_MS]
 * Requests that complete without a message, and wildcard receives, on 2 or more ranks:
 *  1. every rank posts MPI_Irecv from MPI_ANY_SOURCE (tag 77) and from its right neighbour
 *     (tag 78), cancels both and completes them in MPI_Wait and MPI_Waitall: two cancelled
 *     receives (MPI_Test_cancelled says so), no message;
 *  2. MPI_PROC_NULL as peer: MPI_Send, MPI_Recv, MPI_Isend + MPI_Irecv + MPI_Waitall and
 *     MPI_Sendrecv with MPI_PROC_NULL on both sides: no message;
 *  3. rank 0 receives one message from every other rank with MPI_Recv(MPI_ANY_SOURCE), then one
 *     more from each with MPI_Irecv(MPI_ANY_SOURCE) and MPI_Waitany; rank 1 sends its first
 *     message DELAY_MS (default 100) ms late, so rank 0 waits for it in the MPI_Recv marked
 *     LATE (a late sender);
 *  4. a barrier.
 * Each rank prints "rank R cancelled=C messages=M" (M: messages it received). */
#include "busy_wait.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int delay_ms = argc > 1 ? atoi(argv[1]) : 100;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size;
  int in[2] = {0, 0}, out = rank;
  int cancelled = 0, messages = 0;

  /* 1. Cancelled receives. */
  MPI_Request requests[2];
  MPI_Status statuses[2];
  MPI_Irecv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &requests[0]);
  MPI_Cancel(&requests[0]);
  MPI_Wait(&requests[0], &statuses[0]); /* MARK:cancel_wait */
  int flag = 0;
  MPI_Test_cancelled(&statuses[0], &flag);
  cancelled += flag;
  MPI_Irecv(&in[0], 1, MPI_INT, right, 78, MPI_COMM_WORLD, &requests[0]);
  MPI_Cancel(&requests[0]);
  requests[1] = MPI_REQUEST_NULL;
  MPI_Waitall(2, requests, statuses);
  MPI_Test_cancelled(&statuses[0], &flag);
  cancelled += flag;

  /* 2. MPI_PROC_NULL. */
  MPI_Send(&out, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
  MPI_Recv(&in[0], 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Irecv(&in[0], 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(&out, 1, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &requests[1]);
  MPI_Waitall(2, requests, statuses);
  MPI_Sendrecv(&out, 1, MPI_INT, MPI_PROC_NULL, 3, &in[0], 1, MPI_INT, MPI_PROC_NULL, 3,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  /* 3. Wildcard receives on rank 0, a late sender among them. */
  if (rank == 0) {
    for (int i = 1; i < size; ++i) {
      /* MARK-NEXT:late */
      MPI_Recv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++messages;
    }
    for (int i = 1; i < size; ++i) {
      MPI_Request request;
      int index = -1;
      MPI_Irecv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &request);
      MPI_Waitany(1, &request, &index, MPI_STATUS_IGNORE);
      ++messages;
    }
  } else {
    if (rank == 1)
      busy_ms(delay_ms);
    MPI_Send(&out, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
    MPI_Send(&out, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d cancelled=%d messages=%d\n", rank, cancelled, messages);
  MPI_Finalize();
  return 0;
}
