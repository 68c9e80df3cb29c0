/* Example: 0-byte and 64 KiB ping-pong between ranks 0 and 1; prints the half round-trip time
 * and the bandwidth, and a checksum that tools must not change. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double pingpong(int rank, int bytes, int iterations, char* buf) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / iterations / 2;
}

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 1000;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0)
      fprintf(stderr, "pingpong: needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  enum { BIG = 65536 };
  char* buf = malloc(BIG);
  memset(buf, rank + 1, BIG);
  double latency = pingpong(rank, 0, iterations, buf);
  double big = pingpong(rank, BIG, iterations / 10 + 1, buf);
  long sum = 0;
  for (int i = 0; i < BIG; ++i)
    sum += buf[i];
  long total = 0;
  MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("latency %.2f us, bandwidth %.0f MB/s, checksum %ld\n", latency * 1e6, BIG / big / 1e6,
           total);
  free(buf);
  MPI_Finalize();
  return 0;
}
