// Bytes of messages whose datatypes are predefined (the core knows their sizes from MPI_Init on)
// and derived ones created and freed in turn, so that MPI may hand a freed type's handle to the
// next one of another size. Each rank sends to itself with MPI_Sendrecv: COUNT elements of
// MPI_INT, of MPI_DOUBLE, then of contiguous types of 1..TYPES ints, each freed after its call.
// Prints how many bytes it sent, and whether the handles were reused.
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { COUNT = 2, TYPES = 6 };

static void send_to_self(const void* out, void* in, int count, MPI_Datatype type) {
  MPI_Sendrecv(out, count, type, 0, 1, in, count, type, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int out[COUNT * TYPES] = {0};
  int in[COUNT * TYPES];
  double dout[COUNT] = {1.5, 2.5};
  double din[COUNT];
  long long sent = 0;
  send_to_self(out, in, COUNT, MPI_INT);
  sent += COUNT * (long long)sizeof(int);
  send_to_self(dout, din, COUNT, MPI_DOUBLE);
  sent += COUNT * (long long)sizeof(double);
  MPI_Datatype first = MPI_DATATYPE_NULL;
  int reused = 0;
  for (int ints = 1; ints <= TYPES; ++ints) {
    MPI_Datatype type;
    MPI_Type_contiguous(ints, MPI_INT, &type);
    MPI_Type_commit(&type);
    if (ints == 1)
      first = type;
    else if (memcmp(&type, &first, sizeof type) == 0)
      ++reused;
    send_to_self(out, in, COUNT, type);
    sent += (long long)COUNT * ints * (long long)sizeof(int);
    MPI_Type_free(&type);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    printf("datatypes: sent=%lld reused_handles=%d\n", sent, reused);
  MPI_Finalize();
  return 0;
}
