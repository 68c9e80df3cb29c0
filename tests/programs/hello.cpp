// The smallest C++ MPI program, built as users build theirs (mpicxx: under Open MPI it links the
// C++ bindings, whose static constructors call MPI before main).
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("hello: %d ranks, sum %d\n", size, sum);
  MPI_Finalize();
  return 0;
}
