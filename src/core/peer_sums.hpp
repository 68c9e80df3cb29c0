// The core's sums of messages per peer, into what a module lent with its timed slots (module.h,
// strata_timed_counts::pairs and ::started): a send's or a one-sided operation's message to its
// destination's world rank, before the call; a persistent request's start to the sums its
// module noted when the request was made, after the call. Inlined into the summed path
// (dispatch.hpp, count_timed_body) of the calls that send or start, and no other.
#pragma once

#include "core/chains.hpp"
#include "core/decode.hpp"

#include <strata/module.h>

#include <cstddef>
#include <cstdint>

namespace strata::core {

// One message and its bytes: two plain adds to memory (GCC would make them one vector add, whose
// operands it packs first: four instructions more).
inline void add_message(uint64_t& messages, uint64_t& bytes, uint64_t added) {
  ++messages;
  asm("" : "+m"(messages));
  bytes += added;
}

// A peer that the group's pair_world does not cover: a special rank (MPI_PROC_NULL: nothing), or
// a rank of a group with ranks outside the world (a spawned process's), translated through its
// world ranks and checked against the module's sums. Out of line: rare.
__attribute__((noinline)) inline void add_to_peer_outside_world(const chain_entry& entry,
                                                                const decode::comm_info& group,
                                                                uint32_t rank, uint64_t bytes) {
  if (rank >= static_cast<uint32_t>(group.size))
    return;
  const uint32_t to =
      group.world_ranks != nullptr ? static_cast<uint32_t>(group.world_ranks[rank]) : rank;
  if (to < entry.timed_pair_count)
    add_message(entry.timed_pairs[to].messages, entry.timed_pairs[to].bytes, bytes);
}

// A message to `rank` of `group` (decode::peer_comm_group, peer_window_group), where the module
// lent sums per world rank (chain_entry::timed_pairs). One unsigned compare leaves out the
// special ranks (negative) and bounds the table of world ranks, whose every entry is a rank of
// the world, which the module's sums cover (enable_timed_counts): no other test on the way.
__attribute__((always_inline)) inline void
add_to_peer(const chain_entry& entry, const decode::comm_info& group, int rank, uint64_t bytes) {
  const auto r = static_cast<uint32_t>(rank);
  if (__builtin_expect(r < group.pair_ranks, 1)) {
    strata_pair_sum& pair = entry.timed_pairs[static_cast<uint32_t>(group.pair_world[r])];
    add_message(pair.messages, pair.bytes, bytes);
  } else if (__builtin_expect(group.pair_ranks != static_cast<uint32_t>(group.size), 0)) {
    add_to_peer_outside_world(entry, group, r, bytes);
  }
}

// The persistent requests an MPI_Start or MPI_Startall started (after it returned MPI_SUCCESS),
// each looked up in the module's table by its handle (chain_entry::timed_started), its start
// added to the sums found there. A request not in the table (a receive's) ends at an empty slot.
__attribute__((always_inline)) inline void add_started(const strata_started_slot* table,
                                                       const decode::started_requests& started) {
  for (int i = 0; i < started.count; ++i) {
    const uint64_t bits = decode::handle_bits(started.requests[i]);
    for (uint32_t k = strata_started_home(bits);; k = (k + 1) & (STRATA_STARTED_SLOTS - 1)) {
      const strata_started_slot& slot = table[k];
      if (slot.handle == bits) {
        if (__builtin_expect(slot.sums != nullptr, 1))
          add_message(slot.sums[0], slot.sums[1], slot.bytes);
        break;
      }
      if (slot.handle == 0)
        break;
    }
  }
}

} // namespace strata::core
