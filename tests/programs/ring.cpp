// The ring of ring.c in C++ (the C API from C++, built with the flavor's mpicxx like a user's
// program).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 10;
  constexpr int count = 100;
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> out(count);
  std::vector<int> in(count);
  long checksum = 0;
  MPI_Pcontrol(2);
  for (int it = 0; it < iterations; ++it) {
    std::iota(out.begin(), out.end(), rank * 1000 + it);
    const int next = (rank + 1) % size;
    const int prev = (rank + size - 1) % size;
    if (rank % 2 == 0) {
      MPI_Send(out.data(), count, MPI_INT, next, it, MPI_COMM_WORLD);
      MPI_Recv(in.data(), count, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in.data(), count, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out.data(), count, MPI_INT, next, it, MPI_COMM_WORLD);
    }
    checksum += std::accumulate(in.begin(), in.end(), 0L);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long total = 0;
  MPI_Allreduce(&checksum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Pcontrol(0);
  if (rank == 0)
    std::printf("ring: ranks=%d iterations=%d checksum=%ld\n", size, iterations, total);
  MPI_Finalize();
  return 0;
}
