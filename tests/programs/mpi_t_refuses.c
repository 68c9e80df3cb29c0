/* Preloaded after libstrata: an MPI library whose tool information interface cannot start
 * (MPI_T_init_thread fails), for the profile's one-line message. */
#include <mpi.h>

int PMPI_T_init_thread(int required, int* provided) {
  (void)required;
  *provided = MPI_THREAD_SINGLE;
  return MPI_T_ERR_CANNOT_INIT;
}

int MPI_T_init_thread(int required, int* provided) {
  return PMPI_T_init_thread(required, provided);
}
