/* A known injected delay (the validation of Kluge, Knuepfer and Nagel's statistical
 * bottleneck detection): in every 4th of ITER iterations rank 1
 * computes DELAY ms before its send, so rank 0 waits that long in MPI_Recv at the line marked
 * below. The other calls are balanced. Prints the injected total. */
#include "busy_wait.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 20;
  int delay_ms = argc > 2 ? atoi(argv[2]) : 20;
  MPI_Init(&argc, &argv);
  int rank, buf[16] = {0}, injected = 0;
  double waited = 0; /* rank 0's own measure of its time in the marked receive */
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD); /* absorbs the ranks' start-up skew */
  for (int i = 0; i < iterations; ++i) {
    if (rank == 1) {
      if (i % 4 == 0) {
        busy_ms(delay_ms);
        injected += delay_ms;
      }
      MPI_Send(buf, 16, MPI_INT, 0, i, MPI_COMM_WORLD);
    } else if (rank == 0) {
      double start = MPI_Wtime();
      MPI_Recv(buf, 16, MPI_INT, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* LATE SENDER */
      waited += MPI_Wtime() - start;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 1)
    printf("injected %d ms\n", injected);
  if (rank == 0)
    printf("waited %.1f ms\n", waited * 1e3);
  MPI_Finalize();
  return 0;
}
