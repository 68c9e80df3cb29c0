/* Whether Open MPI's nonblocking-collective component (libnbc) has its progress function in
 * the library's progress loop, which every MPI_Test, MPI_Testany and MPI_Iprobe then runs. It
 * gets there, for the rest of the process, with the first nonblocking collective on a
 * communicator, and Open MPI's MPI_Comm_dup makes one; a tool that put it there in MPI_Init
 * would slow down a program that polls and makes no communicator of its own. Prints, per rank,
 * the state after MPI_Init and again after a MPI_Comm_dup of the program's own (which shows
 * the probe sees a registration): "registered", "idle", or "unknown" (not Open MPI, or no
 * libnbc loaded). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

typedef int (*progress_fn)(void);
typedef int (*progress_registration_fn)(progress_fn);

static char component_path[4096];

static int find_component(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  if (info->dlpi_name != NULL && strstr(info->dlpi_name, "mca_coll_libnbc.so") != NULL) {
    snprintf(component_path, sizeof component_path, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

/* Open MPI's own functions: unregistering says whether the function was in the list, and
 * registering it again puts the list back as it was. */
static const char* nbc_progress_state(void) {
  progress_registration_fn unregister =
      (progress_registration_fn)dlsym(RTLD_DEFAULT, "opal_progress_unregister");
  progress_registration_fn reregister =
      (progress_registration_fn)dlsym(RTLD_DEFAULT, "opal_progress_register");
  component_path[0] = '\0';
  dl_iterate_phdr(find_component, NULL);
  if (unregister == NULL || reregister == NULL || component_path[0] == '\0')
    return "unknown";
  void* component = dlopen(component_path, RTLD_NOLOAD | RTLD_LAZY);
  progress_fn nbc =
      component != NULL ? (progress_fn)dlsym(component, "ompi_coll_libnbc_progress") : NULL;
  if (nbc == NULL)
    return "unknown";
  if (unregister(nbc) != 0) /* OPAL_SUCCESS is 0 */
    return "idle";
  reregister(nbc);
  return "registered";
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* after_init = nbc_progress_state();
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &own);
  const char* after_dup = nbc_progress_state();
  MPI_Comm_free(&own);
  printf("progress_hooks: rank=%d after_init=%s after_dup=%s\n", rank, after_init, after_dup);
  MPI_Finalize();
  return 0;
}
