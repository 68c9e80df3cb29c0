/* Computes (spins) for a wall-clock time: a late sender that holds its core, as real work
 * would, rather than sleeping. */
#ifndef STRATA_TESTS_BUSY_WAIT_H
#define STRATA_TESTS_BUSY_WAIT_H

#include <time.h>

static inline void busy_ms(int ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do
    clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

#endif
