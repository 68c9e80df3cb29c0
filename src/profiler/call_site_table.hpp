// One rank's call-site table (STRATA_PROFILE_CALLSITES=1, and always in the overhead module):
// calls counted per (MPI function, return address), in the rank file after the routine slots.
// Open addressing on the packed key (rank_file.hpp: callsite_key), so that one 64-bit
// compare-and-swap claims a slot. No MPI here.
#pragma once

#include "common/figure_adds.hpp"
#include "profiler/rank_file.hpp"

#include <cstdint>

namespace strata::profiler {

struct callsite_table {
  static constexpr uint32_t capacity = 4096; // a power of two
  static constexpr uint32_t mask = capacity - 1;
  static constexpr int probes = 32;
  callsite_slot* slots = nullptr; // nullptr: call sites are not counted
};

// A full neighbourhood counts the call in `dropped` rather than slowing the call down.
template <typename Adds>
inline void count_callsite(const callsite_table& table, uint32_t& dropped, uint64_t key,
                           uint64_t time_ns, uint64_t bytes, uint64_t wasted_ns) {
  uint32_t i = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & callsite_table::mask;
  for (int probe = 0; probe < callsite_table::probes; ++probe, i = (i + 1) & callsite_table::mask) {
    callsite_slot& slot = table.slots[i];
    if (Adds::claim(slot.key, key) != key)
      continue;
    Adds::add(slot.calls, uint64_t{1});
    Adds::add(slot.time_ns, time_ns);
    Adds::add(slot.bytes, bytes);
    Adds::add(slot.wasted_ns, wasted_ns);
    return;
  }
  Adds::add(dropped, uint32_t{1});
}

} // namespace strata::profiler
