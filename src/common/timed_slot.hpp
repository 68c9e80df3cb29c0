// One timed call summed into its routine's slot (strata_timed_slot, include/strata/module.h):
// written once for the profile's exit callback and for the core, which sums the calls of a
// module that lent it its slots (strata_module_timed_counts_v1) without building an event. No
// MPI here.
#pragma once

#include "common/figure_adds.hpp"

#include <strata/module.h>

#include <cstdint>

namespace strata {

// What a slot takes of one timed call.
struct timed_call {
  uint64_t time_ns;
  uint64_t count;
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t bytes_expected;
  uint64_t comm_size;
};

// A count or a byte figure of an event as counted: negative (none) as zero.
inline uint64_t non_negative(int64_t figure) {
  return figure > 0 ? static_cast<uint64_t>(figure) : 0;
}

// The message size of a call: what it sends, else what arrived, else what it posted.
inline uint64_t message_size(uint64_t sent, uint64_t received, uint64_t expected) {
  return sent != 0 ? sent : received != 0 ? received : expected;
}

// The histograms a routine's slot keeps, from what it is (`kinds`: STRATA_TIMED_SIZE_HISTOGRAM
// for a call with a peer, STRATA_TIMED_COMM_HISTOGRAM for a collective): a collective keeps the
// message-size histogram too. The profile lends its slots so, and the core compiles its usual
// summed path for them. Two instructions where `kinds` is not a constant.
constexpr uint32_t slot_histograms_of(uint32_t kinds) {
  kinds &= STRATA_TIMED_SIZE_HISTOGRAM | STRATA_TIMED_COMM_HISTOGRAM;
  static_assert(STRATA_TIMED_COMM_HISTOGRAM >> 1 == STRATA_TIMED_SIZE_HISTOGRAM);
  return kinds | (kinds >> 1);
}

// What the profile reads of a summed call: its bytes and the bytes received, and a collective's
// communicator (for the sums per communicator and the communicator-size histogram).
constexpr uint32_t summed_call_fields(bool with_communicator) {
  return STRATA_FIELD_BYTES | STRATA_FIELD_RECEIVED |
         (with_communicator ? uint32_t{STRATA_FIELD_COMM} : 0u);
}

template <typename Adds>
__attribute__((always_inline)) inline void
add_timed_call(strata_timed_slot& slot, const timed_call& call, uint32_t histograms) {
  // Each figure added apart (the empty asm after each add of a pair): GCC would make two
  // neighbouring adds one vector add, whose operands it packs first (four to seven instructions
  // more a call than two adds to memory).
  Adds::add(slot.calls, uint64_t{1});
  asm("" : "+m"(slot.calls));
  Adds::add(slot.time_ns, call.time_ns);
  Adds::keep_min(slot.min_ns, call.time_ns);
  Adds::keep_max(slot.max_ns, call.time_ns);
  Adds::add(slot.count_sum, call.count);
  asm("" : "+m"(slot.count_sum));
  Adds::add(slot.bytes_sent, call.bytes_sent);
  asm("" : "+m"(slot.bytes_sent));
  Adds::add(slot.bytes_received, call.bytes_received);
  if ((histograms & STRATA_TIMED_SIZE_HISTOGRAM) != 0)
    Adds::add(slot.size_hist[strata_size_bin(
                  message_size(call.bytes_sent, call.bytes_received, call.bytes_expected))],
              uint64_t{1});
  if ((histograms & STRATA_TIMED_COMM_HISTOGRAM) != 0)
    Adds::add(slot.comm_hist[strata_comm_bin(call.comm_size)], uint64_t{1});
}

} // namespace strata
