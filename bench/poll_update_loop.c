/* The shape of HPCC's MPIRandomAccess inner loop: one random update of a large table, then one
 * poll (MPI_Test on a receive that is never matched). It asks what a layer in the poll costs a
 * memory-bound loop, which instruction counts of the poll alone do not predict (see
 * docs/PERFORMANCE.md, "Lean polls"). A plain MPI program: run it natively
 * and under Strata (bench/run_profile.sh PARTS=pollloop) and compare the ns per iteration.
 *
 * poll_update_loop [LOG2_WORDS [ITERATIONS [POLL_EVERY [HUGE_PAGES [TESTANY [PAIRS]]]]]]
 *   (24, 20000000, 1, 0, 0, 0; POLL_EVERY 0: no polls; HUGE_PAGES 1: the table on transparent huge
 *   pages, so that its updates miss the caches but hardly the TLB; TESTANY N > 0: the poll is
 *   MPI_Testany over N such receives, as HPCC's RandomAccess polls, instead of MPI_Test)
 *
 * PAIRS P > 0: instead of one timed loop, P pairs of blocks of ITERATIONS / (2 P) iterations,
 * one polling through MPI_X as the application would (the tool under test, if any) and one
 * through the MPI library's own PMPI_X, found in the library itself (Strata exports PMPI_X too),
 * the order alternating from pair to pair. Both halves of a pair see the same machine, so their
 * ratio holds where the machine's speed drifts between runs (the memory of a shared host); it
 * prints the median ratio. Run natively, both halves are the library's and the ratio is 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* HPCC's generator: a shift with the primitive polynomial 7, one step per update. */
static uint64_t next_random(uint64_t r) {
  return (r << 1) ^ (((int64_t)r < 0) ? UINT64_C(7) : UINT64_C(0));
}

static long argument(int argc, char** argv, int i, long fallback) {
  if (argc <= i)
    return fallback;
  char* end = NULL;
  long v = strtol(argv[i], &end, 10);
  if (*argv[i] == '\0' || *end != '\0' || v < 0) {
    fprintf(stderr, "poll_update_loop: argument %d must be a non-negative integer, got '%s'\n", i,
            argv[i]);
    exit(2);
  }
  return v;
}

typedef int (*testany_fn)(int, MPI_Request*, int*, int*, MPI_Status*);
typedef int (*test_fn)(MPI_Request*, int*, MPI_Status*);

/* The first loaded object named like the MPI library (Open MPI's libmpi, MPICH's libmpi or
 * libmpich), opened again without loading anything. */
static int find_mpi_library(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  const char* base = strrchr(info->dlpi_name, '/');
  base = base != NULL ? base + 1 : info->dlpi_name;
  if (strncmp(base, "libmpi.so", 9) != 0 && strncmp(base, "libmpich.so", 11) != 0)
    return 0;
  *(void**)data = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  return *(void**)data != NULL;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* A checksum of the table, printed so that the updates cannot be optimised away. */
static uint64_t table_check(const uint64_t* table, uint64_t words) {
  uint64_t check = 0;
  for (uint64_t i = 0; i < words; i += 4097)
    check ^= table[i];
  return check;
}

/* Cancels the receives that were never matched and ends the program's MPI. */
static void finish(MPI_Request* requests, int receives, uint64_t* table) {
  for (int i = 0; i < receives; ++i) {
    MPI_Cancel(&requests[i]);
    MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
  }
  free(table);
  MPI_Finalize();
}

/* One block: the loop of main() with the poll through the given functions. main() keeps its own
 * copy, which calls MPI_Test(any) directly as the figures before the paired mode were taken:
 * this loop's timing depends on the poll's exact code, and a call through a pointer is not it. */
static uint64_t block(uint64_t* table, uint64_t words, uint64_t r, long iterations, long poll_every,
                      int receives, int testany, MPI_Request* requests, testany_fn poll_any,
                      test_fn poll_one) {
  long until_poll = poll_every;
  for (long i = 0; i < iterations; ++i) {
    r = next_random(r);
    table[r & (words - 1)] ^= r;
    if (poll_every != 0 && --until_poll == 0) {
      int flag = 0;
      MPI_Status status;
      if (testany) {
        int index = 0;
        poll_any(receives, requests, &index, &flag, &status);
      } else {
        poll_one(&requests[0], &flag, &status);
      }
      until_poll = poll_every;
    }
  }
  return r;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long log2_words = argument(argc, argv, 1, 24);
  const long iterations = argument(argc, argv, 2, 20000000);
  const long poll_every = argument(argc, argv, 3, 1);
  const long huge_pages = argument(argc, argv, 4, 0);
  const long testany = argument(argc, argv, 5, 0);
  const long pairs = argument(argc, argv, 6, 0);
  if (testany > 64) {
    fprintf(stderr, "poll_update_loop: TESTANY must be 0 to 64, got %ld\n", testany);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (pairs > 0 && iterations / (2 * pairs) < 1) {
    fprintf(stderr, "poll_update_loop: PAIRS must be at most ITERATIONS / 2, got %ld for %ld\n",
            pairs, iterations);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (log2_words < 10 || log2_words > 34) {
    fprintf(stderr, "poll_update_loop: LOG2_WORDS must be 10 to 34, got %ld\n", log2_words);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const uint64_t words = UINT64_C(1) << log2_words;
  const size_t huge = (size_t)2 << 20;
  uint64_t* table =
      huge_pages ? aligned_alloc(huge, words * sizeof *table) : malloc(words * sizeof *table);
  if (table != NULL && huge_pages)
    madvise(table, words * sizeof *table, MADV_HUGEPAGE);
  if (table == NULL) {
    fprintf(stderr, "poll_update_loop: no memory for 2^%ld words\n", log2_words);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (uint64_t i = 0; i < words; ++i)
    table[i] = i;

  int never[64];
  MPI_Request requests[64];
  const int receives = testany > 0 ? (int)testany : 1;
  for (int i = 0; i < receives; ++i)
    MPI_Irecv(&never[i], 1, MPI_INT, MPI_ANY_SOURCE, 4711 + i, MPI_COMM_WORLD, &requests[i]);

  uint64_t r = 1;
  if (pairs > 0) {
    void* library = NULL;
    dl_iterate_phdr(find_mpi_library, &library);
    testany_fn native_any = library ? (testany_fn)dlsym(library, "PMPI_Testany") : NULL;
    test_fn native_one = library ? (test_fn)dlsym(library, "PMPI_Test") : NULL;
    if (native_any == NULL || native_one == NULL) {
      fprintf(stderr,
              "poll_update_loop: PAIRS needs the MPI library's PMPI_Test(any), not found\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const long per_block = iterations / (2 * pairs);
    double* ratios = malloc((size_t)pairs * sizeof *ratios);
    double* tool_ns = malloc((size_t)pairs * sizeof *tool_ns);
    double* native_ns = malloc((size_t)pairs * sizeof *native_ns);
    if (ratios == NULL || tool_ns == NULL || native_ns == NULL) {
      fprintf(stderr, "poll_update_loop: no memory for %ld pairs\n", pairs);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (long p = 0; p < pairs; ++p) {
      double t[2];
      for (int half = 0; half < 2; ++half) {
        const int through_tool = (half + (int)(p & 1)) & 1;
        const double start = now_seconds();
        r = block(table, words, r, per_block, poll_every, receives, testany > 0, requests,
                  through_tool ? MPI_Testany : native_any, through_tool ? MPI_Test : native_one);
        t[through_tool] = now_seconds() - start;
      }
      ratios[p] = t[1] / t[0];
      tool_ns[p] = t[1] * 1e9 / (double)per_block;
      native_ns[p] = t[0] * 1e9 / (double)per_block;
    }
    qsort(ratios, (size_t)pairs, sizeof *ratios, compare_doubles);
    qsort(tool_ns, (size_t)pairs, sizeof *tool_ns, compare_doubles);
    qsort(native_ns, (size_t)pairs, sizeof *native_ns, compare_doubles);
    const uint64_t check = table_check(table, words);
    if (rank == 0)
      printf("bench pollpairs log2_words=%ld pairs=%ld block=%ld testany=%ld "
             "median_ratio=%.4f q1_ratio=%.4f q3_ratio=%.4f tool_ns=%.2f native_ns=%.2f "
             "check=%llx\n",
             log2_words, pairs, per_block, testany, ratios[pairs / 2], ratios[pairs / 4],
             ratios[3 * pairs / 4], tool_ns[pairs / 2], native_ns[pairs / 2],
             (unsigned long long)check);
    free(ratios);
    free(tool_ns);
    free(native_ns);
    finish(requests, receives, table);
    return 0;
  }
  long until_poll = poll_every;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < iterations; ++i) {
    r = next_random(r);
    table[r & (words - 1)] ^= r;
    if (poll_every != 0 && --until_poll == 0) {
      int flag = 0;
      MPI_Status status;
      if (testany > 0) {
        int index = 0;
        MPI_Testany(receives, requests, &index, &flag, &status);
      } else {
        MPI_Test(&requests[0], &flag, &status);
      }
      until_poll = poll_every;
    }
  }
  double seconds = MPI_Wtime() - t0;

  const uint64_t check = table_check(table, words);
  double slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("bench pollloop log2_words=%ld iterations=%ld poll_every=%ld huge_pages=%ld "
           "testany=%ld ns_per_iteration=%.2f check=%llx\n",
           log2_words, iterations, poll_every, huge_pages, testany,
           iterations > 0 ? slowest * 1e9 / (double)iterations : 0.0, (unsigned long long)check);
  finish(requests, receives, table);
  return 0;
}
