/* Core overhead benchmark: what one cheap MPI call and one 0-byte ping-pong cost through the
 * normal MPI_ symbols (which go through Strata when it is preloaded) against the same calls made
 * straight into the MPI library through pointers taken from the library itself.
 *
 * A plain MPI program: it links only MPI and knows nothing of Strata. The "native" pointers come
 * from the loaded MPI library (found with dl_iterate_phdr by name, dlopen'ed RTLD_NOLOAD), so
 * they bypass any preloaded interposer; both paths are measured in the same process, so the
 * difference is the interposition cost alone.
 *
 * Usage: core_overhead [--iters N] [--reps K] [--pp-iters N] [--label TEXT]
 *        core_overhead --callgrind-iters N [--callgrind-call iprobe|test|testany]
 *            (only N calls of MPI_Comm_test_inter, of an MPI_Iprobe that finds nothing, or of
 *            an MPI_Test or MPI_Testany (with a status) on a receive that is never matched, as
 *            HPCC polls, for callgrind)
 *
 * Output, one machine-readable line per measurement, from rank 0:
 *   bench core flavor=F label=L call=Comm_test_inter native_ns=.. strata_ns=.. delta_ns=..
 *   bench core flavor=F label=L call=Iprobe_empty native_ns=.. strata_ns=.. delta_ns=..
 *   bench core flavor=F label=L call=pingpong0 native_ns=.. strata_ns=.. delta_ns=..
 *   bench core flavor=F label=L call=MPI_Init init_ms=..
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "core_overhead"
#include "native_mpi.h"

typedef int (*test_inter_fn)(MPI_Comm, int*);
typedef int (*send_fn)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);
typedef int (*iprobe_fn)(int, int, MPI_Comm, int*, MPI_Status*);

static test_inter_fn native_test_inter;
static send_fn native_send;
static recv_fn native_recv;
static iprobe_fn native_iprobe;

/* ---- finding the MPI library's own entry points ------------------------------------------ */

static void resolve_native(void) {
  void* h = mpi_library();
  native_test_inter = (test_inter_fn)must_sym(h, "PMPI_Comm_test_inter");
  native_iprobe = (iprobe_fn)must_sym(h, "PMPI_Iprobe");
  native_send = (send_fn)must_sym(h, "PMPI_Send");
  native_recv = (recv_fn)must_sym(h, "PMPI_Recv");
}

/* ---- the timed loops ------------------------------------------------------------------------ */

/* noinline, and the pointer is read through a volatile so the compiler cannot turn the native
 * loop into a direct call or hoist anything out of it. */
static test_inter_fn volatile native_ptr_sink;

__attribute__((noinline)) static double loop_native(long n) {
  test_inter_fn f = native_ptr_sink;
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    f(MPI_COMM_WORLD, &flag);
  return (now_ns() - t0) / (double)n;
}

__attribute__((noinline)) static double loop_symbol(long n) {
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
  return (now_ns() - t0) / (double)n;
}

/* A poll that finds nothing: no message ever carries this tag. */
enum { never_sent_tag = 4242 };
static iprobe_fn volatile native_iprobe_sink;

__attribute__((noinline)) static double loop_native_iprobe(long n) {
  iprobe_fn f = native_iprobe_sink;
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    f(MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return (now_ns() - t0) / (double)n;
}

__attribute__((noinline)) static double loop_symbol_iprobe(long n) {
  int flag = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; ++i)
    MPI_Iprobe(MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return (now_ns() - t0) / (double)n;
}

/* Best of `reps` repetitions; each repetition is the median of `samples` timed batches. Native
 * and symbol batches alternate so that frequency and noise drift hit both alike. */
typedef double (*loop_fn)(long);
static void measure_loops(loop_fn native_loop, loop_fn symbol_loop, long iters, int reps,
                          double* nat, double* sym) {
  enum { samples = 9 };
  const long batch = iters / samples > 0 ? iters / samples : 1;
  double best_n = 1e30, best_s = 1e30;
  native_loop(batch);
  symbol_loop(batch);
  for (int r = 0; r < reps; ++r) {
    double vn[samples], vs[samples];
    for (int s = 0; s < samples; ++s) {
      vn[s] = native_loop(batch);
      vs[s] = symbol_loop(batch);
    }
    double mn = median(vn, samples), ms = median(vs, samples);
    if (mn < best_n)
      best_n = mn;
    if (ms < best_s)
      best_s = ms;
  }
  *nat = best_n;
  *sym = best_s;
}

/* Half round trip of a 0-byte ping-pong between ranks 0 and 1, in ns. */
static double pingpong(int rank, long n, int native) {
  char b = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_ns();
  if (native) {
    for (long i = 0; i < n; ++i) {
      if (rank == 0) {
        native_send(&b, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        native_recv(&b, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        native_recv(&b, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        native_send(&b, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
      }
    }
  } else {
    for (long i = 0; i < n; ++i) {
      if (rank == 0) {
        MPI_Send(&b, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&b, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(&b, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&b, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
      }
    }
  }
  return (now_ns() - t0) / (double)n / 2.0;
}

static void measure_pingpong(int rank, long iters, int reps, double* nat, double* sym) {
  enum { samples = 5 };
  const long batch = iters / samples > 0 ? iters / samples : 1;
  double best_n = 1e30, best_s = 1e30;
  pingpong(rank, batch / 4 + 1, 1);
  pingpong(rank, batch / 4 + 1, 0);
  for (int r = 0; r < reps; ++r) {
    double vn[samples], vs[samples];
    for (int s = 0; s < samples; ++s) {
      vn[s] = pingpong(rank, batch, 1);
      vs[s] = pingpong(rank, batch, 0);
    }
    double mn = median(vn, samples), ms = median(vs, samples);
    if (mn < best_n)
      best_n = mn;
    if (ms < best_s)
      best_s = ms;
  }
  *nat = best_n;
  *sym = best_s;
}

int main(int argc, char** argv) {
  long iters = 2000000, pp_iters = 20000, cg_iters = -1;
  const char* cg_call = "test_inter";
  int reps = 5;
  const char* label = "-";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pp-iters") && i + 1 < argc)
      pp_iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind-iters") && i + 1 < argc)
      cg_iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind-call") && i + 1 < argc)
      cg_call = argv[++i];
    else if (!strcmp(argv[i], "--label") && i + 1 < argc)
      label = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--iters N] [--reps K] [--pp-iters N] [--label L] "
              "[--callgrind-iters N]\n",
              argv[0]);
      return 2;
    }
  }

  double t0 = now_ns();
  MPI_Init(&argc, &argv);
  double init_ms = (now_ns() - t0) / 1e6;

  if (cg_iters >= 0) {
    /* Only the loop: Ir(N) - Ir(0) over N is the instructions per call. */
    int flag = 0, index = 0, buf = 0;
    MPI_Status status;
    MPI_Request request = MPI_REQUEST_NULL;
    const int iprobe = !strcmp(cg_call, "iprobe"), test = !strcmp(cg_call, "test"),
              testany = !strcmp(cg_call, "testany");
    if (!iprobe && !test && !testany && strcmp(cg_call, "test_inter") != 0) {
      fprintf(stderr, "core_overhead: --callgrind-call %s: not iprobe, test or testany\n", cg_call);
      return 2;
    }
    /* Posted in both runs (N and 0 calls), so it cancels out of the difference. */
    if (test || testany)
      MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_WORLD, &request);
    for (long i = 0; i < cg_iters; ++i) {
      if (iprobe)
        MPI_Iprobe(MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      else if (test)
        MPI_Test(&request, &flag, &status);
      else if (testany)
        MPI_Testany(1, &request, &index, &flag, &status);
      else
        MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    }
    if (request != MPI_REQUEST_NULL) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
  }

  resolve_native();
  native_ptr_sink = native_test_inter;
  native_iprobe_sink = native_iprobe;

  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* MPI_Init time: the slowest rank's. */
  double init_max = init_ms;
  MPI_Reduce(&init_ms, &init_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  double nat = 0, sym = 0;
  measure_loops(loop_native, loop_symbol, iters, reps, &nat, &sym);
  if (rank == 0) {
    printf("bench core flavor=%s label=%s call=MPI_Init init_ms=%.2f\n", flavor, label, init_max);
    printf("bench core flavor=%s label=%s call=Comm_test_inter native_ns=%.2f strata_ns=%.2f "
           "delta_ns=%.2f symbol_from=%s\n",
           flavor, label, nat, sym, sym - nat, symbol_owner("MPI_Comm_test_inter"));
    fflush(stdout);
  }
  measure_loops(loop_native_iprobe, loop_symbol_iprobe, iters, reps, &nat, &sym);
  if (rank == 0) {
    printf("bench core flavor=%s label=%s call=Iprobe_empty native_ns=%.2f strata_ns=%.2f "
           "delta_ns=%.2f\n",
           flavor, label, nat, sym, sym - nat);
    fflush(stdout);
  }

  if (size >= 2 && pp_iters > 0) {
    measure_pingpong(rank, pp_iters, reps, &nat, &sym);
    if (rank == 0) {
      printf("bench core flavor=%s label=%s call=pingpong0 native_ns=%.1f strata_ns=%.1f "
             "delta_ns=%.1f\n",
             flavor, label, nat, sym, sym - nat);
      fflush(stdout);
    }
  }

  MPI_Finalize();
  return 0;
}
