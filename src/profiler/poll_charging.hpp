// Untimed polls: the core times about one poll in N of a sampled routine (MPI_Test, MPI_Testany,
// MPI_Iprobe) and only counts the others, into a per-routine counter of uncharged polls in the
// rank file. Whenever the figures are read (finalize, MPI_Pcontrol 0, 3 and 4; the rank-file
// reader for `strata recover`), those polls move into the routine's slot, each charged the mean
// time of the routine's timed polls. No MPI here.
#pragma once

#include "profiler/counting.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::profiler {

// The mean time of a routine's timed polls (0 while it has none), charged to each of its
// untimed polls: from the timed calls alone, never from what was charged before (a running mean
// over charged calls kept a cold first call of 35 us for ever).
uint64_t sample_mean_ns(const poll_figures& poll);

// Lean polls: what `pending` untimed polls received, estimated as the bytes per timed poll of
// the routine so far (0 while none was timed). The timed polls are a random sample, so the
// estimate is unbiased; it is exact when every poll completes the same size or none.
uint64_t estimated_poll_bytes(const poll_figures& poll, uint64_t pending);

// Moves every routine's uncharged polls into its slot (calls, time at the sample mean, and for
// lean polls the estimated bytes). Safe against the call path adding at the same time.
void charge_untimed_polls(routine_slot* slots, uint64_t* uncharged, poll_figures* polls,
                          const std::vector<uint8_t>& traits);

// The calls that reached the profile as events (whose cost calibrate_call_cost measures): not
// those the core only counted (a few ns each), nor those it summed into a lent slot.
uint64_t calls_with_events(const routine_slot* slots, const poll_figures* polls,
                           const std::vector<uint8_t>& traits);

// The calls the core summed into the slots the profile lent it (routine_trait::core_summed),
// which ran no callback of the profile.
uint64_t calls_summed_by_core(const routine_slot* slots, const std::vector<uint8_t>& traits);

// What one call costs the profiler, calibrated at the rank's start (counting.hpp): a call that
// reaches its exit callback as an event, and one the core sums into a lent slot.
struct call_costs {
  uint64_t event_ns = 0;
  uint64_t core_sum_ns = 0;
};

// The profiler's own cost of the calls (the record's overhead, before its finalize work): each
// call with an event at the callback's cost, each call the core summed at the sum's; the calls
// the core only counted are left out.
uint64_t calls_cost_ns(const routine_slot* slots, const poll_figures* polls,
                       const std::vector<uint8_t>& traits, call_costs costs);

// Whether the core counts some routine's untimed polls lean (their bytes estimated).
bool any_lean_poll(const std::vector<uint8_t>& traits);

// Counters and routine slots handed to the core (strata_module_counter_v1,
// strata_module_timed_counts_v1), which goes on adding to them while MPI_Pcontrol(0) pauses the
// profile: their values at the pause, put back on resume.
class counters_lent_to_core {
public:
  void lend(uint64_t* counter) { counters_.emplace_back(counter, *counter); }
  void lend(routine_slot* slot) { slots_.push_back(slot); }
  void remember_values(); // at the pause
  void put_back_values(); // at the resume, and before the figures are read while paused

private:
  std::vector<std::pair<uint64_t*, uint64_t>> counters_;
  // Their values at the pause, in one block allocated at the first pause and never freed before
  // the end: freeing a block this size would raise glibc's mmap threshold for the program.
  std::vector<routine_slot*> slots_;
  std::vector<routine_slot> slots_at_pause_;
};

} // namespace strata::profiler
