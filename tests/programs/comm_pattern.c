/* A known pattern of messages, for the communication matrix and the Perfetto export: ITER times,
 * inside the annotated region "exchange",
 *   - a ring: each rank receives from its left neighbour (MPI_Irecv ... MPI_Wait) and sends to
 *     its right one (MPI_Send), 8 * (rank + 1) bytes;
 *   - MPI_Sendrecv pairs: rank r with r ^ 1 (when that rank exists), 1000 + rank bytes;
 *   - an MPI_Allreduce of one int.
 * In the first iteration rank 0 computes DELAY ms before its ring send, so rank 1 waits that long
 * in its MPI_Wait (a late sender). Prints "sent R: ..." per rank: its messages and bytes. */
#include "busy_wait.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/annotate.h>

int main(int argc, char** argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 4;
  int delay_ms = argc > 2 ? atoi(argv[2]) : 50;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char ring_out[8 * 64] = {0}, ring_in[8 * 64], pair_out[1064] = {0}, pair_in[1064];
  const int right = (rank + 1) % size, left = (rank + size - 1) % size, partner = rank ^ 1;
  const int ring_bytes = 8 * (rank + 1), left_bytes = 8 * (left + 1);
  long messages = 0, bytes = 0;
  for (int i = 0; i < iterations; ++i) {
    strata_region_begin("exchange");
    MPI_Request request;
    MPI_Irecv(ring_in, left_bytes, MPI_BYTE, left, i, MPI_COMM_WORLD, &request);
    if (rank == 0 && i == 0)
      busy_ms(delay_ms);
    MPI_Send(ring_out, ring_bytes, MPI_BYTE, right, i, MPI_COMM_WORLD);
    MPI_Wait(&request, MPI_STATUS_IGNORE); /* RING WAIT */
    messages += 1;
    bytes += ring_bytes;
    if (partner < size) {
      MPI_Sendrecv(pair_out, 1000 + rank, MPI_BYTE, partner, 100 + i, pair_in, 1000 + partner,
                   MPI_BYTE, partner, 100 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      messages += 1;
      bytes += 1000 + rank;
    }
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    strata_region_end("exchange");
  }
  printf("sent %d: %ld messages, %ld bytes\n", rank, messages, bytes);
  MPI_Finalize();
  return 0;
}
