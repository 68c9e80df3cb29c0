// A timed call summed into the slot its module lent (chain_entry::timed_slot), the profile's
// usual case: the entry points' strata_usual_X and strata_summed_X and the chain's summed step
// (count_timed_call) are these. The rest of the call path is dispatch.hpp.
#pragma once

#include "common/timed_slot.hpp"
#include "core/chains.hpp"
#include "core/clock.hpp"
#include "core/decode.hpp"
#include "core/event_parts.hpp"
#include "core/peer_sums.hpp"
#include <strata/module.h>
#include <strata/where.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

// A build for bench/run_timed_call.sh (PARTS) may leave parts of the summed call out, to measure
// what each costs a call (-DSTRATA_TIMED_CALL_OMIT=<mask of summed_part>). Such a library's
// records are wrong by design; every other build keeps them all.
#ifndef STRATA_TIMED_CALL_OMIT
#define STRATA_TIMED_CALL_OMIT 0
#endif

namespace strata::core {

enum summed_part : unsigned {
  part_hang_note = 1, // note_call, note_return: the hang diagnosis's note of the call
  part_arguments = 2, // the decoders: bytes, the communicator, the status
  part_matrix = 4,    // add_to_peer, add_started: the communication matrix
  part_sums = 8,      // the slot's sums, histograms, communicators' sums, the latest exit
};
constexpr bool keeps(summed_part part) {
  return (STRATA_TIMED_CALL_OMIT & part) == 0;
}

// A summed call's fields and histograms (chain_entry::timed_fields, timed_histograms) as
// constants, where they are those below: the decoder's and the sum's tests then fold away.
// any_traits: read from the entry.
struct summed_traits {
  uint32_t fields;
  uint32_t histograms;
  friend constexpr bool operator==(summed_traits, summed_traits) = default;
};
inline constexpr summed_traits any_traits{~0u, ~0u};

// What the profile asks of a summed call (common/timed_slot.hpp: summed_call_fields,
// slot_histograms_of). Another module's asks take the general path, which reads them from the
// entry.
template <typename Decoder> constexpr summed_traits usual_summed_traits() {
  // With what they need, as loading.cpp gives a summed call's fields.
  const uint32_t fields = fields_with_prerequisites(summed_call_fields(Decoder::is_collective),
                                                    Decoder::bytes_prerequisites);
  const uint32_t histograms =
      slot_histograms_of((Decoder::is_collective ? uint32_t{STRATA_TIMED_COMM_HISTOGRAM} : 0u) |
                         (Decoder::has_peer ? uint32_t{STRATA_TIMED_SIZE_HISTOGRAM} : 0u));
  return {fields, histograms};
}

// Where a communicator's sums are in the array the module lent (chain_entry::timed_comms), by
// its id: an id beyond the array goes to its last element, which the module reads as not
// attributed. The index, not the element: the element's address picked by a conditional move
// took two instructions more.
__attribute__((always_inline)) inline uint32_t comm_sums_index(const chain_entry& entry,
                                                               uint32_t id) {
  const uint32_t last = entry.timed_comm_count - 1;
  return id < last ? id : last;
}

// The group a communicator's sums ran on, written beside them (strata_comm_sum).
__attribute__((noinline, cold)) inline void write_comm_group(strata_comm_sum& sum,
                                                             const decode::comm_info& group) {
  sum.world_ranks = group.world_ranks;
  sum.size = group.size;
  sum.flags = group.inter ? uint32_t{STRATA_EVENT_INTERCOMM} : 0u;
}

// A timed call summed into the slot its module lent (chain_entry::timed_slot): the event is
// decoded as for the module's callback, but it stays in this frame, so what no sum reads of it
// is never written; no callback, and the sum's traits come with the entry. `Clock`:
// clock.hpp's readings, chosen once by count_timed; `Traits`, its fields and histograms where
// they are known (usual_summed_traits). The entry and the real function come from `entry_of`
// and `real_of`, asked where they are needed: strata_usual_X reads them from their tables
// there, so neither is kept across a call (the communicator's look-up, MPI's), which took two
// saved registers more.
template <int F, typename Decoder, typename Clock, summed_traits Traits = any_traits,
          typename EntryOf, typename RealOf, typename... A>
__attribute__((always_inline)) inline auto count_timed_body(EntryOf entry_of, const void* call_site,
                                                            RealOf real_of, A... args)
    -> decltype(real_of()(args...)) {
  using R = decltype(real_of()(args...));
  const thread_state& ts = tls;
  constexpr bool fixed = Traits != any_traits;
  const uint32_t fields = fixed ? Traits.fields : entry_of().timed_fields;
  const uint32_t histograms = fixed ? Traits.histograms : entry_of().timed_histograms;
  strata_event ev;
  decode::scratch scratch;
  start_event<true, true, true, false>(ev, F, ts, fields);
  // What the sum reads, whichever fields the module asked for.
  ev.count = 0;
  ev.bytes_sent = 0;
  ev.bytes_expected = 0;
  ev.bytes_received = -1;
  ev.comm_size = 0; // read only for a communicator-size histogram, which asks for it
  if constexpr (Decoder::is_collective && Decoder::sets_comm) {
    ev.comm_id = 0; // read only for the sums per communicator, which ask for it
    ev.comm_world_ranks = nullptr;
  }
  if constexpr (keeps(part_arguments))
    Decoder::enter(ev, scratch, fields, args...);
  // A send's destination, a one-sided operation's target, where these sums were lent: its world
  // rank read straight from its group (the event's peer and communicator are not decoded), and
  // the message counted before the call, as it is whatever the call returns (peer_sums.hpp).
  if constexpr (Decoder::sends_to_peer && keeps(part_matrix)) {
    const chain_entry& sender = entry_of();
    if (sender.timed_pairs != nullptr) {
      const decode::rank_in_group peer = Decoder::peer_of(args...);
      add_to_peer(sender, peer.group, peer.rank,
                  non_negative(Decoder::peer_bytes_expected ? ev.bytes_expected : ev.bytes_sent));
    }
  }
  if constexpr (keeps(part_hang_note))
    note_call<F, Decoder::where_kept>(call_site, args...);
  const uint64_t enter = Clock::raw();
  R r = call_real(real_of(), args...);
  const uint64_t exit = Clock::raw();
  if constexpr (keeps(part_hang_note))
    note_return();
  set_result(ev, r);
  if constexpr (keeps(part_arguments))
    Decoder::template exit<true>(ev, scratch, fields, args...);
  const chain_entry& entry = entry_of();
  // The usual collective reads its communicator's figures after the call from the record the
  // enter decoder looked up (one pointer kept across the call, where the event's four fields
  // took four registers or stack slots), its size's bin computed with the record: the record
  // stays as it was through the call (no look-up on this thread while MPI runs, and the summed
  // calls are never made from several threads at once).
  constexpr bool group_after =
      fixed && Decoder::is_collective && Decoder::sets_comm && keeps(part_arguments);
  if constexpr (!keeps(part_sums)) {
    static_cast<void>(histograms);
  } else if constexpr (group_after) {
    // Set by the enter decoder, never null (set_comm_info): the usual fields read the
    // communicator.
    static_assert((Traits.fields & STRATA_FIELD_COMM) != 0);
    const decode::comm_info& group = *scratch.comm;
    strata_timed_slot& slot = *entry.timed_slot;
    add_timed_call<plain_adds>(slot,
                               {Clock::duration_ns(enter, exit), non_negative(ev.count),
                                non_negative(ev.bytes_sent), non_negative(ev.bytes_received),
                                non_negative(ev.bytes_expected), 0},
                               histograms & ~uint32_t{STRATA_TIMED_COMM_HISTOGRAM});
    if constexpr ((Traits.histograms & STRATA_TIMED_COMM_HISTOGRAM) != 0)
      ++slot.comm_hist[group.comm_bin];
    if (entry.timed_comms != nullptr) {
      strata_comm_sum& sum = entry.timed_comms[comm_sums_index(entry, group.id)];
      // The group beside the sums on their first call only: a communicator's id is its own
      // (never given to another), and the module keeps the group when it clears the sums.
      if (__builtin_expect(sum.calls == 0, 0))
        write_comm_group(sum, group);
      ++sum.calls;
      sum.bytes += non_negative(ev.bytes_sent);
    }
  } else {
    add_timed_call<plain_adds>(*entry.timed_slot,
                               {Clock::duration_ns(enter, exit), non_negative(ev.count),
                                non_negative(ev.bytes_sent), non_negative(ev.bytes_received),
                                non_negative(ev.bytes_expected),
                                static_cast<uint64_t>(ev.comm_size)},
                               histograms);
  }
  // A collective's communicator, the sums per communicator where they were lent (the test is
  // compiled into the collectives alone).
  if constexpr (Decoder::is_collective && Decoder::sets_comm && !group_after && keeps(part_sums)) {
    if (entry.timed_comms != nullptr) {
      strata_comm_sum& sum = entry.timed_comms[comm_sums_index(entry, ev.comm_id)];
      ++sum.calls;
      sum.bytes += non_negative(ev.bytes_sent);
      sum.world_ranks = ev.comm_world_ranks;
      sum.size = ev.comm_size;
      sum.flags = ev.flags;
    }
  }
  // A start's messages, which only the module that saw its requests made can name (its table,
  // else its callback): the test is compiled into MPI_Start and MPI_Startall alone.
  if constexpr (Decoder::starts_requests && keeps(part_matrix)) {
    if (entry.timed_started != nullptr) {
      if (r == MPI_SUCCESS)
        add_started(entry.timed_started, Decoder::started(args...));
    } else if (entry.timed_after_start != nullptr) {
      entry.timed_after_start(&ev, entry.state);
    }
  }
  // The latest exit moves on once a millisecond, not on every call (as the profile's threads
  // do: counting.hpp): the wall time of a rank that died may be short by that much.
  if (keeps(part_sums) && __builtin_expect(exit > entry.latest_exit_due, 0)) {
    *entry.latest_exit = Clock::time_ns(exit);
    entry.latest_exit_due = exit + Clock::raw_per_ms();
  }
  return r;
}

// The entry's summed calls found usual: marked, and where the entry is the application's first
// (not below a wrapper module) with nothing else on the entry point's way to it (a counter, a
// lean poll), handed to the assembly entry point (strata_usual_entries). Once per entry.
__attribute__((noinline, cold)) inline void mark_summed_usual(int function,
                                                              const chain_entry& entry) {
  __atomic_store_n(&entry.summed_usual, true, __ATOMIC_RELAXED);
  const chain* c = chains[function];
  if (c != nullptr && c->first_below[0] == &entry && c->direct_counter == nullptr &&
      c->untimed_poll_counter == nullptr)
    __atomic_store_n(&strata_usual_entries[function], &entry, __ATOMIC_RELAXED);
}

// The sum with the clock the core uses, tested once (a test at each reading took two more
// instructions, and scaling the entry's reading apart three more).
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R count_timed(const chain_entry& entry, const void* call_site,
                                                    R (*real)(P...), A... args) {
  constexpr summed_traits usual = usual_summed_traits<Decoder>();
  const auto entry_of = [&entry]() -> const chain_entry& { return entry; };
  const auto real_of = [real] { return real; };
  if (__builtin_expect(tsc_in_use() && entry.timed_fields == usual.fields &&
                           entry.timed_histograms == usual.histograms,
                       1)) {
    // Neither changes once the calls are summed (the clock is chosen in MPI_Init, the fields
    // when the stack loads): the assembly entry point takes strata_usual_X from now on. Stored
    // once, not on every call of the paths that still come here (the entry is every thread's).
    if (!__atomic_load_n(&entry.summed_usual, __ATOMIC_RELAXED))
      mark_summed_usual(F, entry);
    return count_timed_body<F, Decoder, tsc_readings, usual>(entry_of, call_site, real_of, args...);
  }
  if (tsc_in_use())
    return count_timed_body<F, Decoder, tsc_readings>(entry_of, call_site, real_of, args...);
  return count_timed_body<F, Decoder, monotonic_readings>(entry_of, call_site, real_of, args...);
}

// A summed call notes its return address as its call site: these functions are entered by
// jumps from the entry point, so it is the application's, except after dispatch_marked, which
// leaves the site it found in strata_where::marked_site for the reader (the usual call tests no
// mark here).
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R count_timed_call(const chain_entry& entry, R (*real)(P...), A... args) {
  return count_timed<F, Decoder>(entry, __builtin_return_address(0), real, args...);
}
// The generated strata_summed_X (Decoder::summed_in_place), as sole_exit_in_place is
// strata_timed_X: entered with the entry in thread_state::timed_entry.
// Where the assembly entry point has strata_usual_X (Decoder::usual_in_place), the usual call of
// the entry it serves (strata_usual_entries) jumps there with the same arguments (only its first
// call comes here: the entry point then takes it) rather than have a copy of its body here too:
// each copy of a summed call's body, its decoders inlined, is about a tenth of the entry points'
// compile time. A usual entry that strata_usual_X does not serve (below a wrapper module, behind
// a counter) takes the general copy.
template <typename Decoder>
concept has_usual_in_place = requires {
  Decoder::usual_in_place;
};
template <int F, typename Decoder, typename... A>
__attribute__((always_inline)) inline auto count_timed_in_place(A... args) {
  const chain_entry& entry = *tls.timed_entry;
  if constexpr (has_usual_in_place<Decoder>) {
    constexpr summed_traits usual = usual_summed_traits<Decoder>();
    if (__builtin_expect(tsc_in_use() && entry.timed_fields == usual.fields &&
                             entry.timed_histograms == usual.histograms,
                         1)) {
      if (!__atomic_load_n(&entry.summed_usual, __ATOMIC_RELAXED))
        mark_summed_usual(F, entry);
      if (__atomic_load_n(&strata_usual_entries[F], __ATOMIC_RELAXED) == &entry)
        return Decoder::usual_in_place(args...);
    }
    const auto entry_of = [&entry]() -> const chain_entry& { return entry; };
    const auto real_of = [] { return Decoder::real_function(); };
    if (tsc_in_use())
      return count_timed_body<F, Decoder, tsc_readings>(entry_of, __builtin_return_address(0),
                                                        real_of, args...);
    return count_timed_body<F, Decoder, monotonic_readings>(entry_of, __builtin_return_address(0),
                                                            real_of, args...);
  } else {
    return count_timed<F, Decoder>(entry, __builtin_return_address(0), Decoder::real_function(),
                                   args...);
  }
}

// The generated strata_usual_X: the same where the entry is known to be usual
// (strata_usual_entries, which the assembly entry point tests), with no test of its own.
template <int F, typename Decoder, typename... A>
__attribute__((always_inline)) inline auto count_usual_in_place(A... args) {
  return count_timed_body<F, Decoder, tsc_readings, usual_summed_traits<Decoder>()>(
      []() -> const chain_entry& {
        return *__atomic_load_n(&strata_usual_entries[F], __ATOMIC_RELAXED);
      },
      __builtin_return_address(0), [] { return Decoder::real_function(); }, args...);
}

} // namespace strata::core
