/* Programs that hang in known ways (and one that computes long but does not), for the hang
 * diagnosis: hang_c MODE, where MODE is recv_recv, sleeper, wrong_tag, send_send, irecv_wait,
 * wildcard, waitall_wildcard, threads, threads_across, reused_table, many_threads, quiet_thread
 * or compute.
 * The tests find the lines they expect by the markers in the comments. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata/where.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { big = 16 << 20 }; /* too large for any eager protocol */

/* Outside MPI for a wall-clock time, as a computing rank looks to the hang watch (which reads
 * only where each rank is, not its CPU time); asleep, so that the other ranks and jobs keep the
 * cores, as in the modes where a rank "computes" by sleep(3600). */
static void compute_for(double seconds) {
  struct timespec pause = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&pause, &pause) != 0) {
  }
}

/* A thread of the threads mode: it receives from its own rank the message the other thread
 * sends after its own receive. */
/* The threads mode's two threads: both reach their receive together, so that a loaded machine
 * that starts the second thread late cannot make the watch see the first one waiting alone. */
static pthread_barrier_t both_started;
static void* receive_then_send(void* tag_address) {
  const int tag = *(const int*)tag_address;
  int rank = 0, value = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  pthread_barrier_wait(&both_started);
  MPI_Recv(&value, 1, MPI_INT, rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* HANG threads */
  MPI_Send(&value, 1, MPI_INT, rank, 3 - tag, MPI_COMM_WORLD);
  return NULL;
}

/* The threads of the threads_across mode: each receives from a rank, then sends to one. Two
 * threads of each of two ranks, each receiving first: the main thread of rank 0 from rank 1,
 * which would send once its main thread got a message from its other thread, which waits for
 * one from rank 0, whose other thread waits for its main thread. */
struct relay {
  int from, tag_in, to, tag_out;
};
static struct relay relays[2][2] = {{{1, 1, 0, 3}, {0, 3, 1, 2}}, {{1, 4, 0, 1}, {0, 2, 1, 4}}};
static void* relay_message(void* relay_address) {
  const struct relay* r = relay_address;
  int v = 0;
  MPI_Recv(&v, 1, MPI_INT, r->from, r->tag_in, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* HANG relay */
  MPI_Send(&v, 1, MPI_INT, r->to, r->tag_out, MPI_COMM_WORLD);
  return NULL;
}
/* The other thread, started before MPI_Init: its first MPI call comes once MPI is ready. */
static pthread_barrier_t mpi_ready;
static void* relay_after_init(void* unused) {
  (void)unused;
  pthread_barrier_wait(&mpi_ready);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return relay_message(&relays[rank & 1][1]);
}

/* The reused_table mode: a thread that sends a message nobody receives (tag 11) and ends
 * without completing it (its request variable outlives it), then a later thread that takes the
 * ended one's table of requests, sends one of its own (tag 44) and waits on a receive (tag 22).
 * The first send is too large for eager delivery: a small one may get a handle that MPI gives
 * every send it completed at once (Open MPI does), which the later send would share. */
static MPI_Request left_behind = MPI_REQUEST_NULL;
static void* send_and_end(void* unused) {
  (void)unused;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char* message = calloc(big, 1); /* never freed: MPI may still read it */
  MPI_Isend(message, big, MPI_BYTE, rank ^ 1, 11, MPI_COMM_WORLD, &left_behind);
  return NULL;
}
static void* send_then_wait(void* unused) {
  (void)unused;
  int rank = 0, in = 0, out = 44;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Request send, receive;
  MPI_Isend(&out, 1, MPI_INT, rank ^ 1, 44, MPI_COMM_WORLD, &send);
  MPI_Irecv(&in, 1, MPI_INT, rank ^ 1, 22, MPI_COMM_WORLD, &receive);
  MPI_Wait(&receive, MPI_STATUS_IGNORE); /* HANG reused_table wait */
  MPI_Wait(&send, MPI_STATUS_IGNORE);
  return NULL;
}

/* The many_threads mode: more threads at once than libstrata lists, each making requests;
 * they wait at `started` until main has counted them. */
enum { many = STRATA_WHERE_THREADS + 6 };
static pthread_barrier_t started, counted;
static volatile int stay_in_mpi; /* the last round's threads wait on a message nobody sends */
static void* request_and_linger(void* tag_address) {
  const int tag = (int)(long)tag_address;
  int rank = 0, in = 0, out = tag;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Request receive;
  MPI_Irecv(&in, 1, MPI_INT, rank, tag, MPI_COMM_WORLD, &receive);
  MPI_Send(&out, 1, MPI_INT, rank, tag, MPI_COMM_WORLD);
  MPI_Wait(&receive, MPI_STATUS_IGNORE);
  pthread_barrier_wait(&started);
  if (stay_in_mpi)
    MPI_Recv(&in, 1, MPI_INT, rank, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  pthread_barrier_wait(&counted);
  return NULL;
}
static int unlisted_threads(void) {
  return strata_where_unlisted_threads != NULL ? strata_where_unlisted_threads() : -1;
}
/* Two rounds of `many` threads: libstrata's count of those beyond its list while they run,
 * and after they ended (their tables made for the first round serve the second); then a third
 * round whose threads, and the main thread, wait on a message nobody sends. */
static void many_threads_rounds(void) {
  pthread_t threads[many];
  for (int round = 1; round <= 3; ++round) {
    stay_in_mpi = round == 3;
    pthread_barrier_init(&started, NULL, many + 1);
    pthread_barrier_init(&counted, NULL, many + 1);
    for (long i = 0; i < many; ++i)
      pthread_create(&threads[i], NULL, request_and_linger, (void*)(100 + i));
    pthread_barrier_wait(&started);
    printf("round %d: %d threads running, %d unlisted\n", round, many, unlisted_threads());
    fflush(stdout);
    if (round == 3)
      break;
    pthread_barrier_wait(&counted);
    for (int i = 0; i < many; ++i)
      pthread_join(threads[i], NULL);
    printf("round %d: threads ended, %d unlisted\n", round, unlisted_threads());
    fflush(stdout);
    pthread_barrier_destroy(&started);
    pthread_barrier_destroy(&counted);
  }
  int rank = 0, value = 0;
  const MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm_rank(world, &rank);
  MPI_Recv(&value, 1, MPI_INT, rank, 999, world, MPI_STATUS_IGNORE); /* HANG many_threads */
}

/* A thread of the quiet_thread mode: one MPI call the profile only counts, then it computes. */
static void* ask_rank_then_compute(void* unused) {
  (void)unused;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* HANG quiet call */
  sleep(3600);
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  int provided = 0;
  const int across = strcmp(mode, "threads_across") == 0;
  const int threaded = strcmp(mode, "threads") == 0 || across ||
                       strcmp(mode, "reused_table") == 0 || strcmp(mode, "many_threads") == 0 ||
                       strcmp(mode, "quiet_thread") == 0;
  pthread_t early;
  if (across) {
    pthread_barrier_init(&mpi_ready, NULL, 2);
    pthread_create(&early, NULL, relay_after_init, NULL);
  }
  MPI_Init_thread(&argc, &argv, threaded ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  if (threaded && provided != MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "hang_c %s: no MPI_THREAD_MULTIPLE\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int peer = rank ^ 1;
  int value = rank;
  MPI_Barrier(MPI_COMM_WORLD);
  if (strcmp(mode, "recv_recv") == 0) {
    MPI_Recv(&value, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* HANG recv_recv */
    MPI_Send(&value, 1, MPI_INT, peer, 7, MPI_COMM_WORLD);
  } else if (strcmp(mode, "sleeper") == 0) {
    /* The last rank never reaches the collectives the others wait in: rank 0 waits on an
     * MPI_Ibarrier that the others but the last started too, they in the barrier after it. */
    MPI_Request ibarrier = MPI_REQUEST_NULL;
    if (rank == size - 1)
      sleep(3600); /* HANG sleeper last call is the barrier above */
    MPI_Ibarrier(MPI_COMM_WORLD, &ibarrier);
    if (rank == 0)
      MPI_Wait(&ibarrier, MPI_STATUS_IGNORE); /* HANG sleeper wait */
    MPI_Barrier(MPI_COMM_WORLD);              /* HANG sleeper barrier */
    MPI_Wait(&ibarrier, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "wrong_tag") == 0) {
    char* buffer = calloc(big, 1);
    const MPI_Comm world = MPI_COMM_WORLD;
    if (rank == 0)
      MPI_Send(buffer, big, MPI_BYTE, 1, 4, MPI_COMM_WORLD); /* HANG wrong_tag send */
    else if (rank == 1)
      MPI_Recv(buffer, big, MPI_BYTE, 0, 5, world, MPI_STATUS_IGNORE); /* HANG wrong_tag recv */
    free(buffer);
  } else if (strcmp(mode, "send_send") == 0) {
    char* out = calloc(big, 1);
    char* in = calloc(big, 1);
    MPI_Send(out, big, MPI_BYTE, peer, 0, MPI_COMM_WORLD); /* HANG send_send */
    MPI_Recv(in, big, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(out);
    free(in);
  } else if (strcmp(mode, "irecv_wait") == 0) {
    /* Nonblocking: each rank waits for its receive from the other, which never sends it; rank
     * 0's queue holds a send to rank 1 with the tag rank 1 does not expect. */
    MPI_Request send = MPI_REQUEST_NULL, recv = MPI_REQUEST_NULL;
    int other = 0;
    if (rank == 0)
      MPI_Isend(&value, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &send); /* HANG irecv_wait isend */
    MPI_Irecv(&other, 1, MPI_INT, peer, rank == 0 ? 7 : 5, MPI_COMM_WORLD, &recv);
    MPI_Wait(&recv, MPI_STATUS_IGNORE); /* HANG irecv_wait wait */
    MPI_Wait(&send, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "wildcard") == 0) {
    /* Rank 0 waits for a message from anyone; the others have gone on to a barrier. */
    if (rank == 0) {
      MPI_Request recv;
      MPI_Status status;
      MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &recv);
      MPI_Waitall(1, &recv, &status); /* HANG wildcard wait */
    }
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "waitall_wildcard") == 0) {
    /* Rank 0 waits for a message from anyone (tag 9) and one from rank 1 (tag 5); the others
     * receive from rank 0 (tag 3), which never sends: ranks 0 and 1 wait for each other. */
    if (rank == 0) {
      MPI_Request recvs[2];
      MPI_Status statuses[2];
      int values[2];
      MPI_Irecv(&values[0], 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &recvs[0]);
      MPI_Irecv(&values[1], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &recvs[1]);
      MPI_Waitall(2, recvs, statuses); /* HANG waitall_wildcard wait */
    } else {
      MPI_Recv(&value, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  } else if (strcmp(mode, "threads") == 0) {
    /* Under MPI_THREAD_MULTIPLE two threads of each rank deadlock: each receives first. */
    int tags[2] = {1, 2};
    pthread_t other;
    pthread_barrier_init(&both_started, NULL, 2);
    pthread_create(&other, NULL, receive_then_send, &tags[1]);
    receive_then_send(&tags[0]);
    pthread_join(other, NULL);
  } else if (across && size == 2) {
    pthread_barrier_wait(&mpi_ready);
    relay_message(&relays[rank][0]);
    pthread_join(early, NULL);
  } else if (strcmp(mode, "reused_table") == 0) {
    /* Each rank: the first thread's send (tag 11) stays pending after it ended; the second
     * thread waits on a receive (tag 22), the main thread in one (tag 33): nobody sends those. */
    pthread_t first, second;
    pthread_create(&first, NULL, send_and_end, NULL);
    pthread_join(first, NULL);
    pthread_create(&second, NULL, send_then_wait, NULL);
    MPI_Recv(&value, 1, MPI_INT, peer, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* main's */
    pthread_join(second, NULL);
  } else if (strcmp(mode, "many_threads") == 0) {
    many_threads_rounds();
  } else if (strcmp(mode, "quiet_thread") == 0) {
    /* The ranks receive from each other first, but rank 1 has a thread that called MPI once (a
     * call only counted, never described) and computes: it might still send. */
    pthread_t quiet;
    if (rank == 1)
      pthread_create(&quiet, NULL, ask_rank_then_compute, NULL);
    MPI_Recv(&value, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* HANG quiet recv */
    MPI_Send(&value, 1, MPI_INT, peer, 7, MPI_COMM_WORLD);
    if (rank == 1)
      pthread_join(quiet, NULL);
  } else if (strcmp(mode, "compute") == 0) {
    /* Every rank computes longer than the threshold between its calls: no hang. */
    const double seconds = argc > 2 ? atof(argv[2]) : 3;
    for (int round = 0; round < 2; ++round) {
      compute_for(seconds);
      MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
  } else {
    if (rank == 0)
      fprintf(stderr, "usage: hang_c recv_recv|sleeper|wrong_tag|send_send|irecv_wait|wildcard|"
                      "threads|threads_across (2 ranks)|reused_table|many_threads|quiet_thread|"
                      "compute [SECONDS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return 0;
}
