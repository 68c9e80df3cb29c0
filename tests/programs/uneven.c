/* Ranks that do different things, for the job record's reduction over ranks: each rank makes
 * its own set of calls, and every per-rank maximum lies on a rank other than 0.
 *   rank 0: MPI_Barrier only, then sleeps 3 x DELAY ms outside MPI
 *   rank 1: MPI_Comm_size x 2, then waits in MPI_Recv for rank 2 (3 messages): the largest MPI %
 *   rank 2: MPI_Comm_size x 4, then 3 x (sleep DELAY ms, MPI_Send of 100 ints)
 *   rank 3: MPI_Comm_size x 6, MPI_Get_processor_name from 8 source lines (its call-site text is
 *           over twice as long as rank 0's), then sleeps 3 x DELAY ms
 * Usage: uneven [DELAY_MS]   (4 ranks; default 150) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int main(int argc, char** argv) {
  const int delay = argc > 1 ? atoi(argv[1]) : 150;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, buf[100] = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < 2 * rank; ++i)
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 1) {
    for (int i = 0; i < 3; ++i)
      MPI_Recv(buf, 100, MPI_INT, 2, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 2) {
    for (int i = 0; i < 3; ++i) {
      sleep_ms(delay);
      MPI_Send(buf, 100, MPI_INT, 1, i, MPI_COMM_WORLD);
    }
  } else {
    if (rank == 3) {
      char name[MPI_MAX_PROCESSOR_NAME];
      int length = 0;
      MPI_Get_processor_name(name, &length); /* name 1 */
      MPI_Get_processor_name(name, &length); /* name 2 */
      MPI_Get_processor_name(name, &length); /* name 3 */
      MPI_Get_processor_name(name, &length); /* name 4 */
      MPI_Get_processor_name(name, &length); /* name 5 */
      MPI_Get_processor_name(name, &length); /* name 6 */
      MPI_Get_processor_name(name, &length); /* name 7 */
      MPI_Get_processor_name(name, &length); /* name 8 */
    }
    sleep_ms(3 * delay);
  }
  printf("rank %d done\n", rank);
  MPI_Finalize();
  return 0;
}
