/* One MPI call in a loop, for the per-call cost of the call-site profile in C against the same
 * loop in Python (bench/python_loop.py, bench/run_python.sh). A plain MPI program.
 *
 * MPI is initialised with MPI_THREAD_MULTIPLE, as mpi4py does by default (a profile then counts
 * with atomic adds), so that the two languages pay for the same profile.
 *
 * Usage: callsite_loop CALL ITERATIONS [REPETITIONS]
 *   CALL: rank (MPI_Comm_rank) or self_barrier (MPI_Barrier on MPI_COMM_SELF); rank_busy and
 *   self_barrier_busy make the same call between runs of a small bytecode loop (a switch on
 *   opcodes read from memory, about as long as the Python loop's own work per call), so that
 *   the profile's cost is also measured next to other work rather than in a loop of nothing else;
 *   rank_dense and self_barrier_dense between runs of work that keeps the core's execution units
 *   busy (reference-count updates and well-predicted branches over small objects, as an
 *   interpreter does). The profile's own instructions hide behind its two clock reads (each some
 *   8 ns on this machine) next to nothing or next to the latency-bound bytecode loop, and
 *   cost what they cost next to dense work, in C as in Python
 * Prints the best repetition: bench python lang=c call=CALL iterations=N ns_per_call=X
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The work between two calls of the busy loops: an interpreter's shape (one indirect branch per
 * opcode, loads and stores of a small stack), 24 opcodes a run. */
enum { op_push, op_add, op_xor, op_load, op_store, op_jump_odd, op_count };
static unsigned char program[24];
static long slots[16];

/* The dense work between two calls: 32 objects' reference counts raised and lowered around a
 * read and a type test, no long dependency chain and no mispredicted branch. */
struct object {
  long refcount;
  long type;
  long value;
};
static struct object objects[32];

static long run_dense(long seed) {
  long sum = 0;
  for (int i = 0; i < 32; ++i) {
    struct object* o = &objects[i];
    ++o->refcount;
    sum += o->value ^ seed;
    if (o->type == 7)
      ++sum;
    --o->refcount;
  }
  return sum;
}

static long run_program(long seed) {
  long stack[8] = {seed, 1, 2, 3, 4, 5, 6, 7};
  int top = 1;
  for (int pc = 0; pc < (int)sizeof program; ++pc) {
    switch (program[pc]) {
    case op_push:
      stack[top & 7] = pc;
      top = (top + 1) & 7;
      break;
    case op_add:
      stack[(top - 1) & 7] += stack[(top - 2) & 7];
      break;
    case op_xor:
      stack[(top - 1) & 7] ^= stack[(top - 2) & 7] >> 1;
      break;
    case op_load:
      stack[top & 7] = slots[pc & 15];
      top = (top + 1) & 7;
      break;
    case op_store:
      slots[pc & 15] = stack[(top - 1) & 7];
      break;
    default:
      if (stack[(top - 1) & 7] & 1)
        ++pc;
      break;
    }
  }
  return stack[(top - 1) & 7];
}

int main(int argc, char** argv) {
  const char* call = argc > 1 ? argv[1] : "";
  const int barrier = strncmp(call, "self_barrier", 12) == 0;
  const int rank_call = strncmp(call, "rank", 4) == 0;
  const char* suffix = barrier ? call + 12 : rank_call ? call + 4 : "?";
  const int busy = strcmp(suffix, "_busy") == 0;
  const int dense = strcmp(suffix, "_dense") == 0;
  if (argc < 3 || (suffix[0] != '\0' && !busy && !dense)) {
    fprintf(stderr,
            "usage: callsite_loop rank|self_barrier[_busy|_dense] ITERATIONS [REPETITIONS]\n");
    return 2;
  }
  unsigned seed = 12345;
  for (int i = 0; i < (int)sizeof program; ++i) {
    seed = seed * 1103515245u + 12345u;
    program[i] = (unsigned char)((seed >> 16) % op_count);
  }
  long sink = 0;
  const long iterations = atol(argv[2]);
  const int repetitions = argc > 3 ? atoi(argv[3]) : 5;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  double best = 1e300;
  for (int r = 0; r < repetitions; ++r) {
    const double t0 = now_ns();
    if (busy || dense) {
      for (long i = 0; i < iterations; ++i) {
        sink += busy ? run_program(i) : run_dense(i);
        if (barrier)
          MPI_Barrier(MPI_COMM_SELF);
        else
          MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      }
    } else if (barrier) {
      for (long i = 0; i < iterations; ++i)
        MPI_Barrier(MPI_COMM_SELF);
    } else {
      for (long i = 0; i < iterations; ++i)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    const double per_call = (now_ns() - t0) / (double)iterations;
    if (per_call < best)
      best = per_call;
  }
  if (rank == 0)
    printf("bench python lang=c call=%s iterations=%ld ns_per_call=%.1f%s\n", call, iterations,
           best, sink == 42 ? " " : "");
  MPI_Finalize();
  return 0;
}
