/* timer_loop ROUNDS READS
 * A program that reads the clock far more often than it communicates, as many real codes do:
 * ROUNDS times, each rank makes READS calls each of MPI_Wtime and MPI_Comm_rank, then ranks 0
 * and 1 exchange one message each way (rank 0 sends first, tag = the round) and every rank joins
 * an MPI_Barrier. Each rank prints how many calls of each kind it made, for the tools to match;
 * rank 0 prints the time the rounds took. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 100;
  const long reads = argc > 2 ? atol(argv[2]) : 1000;
  int rank = 0, size = 1;
  long wtimes = 0, comm_ranks = 0, comm_sizes = 0, sends = 0, recvs = 0;
  double sum = 0, buf = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  comm_ranks = 1;
  comm_sizes = 1;
  const double start = MPI_Wtime();
  wtimes = 1;
  for (int round = 0; round < rounds; ++round) {
    for (long i = 0; i < reads; ++i) {
      int me = 0;
      sum += MPI_Wtime();
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      sum += me;
    }
    wtimes += reads;
    comm_ranks += reads;
    if (rank == 0 && size > 1) {
      MPI_Send(&sum, 1, MPI_DOUBLE, 1, round, MPI_COMM_WORLD);
      MPI_Recv(&buf, 1, MPI_DOUBLE, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++sends;
      ++recvs;
    } else if (rank == 1) {
      MPI_Recv(&buf, 1, MPI_DOUBLE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&sum, 1, MPI_DOUBLE, 0, round, MPI_COMM_WORLD);
      ++sends;
      ++recvs;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const double took = MPI_Wtime() - start;
  ++wtimes;
  printf("timer_loop rank %d: MPI_Wtime=%ld MPI_Comm_rank=%ld MPI_Comm_size=%ld sends=%ld "
         "recvs=%ld\n",
         rank, wtimes, comm_ranks, comm_sizes, sends, recvs);
  if (rank == 0)
    printf("timer_loop: %d rounds of %ld reads in %.3f s\n", rounds, reads, took);
  MPI_Finalize();
  return 0;
}
