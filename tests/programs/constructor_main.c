// Links mpi_in_constructor (a library calling MPI before main), then runs a small ring.
#include <mpi.h>
#include <stdio.h>

extern int mpi_in_constructor_version;
extern int mpi_in_constructor_initialized;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int token = rank;
  int sum = 0;
  MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("constructor: MPI %d, initialized %d before main; sum %d\n", mpi_in_constructor_version,
           mpi_in_constructor_initialized, sum);
  MPI_Finalize();
  return 0;
}
