/* Test module `wraplog_<X>`: a wrapper module (defines MPI functions, calls ZMPI_ for the next
 * layer) that logs its wrapping, so tests can check the order of mixed wrapper/event stacks.
 * Inside its MPI_Barrier it calls MPI_Comm_size: that call must reach only the layers below.
 * Argument: out=DIR (required). WRAPLOG_NAME is set at compile time. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <strata/module.h>
#include <strata/zmpi.h>
#include <string.h>
#include <unistd.h>

static char out_dir[512];

static void log_line(const char* what, const char* fn) {
  int rank = -1;
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized || out_dir[0] == '\0')
    return;
  ZMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[600];
  snprintf(path, sizeof path, "%s/log.%d", out_dir, rank);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    return;
  char line[200];
  int n = snprintf(line, sizeof line, "%s %s %s\n", WRAPLOG_NAME, what, fn);
  if (write(fd, line, (size_t)n) < 0) {
  }
  close(fd);
}

STRATA_MODULE_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                  MPI_Comm comm) {
  log_line("wrap-in", "MPI_Send");
  int rc = ZMPI_Send(buf, count, type, dest, tag, comm);
  log_line("wrap-out", "MPI_Send");
  return rc;
}

STRATA_MODULE_EXPORT int MPI_Barrier(MPI_Comm comm) {
  log_line("wrap-in", "MPI_Barrier");
  int size = 0;
  MPI_Comm_size(comm, &size); /* the module's own call: goes below this layer */
  int rc = ZMPI_Barrier(comm);
  log_line("wrap-out", "MPI_Barrier");
  return rc;
}

static int load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
                void** state, char* error, size_t error_size) {
  (void)host;
  (void)self;
  (void)state;
  for (int i = 0; i < nargs; ++i) {
    if (strcmp(args[i].key, "out") == 0) {
      snprintf(out_dir, sizeof out_dir, "%s", args[i].value);
    } else {
      snprintf(error, error_size, "unknown argument '%s'", args[i].key);
      return 1;
    }
  }
  return 0;
}

static const strata_module wraplog_module = {
    .abi_version = STRATA_MODULE_ABI_VERSION,
    .name = WRAPLOG_NAME,
    .mpi_flavor = STRATA_MPI_FLAVOR,
    .description = "test module: logs its wrapping of MPI_Send and MPI_Barrier",
    .load = load,
};

STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &wraplog_module;
}
