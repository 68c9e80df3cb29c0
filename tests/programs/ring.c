/* A ring with known traffic: ITER times each rank sends COUNT ints to the next rank and
 * receives from the previous one, then a barrier and an allreduce. Prints a checksum that
 * must not change when tools are loaded. Calls MPI_Pcontrol(2) and MPI_Pcontrol(0). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 10;
  enum { COUNT = 100 };
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int out[COUNT], in[COUNT];
  long checksum = 0;
  MPI_Pcontrol(2);
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < COUNT; ++i)
      out[i] = rank * 1000 + it + i;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank % 2 == 0) {
      MPI_Send(out, COUNT, MPI_INT, next, it, MPI_COMM_WORLD);
      MPI_Recv(in, COUNT, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, COUNT, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out, COUNT, MPI_INT, next, it, MPI_COMM_WORLD);
    }
    for (int i = 0; i < COUNT; ++i)
      checksum += in[i];
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long total = 0;
  MPI_Allreduce(&checksum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Pcontrol(0);
  if (rank == 0)
    printf("ring: ranks=%d iterations=%d checksum=%ld\n", size, iterations, total);
  MPI_Finalize();
  return 0;
}
