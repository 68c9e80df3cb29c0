// What the profile's communication matrix costs a call, in nanoseconds: the core's sums per peer
// as the summed path runs them (core/peer_sums.hpp; dispatch.hpp, count_timed_body), each loop
// against a baseline that does the same work minus the sums: a send's message added to its
// destination's world rank (the last communicator looked up, the rank bounded and translated,
// two adds), and the two starts of a persistent send and its receive looked up in the table of
// requests. Built per MPI: the handles are that mpi.h's (a pointer under Open MPI, an int under
// MPICH). Run by bench/run_pair_sums.sh, which reports medians of interleaved repetitions;
// callgrind's instruction counts per MPI call are in docs/PERFORMANCE.md beside them.
#include "common/timed_slot.hpp"
#include "core/peer_sums.hpp"

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

// What libstrata defines: the communicator cache's last look-up and its empty group.
namespace strata::decode {
const comm_slot unused_slot{~uint64_t{0}, {}};
__thread const comm_slot* last_comm __attribute__((tls_model("initial-exec"))) = &unused_slot;
__thread const comm_slot* last_window __attribute__((tls_model("initial-exec"))) = &unused_slot;
const comm_info no_group{};
const comm_info* lookup_comm_in_table(MPI_Comm) {
  return nullptr;
}
} // namespace strata::decode

namespace {

using namespace strata;

constexpr int world_size = 64;

// A communicator of the world's size whose ranks are the world's (the usual case), found by the
// last look-up as a program's calls find it.
struct world_communicator {
  decode::comm_slot slot;
  std::array<int, world_size> ranks{};
  explicit world_communicator(MPI_Comm comm) {
    for (int r = 0; r < world_size; ++r)
      ranks[static_cast<size_t>(r)] = r;
    slot.info.size = world_size;
    slot.info.pair_world = ranks.data();
    slot.info.pair_ranks = world_size;
    slot.key.store(decode::handle_bits(comm));
    decode::last_comm = &slot;
  }
};

// The call itself, as far as the sums can tell: the compiler must assume it reads and writes any
// memory. With the benchmark's argument above 0, that many multiplies stand for the call's own
// work, each waiting for the one before, from call to call (3 cycles each: 32 of them about the
// time of a barrier on MPI_COMM_SELF), latency that the sums' loads and adds may overlap as in a
// real call. With 0, one call's sums follow the other's with nothing between: their adds to the
// same pair form a chain from call to call that a real call hides, so that figure is an upper
// bound.
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

// A send (MPI_Send's destination, communicator and bytes), its message summed or not (the
// baseline): what count_timed_body adds where the module lent sums per peer.
template <bool Summed> void send_call(benchmark::State& state) {
  MPI_Comm comm = MPI_COMM_WORLD;
  world_communicator world(comm);
  std::vector<strata_pair_sum> sums(world_size);
  core::chain_entry entry;
  entry.timed_pairs = sums.data();
  entry.timed_pair_count = world_size;
  const core::chain_entry* lent = &entry;
  int dest = 1;
  int64_t bytes = 8;
  const int64_t work = state.range(0);
  uint64_t chain = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(comm);
    benchmark::DoNotOptimize(dest);
    benchmark::DoNotOptimize(bytes);
    benchmark::DoNotOptimize(lent);
    if constexpr (Summed) {
      if (lent->timed_pairs != nullptr)
        core::add_to_peer(*lent, decode::peer_comm_group(comm), dest, non_negative(bytes));
    }
    the_call(work, chain);
  }
  benchmark::DoNotOptimize(chain);
  if (Summed && sums[1].messages != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("the sums missed messages");
}

// The start loop of bench/timed_call.c: a persistent send and its receive started (two
// MPI_Start), each looked up in the module's table after the call (the send found, the receive
// not), or not (the baseline).
template <bool Summed> void start_call(benchmark::State& state) {
  std::vector<strata_started_slot> table(STRATA_STARTED_SLOTS);
  strata_pair_sum sum{};
  // Handles as each MPI makes them: Open MPI's are pointers to its requests, MPICH's counters
  // with kind bits.
  MPI_Request receive{};
  MPI_Request send{};
#if defined(OPEN_MPI)
  static uint64_t requests[2][16];
  receive = reinterpret_cast<MPI_Request>(&requests[0]);
  send = reinterpret_cast<MPI_Request>(&requests[1]);
#else
  receive = static_cast<MPI_Request>(0xac000000);
  send = static_cast<MPI_Request>(0xac000001);
#endif
  const uint64_t bits = decode::handle_bits(send);
  table[strata_started_home(bits)] = {bits, &sum.messages, 8, 0};
  core::chain_entry entry;
  entry.timed_started = table.data();
  const core::chain_entry* lent = &entry;
  int result = MPI_SUCCESS;
  const int64_t work = state.range(0);
  uint64_t chain = 1;
  for (auto _ : state) {
    for (MPI_Request* request : {&receive, &send}) {
      benchmark::DoNotOptimize(request);
      benchmark::DoNotOptimize(lent);
      the_call(work / 2, chain);
      benchmark::DoNotOptimize(result);
      if constexpr (Summed) {
        if (lent->timed_started != nullptr && result == MPI_SUCCESS)
          core::add_started(lent->timed_started, {request, 1});
      }
    }
  }
  benchmark::DoNotOptimize(chain);
  if (Summed && sum.messages != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("the sums missed starts");
}

} // namespace

BENCHMARK(send_call<false>)->Name("send_baseline")->Arg(0)->Arg(32);
BENCHMARK(send_call<true>)->Name("send_summed")->Arg(0)->Arg(32);
BENCHMARK(start_call<false>)->Name("start_baseline")->Arg(0)->Arg(32);
BENCHMARK(start_call<true>)->Name("start_summed")->Arg(0)->Arg(32);

BENCHMARK_MAIN();
