#include "profiler/counting.hpp"

#include "profiler/clock.hpp"

namespace strata::profiler {

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
