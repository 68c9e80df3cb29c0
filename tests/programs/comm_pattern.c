/* A known pattern of messages, for the communication matrix and the Perfetto export: ITER times,
 * inside the annotated region "exchange",
 *   - a ring: each rank receives from its left neighbour (MPI_Irecv ... MPI_Wait) and sends to
 *     its right one (MPI_Send), 8 * (rank + 1) bytes;
 *   - MPI_Sendrecv pairs: rank r with r ^ 1 (when that rank exists), 1000 + rank bytes;
 *   - an MPI_Allreduce of one int.
 * In the first iteration rank 0 computes DELAY ms before its ring send, so rank 1 waits that long
 * in its MPI_Wait (a late sender). With a third argument "derived", also each iteration, on a
 * communicator of the same ranks in reverse order: an MPI_Isend of 16 + rank bytes to the next
 * rank there (world rank - 1, wrapping), received with MPI_ANY_SOURCE and MPI_ANY_TAG.
 * With "onesided", on a window of that reversed communicator (MPI_Win_allocate), each
 * iteration: under a fence, MPI_Put of 2 + rank ints to world rank - 1 and MPI_Get of 3 doubles
 * from world rank + 1; under MPI_Win_lock/unlock, MPI_Accumulate (MPI_SUM) of 1 + rank ints and
 * MPI_Fetch_and_op of one long to world rank - 2 (all wrapping).
 * With "collectives", each iteration, on MPI_COMM_WORLD: MPI_Bcast of 100 bytes from rank 0,
 * MPI_Alltoall of 2 ints per rank, MPI_Gather of 3 doubles to the last rank; and on a
 * communicator of the ranks of the same parity (MPI_Comm_split): an MPI_Bcast from each of its
 * ranks in turn of 10 * (world rank + 1) bytes, an MPI_Allreduce of 3 ints and an MPI_Barrier.
 * With "neighbours", each iteration: on MPI_COMM_WORLD an MPI_Alltoallw and an MPI_Ialltoallw of
 * (rank + j + 1) elements to rank j, ints to even ranks and doubles to odd ones; on a periodic
 * 1-D Cartesian communicator of the world's ranks (neighbours rank - 1 and rank + 1) an
 * MPI_Neighbor_allgather of 3 ints and an MPI_Neighbor_alltoallw of one int to rank - 1 and two
 * doubles to rank + 1; on a distributed graph where each rank sends to rank + 1 and rank + 2
 * (wrapping) an MPI_Neighbor_alltoall of 2 doubles, an MPI_Neighbor_alltoallv of 1 + rank ints
 * to rank + 1 and 2 ints to rank + 2, and an MPI_Ineighbor_allgatherv of rank + 1 bytes.
 * With "collective_starts" (MPI 4), an MPI_Bcast_init of 50 bytes from rank 1 and an
 * MPI_Allreduce_init of 4 ints on MPI_COMM_WORLD, made once and started each iteration
 * (MPI_Startall in even iterations, MPI_Start each in odd ones); it prints "persistent
 * collectives: N starts" (0 where the MPI has none).
 * With "partitioned" (MPI 4), on the reversed communicator: a partitioned send of 3 partitions of
 * 2 + rank ints each to world rank + 1 and its partitioned receive from world rank - 1 (wrapping),
 * made once and started each iteration (MPI_Startall in even iterations, MPI_Start each in odd
 * ones), the partitions made ready by MPI_Pready, MPI_Pready_range and MPI_Pready_list; it prints
 * "partitioned: N starts" (0 where the MPI has none).
 * Prints "sent R: ..." per rank: its point-to-point messages and bytes (not the one-sided). */
#include "busy_wait.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/annotate.h>
#include <string.h>

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
  const int derived = argc > 3 && strstr(argv[3], "derived") != NULL;
  const int persistent = argc > 3 && strstr(argv[3], "persistent") != NULL;
  const int far = (rank + 2) % size, far_left = (rank + 2 * size - 2) % size;
  char persistent_out[32 + 64] = {0}, persistent_in[32 + 64];
  MPI_Request started[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Comm reversed = MPI_COMM_NULL;
  if (derived)
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
  char derived_out[16 + 64] = {0}, derived_in[16 + 64];
  const int onesided = argc > 3 && strstr(argv[3], "onesided") != NULL;
  const int partitioned = argc > 3 && strstr(argv[3], "partitioned") != NULL;
  if ((onesided || partitioned) && reversed == MPI_COMM_NULL)
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
  MPI_Win window = MPI_WIN_NULL;
  int* window_ints = NULL;
  if (onesided)
    MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, reversed, &window_ints, &window);
  int put_out[2 + 64] = {0}, accumulated[1 + 64] = {0};
  double got[3];
  long fetched = 0, one_long = 1;
  const int intercomm = argc > 3 && strstr(argv[3], "intercomm") != NULL && size > 1;
  MPI_Comm half = MPI_COMM_NULL, across = MPI_COMM_NULL;
  int across_here = 0, across_local = 1, across_remote = 1, across_incoming = 0;
  if (intercomm) {
    /* Leaders: world ranks 0 (evens) and 1 (odds); the intercommunicator's remote ranks are the
     * other half's in world order. */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 400, &across);
    MPI_Comm_rank(across, &across_here);
    MPI_Comm_size(across, &across_local);
    MPI_Comm_remote_size(across, &across_remote);
    for (int j = 0; j < across_remote; ++j)
      across_incoming += j % across_local == across_here;
  }
  char across_out[48 + 64] = {0}, across_in[48 + 64];
  const int collectives = argc > 3 && strstr(argv[3], "collectives") != NULL;
  MPI_Comm parity = MPI_COMM_NULL;
  int parity_size = 1;
  if (collectives) {
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity);
    MPI_Comm_size(parity, &parity_size);
  }
  char broadcast[10 * 64 + 100] = {0};
  int to_all[2 * 64] = {0}, from_all[2 * 64], three[3] = {1, 2, 3}, summed[3];
  double mine[3] = {0}, gathered[3 * 64];
  const int neighbours = argc > 3 && strstr(argv[3], "neighbours") != NULL;
  MPI_Comm ring_topology = MPI_COMM_NULL, two_ahead = MPI_COMM_NULL;
  if (neighbours) {
    int periodic = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring_topology);
    int destinations[2] = {right, (rank + 2) % size}, sources[2] = {left, far_left};
    int weights[2] = {1, 1};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, weights, 2, destinations, weights,
                                   MPI_INFO_NULL, 0, &two_ahead);
  }
  /* Blocks of up to 129 doubles, one per rank, for the MPI_Alltoallw. */
  enum { block = 1040 };
  char* w_out = neighbours ? calloc((size_t)size, block) : NULL;
  char* w_in = neighbours ? calloc((size_t)size, block) : NULL;
  int w_counts[64], w_displs[64], w_in_counts[64];
  MPI_Datatype w_types[64], w_in_types[64];
  for (int j = 0; neighbours && j < size; ++j) {
    w_counts[j] = rank + j + 1;
    w_types[j] = j % 2 == 0 ? MPI_INT : MPI_DOUBLE;
    w_displs[j] = j * block;
    w_in_counts[j] = j + rank + 1;
    w_in_types[j] = rank % 2 == 0 ? MPI_INT : MPI_DOUBLE;
  }
  char n_out[8 * 64] = {0}, n_in[2 * 8 * 64];
  const int nw_counts[2] = {1, 2}, nw_in_counts[2] = {2, 1};
  const MPI_Aint nw_displs[2] = {0, 64}, nw_in_displs[2] = {0, 64};
  const MPI_Datatype nw_types[2] = {MPI_INT, MPI_DOUBLE}, nw_in_types[2] = {MPI_DOUBLE, MPI_INT};
  const int nv_counts[2] = {1 + rank, 2}, nv_displs[2] = {0, 4 * 65};
  const int nv_in_counts[2] = {1 + left, 2}, nv_in_displs[2] = {0, 4 * 65};
  const int ng_in_counts[2] = {left + 1, far_left + 1}, ng_in_displs[2] = {0, 65};
  const int persistent_collectives = argc > 3 && strstr(argv[3], "collective_starts") != NULL;
  long collective_starts = 0;
  MPI_Request collective_started[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  char persistent_broadcast[50] = {0};
  int four[4] = {1, 2, 3, 4}, four_summed[4];
  MPI_Request partitioned_started[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int partitioned_out[3 * (2 + 64)] = {0}, partitioned_in[3 * (2 + 64)];
  long partitioned_starts = 0;
#if MPI_VERSION >= 4
  if (partitioned) {
    int here, there;
    MPI_Comm_rank(reversed, &here);
    MPI_Comm_size(reversed, &there);
    /* In the reversed communicator, here - 1 is world rank + 1 and here + 1 world rank - 1. */
    MPI_Precv_init(partitioned_in, 3, 2 + left, MPI_INT, (here + 1) % there, 600, reversed,
                   MPI_INFO_NULL, &partitioned_started[0]);
    MPI_Psend_init(partitioned_out, 3, 2 + rank, MPI_INT, (here + there - 1) % there, 600, reversed,
                   MPI_INFO_NULL, &partitioned_started[1]);
  }
#else
  (void)partitioned_out;
  (void)partitioned_in;
#endif
#if MPI_VERSION >= 4
  if (persistent_collectives) {
    MPI_Bcast_init(persistent_broadcast, 50, MPI_BYTE, 1 % size, MPI_COMM_WORLD, MPI_INFO_NULL,
                   &collective_started[0]);
    MPI_Allreduce_init(four, four_summed, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &collective_started[1]);
  }
#else
  (void)persistent_broadcast;
  (void)four;
  (void)four_summed;
#endif
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
    if (derived) {
      int here, there;
      MPI_Comm_rank(reversed, &here);
      MPI_Comm_size(reversed, &there);
      MPI_Request send;
      MPI_Isend(derived_out, 16 + rank, MPI_BYTE, (here + 1) % there, 200 + i, reversed, &send);
      MPI_Recv(derived_in, (int)sizeof derived_in, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, reversed,
               MPI_STATUS_IGNORE);
      MPI_Wait(&send, MPI_STATUS_IGNORE);
      messages += 1;
      bytes += 16 + rank;
    }
    if (intercomm) {
      MPI_Request send;
      MPI_Isend(across_out, 48 + rank, MPI_BYTE, across_here % across_remote, 500 + i, across,
                &send);
      for (int k = 0; k < across_incoming; ++k)
        MPI_Recv(across_in, (int)sizeof across_in, MPI_BYTE, MPI_ANY_SOURCE, 500 + i, across,
                 MPI_STATUS_IGNORE);
      MPI_Wait(&send, MPI_STATUS_IGNORE);
      messages += 1;
      bytes += 48 + rank;
    }
    if (onesided) {
      /* Ranks of the reversed communicator: here + 1 is world rank - 1, here - 1 world rank + 1,
       * here + 2 world rank - 2. Each operation in its own part of the target's window. */
      int here, there;
      MPI_Comm_rank(reversed, &here);
      MPI_Comm_size(reversed, &there);
      MPI_Win_fence(0, window);
      MPI_Put(put_out, 2 + rank, MPI_INT, (here + 1) % there, 0, 2 + rank, MPI_INT, window);
      MPI_Get(got, 3, MPI_DOUBLE, (here + there - 1) % there, 24, 3, MPI_DOUBLE, window);
      MPI_Win_fence(0, window);
      const int far_target = (here + 2) % there;
      MPI_Win_lock(MPI_LOCK_SHARED, far_target, 0, window);
      MPI_Accumulate(accumulated, 1 + rank, MPI_INT, far_target, 0, 1 + rank, MPI_INT, MPI_SUM,
                     window);
      MPI_Fetch_and_op(&one_long, &fetched, MPI_LONG, far_target, 32, MPI_SUM, window);
      MPI_Win_unlock(far_target, window);
    }
    if (persistent) {
      if (i == 0 || i == iterations / 2) {
        for (int k = 0; k < 3; ++k)
          if (started[k] != MPI_REQUEST_NULL)
            MPI_Request_free(&started[k]);
        MPI_Recv_init(persistent_in, 32 + far_left, MPI_BYTE, far_left, 300, MPI_COMM_WORLD,
                      &started[0]);
        MPI_Send_init(persistent_out, 32 + rank, MPI_BYTE, far, 300, MPI_COMM_WORLD, &started[1]);
        MPI_Send_init(persistent_out, 7, MPI_BYTE, MPI_PROC_NULL, 300, MPI_COMM_WORLD, &started[2]);
      }
      if (i % 2 == 0) {
        MPI_Startall(3, started);
      } else {
        for (int k = 0; k < 3; ++k)
          MPI_Start(&started[k]);
      }
      MPI_Status statuses[3];
      MPI_Waitall(3, started, statuses);
      messages += 1;
      bytes += 32 + rank;
    }
    if (collectives) {
      MPI_Bcast(broadcast, 100, MPI_BYTE, 0, MPI_COMM_WORLD);
      MPI_Alltoall(to_all, 2, MPI_INT, from_all, 2, MPI_INT, MPI_COMM_WORLD);
      MPI_Gather(mine, 3, MPI_DOUBLE, gathered, 3, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
      /* The parity communicator's rank k is world rank 2k + rank % 2. */
      for (int root = 0; root < parity_size; ++root)
        MPI_Bcast(broadcast, 10 * (2 * root + rank % 2 + 1), MPI_BYTE, root, parity);
      MPI_Allreduce(three, summed, 3, MPI_INT, MPI_SUM, parity);
      MPI_Barrier(parity);
    }
    if (neighbours) {
      MPI_Alltoallw(w_out, w_counts, w_displs, w_types, w_in, w_in_counts, w_displs, w_in_types,
                    MPI_COMM_WORLD);
      MPI_Request all;
      MPI_Ialltoallw(w_out, w_counts, w_displs, w_types, w_in, w_in_counts, w_displs, w_in_types,
                     MPI_COMM_WORLD, &all);
      MPI_Wait(&all, MPI_STATUS_IGNORE);
      MPI_Neighbor_allgather(n_out, 3, MPI_INT, n_in, 3, MPI_INT, ring_topology);
      MPI_Neighbor_alltoallw(n_out, nw_counts, nw_displs, nw_types, n_in, nw_in_counts,
                             nw_in_displs, nw_in_types, ring_topology);
      MPI_Neighbor_alltoall(n_out, 2, MPI_DOUBLE, n_in, 2, MPI_DOUBLE, two_ahead);
      MPI_Neighbor_alltoallv(n_out, nv_counts, nv_displs, MPI_INT, n_in, nv_in_counts, nv_in_displs,
                             MPI_INT, two_ahead);
      MPI_Ineighbor_allgatherv(n_out, rank + 1, MPI_BYTE, n_in, ng_in_counts, ng_in_displs,
                               MPI_BYTE, two_ahead, &all);
      MPI_Wait(&all, MPI_STATUS_IGNORE);
    }
#if MPI_VERSION >= 4
    if (partitioned_started[0] != MPI_REQUEST_NULL) {
      if (i % 2 == 0) {
        MPI_Startall(2, partitioned_started);
      } else {
        MPI_Start(&partitioned_started[0]);
        MPI_Start(&partitioned_started[1]);
      }
      int last = 2;
      MPI_Pready(0, partitioned_started[1]);
      MPI_Pready_range(1, 1, partitioned_started[1]);
      MPI_Pready_list(1, &last, partitioned_started[1]);
      MPI_Status partitioned_statuses[2];
      MPI_Waitall(2, partitioned_started, partitioned_statuses);
      partitioned_starts += 1;
      messages += 1;
      bytes += 3 * (2 + rank) * (long)sizeof(int);
    }
#endif
    if (collective_started[0] != MPI_REQUEST_NULL) {
      if (i % 2 == 0) {
        MPI_Startall(2, collective_started);
      } else {
        MPI_Start(&collective_started[0]);
        MPI_Start(&collective_started[1]);
      }
      MPI_Status collective_statuses[2];
      MPI_Waitall(2, collective_started, collective_statuses);
      collective_starts += 2;
    }
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    strata_region_end("exchange");
  }
  if (persistent_collectives)
    printf("persistent collectives: %ld starts\n", collective_starts);
  if (partitioned)
    printf("partitioned: %ld starts\n", partitioned_starts);
  for (int k = 0; k < 2; ++k)
    if (partitioned_started[k] != MPI_REQUEST_NULL)
      MPI_Request_free(&partitioned_started[k]);
  for (int k = 0; k < 2; ++k)
    if (collective_started[k] != MPI_REQUEST_NULL)
      MPI_Request_free(&collective_started[k]);
  if (ring_topology != MPI_COMM_NULL) {
    MPI_Comm_free(&ring_topology);
    MPI_Comm_free(&two_ahead);
  }
  free(w_out);
  free(w_in);
  printf("sent %d: %ld messages, %ld bytes\n", rank, messages, bytes);
  for (int k = 0; k < 3; ++k)
    if (started[k] != MPI_REQUEST_NULL)
      MPI_Request_free(&started[k]);
  if (window != MPI_WIN_NULL)
    MPI_Win_free(&window);
  if (reversed != MPI_COMM_NULL)
    MPI_Comm_free(&reversed);
  if (parity != MPI_COMM_NULL)
    MPI_Comm_free(&parity);
  if (across != MPI_COMM_NULL) {
    MPI_Comm_free(&across);
    MPI_Comm_free(&half);
  }
  MPI_Finalize();
  return 0;
}
