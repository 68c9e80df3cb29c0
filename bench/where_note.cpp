// What noting a call for the hang diagnosis costs (strata/where.h), in nanoseconds: the very
// inline functions of the timed path (note_call and note_return on entry and exit, note_post for
// a call that makes a request), each loop against a baseline that does the same work minus the
// note. Built per MPI: the arguments are that mpi.h's types (a handle is a pointer under Open MPI,
// an int under MPICH), which changes how they are widened. Run by bench/run_where_note.sh, which
// reports medians of interleaved repetitions; callgrind's instruction counts are in
// docs/PERFORMANCE.md beside them.
#include "core/completions.hpp"
#include "core/dispatch.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>

// What libstrata defines: the thread's state and the table of its requests.
namespace strata::core {
strata_where_posts discarded_posts;
__thread thread_state tls __attribute__((tls_model("initial-exec"))) = {
    -1, 0, nullptr, 1, 0, nullptr, -1, nullptr, {}, &discarded_posts};
} // namespace strata::core

namespace {

using namespace strata;

// The arguments each call keeps, a bit per position, as the generated decoders say
// (where_kept): a Sendrecv's send count and type, destination, send tag, source, receive tag and
// communicator; a nonblocking send's or receive's count, type, peer, tag and communicator.
constexpr uint32_t sendrecv_kept = 0x71e;
constexpr uint32_t request_kept = 0x3e;

// The arguments as a call passes them, in registers the compiler may not assume unchanged from
// one call to the next (the same in the baseline).
struct sendrecv_args {
  const void* sendbuf = nullptr;
  int sendcount = 0;
  MPI_Datatype sendtype = MPI_BYTE;
  int dest = 0;
  int sendtag = 7;
  void* recvbuf = nullptr;
  int recvcount = 0;
  MPI_Datatype recvtype = MPI_BYTE;
  int source = 0;
  int recvtag = 7;
  MPI_Comm comm = MPI_COMM_SELF;
  MPI_Status* status = MPI_STATUS_IGNORE;
  void opaque() {
    benchmark::DoNotOptimize(sendbuf);
    benchmark::DoNotOptimize(sendcount);
    benchmark::DoNotOptimize(sendtype);
    benchmark::DoNotOptimize(dest);
    benchmark::DoNotOptimize(sendtag);
    benchmark::DoNotOptimize(recvbuf);
    benchmark::DoNotOptimize(recvcount);
    benchmark::DoNotOptimize(recvtype);
    benchmark::DoNotOptimize(source);
    benchmark::DoNotOptimize(recvtag);
    benchmark::DoNotOptimize(comm);
    benchmark::DoNotOptimize(status);
  }
};

struct request_args {
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  int peer = 0;
  int tag = 7;
  MPI_Comm comm = MPI_COMM_SELF;
  MPI_Request request = MPI_REQUEST_NULL;
  void opaque() {
    benchmark::DoNotOptimize(buf);
    benchmark::DoNotOptimize(count);
    benchmark::DoNotOptimize(type);
    benchmark::DoNotOptimize(peer);
    benchmark::DoNotOptimize(tag);
    benchmark::DoNotOptimize(comm);
    benchmark::DoNotOptimize(request);
  }
};

// The call itself, as far as the note can tell: the compiler must assume it reads and writes
// any memory (the note's stores cannot be merged across it or dropped). With the benchmark's
// argument above 0, that many multiplies stand for the call's own work, each waiting for the
// one before, from call to call (3 cycles each: 32 of them about the time of a barrier on
// MPI_COMM_SELF), latency that the note's stores may overlap as in a real call; the baseline's
// time also checks the clock (32 x 3 cycles). With 0, one note follows the other with nothing
// between: the increments of their counters form a chain from call to call that a real call
// hides, so that figure is an upper bound.
inline void the_call(int64_t work, uint64_t& chain) {
  benchmark::ClobberMemory();
  const uint64_t multiplier = 0x9E3779B97F4A7C15ULL;
  for (int64_t i = 0; i < work; ++i) {
#if defined(__x86_64__)
    asm volatile("imul %[m], %[x]" : [x] "+r"(chain) : [m] "r"(multiplier));
#else
    chain *= multiplier;
    benchmark::DoNotOptimize(chain);
#endif
  }
  benchmark::ClobberMemory();
}

const void* call_site() {
  const void* site = __builtin_return_address(0);
  benchmark::DoNotOptimize(site);
  return site;
}

// A Sendrecv or a barrier, its call noted or not (the baseline).
template <bool Noted> void sendrecv_call(benchmark::State& state) {
  sendrecv_args a;
  const void* site = call_site();
  const int64_t work = state.range(0);
  uint64_t chain = 1;
  for (auto _ : state) {
    a.opaque();
    benchmark::DoNotOptimize(site);
    if constexpr (Noted)
      core::note_call<gen::fid_MPI_Sendrecv, sendrecv_kept>(
          site, a.sendbuf, a.sendcount, a.sendtype, a.dest, a.sendtag, a.recvbuf, a.recvcount,
          a.recvtype, a.source, a.recvtag, a.comm, a.status);
    the_call(work, chain);
    if constexpr (Noted)
      core::note_return();
  }
}

template <bool Noted> void barrier_call(benchmark::State& state) {
  MPI_Comm comm = MPI_COMM_SELF;
  const void* site = call_site();
  const int64_t work = state.range(0);
  uint64_t chain = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(comm);
    benchmark::DoNotOptimize(site);
    if constexpr (Noted)
      core::note_call<gen::fid_MPI_Barrier, 0x1>(site, comm);
    the_call(work, chain);
    if constexpr (Noted)
      core::note_return();
  }
}

// A call that makes a request: not noted (the baseline), its call noted, or its call and its
// request noted, as the timed path and the exit decoder of a timed MPI_Irecv or MPI_Isend do.
enum class noted { nothing, call, call_and_request };
template <int Function, bool Receive, noted Noted> void request_call(benchmark::State& state) {
  request_args a;
  strata_event ev{};
  ev.bytes_sent = Receive ? 0 : 8;
  ev.bytes_expected = Receive ? 8 : 0;
  const void* site = call_site();
  uint64_t handle = 1;
  const int64_t work = state.range(0);
  uint64_t chain = 1;
  for (auto _ : state) {
    a.opaque();
    benchmark::DoNotOptimize(site);
    if constexpr (Noted != noted::nothing)
      core::note_call<Function, request_kept>(site, a.buf, a.count, a.type, a.peer, a.tag, a.comm,
                                              &a.request);
    the_call(work, chain);
    benchmark::DoNotOptimize(++handle); // the handle MPI wrote
    if constexpr (Noted != noted::nothing)
      core::note_return();
    if constexpr (Noted == noted::call_and_request)
      decode::note_post<Function, 3, 4, 5>(ev, handle, &a.request, Receive);
  }
  benchmark::DoNotOptimize(chain);
}

constexpr int irecv = gen::fid_MPI_Irecv;
constexpr int isend = gen::fid_MPI_Isend;

} // namespace

BENCHMARK(barrier_call<false>)->Name("barrier_baseline")->Arg(0)->Arg(32);
BENCHMARK(barrier_call<true>)->Name("barrier_noted")->Arg(0)->Arg(32);
BENCHMARK(sendrecv_call<false>)->Name("sendrecv_baseline")->Arg(0)->Arg(32);
BENCHMARK(sendrecv_call<true>)->Name("sendrecv_noted")->Arg(0)->Arg(32);
BENCHMARK(request_call<irecv, true, noted::nothing>)->Name("irecv_baseline")->Arg(0)->Arg(32);
BENCHMARK(request_call<irecv, true, noted::call>)->Name("irecv_call_noted")->Arg(0)->Arg(32);
BENCHMARK(request_call<irecv, true, noted::call_and_request>)
    ->Name("irecv_request_noted")
    ->Arg(0)
    ->Arg(32);
BENCHMARK(request_call<isend, false, noted::nothing>)->Name("isend_baseline")->Arg(0)->Arg(32);
BENCHMARK(request_call<isend, false, noted::call>)->Name("isend_call_noted")->Arg(0)->Arg(32);
BENCHMARK(request_call<isend, false, noted::call_and_request>)
    ->Name("isend_request_noted")
    ->Arg(0)
    ->Arg(32);

BENCHMARK_MAIN();
