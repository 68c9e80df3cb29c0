/* Every completion routine with known receive sizes, on 2 ranks that exchange the same messages
 * with each other: statuses kept and ignored, sends completed by the same routines, send and
 * receive requests mixed in one array, null and inactive requests, a cancelled receive, a
 * message shorter than the buffer posted for it, persistent requests and counts of 0. Each rank
 * prints how often it called each routine ("calls MPI_X N": the polls loop until done) and the
 * bytes it received through each ("received MPI_X B"), for the test to check the record against.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { max_bytes = 8192, many = 40 };

static int peer;
static char out[max_bytes], in[max_bytes], in2[max_bytes], in3[many][16], out3[many][16];

static const char* const names[] = {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
                                    "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"};
enum { wait, waitall, waitany, waitsome, test, testall, testany, testsome, routines };
static long calls[routines], received[routines];

static void irecv(char* buf, int bytes, int tag, MPI_Request* r) {
  MPI_Irecv(buf, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r);
}
static void isend(int bytes, int tag, MPI_Request* r) {
  MPI_Isend(out, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r);
}

static void waits(void) {
  MPI_Request r[2];
  MPI_Status st;
  /* A receive whose message is shorter than its buffer: what arrived counts. */
  irecv(in, 1000, 1, &r[0]);
  isend(600, 1, &r[1]);
  MPI_Wait(&r[0], &st);
  MPI_Wait(&r[1], MPI_STATUS_IGNORE); /* a send, status ignored */
  calls[wait] += 2;
  received[wait] += 600;
  /* Status ignored for the receive, kept for the send. */
  irecv(in, 2000, 2, &r[0]);
  isend(2000, 2, &r[1]);
  MPI_Wait(&r[0], MPI_STATUS_IGNORE);
  MPI_Wait(&r[1], &st);
  calls[wait] += 2;
  received[wait] += 2000;
  /* A null request. */
  r[0] = MPI_REQUEST_NULL;
  MPI_Wait(&r[0], &st);
  calls[wait] += 1;
  /* Persistent requests, started twice, and the receive once more while inactive. */
  MPI_Request p[2];
  MPI_Recv_init(in, 300, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &p[0]);
  MPI_Send_init(out, 300, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &p[1]);
  for (int i = 0; i < 2; ++i) {
    MPI_Start(&p[0]);
    MPI_Start(&p[1]);
    MPI_Wait(&p[1], MPI_STATUS_IGNORE);
    MPI_Wait(&p[0], MPI_STATUS_IGNORE);
    calls[wait] += 2;
    received[wait] += 300;
  }
  MPI_Wait(&p[0], &st);
  calls[wait] += 1;
  MPI_Request_free(&p[0]);
  MPI_Request_free(&p[1]);
  /* A cancelled receive: nothing received. */
  irecv(in, 4096, 99, &r[0]);
  MPI_Cancel(&r[0]);
  MPI_Wait(&r[0], &st);
  calls[wait] += 1;
}

static void waitalls(void) {
  MPI_Request r[2 * many + 1];
  MPI_Status st[2 * many + 1];
  /* Receives and sends mixed, a null request among them, statuses kept. */
  irecv(in, 4000, 4, &r[0]);
  isend(4000, 4, &r[1]);
  irecv(in2, 400, 5, &r[2]);
  isend(400, 5, &r[3]);
  r[4] = MPI_REQUEST_NULL;
  MPI_Waitall(5, r, st);
  calls[waitall] += 1;
  received[waitall] += 4400;
  /* Statuses ignored. */
  isend(5000, 6, &r[0]);
  irecv(in, 5000, 6, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  calls[waitall] += 1;
  received[waitall] += 5000;
  /* Sends alone, then their receives; many at once, statuses ignored. */
  for (int i = 0; i < many; ++i)
    irecv(in3[i], 16, 100 + i, &r[i]);
  for (int i = 0; i < many; ++i)
    MPI_Isend(out3[i], 10, MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &r[many + i]);
  MPI_Waitall(many, r + many, MPI_STATUSES_IGNORE);
  MPI_Waitall(many, r, MPI_STATUSES_IGNORE);
  calls[waitall] += 2;
  received[waitall] += 10 * many;
  /* An inactive persistent receive. */
  MPI_Recv_init(in, 300, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &r[0]);
  MPI_Waitall(1, r, st);
  MPI_Request_free(&r[0]);
  calls[waitall] += 1;
  /* A count of 0. */
  MPI_Waitall(0, r, MPI_STATUSES_IGNORE);
  calls[waitall] += 1;
}

static void waitanys(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[3];
    MPI_Status st;
    const int bytes = ignore ? 900 : 800;
    isend(bytes, 8 + ignore, &r[0]);
    r[1] = MPI_REQUEST_NULL;
    irecv(in, bytes, 8 + ignore, &r[2]);
    int index = 0;
    do {
      MPI_Waitany(3, r, &index, ignore ? MPI_STATUS_IGNORE : &st);
      calls[waitany] += 1;
    } while (index != MPI_UNDEFINED);
    received[waitany] += bytes;
  }
}

static void waitsomes(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[4];
    MPI_Status st[4];
    int indices[4];
    const int bytes = ignore ? 1300 : 1200;
    irecv(in, bytes, 10 + ignore, &r[0]);
    isend(bytes, 10 + ignore, &r[1]);
    irecv(in2, 50, 12 + ignore, &r[2]);
    isend(50, 12 + ignore, &r[3]);
    int outcount = 0;
    do {
      MPI_Waitsome(4, r, &outcount, indices, ignore ? MPI_STATUSES_IGNORE : st);
      calls[waitsome] += 1;
    } while (outcount != MPI_UNDEFINED);
    received[waitsome] += bytes + 50;
  }
}

static void tests(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[2];
    MPI_Status st;
    const int bytes = ignore ? 1600 : 1500;
    irecv(in, bytes, 14 + ignore, &r[0]);
    isend(bytes, 14 + ignore, &r[1]);
    for (int i = 0; i < 2; ++i) {
      int flag = 0;
      while (!flag) {
        MPI_Test(&r[i], &flag, ignore ? MPI_STATUS_IGNORE : &st);
        calls[test] += 1;
      }
    }
    received[test] += bytes;
  }
  MPI_Request none = MPI_REQUEST_NULL;
  int flag = 0;
  MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
  calls[test] += 1;
}

static void testalls(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[3];
    MPI_Status st[3];
    const int bytes = ignore ? 1800 : 1700;
    isend(bytes, 16 + ignore, &r[0]);
    irecv(in, bytes, 16 + ignore, &r[1]);
    r[2] = MPI_REQUEST_NULL;
    int flag = 0;
    while (!flag) {
      MPI_Testall(3, r, &flag, ignore ? MPI_STATUSES_IGNORE : st);
      calls[testall] += 1;
    }
    received[testall] += bytes;
  }
  int flag = 0;
  MPI_Testall(0, NULL, &flag, MPI_STATUSES_IGNORE);
  calls[testall] += 1;
}

static void testanys(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[2];
    MPI_Status st;
    const int bytes = ignore ? 2100 : 1900;
    irecv(in, bytes, 18 + ignore, &r[0]);
    isend(bytes, 18 + ignore, &r[1]);
    int index = 0, flag = 0;
    do {
      MPI_Testany(2, r, &index, &flag, ignore ? MPI_STATUS_IGNORE : &st);
      calls[testany] += 1;
    } while (!(flag && index == MPI_UNDEFINED));
    received[testany] += bytes;
  }
}

static void testsomes(void) {
  for (int ignore = 0; ignore < 2; ++ignore) {
    MPI_Request r[2];
    MPI_Status st[2];
    int indices[2];
    const int bytes = ignore ? 2300 : 2200;
    isend(bytes, 20 + ignore, &r[0]);
    irecv(in, bytes, 20 + ignore, &r[1]);
    int outcount = 0;
    do {
      MPI_Testsome(2, r, &outcount, indices, ignore ? MPI_STATUSES_IGNORE : st);
      calls[testsome] += 1;
    } while (outcount != MPI_UNDEFINED);
    received[testsome] += bytes;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "completions: needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  peer = 1 - rank;
  memset(out, 'x', sizeof out);
  waits();
  waitalls();
  waitanys();
  waitsomes();
  tests();
  testalls();
  testanys();
  testsomes();
  for (int i = 0; i < routines; ++i)
    printf("rank %d calls %s %ld received %ld\n", rank, names[i], calls[i], received[i]);
  MPI_Finalize();
  return 0;
}
