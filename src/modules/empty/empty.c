/* The `empty` module (PnMPI's test module): a wrapper for every MPI function that only calls the
 * next layer. The wrappers are generated (empty_module.cpp); this is its descriptor. Stacking it
 * N times measures what one layer of the chain costs. */
#include <mpi.h>
#include <strata/module.h>

static const strata_module empty_module = {
    .abi_version = STRATA_MODULE_ABI_VERSION,
    .name = "empty",
    .mpi_flavor = STRATA_MPI_FLAVOR,
    .description = "wraps every MPI function and calls the next layer (measures layer cost)",
};

STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &empty_module;
}
