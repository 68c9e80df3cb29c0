/* A job that only starts and ends MPI: what a tool adds to every job (bench/run_job_cost.sh). */
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  return 0;
}
