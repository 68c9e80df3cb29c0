/* Probes with known sizes: rank 0 sends rank 1 four messages of 100, 200, 300 and 400 ints
 * (tags 1-4); rank 1 finds the first with MPI_Probe, the second with MPI_Iprobe (polled until
 * it is there), the third with MPI_Mprobe, the fourth with MPI_Improbe (polled), then receives
 * each (MPI_Recv, or MPI_Mrecv for the matched ones). Rank 1 prints how many Iprobe and
 * Improbe calls it made. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { unit = 100 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int* data = calloc(4 * unit, sizeof(int));
  if (rank == 0) {
    for (int tag = 1; tag <= 4; ++tag)
      MPI_Send(data, tag * unit, MPI_INT, 1, tag, MPI_COMM_WORLD);
  } else if (rank == 1) {
    int flag = 0, iprobes = 0, improbes = 0;
    MPI_Status status;
    MPI_Message message;
    MPI_Probe(0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(data, unit, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (flag = 0; !flag; ++iprobes)
      MPI_Iprobe(0, 2, MPI_COMM_WORLD, &flag, &status);
    MPI_Recv(data, 2 * unit, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Mprobe(0, 3, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
    MPI_Mrecv(data, 3 * unit, MPI_INT, &message, MPI_STATUS_IGNORE);
    for (flag = 0; !flag; ++improbes)
      MPI_Improbe(0, 4, MPI_COMM_WORLD, &flag, &message, &status);
    MPI_Mrecv(data, 4 * unit, MPI_INT, &message, MPI_STATUS_IGNORE);
    printf("rank 1 iprobes=%d improbes=%d\n", iprobes, improbes);
  }
  free(data);
  MPI_Finalize();
  return 0;
}
