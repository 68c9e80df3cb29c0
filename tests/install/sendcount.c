/* A module written and built outside Strata's tree, against an installed prefix only (CMake's
 * find_package(Strata) or pkg-config; tests/integration/test_install.py). It is both kinds of
 * module: a wrapper of MPI_Send that counts and passes the call on with ZMPI_Send
 * (strata/zmpi.h), an event module that counts MPI_Recv, and a listener for the application's
 * regions (strata/annotate.h). At finalize every rank logs what it counted, with its `label`. */
#include <mpi.h>
#include <stdio.h>
#include <strata/module.h>
#include <strata/version.h>
#include <strata/zmpi.h>
#include <string.h>

static const strata_host* host;
static int layer;
static char label[64]; /* copied: the arguments live only during load */
static unsigned long sends, receives, regions;

STRATA_MODULE_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                  MPI_Comm comm) {
  ++sends;
  return ZMPI_Send(buf, count, type, dest, tag, comm);
}

static void count_receive(strata_event* event, void* state) {
  (void)event;
  (void)state;
  ++receives;
}

static void count_region(const char* name, const void* call_site, uint64_t t_ns, void* state) {
  (void)name;
  (void)call_site;
  (void)t_ns;
  (void)state;
  ++regions;
}

static int load(const strata_host* h, int self, const strata_module_arg* args, int nargs,
                void** state, char* error, size_t error_size) {
  host = h;
  layer = self;
  *state = NULL;
  for (int i = 0; i < nargs; ++i)
    if (strcmp(args[i].key, "label") == 0)
      snprintf(label, sizeof label, "%s", args[i].value);
  if (h->subscribe(self, "MPI_Recv") != 1) {
    snprintf(error, error_size, "MPI_Recv is not an MPI function here");
    return 1;
  }
  return 0;
}

static void finalize(void* state) {
  (void)state;
  int rank = -1;
  MPI_Comm_rank(*(const MPI_Comm*)host->world(), &rank);
  char line[200];
  snprintf(line, sizeof line, "%s rank %d: %lu MPI_Send, %lu MPI_Recv, %lu regions (Strata %s)",
           label, rank, sends, receives, regions, STRATA_VERSION);
  host->log(layer, line);
}

static const strata_module sendcount = {STRATA_MODULE_ABI_VERSION,
                                        "sendcount",
                                        STRATA_MPI_FLAVOR,
                                        "counts sends (wrapper), receives (events) and regions",
                                        load,
                                        NULL,
                                        NULL,
                                        count_receive,
                                        NULL,
                                        finalize,
                                        NULL};

STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &sendcount;
}

static const strata_option options[] = {
    {"label", "string", "", "a word that starts each line this module logs", NULL}};
static const strata_module_options option_list = {sizeof(strata_module_options), 1, options};

STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return &option_list;
}

static const strata_module_regions region_callbacks = {sizeof(strata_module_regions), count_region,
                                                       NULL};

STRATA_MODULE_EXPORT const strata_module_regions* strata_module_regions_v1(void) {
  return &region_callbacks;
}
