#include "profiler/poll_charging.hpp"

#include <atomic>

namespace strata::profiler {

namespace {
uint64_t relaxed_load(const uint64_t& value) {
  return std::atomic_ref<const uint64_t>(value).load(std::memory_order_relaxed);
}
} // namespace

uint64_t sample_mean_ns(const poll_figures& poll) {
  const uint64_t calls = relaxed_load(poll.sample_calls);
  const uint64_t time = relaxed_load(poll.sample_ns);
  return calls != 0 ? time / calls : 0;
}

uint64_t estimated_poll_bytes(const poll_figures& poll, uint64_t pending) {
  const uint64_t polls = relaxed_load(poll.timed_polls);
  const uint64_t bytes = relaxed_load(poll.timed_poll_bytes);
  if (polls == 0)
    return 0;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(pending) * bytes / polls);
}

void charge_untimed_polls(routine_slot* slots, uint64_t* uncharged, poll_figures* polls,
                          const std::vector<uint8_t>& traits) {
  for (size_t f = 0; f < traits.size(); ++f) {
    std::atomic_ref<uint64_t> pending_ref(uncharged[f]);
    if (pending_ref.load(std::memory_order_relaxed) == 0)
      continue;
    const uint64_t pending = pending_ref.exchange(0, std::memory_order_relaxed);
    const uint64_t mean = sample_mean_ns(polls[f]);
    atomic_adds::add(polls[f].untimed_moved, pending);
    atomic_adds::add(slots[f].calls, pending);
    atomic_adds::add(slots[f].time_ns, pending * mean);
    if ((traits[f] & routine_trait::lean_poll) != 0)
      atomic_adds::add(slots[f].bytes_received, estimated_poll_bytes(polls[f], pending));
  }
}

uint64_t calls_with_events(const routine_slot* slots, const poll_figures* polls,
                           const std::vector<uint8_t>& traits) {
  uint64_t calls = 0;
  for (size_t f = 0; f < traits.size(); ++f)
    if ((traits[f] & (routine_trait::counted_only | routine_trait::core_summed)) == 0 &&
        slots[f].calls >= polls[f].untimed_moved)
      calls += slots[f].calls - polls[f].untimed_moved;
  return calls;
}

uint64_t calls_summed_by_core(const routine_slot* slots, const std::vector<uint8_t>& traits) {
  uint64_t calls = 0;
  for (size_t f = 0; f < traits.size(); ++f)
    if ((traits[f] & routine_trait::core_summed) != 0)
      calls += slots[f].calls; // never a sampled poll: no untimed polls moved in
  return calls;
}

uint64_t calls_cost_ns(const routine_slot* slots, const poll_figures* polls,
                       const std::vector<uint8_t>& traits, call_costs costs) {
  return calls_with_events(slots, polls, traits) * costs.event_ns +
         calls_summed_by_core(slots, traits) * costs.core_sum_ns;
}

bool any_lean_poll(const std::vector<uint8_t>& traits) {
  for (const uint8_t t : traits)
    if ((t & routine_trait::lean_poll) != 0)
      return true;
  return false;
}

void counters_lent_to_core::remember_values() {
  for (auto& [counter, at_pause] : counters_)
    at_pause = std::atomic_ref<uint64_t>(*counter).load(std::memory_order_relaxed);
  slots_at_pause_.resize(slots_.size()); // lent at MPI_Init, so allocated once
  for (size_t i = 0; i < slots_.size(); ++i)
    slots_at_pause_[i] = *slots_[i]; // lent only when one thread at a time calls MPI
}

void counters_lent_to_core::put_back_values() {
  for (const auto& [counter, at_pause] : counters_)
    std::atomic_ref<uint64_t>(*counter).store(at_pause, std::memory_order_relaxed);
  for (size_t i = 0; i < slots_.size() && i < slots_at_pause_.size(); ++i)
    *slots_[i] = slots_at_pause_[i];
}

} // namespace strata::profiler
