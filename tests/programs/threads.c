/* MPI_THREAD_MULTIPLE: on 2 ranks, 2 threads per rank each exchange ITER messages with the
 * same thread on the other rank (tag = thread id), at the same time.
 * Usage: threads [ITER] [kill]   (kill: every rank kills itself with SIGKILL after the
 * exchanges and a barrier, without MPI_Finalize)
 * Four spinning threads on a 2-core machine: Open MPI sometimes takes a scheduler time slice
 * per exchange (3,000 took 9 s, natively, where they usually take 0.3 s), so the tests run a
 * few hundred, which still interleave the two threads' calls throughout. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int iterations = 1000;
static int rank;

static void* worker(void* arg) {
  int tid = (int)(long)arg;
  int peer = 1 - rank;
  long sum = 0;
  for (int i = 0; i < iterations; ++i) {
    int out = i + tid, in = 0;
    MPI_Sendrecv(&out, 1, MPI_INT, peer, tid, &in, 1, MPI_INT, peer, tid, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    sum += in;
  }
  return (void*)sum;
}

int main(int argc, char** argv) {
  if (argc > 1)
    iterations = atoi(argv[1]);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    printf("threads: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  pthread_t t[2];
  for (long i = 0; i < 2; ++i)
    pthread_create(&t[i], NULL, worker, (void*)i);
  long sum = 0;
  for (int i = 0; i < 2; ++i) {
    void* r;
    pthread_join(t[i], &r);
    sum += (long)r;
  }
  if (rank == 0)
    printf("threads: sum=%ld\n", sum);
  if (argc > 2 && argv[2][0] == 'k') {
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    raise(SIGKILL);
  }
  MPI_Finalize();
  return 0;
}
