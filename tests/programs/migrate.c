/* A timed call across a CPU migration: rank 0 sends rank 1 its pid and CPU, then waits in
 * MPI_Recv; rank 1 moves rank 0 to another CPU with `taskset -cp` while rank 0 waits, computes
 * for DELAY ms and sends. Rank 0's MPI_Recv starts on one CPU and ends on another, and the
 * clock's check at MPI_Finalize runs on the second. Rank 0 prints "migrated from A to B". */
#define _GNU_SOURCE
#include "busy_wait.h"
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's CPU number: sched_getcpu() may read TSC_AUX (the vDSO's RDPID) where glibc has no
 * rseq, and some virtual machines leave that the same on every CPU. */
static int current_cpu(void) {
  unsigned cpu = 0;
  return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : 0;
}

int main(int argc, char** argv) {
  const int delay = argc > 1 ? atoi(argv[1]) : 200;
  /* Held on one CPU from before MPI_Init (where the clock is calibrated) to the move. */
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(current_cpu(), &here);
  sched_setaffinity(0, sizeof here, &here);
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int where[2] = {(int)getpid(), current_cpu()};
  int buf = 0;
  if (rank == 0) {
    MPI_Send(where, 2, MPI_INT, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(&buf, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("migrated from %d to %d\n", where[1], current_cpu());
    fflush(stdout);
  } else if (rank == 1) {
    MPI_Recv(where, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int target = (int)((where[1] + 1) % (cpus > 1 ? cpus : 1));
    char command[96];
    snprintf(command, sizeof command, "taskset -cp %d %d > /dev/null", target, where[0]);
    if (system(command) != 0)
      fprintf(stderr, "migrate: %s failed\n", command);
    busy_ms(delay);
    MPI_Send(&buf, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
