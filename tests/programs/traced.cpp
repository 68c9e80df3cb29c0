// C++ annotations for the trace tests: STRATA_FUNCTION in a nested call and STRATA_REGION scopes.
#include <mpi.h>
#include <strata/annotate.h>

#include <cstdio>

namespace solver {

void exchange(int rank, int size) {
  STRATA_FUNCTION(); // MARK:function
  int value = rank;
  int got = -1;
  MPI_Sendrecv(&value, 1, MPI_INT, (rank + 1) % size, 1, &got, 1, MPI_INT, (rank + size - 1) % size,
               1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void step(int rank, int size) {
  STRATA_REGION("step"); // MARK:step
  exchange(rank, size);
  MPI_Barrier(MPI_COMM_WORLD);
}

} // namespace solver

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < 2; ++i)
    solver::step(rank, size);
  if (rank == 0)
    std::printf("traced_cpp: done\n");
  MPI_Finalize();
  return 0;
}
