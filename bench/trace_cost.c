/* Trace benchmark: what one recorded event costs. A plain MPI program (annotated with the region
 * API, which needs no Strata to build): it times MPI_Comm_test_inter through the MPI_ symbol
 * (through Strata and the trace module when they are loaded) against the same call made straight
 * into the MPI library through a pointer taken from the library itself, in the same process, and
 * it times region begin/end pairs against an empty loop.
 *
 * Usage: trace_cost [--batch N] [--samples S] [--reps K] [--label TEXT]
 *        trace_cost --callgrind-iters N   (loops only, for callgrind --toggle-collect)
 *
 * Output from rank 0, one line per measurement:
 *   bench trace flavor=F label=L call=Comm_test_inter native_ns=.. strata_ns=.. delta_ns=..
 *   bench trace flavor=F label=L call=region_event ns=..      (one begin or end)
 * Each traced MPI call is 2 OTF2 events (Enter, Leave) and one in-memory record; each region
 * begin or end is one of each. */
#define _GNU_SOURCE
#include <mpi.h>
#include <strata/annotate.h>

#include <stdio.h>
#include <stdlib.h>

#define BENCH_NAME "trace_cost"
#include "native_mpi.h"

typedef int (*test_inter_fn)(MPI_Comm, int*);
static test_inter_fn volatile native_test_inter;

/* The MPI library's own PMPI_Comm_test_inter: dlsym on its handle never finds a preloaded
 * interposer. */
static void resolve_native(void) {
  native_test_inter = (test_inter_fn)must_sym(mpi_library(), "PMPI_Comm_test_inter");
}

__attribute__((noinline)) double loop_native(long n) {
  test_inter_fn f = native_test_inter;
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    f(MPI_COMM_WORLD, &flag);
  return (now_ns() - t0) / (double)n;
}

__attribute__((noinline)) double loop_symbol(long n) {
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
  return (now_ns() - t0) / (double)n;
}

/* Per region event (a begin or an end). */
__attribute__((noinline)) double loop_regions(long n) {
  double t0 = now_ns();
  for (long i = 0; i < n; ++i) {
    strata_region_begin("bench");
    strata_region_end("bench");
  }
  return (now_ns() - t0) / (double)n / 2.0;
}

/* Per iteration: a receive and a send posted to this rank itself, completed by one MPI_Waitall,
 * then an MPI_Wait on the null request; the trace module wraps both completions (callgrind only:
 * its instructions include the MPI library's own work on the messages). */
__attribute__((noinline)) void loop_completions(long n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int out = 1, in = 0;
  for (long i = 0; i < n; ++i) {
    MPI_Request requests[2];
    MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: GCC reads MPICH's as an overflow */
    MPI_Irecv(&in, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(&out, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, &requests[1]);
    MPI_Waitall(2, requests, statuses);
    MPI_Request none = MPI_REQUEST_NULL;
    MPI_Wait(&none, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) {
  long batch = 10000, cg_iters = -1;
  int reps = 5, samples = 15;
  const char* label = "-";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atol(argv[++i]);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind-iters") && i + 1 < argc)
      cg_iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--label") && i + 1 < argc)
      label = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--batch N] [--samples S] [--reps K] [--label L] "
              "[--callgrind-iters N]\n",
              argv[0]);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  resolve_native();
  if (cg_iters >= 0) {
    loop_native(cg_iters);
    loop_symbol(cg_iters);
    loop_regions(cg_iters);
    loop_completions(cg_iters);
    MPI_Finalize();
    return 0;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* Batches alternate native and traced so that noise hits both alike; the median of `samples`
   * batches, best of `reps`. Batches are short (10,000 calls, about a millisecond traced) so that
   * most fit between two preemptions on a shared machine; the median drops the others. Every
   * traced call stays in memory: reps x samples x 2 x batch records of 72 bytes per rank. */
  if (batch < 1 || samples < 1 || samples > 1000 || reps < 1) {
    fprintf(stderr, "trace_cost: bad --batch, --samples or --reps\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double* vn = malloc(sizeof(double) * (size_t)samples);
  double* vs = malloc(sizeof(double) * (size_t)samples);
  double* vr = malloc(sizeof(double) * (size_t)samples);
  double best_n = 1e30, best_s = 1e30, best_r = 1e30;
  for (int r = 0; r < reps; ++r) {
    for (int s = 0; s < samples; ++s) {
      vn[s] = loop_native(batch);
      vs[s] = loop_symbol(batch);
      vr[s] = loop_regions(batch / 2);
    }
    double mn = median(vn, samples), ms = median(vs, samples), mr = median(vr, samples);
    best_n = mn < best_n ? mn : best_n;
    best_s = ms < best_s ? ms : best_s;
    best_r = mr < best_r ? mr : best_r;
  }
  free(vn);
  free(vs);
  free(vr);
  if (rank == 0) {
    printf("bench trace flavor=%s label=%s call=Comm_test_inter native_ns=%.2f strata_ns=%.2f "
           "delta_ns=%.2f\n",
           flavor, label, best_n, best_s, best_s - best_n);
    printf("bench trace flavor=%s label=%s call=region_event ns=%.2f\n", flavor, label, best_r);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
