#include "profiler/counting.hpp"

#include "profiler/clock.hpp"

#include <algorithm>

namespace strata::profiler {

namespace {
// The arrays this thread claimed from, and its own (null: none was left). Internal linkage: the
// profile and the overhead module, loaded together, each keep their own.
struct thread_claim {
  const thread_slot_arrays* arrays = nullptr;
  routine_slot* own = nullptr;
};
thread_local thread_claim this_thread;

// The arrays threads have claimed so far (the counter may pass the arrays there are).
uint32_t claimed_arrays(const thread_slot_arrays& arrays) {
  return arrays.claimed != nullptr
             ? std::min(arrays.claimed->load(std::memory_order_relaxed), arrays.count)
             : 0;
}
} // namespace

routine_slot* own_thread_slots(const thread_slot_arrays& arrays) {
  if (this_thread.arrays == &arrays)
    return this_thread.own;
  routine_slot* own = nullptr;
  if (arrays.claimed != nullptr) {
    const uint32_t i = arrays.claimed->fetch_add(1, std::memory_order_relaxed);
    if (i < arrays.count) {
      own = arrays.slots + size_t{i} * arrays.functions;
      std::fill_n(own, arrays.functions, empty_routine_slot);
    }
  }
  this_thread = {&arrays, own};
  return own;
}

std::vector<routine_slot> merged_slots(const routine_slot* shared, size_t functions,
                                       const thread_slot_arrays& arrays) {
  std::vector<routine_slot> out(shared, shared + functions);
  const uint32_t claimed = claimed_arrays(arrays);
  for (uint32_t a = 0; a < claimed; ++a)
    for (uint32_t f = 0; f < arrays.functions; ++f)
      merge_slot(out[f], arrays.slots[size_t{a} * arrays.functions + f]);
  return out;
}

void clear_thread_slots(const thread_slot_arrays& arrays) {
  std::fill_n(arrays.slots, size_t{claimed_arrays(arrays)} * arrays.functions, empty_routine_slot);
}

uint64_t calibrate_call_cost(const std::vector<uint8_t>& traits, bool with_callsites) {
  std::vector<routine_slot> slots(traits.size());
  std::vector<uint8_t> scratch_traits(traits.size());
  for (size_t f = 0; f < traits.size(); ++f)
    scratch_traits[f] = traits[f] & routine_trait::collective;
  std::vector<poll_figures> polls(traits.size());
  std::vector<callsite_slot> sites;
  rank_header header{};
  call_counting scratch;
  scratch.slots = slots.data();
  scratch.header = &header;
  scratch.traits = scratch_traits.data();
  scratch.polls = polls.data();
  if (with_callsites) {
    sites.assign(callsite_table::capacity, callsite_slot{});
    scratch.callsites.slots = sites.data();
  }
  strata_event ev{};
  ev.peer = STRATA_NO_RANK;
  constexpr int rounds = 2000;
  const uint64_t start = mono_ns();
  for (int i = 0; i < rounds; ++i) {
    ev.t_enter_ns = mono_ns();
    ev.t_exit_ns = mono_ns();
    count_call(scratch, ev);
  }
  return (mono_ns() - start) / rounds;
}

} // namespace strata::profiler
