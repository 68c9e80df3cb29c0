/* What the per-call benchmarks (core_overhead, timed_call, trace_cost) share: the MPI flavor's
 * name, a clock, the MPI library's own entry points (looked up in the library itself, so a
 * preloaded interposer never answers), which object a symbol resolves to, and a median.
 * Each program includes it once; BENCH_NAME prefixes its messages. */
#ifndef STRATA_BENCH_NATIVE_MPI_H
#define STRATA_BENCH_NATIVE_MPI_H

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(OPEN_MPI)
static const char flavor[] = "openmpi";
#elif defined(MPICH)
static const char flavor[] = "mpich";
#else
static const char flavor[] = "unknown";
#endif

static inline double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char mpi_lib_path[4096];

static inline int find_mpi_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const char* name = info->dlpi_name;
  if (name == NULL || name[0] == '\0')
    return 0;
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, "libmpi.so", 9) == 0 || strncmp(base, "libmpich.so", 11) == 0) {
    snprintf(mpi_lib_path, sizeof mpi_lib_path, "%s", name);
    return 1;
  }
  return 0;
}

/* The loaded MPI library's handle; the program ends with a message if there is none. dlsym on
 * it looks in that object and its dependencies, never in a preloaded object that comes earlier
 * in the global scope. */
static inline void* mpi_library(void) {
  if (!dl_iterate_phdr(find_mpi_object, NULL)) {
    fprintf(stderr, "%s: no libmpi.so / libmpich.so loaded\n", BENCH_NAME);
    exit(2);
  }
  void* h = dlopen(mpi_lib_path, RTLD_NOLOAD | RTLD_LAZY);
  if (h == NULL) {
    fprintf(stderr, "%s: dlopen(%s, RTLD_NOLOAD): %s\n", BENCH_NAME, mpi_lib_path, dlerror());
    exit(2);
  }
  return h;
}

static inline void* must_sym(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == NULL) {
    fprintf(stderr, "%s: %s not found in %s\n", BENCH_NAME, name, mpi_lib_path);
    exit(2);
  }
  return p;
}

/* Which object the program's `symbol` resolves to: the MPI library itself, or an interposer
 * loaded ahead of it (a sanity check that the run measured what it meant to). */
static inline const char* symbol_owner(const char* symbol) {
  Dl_info info;
  void* p = dlsym(RTLD_DEFAULT, symbol);
  if (p == NULL || !dladdr(p, &info) || info.dli_fname == NULL)
    return "?";
  const char* base = strrchr(info.dli_fname, '/');
  return base ? base + 1 : info.dli_fname;
}

static inline int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static inline double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
