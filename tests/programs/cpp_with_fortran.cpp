// A C++ program that links a Fortran library (libgfortran comes with it) and calls MPI from C++.
#include <mpi.h>

#include <cstdio>
#include <vector>

extern "C" void fortran_sum(int n, const double* values, double* total);

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<double> values(10, rank + 1.0);
  double local = 0;
  fortran_sum(static_cast<int>(values.size()), values.data(), &local);
  double total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("cpp_with_fortran: total %.0f\n", total);
  MPI_Finalize();
  return 0;
}
