/* poll N [ready]
 * Polling: rank 0 receives N messages of 1000 bytes with MPI_Irecv and MPI_Test (even ones) or
 * MPI_Testany (odd ones) until each completes, and after each another N with MPI_Iprobe until it
 * is there and MPI_Recv; rank 1 sends them 2 ms apart, so most polls complete nothing. Then each
 * rank makes N x 7 calls that cannot wait (MPI_Comm_size, MPI_Type_size, MPI_Wtime, ...: the
 * profile counts them without timing), and, while MPI_Pcontrol(0) pauses the profile, 50 more of
 * those and 50 empty MPI_Iprobe polls, which must not be counted. Each rank prints how many
 * calls of each kind it made, for the profile to match. With `ready`, rank 0 sends each message
 * to itself (MPI_Isend) before it posts the receive, so that it is there and most polls
 * complete one (the profile's lean polls then estimate their bytes exactly). With `alternate`,
 * rank 0's MPI_Test / MPI_Testany loop also probes, each time round, for a message that never
 * comes (MPI_Iprobe with tag 999998, counted in `nevers`), as a loop that tests two things in
 * turn does. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char** argv) {
  int messages = argc > 1 ? atoi(argv[1]) : 10;
  long tests = 0, testanys = 0, iprobes = 0, nevers = 0;
  int rank = 0;
  char buf[1000] = {0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int ready = argc > 2 && strcmp(argv[2], "ready") == 0;
  const int alternate = argc > 2 && strcmp(argv[2], "alternate") == 0;
  const int sender = ready ? 0 : 1;
  char out[1000] = {0};
  MPI_Request sent = MPI_REQUEST_NULL;
  for (int m = 0; m < messages; ++m) {
    if (rank == 1 && !ready) {
      struct timespec pause = {0, 2000000};
      nanosleep(&pause, NULL);
      MPI_Send(buf, (int)sizeof buf, MPI_BYTE, 0, m, MPI_COMM_WORLD);
      nanosleep(&pause, NULL);
      MPI_Send(buf, (int)sizeof buf, MPI_BYTE, 0, messages + m, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Request request;
      if (ready)
        MPI_Isend(out, (int)sizeof out, MPI_BYTE, 0, m, MPI_COMM_WORLD, &sent);
      MPI_Irecv(buf, (int)sizeof buf, MPI_BYTE, sender, m, MPI_COMM_WORLD, &request);
      int flag = 0;
      while (!flag) {
        if (m % 2 == 0) {
          MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
          ++tests;
        } else {
          int index = -1;
          MPI_Testany(1, &request, &index, &flag, MPI_STATUS_IGNORE);
          ++testanys;
        }
        if (alternate && !flag) {
          int never = 0;
          MPI_Iprobe(sender, 999998, MPI_COMM_WORLD, &never, MPI_STATUS_IGNORE); /* MARK:never */
          ++nevers;
        }
      }
      MPI_Wait(&sent, MPI_STATUS_IGNORE);
      if (ready)
        MPI_Isend(out, (int)sizeof out, MPI_BYTE, 0, messages + m, MPI_COMM_WORLD, &sent);
      flag = 0;
      while (!flag) {
        MPI_Iprobe(sender, messages + m, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        ++iprobes;
      }
      MPI_Recv(buf, (int)sizeof buf, MPI_BYTE, sender, messages + m, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Wait(&sent, MPI_STATUS_IGNORE);
    }
  }
  long cheap = 0;
  int size = 0, type_size = 0, count = 0;
  MPI_Aint address = 0;
  MPI_Status status = {0};
  double clock = 0;
  for (int i = 0; i < messages; ++i) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_size(MPI_INT, &type_size);
    clock += MPI_Wtime();
    MPI_Get_address(buf, &address);
    MPI_Get_count(&status, MPI_BYTE, &count);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cheap += 7;
  }
  MPI_Pcontrol(0);
  for (int i = 0; i < 50; ++i) {
    int flag = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Iprobe(MPI_ANY_SOURCE, 999999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
  MPI_Pcontrol(1);
  printf("rank %d tests=%ld testanys=%ld iprobes=%ld nevers=%ld cheap_each=%ld clock_positive=%d\n",
         rank, tests, testanys, iprobes, nevers, cheap / 7, clock > 0);
  MPI_Finalize();
  return 0;
}
