/* A ring with annotated steps, built with the MPI compiler wrapper and the installed
 * strata/annotate.h (tests/integration/test_install.py): ITER times each rank sends to the next
 * rank and receives from the previous one inside the region "step". Prints a checksum that must
 * not change when tools are loaded. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/annotate.h>

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long checksum = 0;
  for (int it = 0; it < iterations; ++it) {
    strata_region_begin("step");
    int out = rank * 1000 + it, in = 0;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank % 2 == 0) {
      MPI_Send(&out, 1, MPI_INT, next, it, MPI_COMM_WORLD);
      MPI_Recv(&in, 1, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&in, 1, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&out, 1, MPI_INT, next, it, MPI_COMM_WORLD);
    }
    checksum += in;
    strata_region_end("step");
  }
  long total = 0;
  MPI_Reduce(&checksum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("regions_ring: ranks=%d iterations=%d checksum=%ld\n", size, iterations, total);
  MPI_Finalize();
  return 0;
}
