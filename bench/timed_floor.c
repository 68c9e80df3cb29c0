/* The least a profiler that times calls can do, as a reference beside the real tools in
 * bench/run_timed_call.sh ("floor"): two reads of the TSC around the library's PMPI_ function
 * and four figures of one slot updated (calls, time, minimum, maximum), for the three calls
 * timed_call.c times. No chain, no per-thread state, no bytes, no histograms and no record:
 * not a tool, only what two clock reads and a few adds cost on this CPU. Preloaded into
 * timed_call (LD_PRELOAD), x86-64 only. */
#include <mpi.h>
#include <stdint.h>
#include <x86intrin.h>

struct floor_slot {
  uint64_t calls, time, min, max;
};
static struct floor_slot slots[3] = {
    {0, 0, UINT64_MAX, 0}, {0, 0, UINT64_MAX, 0}, {0, 0, UINT64_MAX, 0}};

static inline void count(struct floor_slot* s, uint64_t ticks) {
  s->calls++;
  s->time += ticks;
  if (ticks < s->min)
    s->min = ticks;
  if (ticks > s->max)
    s->max = ticks;
}

int MPI_Barrier(MPI_Comm comm) {
  const uint64_t t0 = __rdtsc();
  const int r = PMPI_Barrier(comm);
  count(&slots[0], __rdtsc() - t0);
  return r;
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  const uint64_t t0 = __rdtsc();
  const int r = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                              recvtype, source, recvtag, comm, status);
  count(&slots[1], __rdtsc() - t0);
  return r;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  const uint64_t t0 = __rdtsc();
  const int r = PMPI_Iprobe(source, tag, comm, flag, status);
  count(&slots[2], __rdtsc() - t0);
  return r;
}
