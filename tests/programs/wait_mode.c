/* wait_mode: how the job's processes wait. Each rank prints Open MPI's mpi_yield_when_idle as
 * its MPI library sees it (through MPI_T; "none" under MPICH, which has no such setting). Rank 0
 * also lists every process of its job on this node (found in /proc by the job id in their
 * environments) with its world rank and the OMPI_MCA_mpi_yield_when_idle it was started with:
 * the tool ranks of a module, which never return to main, included. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VALUE of NAME in the environment block of process PID (NUL-separated), or "-" when absent. */
static void environ_value(const char* pid, const char* name, char* value, size_t size) {
  char path[64], block[65536];
  snprintf(path, sizeof path, "/proc/%s/environ", pid);
  snprintf(value, size, "-");
  FILE* f = fopen(path, "r");
  if (f == NULL)
    return;
  const size_t n = fread(block, 1, sizeof block - 1, f);
  fclose(f);
  block[n] = '\0';
  const size_t length = strlen(name);
  for (size_t at = 0; at < n; at += strlen(block + at) + 1)
    if (strncmp(block + at, name, length) == 0 && block[at + length] == '=') {
      snprintf(value, size, "%s", block + at + length + 1);
      return;
    }
}

int main(int argc, char** argv) {
  int provided = 0, rank = 0, index = 0, count = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  char seen[16] = "none";
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS) {
    MPI_T_cvar_handle handle;
    unsigned char value[16] = {0}; /* a C bool in Open MPI */
    MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
    MPI_T_cvar_read(handle, value);
    MPI_T_cvar_handle_free(&handle);
    snprintf(seen, sizeof seen, "%d", value[0] != 0);
  }
  MPI_T_finalize();
  printf("rank %d yield_when_idle=%s\n", rank, seen);
  const char* job = getenv("OMPI_MCA_ess_base_jobid");
  if (rank == 0 && job != NULL) {
    DIR* proc = opendir("/proc");
    for (struct dirent* e = proc ? readdir(proc) : NULL; e != NULL; e = readdir(proc)) {
      char their_job[64], world_rank[32], yield[32];
      if (e->d_name[0] < '0' || e->d_name[0] > '9')
        continue;
      environ_value(e->d_name, "OMPI_MCA_ess_base_jobid", their_job, sizeof their_job);
      environ_value(e->d_name, "OMPI_COMM_WORLD_RANK", world_rank, sizeof world_rank);
      environ_value(e->d_name, "OMPI_MCA_mpi_yield_when_idle", yield, sizeof yield);
      if (strcmp(their_job, job) == 0 && strcmp(world_rank, "-") != 0)
        printf("process world_rank=%s started_with_yield=%s\n", world_rank, yield);
    }
    if (proc != NULL)
      closedir(proc);
  }
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
