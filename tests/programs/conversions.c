// A C program that converts handles itself (MPI_Comm_c2f, MPI_Comm_f2c, MPI_Type_f2c): its own
// calls, which a record counts, unlike the Fortran bindings' conversions.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int same = 0;
  for (int i = 0; i < 3; ++i) {
    const MPI_Fint comm = MPI_Comm_c2f(MPI_COMM_WORLD);
    const MPI_Fint type = MPI_Type_c2f(MPI_INT);
    same += MPI_Comm_f2c(comm) == MPI_COMM_WORLD && MPI_Type_f2c(type) == MPI_INT;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    printf("conversions: %d of 3 round trips\n", same);
  MPI_Finalize();
  return 0;
}
