// Recorded states for the analysis's tests: a rank whose one thread is in a call, or computes.
#pragma once

#include "hang/state.hpp"

#include <cstdint>
#include <string>

namespace strata::hang::recorded {

constexpr uint64_t second = 1'000'000'000;
constexpr uint64_t now = 1000 * second;
constexpr uint64_t threshold = 10 * second;

inline communicator world(int32_t size) {
  return {1, static_cast<uint32_t>(size), 0, 1};
}

inline rank_state rank_in(int32_t rank, int32_t size, const std::string& routine, int32_t peer,
                          int32_t tag, uint32_t line, uint64_t waiting_s = 60) {
  rank_state r;
  r.world_rank = rank;
  r.world_size = size;
  r.observed_ns = now;
  thread_state t;
  t.phase = thread_phase::in_mpi;
  t.routine = routine;
  t.file = "app.c";
  t.line = line;
  t.function = "main";
  t.comm = world(size);
  t.peer = peer;
  t.tag = tag;
  t.bytes = 1 << 20;
  t.since_ns = now - waiting_s * second;
  r.threads.push_back(t);
  return r;
}

inline rank_state computing(int32_t rank, int32_t size, const std::string& last, uint32_t line,
                            uint64_t for_s) {
  rank_state r = rank_in(rank, size, last, no_peer, 0, line);
  r.threads[0].phase = thread_phase::outside_mpi;
  r.threads[0].since_ns = now - for_s * second;
  return r;
}

} // namespace strata::hang::recorded
