// A library that calls MPI from its own constructor, as Open MPI's C++ bindings do (they build
// MPI::COMM_WORLD in a static constructor): it runs before the constructors of a preloaded
// library such as libstrata, before main and before MPI_Init.
#include <mpi.h>

int mpi_in_constructor_version = -1;
int mpi_in_constructor_initialized = -1;

__attribute__((constructor)) static void ask_mpi_early(void) {
  int subversion = 0;
  MPI_Get_version(&mpi_in_constructor_version, &subversion);
  MPI_Initialized(&mpi_in_constructor_initialized);
}
