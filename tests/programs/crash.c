/* Ends badly on purpose, after known traffic: each rank sends 5 messages to its partner, a
 * barrier, rank 0 sends rank 1 one int, then rank 1 ends as asked (one of abort, segv, fpe, exit,
 * kill, term) while rank 0 waits. Or (code2) every rank finalizes, then rank 0, which writes the
 * record, exits with code 2 and the others with 0: a launcher ends the whole job when any rank
 * exits with an error, and could end rank 0 before its own exit code is known. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "abort";
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int partner = rank ^ 1, value = rank, in = 0;
  for (int i = 0; i < 5; ++i)
    MPI_Sendrecv(&value, 1, MPI_INT, partner, i, &in, 1, MPI_INT, partner, i, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  if (strcmp(how, "code2") == 0) {
    MPI_Finalize();
    return rank == 0 ? 2 : 0;
  }
  /* Rank 1 ends only once rank 0 is past the barrier (a rank can leave a barrier before the
   * others have returned from it, and be ended inside it): rank 0 sends it one int first. */
  if (rank == 0)
    MPI_Send(&value, 1, MPI_INT, 1, 98, MPI_COMM_WORLD);
  else if (rank == 1)
    MPI_Recv(&in, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank == 1) {
    if (strcmp(how, "abort") == 0)
      MPI_Abort(MPI_COMM_WORLD, 7);
    if (strcmp(how, "segv") == 0)
      raise(SIGSEGV);
    if (strcmp(how, "fpe") == 0)
      raise(SIGFPE);
    if (strcmp(how, "kill") == 0)
      raise(SIGKILL);
    if (strcmp(how, "term") == 0)
      raise(SIGTERM);
    exit(0); /* "exit": leave without MPI_Finalize */
  }
  /* Rank 0 blocks until the launcher takes the job down. */
  MPI_Recv(&in, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
