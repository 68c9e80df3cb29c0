/* Non-blocking ring with wildcard receives: each of ITER iterations every rank posts an
 * MPI_Irecv from MPI_ANY_SOURCE with MPI_ANY_TAG, sends tag i to its right neighbour with
 * MPI_Isend, and completes both in one MPI_Waitall (the line marked WAITALL). In iteration 2,
 * rank 0 computes DELAY ms before its send, so rank 1 waits that long in the Waitall; rank 1
 * prints how long its Waitalls took in all ("waited T ms"). */
#include "busy_wait.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 6;
  int delay_ms = argc > 2 ? atoi(argv[2]) : 200;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size;
  int in = 0, out = rank;
  double waited = 0;           /* this rank's own measure of its time in the Waitalls */
  MPI_Barrier(MPI_COMM_WORLD); /* absorbs the ranks' start-up skew */
  for (int i = 0; i < iterations; ++i) {
    MPI_Request requests[2];
    MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &requests[0]);
    if (rank == 0 && i == 2)
      busy_ms(delay_ms);
    MPI_Isend(&out, 1, MPI_INT, right, i, MPI_COMM_WORLD, &requests[1]);
    MPI_Status statuses[2];
    const double start = MPI_Wtime();
    MPI_Waitall(2, requests, statuses); /* WAITALL */
    waited += MPI_Wtime() - start;
  }
  if (rank == 1)
    printf("waited %.1f ms\n", waited * 1e3);
  MPI_Finalize();
  return 0;
}
