/* Test module `halfworld`: replaces the application's MPI_COMM_WORLD by a communicator of the
 * even or of the odd world ranks, so a 4-rank job runs as two independent 2-rank applications.
 * Tests that the substitution reaches every call, in C and in Fortran. */
#include <mpi.h>
#include <strata/module.h>

static const strata_host* host_api;
static int self_layer;
static MPI_Comm half = MPI_COMM_NULL;

static int load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
                void** state, char* error, size_t error_size) {
  (void)args, (void)nargs, (void)state, (void)error, (void)error_size;
  host_api = host;
  self_layer = self;
  return 0;
}

static void ready(void* state) {
  (void)state;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* a module's own call: the real world */
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  host_api->replace_world(self_layer, &half);
}

static const strata_module halfworld_module = {
    .abi_version = STRATA_MODULE_ABI_VERSION,
    .name = "halfworld",
    .mpi_flavor = STRATA_MPI_FLAVOR,
    .description = "test module: the application's world is the even or the odd ranks",
    .load = load,
    .mpi_ready = ready,
};

STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &halfworld_module;
}

/* It takes (half of) the processes out of the application's world: the core places it first. */
STRATA_MODULE_EXPORT int strata_module_takes_ranks_v1(const strata_module_arg* args, int nargs) {
  (void)args, (void)nargs;
  return 1;
}
