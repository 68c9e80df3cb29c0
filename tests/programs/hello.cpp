// The smallest C++ MPI program, built as users build theirs (mpicxx: under Open MPI it links the
// C++ bindings, whose static constructors call MPI before main). Its MPI_Allreduce is made from a
// function in a namespace, whose name records and reports give as the source writes it.
#include <mpi.h>

#include <cstdio>

namespace hello {
__attribute__((noinline)) int sum_of_ranks(int rank) {
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}
} // namespace hello

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int sum = hello::sum_of_ranks(rank);
  if (rank == 0)
    std::printf("hello: %d ranks, sum %d\n", size, sum);
  MPI_Finalize();
  return 0;
}
