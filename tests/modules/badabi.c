/* Test module with a wrong ABI version: the core must refuse it with one clear line. */
#include <mpi.h>
#include <strata/module.h>

static const strata_module bad = {
    .abi_version = 99, .name = "badabi", .mpi_flavor = STRATA_MPI_FLAVOR};
STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &bad;
}
