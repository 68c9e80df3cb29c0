// An MPI-4 Sessions program: no MPI_Init; its communicators come from the "mpi://WORLD" process
// set of its sessions. `sessions MODE ITERATIONS`, MODE one of:
//   one       one session
//   two       two sessions, the first finalized while the second lives
//   mixed     MPI_Init as well; the session ends before MPI_Finalize
//   late      MPI_Init as well; MPI_Finalize before the session ends
//   unfinished  one session, never finalized: the process exits without it
//   hang      one session, whose ranks then receive from each other first: a deadlock
// Each session runs ITERATIONS rounds of a ring (MPI_Send/MPI_Recv), then one MPI_Allreduce
// and one MPI_Barrier; the mixed modes do the same on MPI_COMM_WORLD.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static MPI_Comm world_of(MPI_Session session, const char* tag) {
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
  MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
  MPI_Group_free(&group);
  return comm;
}

static long traffic(MPI_Comm comm, int iterations) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  long checksum = 0;
  for (int it = 0; it < iterations; ++it) {
    int out = rank * 100 + it;
    int in = -1;
    const int next = (rank + 1) % size;
    const int prev = (rank + size - 1) % size;
    if (rank % 2 == 0) {
      MPI_Send(&out, 1, MPI_INT, next, it, comm);
      MPI_Recv(&in, 1, MPI_INT, prev, it, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&in, 1, MPI_INT, prev, it, comm, MPI_STATUS_IGNORE);
      MPI_Send(&out, 1, MPI_INT, next, it, comm);
    }
    checksum += in;
  }
  long total = 0;
  MPI_Allreduce(&checksum, &total, 1, MPI_LONG, MPI_SUM, comm);
  MPI_Barrier(comm);
  return total;
}

static void report(const char* what, MPI_Comm comm, long total) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank == 0)
    printf("sessions: %s ranks=%d checksum=%ld\n", what, size, total);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "one";
  const int iterations = argc > 2 ? atoi(argv[2]) : 5;
  const int mixed = strcmp(mode, "mixed") == 0 || strcmp(mode, "late") == 0;
  if (mixed)
    MPI_Init(&argc, &argv);
  MPI_Session first = MPI_SESSION_NULL;
  MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &first);
  MPI_Comm comm = world_of(first, "org.strata.test.first");
  report("first", comm, traffic(comm, iterations));
  if (strcmp(mode, "unfinished") == 0)
    _exit(0); // as a job killed before its end: no finalize of any kind
  if (strcmp(mode, "hang") == 0) {
    int rank = 0;
    int value = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Recv(&value, 1, MPI_INT, rank ^ 1, 9, comm, MPI_STATUS_IGNORE); /* HANG sessions */
  }
  if (strcmp(mode, "two") == 0) {
    MPI_Session second = MPI_SESSION_NULL;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &second);
    MPI_Comm other = world_of(second, "org.strata.test.second");
    MPI_Comm_free(&comm);
    MPI_Session_finalize(&first); // while the second session lives
    report("second", other, traffic(other, iterations));
    MPI_Comm_free(&other);
    MPI_Session_finalize(&second);
    return 0;
  }
  if (mixed)
    report("world", MPI_COMM_WORLD, traffic(MPI_COMM_WORLD, iterations));
  MPI_Comm_free(&comm);
  if (strcmp(mode, "late") == 0)
    MPI_Finalize();
  MPI_Session_finalize(&first);
  if (strcmp(mode, "mixed") == 0)
    MPI_Finalize();
  return 0;
}
