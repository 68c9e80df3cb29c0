/* Counts the collectives a Strata module makes at MPI_Finalize (bench/run_profile.sh, finalize
 * part): a preloaded library placed after libstrata (`strata run` keeps LD_PRELOAD after its own
 * library), so the core's calls to the real PMPI_ functions, which it finds with
 * dlsym(RTLD_NEXT), come here first. It counts the blocking collectives made after the last
 * MPI_Barrier: bench/finalize_time.c passes a barrier just before MPI_Finalize, so what is counted
 * is what the modules did inside MPI_Finalize. It also times that part of MPI_Finalize: from the
 * return of the last barrier to the real PMPI_Finalize (CLOCK_MONOTONIC), i.e. the modules' own
 * finalize work, measured inside one run rather than as the difference of two runs. It also
 * counts the bytes each rank receives after that barrier as the root of MPI_Gather/MPI_Gatherv
 * (from the other ranks), as the root of MPI_Reduce (one buffer: a lower bound, since a tree
 * reduction brings the root one per round) or by MPI_Recv: the profile's figures, host names and
 * call sites. At PMPI_Finalize each rank prints
 *   bench collectives rank=R after_barrier=N modules_ns=T recv_bytes=B Allreduce=a Reduce=b ...
 * Build: mpicc.openmpi -O2 -shared -fPIC -o count_collectives.so count_collectives.c -ldl */
#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  ALLREDUCE,
  REDUCE,
  BCAST,
  GATHER,
  GATHERV,
  ALLGATHER,
  ALLGATHERV,
  SCATTER,
  ALLTOALL,
  SCAN,
  KINDS
};
static const char* const kind_names[KINDS] = {"Allreduce", "Reduce",    "Bcast",      "Gather",
                                              "Gatherv",   "Allgather", "Allgatherv", "Scatter",
                                              "Alltoall",  "Scan"};
static int counts[KINDS];
static long long barrier_left_ns;
static long long received_bytes;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The next definition of an MPI function (the MPI library's), with the function's own type. */
#define NEXT(name) ((__typeof__(name)*)dlsym(RTLD_NEXT, #name))

/* What the root of a gather receives from the other ranks: each[i] elements of type from rank i
 * (count from each when `each` is null). */
static long long root_bytes(int count, const int* each, MPI_Datatype type, int root,
                            MPI_Comm comm) {
  int rank = -1, size = 0, type_size = 0;
  NEXT(PMPI_Comm_rank)(comm, &rank);
  if (rank != root)
    return 0;
  NEXT(PMPI_Comm_size)(comm, &size);
  NEXT(PMPI_Type_size)(type, &type_size);
  long long elements = 0;
  for (int i = 0; i < size; ++i)
    if (i != root)
      elements += each != NULL ? each[i] : count;
  return elements * type_size;
}

int PMPI_Recv(void* b, int n, MPI_Datatype t, int source, int tag, MPI_Comm c, MPI_Status* status) {
  MPI_Status mine;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &mine : status;
  __typeof__(PMPI_Recv)* real = NEXT(PMPI_Recv);
  const int rc = real(b, n, t, source, tag, c, st);
  int count = 0;
  NEXT(PMPI_Get_count)(st, MPI_BYTE, &count);
  if (count > 0)
    received_bytes += count;
  return rc;
}

int PMPI_Barrier(MPI_Comm comm) {
  memset(counts, 0, sizeof counts);
  received_bytes = 0;
  __typeof__(PMPI_Barrier)* real = NEXT(PMPI_Barrier);
  const int rc = real(comm);
  barrier_left_ns = now_ns();
  return rc;
}

int PMPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  ++counts[ALLREDUCE];
  __typeof__(PMPI_Allreduce)* real = NEXT(PMPI_Allreduce);
  return real(s, r, n, t, op, c);
}

int PMPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  ++counts[REDUCE];
  int rank = -1, type_size = 0;
  NEXT(PMPI_Comm_rank)(c, &rank);
  NEXT(PMPI_Type_size)(t, &type_size);
  if (rank == root)
    received_bytes += (long long)n * type_size;
  __typeof__(PMPI_Reduce)* real = NEXT(PMPI_Reduce);
  return real(s, r, n, t, op, root, c);
}

int PMPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  ++counts[BCAST];
  __typeof__(PMPI_Bcast)* real = NEXT(PMPI_Bcast);
  return real(b, n, t, root, c);
}

int PMPI_Gather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root,
                MPI_Comm c) {
  ++counts[GATHER];
  received_bytes += root_bytes(rn, NULL, rt, root, c);
  __typeof__(PMPI_Gather)* real = NEXT(PMPI_Gather);
  return real(s, sn, st, r, rn, rt, root, c);
}

int PMPI_Gatherv(const void* s, int sn, MPI_Datatype st, void* r, const int* rn, const int* displ,
                 MPI_Datatype rt, int root, MPI_Comm c) {
  ++counts[GATHERV];
  received_bytes += root_bytes(0, rn, rt, root, c);
  __typeof__(PMPI_Gatherv)* real = NEXT(PMPI_Gatherv);
  return real(s, sn, st, r, rn, displ, rt, root, c);
}

int PMPI_Allgather(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                   MPI_Comm c) {
  ++counts[ALLGATHER];
  __typeof__(PMPI_Allgather)* real = NEXT(PMPI_Allgather);
  return real(s, sn, st, r, rn, rt, c);
}

int PMPI_Allgatherv(const void* s, int sn, MPI_Datatype st, void* r, const int* rn,
                    const int* displ, MPI_Datatype rt, MPI_Comm c) {
  ++counts[ALLGATHERV];
  __typeof__(PMPI_Allgatherv)* real = NEXT(PMPI_Allgatherv);
  return real(s, sn, st, r, rn, displ, rt, c);
}

int PMPI_Scatter(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root,
                 MPI_Comm c) {
  ++counts[SCATTER];
  __typeof__(PMPI_Scatter)* real = NEXT(PMPI_Scatter);
  return real(s, sn, st, r, rn, rt, root, c);
}

int PMPI_Alltoall(const void* s, int sn, MPI_Datatype st, void* r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  ++counts[ALLTOALL];
  __typeof__(PMPI_Alltoall)* real = NEXT(PMPI_Alltoall);
  return real(s, sn, st, r, rn, rt, c);
}

int PMPI_Scan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  ++counts[SCAN];
  __typeof__(PMPI_Scan)* real = NEXT(PMPI_Scan);
  return real(s, r, n, t, op, c);
}

int PMPI_Finalize(void) {
  const long long modules_ns = now_ns() - barrier_left_ns;
  int rank = -1;
  __typeof__(PMPI_Comm_rank)* comm_rank = NEXT(PMPI_Comm_rank);
  comm_rank(MPI_COMM_WORLD, &rank);
  int total = 0;
  char line[512];
  int at = 0;
  for (int k = 0; k < KINDS; ++k)
    total += counts[k];
  at += snprintf(line + at, sizeof line - (size_t)at,
                 "bench collectives rank=%d after_barrier=%d modules_ns=%lld recv_bytes=%lld", rank,
                 total, modules_ns, received_bytes);
  for (int k = 0; k < KINDS; ++k)
    if (counts[k] != 0 && at < (int)sizeof line)
      at += snprintf(line + at, sizeof line - (size_t)at, " %s=%d", kind_names[k], counts[k]);
  if (at < (int)sizeof line - 1)
    line[at++] = '\n';
  ssize_t w = write(STDOUT_FILENO, line, (size_t)at);
  (void)w;
  __typeof__(PMPI_Finalize)* real = NEXT(PMPI_Finalize);
  return real();
}
