/* A late sender: rank 1 computes for DELAY ms before each of 3 sends, rank 0 waits in
 * MPI_Recv. The profile must show rank 0 as the rank with the most MPI_Recv time. */
#include "busy_wait.h"
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int delay = argc > 1 ? atoi(argv[1]) : 100;
  MPI_Init(&argc, &argv);
  int rank, buf = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 3; ++i) {
    if (rank == 1) {
      busy_ms(delay);
      MPI_Send(&buf, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Recv(&buf, 1, MPI_INT, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
