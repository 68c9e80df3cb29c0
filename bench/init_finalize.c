/* A job that only starts and ends MPI: what a tool adds to every job (bench/run_job_cost.sh).
 * With MPI_T_FIRST=1 it starts the MPI tool information interface before MPI_Init, as a tool
 * reading the library's own variables from the job's start must: what the library itself
 * charges for that, with no tool loaded. MPI_T is left open to the process's exit, the least
 * the library charges: MPI_T_finalize before MPI_Finalize unloads every component it loaded
 * (Open MPI), and after MPI_Finalize it crashes Open MPI 4.1.4. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* mpi_t_first = getenv("MPI_T_FIRST");
  const int with_mpi_t = mpi_t_first != NULL && strcmp(mpi_t_first, "1") == 0;
  int provided = 0;
  if (with_mpi_t && MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
    return 1;
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  return 0;
}
