/* An ordinary PMPI tool, built the classic way (cc -shared ... -lmpi), knowing nothing of
 * Strata: it wraps a few MPI functions, counts them, logs its wrapping in order, and writes its
 * counts at MPI_Finalize. Its MPI_Barrier also calls PMPI_Comm_size (another PMPI function than
 * its twin), or with TOOL_CALLS_FORTRAN_PMPI the Fortran binding's pmpi_comm_size_. TOOL_NAME
 * names the copy. `strata patch` turns it into a module. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long sends, recvs, barriers, allreduces, sendrecvs;

static void log_line(const char* what) {
  const char* dir = getenv("PMPI_TOOL_OUT");
  int rank = -1;
  if (dir == NULL)
    return;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[512], line[128];
  snprintf(path, sizeof path, "%s/log.%d", dir, rank);
  int n = snprintf(line, sizeof line, "%s %s\n", TOOL_NAME, what);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    if (write(fd, line, (size_t)n) < 0) {
    }
    close(fd);
  }
}

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  ++sends;
  log_line("in MPI_Send");
  int rc = PMPI_Send(buf, count, type, dest, tag, comm);
  log_line("out MPI_Send");
  return rc;
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  ++recvs;
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

#ifdef TOOL_CALLS_FORTRAN_PMPI
/* The MPI's Fortran binding, as a tool that wraps Fortran calls would use it. */
void pmpi_comm_size_(MPI_Fint* comm, MPI_Fint* size, MPI_Fint* ierr);
#endif

int MPI_Barrier(MPI_Comm comm) {
  ++barriers;
#ifdef TOOL_CALLS_FORTRAN_PMPI
  MPI_Fint fcomm = MPI_Comm_c2f(comm), fsize = 0, ierr = 0;
  pmpi_comm_size_(&fcomm, &fsize, &ierr);
#else
  int size = 0;
  PMPI_Comm_size(comm, &size);
#endif
  return PMPI_Barrier(comm);
}

int MPI_Allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  ++allreduces;
  return PMPI_Allreduce(in, out, count, type, op, comm);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  __atomic_fetch_add(&sendrecvs, 1, __ATOMIC_RELAXED); /* threads call it at the same time */
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, status);
}

int MPI_Finalize(void) {
  const char* dir = getenv("PMPI_TOOL_OUT");
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (dir != NULL) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%d.counts", dir, TOOL_NAME, rank);
    FILE* f = fopen(path, "w");
    if (f != NULL) {
      fprintf(f,
              "MPI_Send %ld\nMPI_Recv %ld\nMPI_Barrier %ld\nMPI_Allreduce %ld\nMPI_Sendrecv %ld\n",
              sends, recvs, barriers, allreduces, sendrecvs);
      fclose(f);
    }
  }
  return PMPI_Finalize();
}
