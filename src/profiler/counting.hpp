// Counting one rank's MPI calls on the call path: a timed call into its routine's slot (calls,
// time, minimum and maximum, bytes, size and communicator-size histograms), the timed polls of
// sampled routines, and with call sites its (function, return address) slot. One code for plain
// adds and for relaxed atomics (figure_adds.hpp). No MPI here: the figures come as a strata_event
// (include/strata/module.h, plain C).
#pragma once

#include "common/figure_adds.hpp"
#include "profiler/call_site_table.hpp"
#include "profiler/rank_file.hpp"
#include "profiler/sole_counter.hpp"
#include "profiler/time_over_model.hpp"

#include <strata/module.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace strata::profiler {

// What is known of a routine on this rank, one byte per function id.
// The two histogram bits are module.h's (slot_histograms).
namespace routine_trait {
inline constexpr uint8_t with_peer = 1;     // names a peer: gets a message-size histogram
inline constexpr uint8_t collective = 2;    // gets both histograms
inline constexpr uint8_t sampled_poll = 4;  // the core times one poll in N, counts the others
inline constexpr uint8_t lean_poll = 8;     // ... without a look at what they completed
inline constexpr uint8_t counted_only = 16; // every call counted by the core, never an event
inline constexpr uint8_t core_summed = 32;  // its slot lent to the core, which sums every call
} // namespace routine_trait
static_assert(routine_trait::with_peer == STRATA_TIMED_SIZE_HISTOGRAM &&
              routine_trait::collective == STRATA_TIMED_COMM_HISTOGRAM);

// A sampled poll routine's timed polls, which set what its untimed polls are charged
// (poll_charging.hpp).
struct poll_figures {
  uint64_t timed_polls = 0;      // every timed poll
  uint64_t timed_poll_bytes = 0; // what they received
  uint64_t sample_calls = 0;     // timed polls short enough to set the mean (max_sample_ns)
  uint64_t sample_ns = 0;        // their time
  uint64_t untimed_moved = 0;    // untimed polls moved into the routine's slot so far
};

// A timed poll longer than this was, in all likelihood, descheduled: it keeps its own time in
// the slot but does not set the mean charged to the untimed polls, which would multiply it by
// the sampling interval (one 40 ms preemption among 1-in-64 samples charged 2.5 s to a 0.8 s
// run on a loaded machine).
inline constexpr uint64_t max_sample_ns = 250'000;

// Under MPI_THREAD_MULTIPLE, arrays of routine slots (in the rank file) that threads claim one
// each at their first call beside another thread's: each then counts with plain adds into its
// own. A thread that finds none left counts with atomics into the shared slots.
struct thread_slot_arrays {
  routine_slot* slots = nullptr; // count arrays of `functions` slots
  uint32_t count = 0;
  uint32_t functions = 0;
  std::atomic<uint32_t>* claimed = nullptr; // arrays handed out so far (may pass count)
};

// The calling thread's array of `arrays`, claimed (and its minima set) at its first call;
// nullptr when every array is taken. Out of line: its thread-local record is the module's own.
routine_slot* own_thread_slots(const thread_slot_arrays& arrays);

// The shared slots (`functions` of them) with every claimed thread array added: what the rank
// counted, by function.
std::vector<routine_slot> merged_slots(const routine_slot* shared, size_t functions,
                                       const thread_slot_arrays& arrays);

// Every claimed thread array emptied (MPI_Pcontrol(2)).
void clear_thread_slots(const thread_slot_arrays& arrays);

// Where one rank's calls are counted: its rank file, or memory before the file exists.
struct call_counting {
  routine_slot* slots = nullptr;   // by function id
  rank_header* header = nullptr;   // the latest call's exit, dropped call sites, clamped calls
  const uint8_t* traits = nullptr; // by function id: routine_trait bits
  poll_figures* polls = nullptr;   // by function id
  callsite_table callsites;        // slots null: call sites not counted
  const time_over_model* model = nullptr; // the overhead module's model, else null
  bool threaded = false;                  // MPI_THREAD_MULTIPLE: relaxed atomics, except...
  sole_counter* sole = nullptr;           // ...for the one thread that calls MPI, if set,
  thread_slot_arrays thread_arrays;       // ...and threads with an array of their own
};

// How often threads with arrays of their own move the rank's latest exit on (count_call_into).
inline constexpr uint64_t latest_exit_grain_ns = 1'000'000;

inline uint64_t message_size(const strata_event& ev) {
  return strata::message_size(non_negative(ev.bytes_sent), non_negative(ev.bytes_received),
                              non_negative(ev.bytes_expected));
}

// count_call_site with the overhead module's time over the model (out of line: the profile
// has no model, and its count then keeps no frame and reads no message size for one).
template <typename Adds>
__attribute__((noinline)) void count_call_site_over_model(const call_counting& c,
                                                          const strata_event& ev, uint64_t t) {
  const uint64_t wasted =
      c.model->wasted_ns(ev.function, ev.comm_size, t, message_size(ev), c.header->model_clamped);
  count_callsite<Adds>(c.callsites, c.header->callsites_dropped,
                       callsite_key(reinterpret_cast<uint64_t>(ev.call_site), ev.function), t,
                       non_negative(ev.bytes_sent) + non_negative(ev.bytes_received), wasted);
}

// The call's call site (and the overhead module's time over the model). Out of line, reading
// the event again: the profile without call sites then keeps count_call_into's registers to
// what it needs itself (no frame of saved registers there).
template <typename Adds>
__attribute__((noinline)) void count_call_site(const call_counting& c, const strata_event& ev,
                                               uint64_t t) {
  if (__builtin_expect(c.model != nullptr, 0))
    return count_call_site_over_model<Adds>(c, ev, t);
  count_callsite<Adds>(c.callsites, c.header->callsites_dropped,
                       callsite_key(reinterpret_cast<uint64_t>(ev.call_site), ev.function), t,
                       non_negative(ev.bytes_sent) + non_negative(ev.bytes_received), 0);
}

// The histograms a routine's slot keeps, from its traits (common/timed_slot.hpp).
inline uint32_t slot_histograms(uint8_t traits) {
  return slot_histograms_of(traits);
}

// The communicator's size where the slot reads it (a collective's): the event has it only where
// the profile asked for it (strata_module_function_fields_v1).
inline uint64_t comm_size(const strata_event& ev, uint8_t traits) {
  return (traits & routine_trait::collective) != 0 ? static_cast<uint64_t>(ev.comm_size) : 0;
}

// One call into `slots` (the shared ones, or the thread's own) with SlotAdds, and into what
// threads always share (the header, poll figures, call sites) with SharedAdds.
template <typename SlotAdds, typename SharedAdds>
inline void count_call_into(const call_counting& c, routine_slot* slots, const strata_event& ev) {
  using Adds = SlotAdds;
  const auto f = static_cast<size_t>(ev.function);
  routine_slot& slot = slots[f];
  // The event read once, before the first add: the slots' figures may alias its fields (a
  // uint64_t and an int64_t), which otherwise made each read come again after each add.
  const uint64_t t = ev.t_exit_ns - ev.t_enter_ns;
  const uint64_t exit_ns = ev.t_exit_ns;
  const uint64_t count = non_negative(ev.count);
  const uint64_t sent = non_negative(ev.bytes_sent);
  const uint64_t received = non_negative(ev.bytes_received);
  const uint64_t expected = non_negative(ev.bytes_expected);
  const uint8_t traits = c.traits[f];
  add_timed_call<Adds>(slot, {t, count, sent, received, expected, comm_size(ev, traits)},
                       slot_histograms(traits));
  // Threads with arrays of their own move the latest exit on only once a millisecond, so that
  // they do not write one shared line on every call: the wall time of a rank that died may be
  // short by that much.
  constexpr uint64_t grain = std::is_same_v<SlotAdds, SharedAdds> ? 0 : latest_exit_grain_ns;
  if (grain == 0 ||
      exit_ns >
          std::atomic_ref<uint64_t>(c.header->last_mono_ns).load(std::memory_order_relaxed) + grain)
    SharedAdds::set_latest(c.header->last_mono_ns, exit_ns);
  if ((traits & routine_trait::sampled_poll) != 0) {
    poll_figures& poll = c.polls[f];
    SharedAdds::add(poll.timed_polls, uint64_t{1});
    SharedAdds::add(poll.timed_poll_bytes, received);
    if (t <= max_sample_ns) {
      SharedAdds::add(poll.sample_calls, uint64_t{1});
      SharedAdds::add(poll.sample_ns, t);
    }
  }
  if (c.callsites.slots != nullptr)
    count_call_site<SharedAdds>(c, ev, t);
}

template <typename Adds>
inline void count_call_with(const call_counting& c, const strata_event& ev) {
  count_call_into<Adds, Adds>(c, c.slots, ev);
}

// Under MPI_THREAD_MULTIPLE: the thread's own slots, or the sole caller's plain adds, or atomics.
__attribute__((noinline)) inline void count_call_threaded(const call_counting& c,
                                                          const strata_event& ev) {
  if (c.sole != nullptr && !c.sole->shared() && c.sole->enter()) {
    count_call_with<plain_adds>(c, ev);
    c.sole->leave();
  } else if (routine_slot* own = own_thread_slots(c.thread_arrays); own != nullptr) {
    count_call_into<plain_adds, atomic_adds>(c, own, ev);
  } else {
    count_call_with<atomic_adds>(c, ev);
  }
}

// The profile's exit callback, once the event has both times. The threaded cases out of line,
// so that the usual one enters count_call_into without a frame of its own.
inline void count_call(const call_counting& c, const strata_event& ev) {
  if (__builtin_expect(c.threaded, 0))
    count_call_threaded(c, ev);
  else
    count_call_with<plain_adds>(c, ev);
}

// An untimed poll that completed something (most complete nothing and are only counted by the
// core): one more uncharged poll, and the bytes it received.
inline void count_completed_untimed_poll(const call_counting& c, uint64_t* uncharged,
                                         const strata_event& ev) {
  const auto f = static_cast<size_t>(ev.function);
  const uint64_t received = ev.bytes_received > 0 ? static_cast<uint64_t>(ev.bytes_received) : 0;
  if (!c.threaded) {
    plain_adds::add(uncharged[f], uint64_t{1});
    plain_adds::add(c.slots[f].bytes_received, received);
    return;
  }
  // The core adds to uncharged polls from any thread with atomic adds: so does this.
  atomic_adds::add(uncharged[f], uint64_t{1});
  if (c.sole != nullptr && c.sole->enter()) {
    plain_adds::add(c.slots[f].bytes_received, received);
    c.sole->leave();
    return;
  }
  atomic_adds::add(c.slots[f].bytes_received, received);
}

// What one call costs the profiler: count_call on scratch slots, timed in a loop, for routines
// with these traits (only `collective` matters) and with or without call sites.
uint64_t calibrate_call_cost(const std::vector<uint8_t>& traits, bool with_callsites);

// What one call the core sums into a lent slot costs (strata_module_timed_counts_v1): the core's
// sum, add_timed_call (common/timed_slot.hpp) and the latest exit, on a scratch slot, timed in
// the same loop as calibrate_call_cost, for the same routine's histograms.
uint64_t calibrate_core_sum_cost(const std::vector<uint8_t>& traits);

} // namespace strata::profiler
