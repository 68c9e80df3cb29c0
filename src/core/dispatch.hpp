// The call path: how a call walks its function's chain (the chains and each thread's place in
// the stack are chains.hpp).
//
// Every generated entry point (MPI_X, its PMPI_X alias that catches Open MPI's Fortran bindings
// and code calling PMPI directly, and the ZMPI_X alias that wrapper modules call for "next")
// does the same thing: no chain -> the real PMPI_X; otherwise dispatch<>() below. Where a call
// enters the chain depends on who makes it: the application starts at the top, a module starts
// below itself (thread_state::layer), and MPI calling its own exported functions passes through.
#pragma once

#include "core/chains.hpp"
#include "core/clock.hpp"
#include "core/decode.hpp"
#include "core/event_parts.hpp"
#include "core/summed_call.hpp"
#include "python_sites/capture.hpp"
#include "strata_functions.hpp"
#include <strata/module.h>
#include <strata/where.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata::core {

template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_events(const chain* c, int pos, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_sole_exit(const chain_entry& entry, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... P, typename... A>
R enter_sole_exit(const chain_entry& entry, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_at(const chain* c, int pos, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... A>
R deliver_untimed_poll(const chain* c, int pos, R r, decode::scratch& scratch, bool substituted,
                       A... args);

// Sampled polls: true when this poll is to be timed. The gaps are uniform in [1, 2 * interval - 1]
// (mean `interval`), from a per-thread xorshift, so no periodic pattern of the program aliases.
// polls_until_timed counts down to the timed poll: one decrement and a branch on zero, which the
// entry point's counted path repeats (counts_here); a thread starts at 1 (its first poll timed).
inline bool time_this_poll(thread_state& ts, uint32_t interval) {
  if (__builtin_expect(--ts.polls_until_timed != 0, 1))
    return false;
  uint32_t x = ts.poll_random != 0
                   ? ts.poll_random
                   : 0x9E3779B9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&ts));
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  ts.poll_random = x;
  ts.polls_until_timed = 1 + x % (2 * interval - 1);
  return true;
}

// One count per module of the group [pos, end) (counting instead of events).
inline void count_group(const chain_entry* entries, int pos, int end) {
  const bool atomic = entries[pos].atomic_counts;
  for (int i = pos; i < end; ++i) {
    if (__builtin_expect(atomic, 0))
      __atomic_fetch_add(entries[i].counter, 1, __ATOMIC_RELAXED);
    else
      ++*entries[i].counter;
  }
}

// The rest of the chain from `pos`: the real function when nothing is left (the usual case for
// a counting group, the last layer), else an out-of-line step (invoke cannot inline itself).
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R invoke_below(const chain* c, int pos, R (*real)(P...),
                                                     A... args) {
  if (__builtin_expect(pos >= c->size, 1))
    return call_real(real, args...);
  return invoke_at<F, Decoder>(c, pos, real, args...);
}

// One step down the chain. Arguments travel by value and this step is inlined into the entry
// point's out-of-line path, so a wrapper layer costs a few instructions and no stack frame of
// its own; the event path, with its decoded event on the stack, is out of line.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R invoke_entry(const chain* c, const chain_entry& entry,
                                                     int pos, R (*real)(P...), A... args) {
  thread_state& ts = tls;
  if (entry.wrapper == nullptr) {
    // Counting instead of events: one add per module and the next layer, no event at all.
    if (__builtin_expect(entry.count_mode == count_calls, 0)) {
      if (__builtin_expect(entry.count_direct, 1)) {
        ++*entry.counter;
        return call_real(real, args...);
      }
      const int end = entry.group_end;
      count_group(c->entries, pos, end);
      return invoke_below<F, Decoder>(c, end, real, args...);
    }
    if constexpr (Decoder::is_poll) {
      // Counted without a look at what it completed: one add per module and the call.
      if (entry.count_mode == count_untimed_polls && !time_this_poll(ts, entry.poll_interval)) {
        const int end = entry.group_end;
        count_group(c->entries, pos, end);
        return invoke_below<F, Decoder>(c, end, real, args...);
      }
      // An untimed poll: the status substituted only when the application ignores it (so that
      // the bytes of a completed receive can be read), the call, one test of its flag; most
      // polls complete nothing and are only counted.
      if (entry.count_mode == count_empty_polls && !time_this_poll(ts, entry.poll_interval)) {
        const int end = entry.group_end;
        decode::scratch scratch;
        const bool substituted = Decoder::prepare_untimed(scratch, args...);
        R r = invoke_below<F, Decoder>(c, end, real, args...);
        if (__builtin_expect(!Decoder::completed(args...), 1)) {
          if (__builtin_expect(entry.count_direct, 1))
            ++*entry.counter;
          else
            count_group(c->entries, pos, end);
          return r;
        }
        return deliver_untimed_poll<F, Decoder>(c, pos, r, scratch, substituted, args...);
      }
      // Timed: every poll (no interval), or a counting group has just decided so.
      if (entry.sole_exit && (entry.poll_interval == 0 || entry.count_mode != count_none))
        return invoke_sole_exit<F, Decoder>(entry, real, args...);
    }
    return invoke_events<F, Decoder>(c, pos, real, args...);
  }
  const int saved_layer = ts.layer;
  ts.layer = entry.layer;
  R r = reinterpret_cast<R (*)(P...)>(entry.wrapper)(args...);
  ts.layer = saved_layer;
  return r;
}

// The chain from entry `pos` on.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R invoke(const chain* c, int pos, R (*real)(P...),
                                               A... args) {
  if (pos >= c->size)
    return call_real(real, args...);
  return invoke_entry<F, Decoder>(c, c->entries[pos], pos, real, args...);
}

// invoke_from's calls that keep something across a call: the real function, a wrapper layer,
// counting. Out of line, so that the usual timed call leaves wrapped_X by a jump into
// invoke_events and wrapped_X needs no frame (its saved registers were 6 instructions a call).
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R invoke_framed(const chain* c, const chain_entry* entry, R (*real)(P...),
                                          A... args) {
  if (entry == nullptr)
    return call_real(real, args...);
  return invoke_entry<F, Decoder>(c, *entry, entry->index, real, args...);
}

// A poll's paths other than the usual timed call, out of line with its own arguments (they
// and the chain, the entry and the real function would not all fit in registers): the chain
// and the entry are read again, so that wrapped_X leaves by a jump without a frame, where the
// untimed paths inline made it save six registers and keep the arguments on every timed poll.
template <int F, typename Decoder, typename... A>
__attribute__((noinline)) auto invoke_poll_framed(A... args) {
  const chain* c = chains[F];
  const chain_entry* entry = c->first_below[tls.layer + 1];
  if (entry == nullptr)
    return call_real(Decoder::real_function(), args...);
  return invoke_entry<F, Decoder>(c, *entry, entry->index, Decoder::real_function(), args...);
}

// A call made from `layer` (-1: the application's), from the first entry below it on.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R invoke_from(const chain* c, int layer, R (*real)(P...),
                                                    A... args) {
  const chain_entry* entry = c->first_below[layer + 1];
  if (__builtin_expect(entry != nullptr && entry->sole_exit_every_call, 1))
    return enter_sole_exit<F, Decoder>(*entry, real, args...);
  if constexpr (Decoder::is_poll) {
    return invoke_poll_framed<F, Decoder>(args...);
  } else {
    if (__builtin_expect(
            entry != nullptr && entry->wrapper == nullptr && entry->count_mode != count_calls, 1))
      return invoke_events<F, Decoder>(c, entry->index, real, args...);
    return invoke_framed<F, Decoder>(c, entry, real, args...);
  }
}

template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R invoke_at(const chain* c, int pos, R (*real)(P...), A... args) {
  return invoke<F, Decoder>(c, pos, real, args...);
}

// An untimed poll after the call, for the group's untimed callbacks: decoded when it completed
// something (most complete nothing), else only function, call site and result.
// The status the call wrote, the application's or the caller's stand-in, is in the arguments;
// what the bytes received need from before the call, in `scratch` (Decoder::prepare_untimed).
template <int F, typename Decoder, typename R, typename... A>
__attribute__((noinline)) R deliver_untimed_poll(const chain* c, int pos, R r,
                                                 decode::scratch& scratch, bool substituted,
                                                 A... args) {
  thread_state& ts = tls;
  const chain_entry* entries = c->entries;
  const int saved_layer = ts.layer;
  const int end = entries[pos].group_end;
  const uint32_t fields = entries[pos].fields;
  strata_event ev;
  start_event(ev, F, ts, fields);
  ev.t_enter_ns = 0;
  if (substituted && (fields & STRATA_FIELD_RECEIVED) != 0)
    ev.flags |= STRATA_EVENT_STATUS_FROM_CORE;
  set_result(ev, r);
  if (Decoder::completed(args...)) {
    // The requests' handles are gone by now: what the bytes received need of them was taken
    // before the call.
    Decoder::enter(ev, scratch, fields & ~STRATA_FIELD_RECEIVED, args...);
    Decoder::exit(ev, scratch, fields, args...);
  }
  for (int i = end - 1; i >= pos; --i) {
    ts.layer = entries[i].calls_layer;
    entries[i].untimed_poll(&ev, entries[i].state);
  }
  ts.layer = saved_layer;
  return r;
}

// An untimed poll of a group that does not count (a module without counters): no clocks and no
// enter callbacks; every poll reaches the untimed callbacks.
template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_untimed_poll(const chain* c, int pos, R (*real)(P...), A... args) {
  decode::scratch scratch;
  const bool substituted = Decoder::prepare_untimed(scratch, args...);
  R r = invoke<F, Decoder>(c, c->entries[pos].group_end, real, args...);
  return deliver_untimed_poll<F, Decoder>(c, pos, r, scratch, substituted, args...);
}

// The usual timed call (chain_entry::sole_exit): one module, its exit callback, the real
// function. Fewer registers live across the calls than in invoke_events, so a smaller frame.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R sole_exit_call(const chain_entry& entry, R (*real)(P...),
                                                       A... args) {
  thread_state& ts = tls;
  const uint32_t fields = entry.fields;
  strata_event ev;
  decode::scratch scratch;
  begin_event<F, Decoder, true>(ev, scratch, ts, fields, args...);
  note_call<F, Decoder::where_kept>(ts.call_site, args...);
  R r = call_real(real, args...);
  note_return();
  end_event<Decoder, true>(ev, scratch, fields, r, args...);
  const int saved_layer = ts.layer;
  ts.layer = entry.calls_layer;
  entry.exit(&ev, entry.state);
  ts.layer = saved_layer;
  return r;
}

template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R invoke_sole_exit(const chain_entry& entry, R (*real)(P...), A... args) {
  return sole_exit_call<F, Decoder>(entry, real, args...);
}

// The same for a function whose arguments with the entry and the real function would not all
// fit in registers (the Sendrecv's twelve): the parameters of wrapped_X, which enters it by a
// jump that moves no argument, where passing two more made wrapped_X copy its stack arguments
// in a frame of its own (about 50 instructions a call). The real function is read again here;
// the entry is where wrapped_X (enter_sole_exit below), or the entry point in assembly of a
// function with arguments on the stack (generate.py), left it just before the jump:
// thread_state::timed_entry, one load where finding it again from the chain took four
// dependent ones. The generated strata_timed_X (Decoder::timed_in_place) is this, out of line.
inline constexpr size_t register_arguments = 6; // the x86-64 System V ABI's integer registers
template <int F, typename Decoder, typename... A>
__attribute__((always_inline)) inline auto sole_exit_in_place(A... args) {
  return sole_exit_call<F, Decoder>(*tls.timed_entry, Decoder::real_function(), args...);
}

// invoke_from's jump into the usual timed call.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R enter_sole_exit(const chain_entry& entry, R (*real)(P...),
                                                        A... args) {
  if constexpr (has_usual_in_place<Decoder> || sizeof...(A) + 2 > register_arguments) {
    // The functions the assembly entry point jumps to, as it does (write_asm_entry): no copies
    // of their bodies inlined here.
    tls.timed_entry = &entry;
    if (entry.timed_slot != nullptr) {
      if constexpr (has_usual_in_place<Decoder>) {
        if (__atomic_load_n(&strata_usual_entries[F], __ATOMIC_RELAXED) == &entry)
          return Decoder::usual_in_place(args...);
      }
      return Decoder::summed_in_place(args...);
    }
    return Decoder::timed_in_place(args...);
  } else {
    if (entry.timed_slot != nullptr)
      return count_timed_call<F, Decoder>(entry, real, args...);
    return invoke_sole_exit<F, Decoder>(entry, real, args...);
  }
}

// A group of adjacent event modules: one decoded event, one clock pair, enter callbacks in
// stack order, the rest of the chain, exit callbacks in reverse order.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R invoke_events(const chain* c, int pos, R (*real)(P...), A... args) {
  thread_state& ts = tls;
  const chain_entry* entries = c->entries;
  if constexpr (Decoder::is_poll) {
    // A counting group has already decided (in invoke) that this poll is timed.
    const uint32_t interval = entries[pos].poll_interval;
    if (interval != 0 && entries[pos].count_mode != count_empty_polls &&
        entries[pos].count_mode != count_untimed_polls && !time_this_poll(ts, interval))
      return invoke_untimed_poll<F, Decoder>(c, pos, real, args...);
  }
  const int saved_layer = ts.layer;
  const int end = entries[pos].group_end;
  const uint32_t fields = entries[pos].fields;
  strata_event ev;
  decode::scratch scratch;
  begin_event<F, Decoder>(ev, scratch, ts, fields, args...);
  // A group of one module (the usual one) calls its callbacks without a loop around them.
  const bool one_module = end == pos + 1;
  if (entries[pos].any_enter) {
    if (one_module) {
      ts.layer = entries[pos].calls_layer;
      entries[pos].enter(&ev, entries[pos].state);
    } else {
      for (int i = pos; i < end; ++i) {
        if (entries[i].enter != nullptr) {
          ts.layer = entries[i].calls_layer;
          entries[i].enter(&ev, entries[i].state);
        }
      }
    }
    ts.layer = saved_layer;
  }
  // Noted for the hang state as the sole module's call is (sole_exit_call): a stack of several
  // event modules (the profile beside the monitor or the trace) keeps it too.
  note_call<F, Decoder::where_kept>(ts.call_site, args...);
  R r = invoke<F, Decoder>(c, end, real, args...);
  note_return();
  end_event<Decoder, true>(ev, scratch, fields, r, args...);
  if (__builtin_expect(one_module, 1)) {
    if (entries[pos].exit != nullptr) {
      ts.layer = entries[pos].calls_layer;
      entries[pos].exit(&ev, entries[pos].state);
    }
  } else {
    for (int i = end - 1; i >= pos; --i) {
      if (entries[i].exit != nullptr) {
        ts.layer = entries[i].calls_layer;
        entries[i].exit(&ev, entries[i].state);
      }
    }
  }
  ts.layer = saved_layer;
  return r;
}

// The application's call while a mark is set (any_call_mark()): its call site from a Fortran
// binding's note, its communicators as the replaced world names them. Out of line, so that the
// usual call pays one compare for all of them.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline, cold)) R dispatch_marked(const chain* c, const void* return_address,
                                                  R (*real)(P...), A... args) {
  thread_state& ts = tls;
  ts.call_site = return_address;
  if (__builtin_expect(ts.fortran_fid >= 0, 0)) {
    // A Fortran call in progress. The call its binding makes for the program takes the
    // program's line as its site; the binding's other calls before it (a communicator's size
    // for an array's length) are the library's own, and pass straight to MPI.
    if (ts.fortran_fid == Decoder::fortran_fid) {
      ts.call_site = ts.fortran_site;
      ts.fortran_fid = -1;
    } else if (called_from_mpi_library(return_address)) {
      return call_real(real, args...);
    } else {
      ts.fortran_fid = -1; // a note no call took (a binding that calls no C function)
    }
  }
  if constexpr (Decoder::has_comm) {
    if (world_replaced())
      Decoder::remap_comms(world_replacement, args...);
  }
  // The site for a reader of strata_where, should the call be summed (which notes its own
  // return address, here inside libstrata): the number the call's seq will have.
  ts.where.marked_site = ts.call_site;
  ts.where.marked_seq = ts.where.seq + 1;
  return invoke_from<F, Decoder>(c, -1, real, args...);
}

template <int F, typename Decoder, typename... A>
__attribute__((noinline, cold)) auto first_call_of_thread(A... args)
    -> decltype(Decoder::real_function()(args...));

template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R dispatch(const chain* c, const void* return_address,
                                                 R (*real)(P...), A... args) {
  thread_state& ts = tls;
  if (__builtin_expect(ts.in_real != 0, 0)) {
    if (__builtin_expect(ts.in_real != thread_unlisted, 1))
      return real(args...); // MPI's own call
    // The thread's first call to a chain: out of line with the call's own arguments (a jump
    // that moves none, where passing the chain and the site as well made some entry points
    // keep a frame), its site where a reader of the record finds a marked call's.
    ts.where.marked_site = return_address;
    return first_call_of_thread<F, Decoder>(args...);
  }
  const int layer = ts.layer;
  if (layer < 0) {
    if (__builtin_expect(any_call_mark(), 0))
      return dispatch_marked<F, Decoder>(c, return_address, real, args...);
    ts.call_site = return_address;
  } else if constexpr (Decoder::has_comm) {
    // A module's call: patched PMPI tools and modules that use MPI_COMM_WORLD for their own
    // traffic reach the application's processes only, not the tool ranks.
    if (__builtin_expect(world_replaced(), false) && layer != world_replacing_layer)
      Decoder::remap_comms(modules_world, args...);
  }
  return invoke_from<F, Decoder>(c, layer, real, args...);
}

// A thread's first call that reaches a chain (thread_unlisted, chains.hpp). The application's:
// the thread is listed, and the call goes on as any other. Its site, which dispatch<>() left in
// strata_where::marked_site, is marked for the reader while the call is the record's latest, as
// dispatch_marked<>() does: a call summed from this frame notes a return address in libstrata.
// A module's call on a thread the application has not called from yet (the mpi_ready callbacks
// on the thread in MPI_Init, a module's own thread) goes on with the thread still unlisted: no
// module's own thread is described as the application's.
template <int F, typename Decoder, typename... A>
__attribute__((noinline, cold)) auto first_call_of_thread(A... args)
    -> decltype(Decoder::real_function()(args...)) {
  thread_state& ts = tls;
  const chain* c = chains[F];
  const bool application = ts.layer < 0;
  if (application)
    list_this_thread();
  if (c == nullptr) // the chains are gone (after the last finalize)
    return Decoder::real_function()(args...);
  const void* site = ts.where.marked_site;
  const uint64_t seq = ts.where.seq;
  if (application)
    ts.where.marked_seq = seq + 1;
  else
    ts.in_real = 0;
  // One copy of the call path for both (it is most of this function's code).
  auto r = dispatch<F, Decoder>(c, site, Decoder::real_function(), args...);
  if (!application)
    ts.in_real = thread_unlisted;
  else if (ts.where.seq == seq)
    ts.where.marked_seq = 0; // not timed: the next timed call has its own site
  return r;
}

// The entry point's own path for a chain that only counts (chain::direct_counter). MPI_X
// tests direct_counter and jumps (a tail call, same arguments) to the generated counted_MPI_X,
// which is counted<>() below: a function of its own, so that MPI_X's other paths keep having no
// frame, and entered by a jump, so that its return address is the application's. What
// counts_here() refuses (a call from a module or from MPI itself, a poll due for timing) goes
// on to wrapped_X and dispatch<>() as any other call.

// The application's call with MPI not running: layer -1 and in_real 0, compared as one 64-bit
// word (one instruction, where two loads, an add and an or tested them apart).
inline bool application_call(const thread_state& ts) {
  static_assert(offsetof(thread_state, in_real) == offsetof(thread_state, layer) + sizeof(int));
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "layer is the low half");
  uint64_t both = 0;
  std::memcpy(&both, &ts.layer, sizeof both);
  return both == uint64_t{0xFFFFFFFFu};
}

// Whether counted_MPI_X counts this call itself. For a poll this is also the sampling
// countdown, one decrement and a branch; the poll that takes it to zero is due for timing: the
// decrement is undone and dispatch<>() takes the poll, whose time_this_poll decrements again,
// times it and draws the next gap.
template <typename Decoder> __attribute__((always_inline)) inline bool counts_here() {
  thread_state& ts = tls;
  if (__builtin_expect(!application_call(ts), 0))
    return false;
  if constexpr (Decoder::is_poll) {
    if (__builtin_expect(--ts.polls_until_timed == 0, 0)) {
      ts.polls_until_timed = 1;
      return false;
    }
  }
  return true;
}

// The entry point's path for a poll of a chain::untimed_poll_counter chain, inlined into MPI_X
// (written in assembly where the entry point is: asm_entries.py, lean_poll):
// true when this poll was counted and MPI_X is to jump straight to MPI (a tail call with its own
// arguments, nothing done after it). No frame, no call of our own and no look at the flag: in
// a loop whose polls alternate with cache misses (HPCC's RandomAccess) any of those made the
// next miss wait for the last one in most runs (docs/PERFORMANCE.md, "Lean polls"), the few
// instructions here in a quarter to a half. False for a call from a module or from MPI itself
// and for the poll due for timing (the countdown reset as counts_here() does); those go to
// wrapped_X. No in_real bracket: MPI's Test, Testany and Iprobe call none of the library's
// exported functions (a generalized request's callbacks may, and they are the application's).
__attribute__((always_inline)) inline bool lean_poll(uint64_t* counter) {
  thread_state& ts = tls;
  if (__builtin_expect(!application_call(ts), 0))
    return false;
  if (__builtin_expect(--ts.polls_until_timed == 0, 0)) {
    ts.polls_until_timed = 1;
    return false;
  }
  ++*counter;
  return true;
}

// What an untimed poll keeps across the real call, in memory: the arguments as passed to MPI
// (the status perhaps the stand-in's address) for the out-of-line path of a poll that
// completed something, and the stand-in. Kept in the frame rather than in saved registers: a
// store each before the call, and after it only the flag is read back.
template <typename... A> struct poll_frame {
  decode::scratch stand_in; // the status, and what the bytes received need from before the call
  std::tuple<A...> args;
};

// A counted poll that completed something: decoded for the group's untimed callbacks, as
// dispatch<>() would have done. Re-reads the arguments from the caller's frame.
template <int F, typename Decoder, typename R, typename... A>
__attribute__((noinline, cold)) R counted_poll_completed(const void* return_address, R r,
                                                         poll_frame<A...>& frame) {
  tls.call_site = return_address;
  const bool substituted = std::apply(
      [&](A&... args) { return Decoder::status_is(frame.stand_in, args...); }, frame.args);
  return std::apply(
      [&](A... args) {
        return deliver_untimed_poll<F, Decoder>(chains[F], 0, r, frame.stand_in, substituted,
                                                args...);
      },
      frame.args);
}

// counted_MPI_X: counts the call and calls MPI, or hands it to wrapped_X when counts_here()
// refuses it. A poll adds one only when it completed nothing; the chain and its counter are
// read again after the call rather than kept, and a poll that completed something goes out of
// line for its untimed callbacks.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R counted(R (*real)(P...), R (*wrapped)(P...), A... args) {
  if (__builtin_expect(!counts_here<Decoder>(), 0))
    return wrapped(args...); // a jump: wrapped_X takes the application's return address
  if constexpr (Decoder::is_poll) {
    poll_frame<A...> frame;
    Decoder::prepare_untimed(frame.stand_in, args...);
    frame.args = std::tuple<A...>(args...);
    R r = call_real(real, args...);
    if (__builtin_expect(
            !std::apply([](A&... kept) { return Decoder::completed(kept...); }, frame.args), 1)) {
      ++*chains[F]->direct_counter;
      return r;
    }
    // Out of line with the application's return address (counted_MPI_X is entered by a jump)
    // and the frame's address, both computed here rather than kept across the call: the asm
    // hides that the address is the one given for the stand-in before the call, which GCC
    // would otherwise keep in a saved register (two more instructions on every poll).
    poll_frame<A...>* saved = nullptr;
    asm("lea %1, %0" : "=r"(saved) : "m"(frame));
    return counted_poll_completed<F, Decoder>(__builtin_return_address(0), r, *saved);
  } else {
    ++*chains[F]->direct_counter;
    return call_real(real, args...);
  }
}

} // namespace strata::core
