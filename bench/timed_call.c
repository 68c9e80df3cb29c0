/* The cost of one MPI call a profiler must time, and of one it only counts: MPI_Barrier on
 * MPI_COMM_SELF, a 0-byte MPI_Sendrecv to self, an MPI_Iprobe that finds nothing (timed on
 * every call with STRATA_PROFILE_POLL_SAMPLE=1), and MPI_Comm_test_inter (counted, never timed,
 * by the profile), and a persistent 0-byte send to self started with its receive (two MPI_Start
 * and an MPI_Waitall: the profile counts each start's message). One rank, a plain MPI program that
 * knows nothing of Strata or of any other tool: each call through its MPI_ symbol (through whatever
 * tool is preloaded) against the same call straight into the MPI library through a pointer taken
 * from the library itself, in the same process, so that the difference is the tool's cost alone.
 *
 * Usage: timed_call [--iters N] [--reps K] [--label TEXT] [--threads T]
 *        timed_call --callgrind-iters N --callgrind-call barrier|sendrecv|iprobe|test_inter|
 *                   start|irecv_isend|ibarrier|put|neighbor|irecv_send [--native]   (only N such
 * calls, for callgrind's instruction counts; the last four are callgrind's only: an MPI_Irecv and
 * an MPI_Isend to self and an MPI_Waitall of both, an MPI_Ibarrier on MPI_COMM_SELF and its
 * MPI_Wait, the calls that make requests; an 8-byte MPI_Put to self on a window of MPI_COMM_SELF,
 * in one passive-target epoch (MPI_Win_lock_all) around the loop); an MPI_Neighbor_allgather of one
 * double on a periodic 1-D Cartesian communicator of MPI_COMM_SELF (two neighbours, both itself);
 * irecv_send: an MPI_Irecv, a 0-byte MPI_Send to self and an MPI_Wait (one "call" is the
 * three; MPICH's MPI_Send to self waits for a posted receive))
 * --calls a,b,...: the calls timed (default the first five: barrier to start; any of the names
 * above may be timed).
 *
 * --threads T: MPI_THREAD_MULTIPLE, and T threads time MPI_Barrier(MPI_COMM_SELF) at the same
 * time (call=barrier_threads, the mean of the threads' figures): what a profiler's counting
 * costs when threads call MPI together.
 *
 * Output, one line per call from rank 0:
 *   bench timed flavor=F label=L call=C native_ns=.. tool_ns=.. delta_ns=.. owner=OBJECT */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "timed_call"
#include "native_mpi.h"

typedef int (*barrier_fn)(MPI_Comm);
typedef int (*sendrecv_fn)(const void*, int, MPI_Datatype, int, int, void*, int, MPI_Datatype, int,
                           int, MPI_Comm, MPI_Status*);
typedef int (*iprobe_fn)(int, int, MPI_Comm, int*, MPI_Status*);
typedef int (*test_inter_fn)(MPI_Comm, int*);
typedef int (*send_fn)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*irecv_fn)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);
typedef int (*isend_fn)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);
typedef int (*waitall_fn)(int, MPI_Request*, MPI_Status*);
typedef int (*ibarrier_fn)(MPI_Comm, MPI_Request*);
typedef int (*wait_fn)(MPI_Request*, MPI_Status*);
typedef int (*start_fn)(MPI_Request*);
typedef int (*put_fn)(const void*, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Win);
typedef int (*neighbor_allgather_fn)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype,
                                     MPI_Comm);

static barrier_fn volatile native_barrier;
static sendrecv_fn volatile native_sendrecv;
static iprobe_fn volatile native_iprobe;
static test_inter_fn volatile native_test_inter;
static send_fn volatile native_send;
static irecv_fn volatile native_irecv;
static isend_fn volatile native_isend;
static waitall_fn volatile native_waitall;
static ibarrier_fn volatile native_ibarrier;
static wait_fn volatile native_wait;
static start_fn volatile native_start;
static put_fn volatile native_put;
static neighbor_allgather_fn volatile native_neighbor_allgather;
enum { never_sent_tag = 4242 };

static void resolve_native(void) {
  void* h = mpi_library();
  native_barrier = (barrier_fn)must_sym(h, "PMPI_Barrier");
  native_sendrecv = (sendrecv_fn)must_sym(h, "PMPI_Sendrecv");
  native_iprobe = (iprobe_fn)must_sym(h, "PMPI_Iprobe");
  native_test_inter = (test_inter_fn)must_sym(h, "PMPI_Comm_test_inter");
  native_send = (send_fn)must_sym(h, "PMPI_Send");
  native_irecv = (irecv_fn)must_sym(h, "PMPI_Irecv");
  native_isend = (isend_fn)must_sym(h, "PMPI_Isend");
  native_waitall = (waitall_fn)must_sym(h, "PMPI_Waitall");
  native_ibarrier = (ibarrier_fn)must_sym(h, "PMPI_Ibarrier");
  native_wait = (wait_fn)must_sym(h, "PMPI_Wait");
  native_start = (start_fn)must_sym(h, "PMPI_Start");
  native_put = (put_fn)must_sym(h, "PMPI_Put");
  native_neighbor_allgather = (neighbor_allgather_fn)must_sym(h, "PMPI_Neighbor_allgather");
}

/* The neighbor loop's communicator: a periodic ring of one process, made only for that call. */
static MPI_Comm neighbor_ring = MPI_COMM_NULL;
static double neighbor_out, neighbor_in[2];

/* The put loop's window: 8 bytes of this process's, allocated only for that call. */
static MPI_Win put_window = MPI_WIN_NULL;
static double put_target;

/* The persistent pair the start loop starts: [0] the receive, [1] the send, made once. */
static MPI_Request persistent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
static char persistent_out, persistent_in;

static void make_persistent(void) {
  MPI_Recv_init(&persistent_in, 0, MPI_BYTE, 0, 9, MPI_COMM_SELF, &persistent[0]);
  MPI_Send_init(&persistent_out, 0, MPI_BYTE, 0, 9, MPI_COMM_SELF, &persistent[1]);
}

/* One call of each kind, through the symbol (native = 0) or the library's pointer. */
static void call_once(int which, int native) {
  static char byte_out, byte_in;
  int flag = 0;
  MPI_Request requests[2];
  MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: MPICH's (a pointer to 1) upsets GCC */
  switch (which) {
  case 0:
    native ? native_barrier(MPI_COMM_SELF) : MPI_Barrier(MPI_COMM_SELF);
    break;
  case 1:
    native ? native_sendrecv(&byte_out, 0, MPI_BYTE, 0, 7, &byte_in, 0, MPI_BYTE, 0, 7,
                             MPI_COMM_SELF, MPI_STATUS_IGNORE)
           : MPI_Sendrecv(&byte_out, 0, MPI_BYTE, 0, 7, &byte_in, 0, MPI_BYTE, 0, 7, MPI_COMM_SELF,
                          MPI_STATUS_IGNORE);
    break;
  case 2:
    native ? native_iprobe(MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE)
           : MPI_Iprobe(MPI_ANY_SOURCE, never_sent_tag, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    break;
  case 3:
    native ? native_test_inter(MPI_COMM_SELF, &flag) : MPI_Comm_test_inter(MPI_COMM_SELF, &flag);
    break;
  case 4:
    if (native) {
      native_start(&persistent[0]);
      native_start(&persistent[1]);
      native_waitall(2, persistent, statuses);
    } else {
      MPI_Start(&persistent[0]);
      MPI_Start(&persistent[1]);
      MPI_Waitall(2, persistent, statuses);
    }
    break;
  case 5:
    native ? native_irecv(&byte_in, 1, MPI_BYTE, 0, 7, MPI_COMM_SELF, &requests[0])
           : MPI_Irecv(&byte_in, 1, MPI_BYTE, 0, 7, MPI_COMM_SELF, &requests[0]);
    native ? native_isend(&byte_out, 1, MPI_BYTE, 0, 7, MPI_COMM_SELF, &requests[1])
           : MPI_Isend(&byte_out, 1, MPI_BYTE, 0, 7, MPI_COMM_SELF, &requests[1]);
    native ? native_waitall(2, requests, statuses) : MPI_Waitall(2, requests, statuses);
    break;
  case 9: /* the receive posted first: MPICH's MPI_Send to self waits for one */
    native ? native_irecv(&byte_in, 0, MPI_BYTE, 0, 8, MPI_COMM_SELF, &requests[0])
           : MPI_Irecv(&byte_in, 0, MPI_BYTE, 0, 8, MPI_COMM_SELF, &requests[0]);
    native ? native_send(&byte_out, 0, MPI_BYTE, 0, 8, MPI_COMM_SELF)
           : MPI_Send(&byte_out, 0, MPI_BYTE, 0, 8, MPI_COMM_SELF);
    native ? native_wait(&requests[0], MPI_STATUS_IGNORE)
           : MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    break;
  case 8:
    native ? native_neighbor_allgather(&neighbor_out, 1, MPI_DOUBLE, neighbor_in, 1, MPI_DOUBLE,
                                       neighbor_ring)
           : MPI_Neighbor_allgather(&neighbor_out, 1, MPI_DOUBLE, neighbor_in, 1, MPI_DOUBLE,
                                    neighbor_ring);
    break;
  case 7:
    native ? native_put(&put_target, 1, MPI_DOUBLE, 0, 0, 1, MPI_DOUBLE, put_window)
           : MPI_Put(&put_target, 1, MPI_DOUBLE, 0, 0, 1, MPI_DOUBLE, put_window);
    break;
  default:
    native ? native_ibarrier(MPI_COMM_SELF, &requests[0])
           : MPI_Ibarrier(MPI_COMM_SELF, &requests[0]);
    native ? native_wait(&requests[0], MPI_STATUS_IGNORE)
           : MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    break;
  }
}

/* noinline and a switch outside the loop: each loop is one call kind and one path. */
#define LOOP(name, stmt)                                                                           \
  __attribute__((noinline)) static double name(long n) {                                           \
    double t0 = now_ns();                                                                          \
    for (long i = 0; i < n; ++i)                                                                   \
      stmt;                                                                                        \
    return (now_ns() - t0) / (double)n;                                                            \
  }
LOOP(native_0, call_once(0, 1))
LOOP(symbol_0, call_once(0, 0))
LOOP(native_1, call_once(1, 1))
LOOP(symbol_1, call_once(1, 0))
LOOP(native_2, call_once(2, 1))
LOOP(symbol_2, call_once(2, 0))
LOOP(native_3, call_once(3, 1))
LOOP(symbol_3, call_once(3, 0))
LOOP(native_4, call_once(4, 1))
LOOP(symbol_4, call_once(4, 0))
LOOP(native_5, call_once(5, 1))
LOOP(symbol_5, call_once(5, 0))
LOOP(native_6, call_once(6, 1))
LOOP(symbol_6, call_once(6, 0))
LOOP(native_7, call_once(7, 1))
LOOP(symbol_7, call_once(7, 0))
LOOP(native_8, call_once(8, 1))
LOOP(symbol_8, call_once(8, 0))
LOOP(native_9, call_once(9, 1))
LOOP(symbol_9, call_once(9, 0))

typedef double (*loop_fn)(long);
enum { default_timed_calls = 5, calls = 10 }; /* timed by default: the first five */
static const loop_fn native_loops[calls] = {native_0, native_1, native_2, native_3, native_4,
                                            native_5, native_6, native_7, native_8, native_9};
static const loop_fn symbol_loops[calls] = {symbol_0, symbol_1, symbol_2, symbol_3, symbol_4,
                                            symbol_5, symbol_6, symbol_7, symbol_8, symbol_9};
static const char* const call_names[calls] = {"barrier",  "sendrecv",    "iprobe",   "test_inter",
                                              "start",    "irecv_isend", "ibarrier", "put",
                                              "neighbor", "irecv_send"};

static int call_index(const char* name, size_t length) {
  for (int c = 0; c < calls; ++c)
    if (strlen(call_names[c]) == length && strncmp(call_names[c], name, length) == 0)
      return c;
  return -1;
}

/* Best of `reps` repetitions of the median of 9 batches; native and symbol batches alternate. */
static void measure(int which, long iters, int reps, double* nat, double* sym) {
  enum { samples = 9 };
  const long batch = iters / samples > 0 ? iters / samples : 1;
  double best_n = 1e30, best_s = 1e30;
  native_loops[which](batch);
  symbol_loops[which](batch);
  for (int r = 0; r < reps; ++r) {
    double vn[samples], vs[samples];
    for (int s = 0; s < samples; ++s) {
      vn[s] = native_loops[which](batch);
      vs[s] = symbol_loops[which](batch);
    }
    const double mn = median(vn, samples), ms = median(vs, samples);
    if (mn < best_n)
      best_n = mn;
    if (ms < best_s)
      best_s = ms;
  }
  *nat = best_n;
  *sym = best_s;
}

struct thread_figures {
  long iters;
  int reps;
  double nat, sym;
};
static pthread_barrier_t start_line;

static void* timing_thread(void* arg) {
  struct thread_figures* t = arg;
  pthread_barrier_wait(&start_line);
  measure(0, t->iters, t->reps, &t->nat, &t->sym);
  return NULL;
}

/* T threads time the barrier together; the mean of their figures. */
static void measure_threads(int threads, long iters, int reps, double* nat, double* sym) {
  pthread_t ids[64];
  struct thread_figures figures[64];
  pthread_barrier_init(&start_line, NULL, (unsigned)threads);
  for (int i = 0; i < threads; ++i) {
    figures[i] = (struct thread_figures){iters, reps, 0, 0};
    pthread_create(&ids[i], NULL, timing_thread, &figures[i]);
  }
  *nat = *sym = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(ids[i], NULL);
    *nat += figures[i].nat / threads;
    *sym += figures[i].sym / threads;
  }
  pthread_barrier_destroy(&start_line);
}

/* The window or communicator a call needs, made before its loop and freed after. */
static void prepare(int which) {
  if (strcmp(call_names[which], "put") == 0 && put_window == MPI_WIN_NULL) {
    /* MPI_Win_allocate, not _create: Open MPI 4.1 here has no component for a created window
     * (its shared-memory one takes only windows it allocates). */
    double* window_bytes = NULL;
    MPI_Win_allocate(sizeof(double), 1, MPI_INFO_NULL, MPI_COMM_SELF, &window_bytes, &put_window);
    MPI_Win_lock_all(0, put_window);
  }
  if (strcmp(call_names[which], "neighbor") == 0 && neighbor_ring == MPI_COMM_NULL) {
    int one = 1, periodic = 1;
    MPI_Cart_create(MPI_COMM_SELF, 1, &one, &periodic, 0, &neighbor_ring);
  }
}

static void release(void) {
  if (put_window != MPI_WIN_NULL) {
    MPI_Win_unlock_all(put_window);
    MPI_Win_free(&put_window);
  }
  if (neighbor_ring != MPI_COMM_NULL)
    MPI_Comm_free(&neighbor_ring);
}

int main(int argc, char** argv) {
  long iters = 2000000, cg_iters = 0;
  int reps = 5, native = 0, which = 0, threads = 0;
  int timed[calls], timed_count = 0;
  for (; timed_count < default_timed_calls; ++timed_count)
    timed[timed_count] = timed_count;
  const char* label = "-";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--label") && i + 1 < argc)
      label = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind-iters") && i + 1 < argc)
      cg_iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind-call") && i + 1 < argc) {
      const char* name = argv[++i];
      which = call_index(name, strlen(name));
      if (which < 0) {
        fprintf(stderr, "timed_call: unknown call %s\n", name);
        return 2;
      }
    } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
      timed_count = 0;
      for (const char* name = argv[++i]; *name != '\0' && timed_count < calls;) {
        const size_t length = strcspn(name, ",");
        const int c = call_index(name, length);
        if (c < 0) {
          fprintf(stderr, "timed_call: unknown call %.*s\n", (int)length, name);
          return 2;
        }
        timed[timed_count++] = c;
        name += length + (name[length] == ',');
      }
    } else if (!strcmp(argv[i], "--native"))
      native = 1;
    else {
      fprintf(stderr, "timed_call: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 0 || threads > 64) {
    fprintf(stderr, "timed_call: --threads takes 1 to 64\n");
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, threads > 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  if (threads > 0 && provided != MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "timed_call: the MPI library does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return 2;
  }
  resolve_native();
  make_persistent();
  if (cg_iters > 0) {
    prepare(which);
    (native ? native_loops : symbol_loops)[which](cg_iters);
    release();
    MPI_Finalize();
    return 0;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (threads > 0) {
    double nat = 0, sym = 0;
    measure_threads(threads, iters, reps, &nat, &sym);
    if (rank == 0)
      printf("bench timed flavor=%s label=%s call=barrier_threads threads=%d native_ns=%.2f "
             "tool_ns=%.2f delta_ns=%.2f owner=%s\n",
             flavor, label, threads, nat, sym, sym - nat, symbol_owner("MPI_Barrier"));
    MPI_Finalize();
    return 0;
  }
  for (int i = 0; i < timed_count; ++i) {
    const int c = timed[i];
    double nat = 0, sym = 0;
    prepare(c);
    measure(c, iters, reps, &nat, &sym);
    if (rank == 0)
      printf("bench timed flavor=%s label=%s call=%s native_ns=%.2f tool_ns=%.2f delta_ns=%.2f "
             "owner=%s\n",
             flavor, label, call_names[c], nat, sym, sym - nat, symbol_owner("MPI_Barrier"));
  }
  release();
  MPI_Request_free(&persistent[0]);
  MPI_Request_free(&persistent[1]);
  MPI_Finalize();
  return 0;
}
