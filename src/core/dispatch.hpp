// The call path: per-function chains built once in MPI_Init and read-only afterwards.
//
// Every generated entry point (MPI_X, its PMPI_X alias that catches Open MPI's Fortran bindings
// and code calling PMPI directly, and the ZMPI_X alias that wrapper modules call for "next")
// does the same thing: no chain -> the real PMPI_X; otherwise dispatch<>() below. Where a call
// enters the chain depends on who makes it: the application starts at the top, a module starts
// below itself (thread_state::layer), and MPI calling its own exported functions passes through.
#pragma once

#include "core/clock.hpp"
#include "core/decode.hpp"
#include "strata_functions.hpp"
#include <strata/module.h>

#include <cstdint>
#include <type_traits>

#define STRATA_EXPORT __attribute__((visibility("default")))
#define STRATA_HIDDEN __attribute__((visibility("hidden")))

namespace strata::core {

// One layer's part in one function's chain: either a wrapper module's MPI_X or an event module's
// callbacks. Adjacent event entries form a group that shares one decoded event and one clock pair.
struct chain_entry {
  void* wrapper = nullptr; // the module's own MPI_X, called with the original arguments
  strata_event_fn enter = nullptr;
  strata_event_fn exit = nullptr;
  void* state = nullptr;
  int layer = 0;     // the module's position in the stack
  int group_end = 0; // event entries: index of the first entry after this group
  // First entry of an event group whose modules all accept sampled polls: time one poll in
  // about this many (0: every one); the others go to each entry's untimed_poll.
  uint32_t poll_interval = 0;
  strata_event_fn untimed_poll = nullptr;
  // Counting without events (module.h, strata_module_counter_v1), set at the end of MPI_Init.
  // On the first entry of a group, what the group does instead of events (every entry of the
  // group then has a counter): count every call, or count the untimed polls that complete
  // nothing. Each entry's counter is its module's, for this function.
  uint8_t count_mode = 0;
  bool atomic_counts = false; // MPI_THREAD_MULTIPLE: relaxed atomic adds
  // The usual case, taken with the fewest instructions: one module in the group, plain adds,
  // and nothing below it but the real function.
  bool count_direct = false;
  uint64_t* counter = nullptr;
};

enum : uint8_t { count_none = 0, count_calls = 1, count_empty_polls = 2 };

struct chain {
  int size = 0;
  const chain_entry* entries = nullptr;
  // start_after[layer + 1]: index of the first entry below `layer` (layer -1 = the application).
  const uint16_t* start_after = nullptr;
  // The whole chain is one counting module with a plain counter (entries[0].count_direct) and
  // the application's world is its own: the entry point counts without going through
  // wrapped_X (counted<>() below). Set at the end of MPI_Init, with entries[0].count_mode.
  uint64_t* direct_counter = nullptr;
};

// Per-thread position in the stack. POD with __thread (no C++ TLS wrapper call) and the
// initial-exec model: one %fs-relative load on the wrapped path.
struct thread_state {
  int layer;   // -1 outside modules: the application's calls start at the top
  int in_real; // >0 while the real MPI runs: its own calls to exported MPI_/PMPI_ pass through
  const void* call_site;
  uint32_t polls_until_timed; // sampled polls: untimed ones left before the next timed one
  uint32_t poll_random;       // xorshift state for the gaps between timed polls
};
extern __thread thread_state tls __attribute__((tls_model("initial-exec")));

extern const chain* chains[gen::function_count] STRATA_HIDDEN;

// Set by strata_host::replace_world: the application's MPI_COMM_WORLD is this communicator.
extern bool world_replaced STRATA_HIDDEN;
extern MPI_Comm world_replacement STRATA_HIDDEN;
inline MPI_Comm remap_comm(MPI_Comm comm) {
  return comm == MPI_COMM_WORLD ? world_replacement : comm;
}

void load_modules_once();
void after_init();
void before_finalize();
void after_finalize();
void* find_real(const char* name);

template <typename R> inline void set_result(strata_event& ev, const R& r) {
  if constexpr (std::is_same_v<R, int>)
    ev.result = r;
}

template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_events(const chain* c, int pos, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_at(const chain* c, int pos, R (*real)(P...), A... args);
template <int F, typename Decoder, typename R, typename... A>
R deliver_untimed_poll(const chain* c, int pos, R r, bool substituted, A... args);

// Sampled polls: true when this poll is to be timed. The gaps are uniform in [1, 2 * interval - 1]
// (mean `interval`), from a per-thread xorshift, so no periodic pattern of the program aliases.
inline bool time_this_poll(thread_state& ts, uint32_t interval) {
  if (__builtin_expect(ts.polls_until_timed > 1, 1)) {
    --ts.polls_until_timed;
    return false;
  }
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
  if (__builtin_expect(pos >= c->size, 1)) {
    thread_state& ts = tls;
    ++ts.in_real;
    R r = real(args...);
    --ts.in_real;
    return r;
  }
  return invoke_at<F, Decoder>(c, pos, real, args...);
}

// One step down the chain. Arguments travel by value and this step is inlined into the entry
// point's out-of-line path, so a wrapper layer costs a few instructions and no stack frame of
// its own; the event path, with its decoded event on the stack, is out of line.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R invoke(const chain* c, int pos, R (*real)(P...),
                                               A... args) {
  thread_state& ts = tls;
  if (pos >= c->size) {
    ++ts.in_real;
    R r = real(args...);
    --ts.in_real;
    return r;
  }
  const chain_entry& entry = c->entries[pos];
  if (entry.wrapper == nullptr) {
    // Counting instead of events: one add per module and the next layer, no event at all.
    if (__builtin_expect(entry.count_mode == count_calls, 0)) {
      if (__builtin_expect(entry.count_direct, 1)) {
        ++*entry.counter;
        ++ts.in_real;
        R r = real(args...);
        --ts.in_real;
        return r;
      }
      const int end = entry.group_end;
      count_group(c->entries, pos, end);
      return invoke_below<F, Decoder>(c, end, real, args...);
    }
    if constexpr (Decoder::is_poll) {
      // An untimed poll: the status substituted only when the application ignores it (so that
      // the bytes of a completed receive can be read), the call, one test of its flag; most
      // polls complete nothing and are only counted.
      if (entry.count_mode == count_empty_polls && !time_this_poll(ts, entry.poll_interval)) {
        const int end = entry.group_end;
        MPI_Status status_space;
        const bool substituted = Decoder::substitute_ignored_status(status_space, args...);
        R r = invoke_below<F, Decoder>(c, end, real, args...);
        if (__builtin_expect(!Decoder::completed(args...), 1)) {
          if (__builtin_expect(entry.count_direct, 1))
            ++*entry.counter;
          else
            count_group(c->entries, pos, end);
          return r;
        }
        return deliver_untimed_poll<F, Decoder>(c, pos, r, substituted, args...);
      }
    }
    return invoke_events<F, Decoder>(c, pos, real, args...);
  }
  const int saved_layer = ts.layer;
  ts.layer = entry.layer;
  R r = reinterpret_cast<R (*)(P...)>(entry.wrapper)(args...);
  ts.layer = saved_layer;
  return r;
}

// An event before decoding: every field that means "none" set so (zero is a valid rank or tag).
inline strata_event new_event(int function, const thread_state& ts) {
  strata_event ev{};
  ev.function = function;
  ev.peer = STRATA_NO_RANK;
  ev.source = STRATA_NO_RANK;
  ev.root = STRATA_NO_RANK;
  ev.tag = STRATA_NO_TAG;
  ev.bytes_received = -1;
  ev.comm_rank = -1;
  ev.status_source = STRATA_NO_RANK;
  ev.status_tag = STRATA_NO_TAG;
  ev.call_site = ts.call_site;
  return ev;
}

template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R invoke_at(const chain* c, int pos, R (*real)(P...), A... args) {
  return invoke<F, Decoder>(c, pos, real, args...);
}

// An untimed poll after the call, for the group's untimed callbacks: decoded when it completed
// something (most complete nothing), else only function, call site and result.
// The status the call wrote, the application's or the caller's stand-in, is in the arguments.
template <int F, typename Decoder, typename R, typename... A>
__attribute__((noinline)) R deliver_untimed_poll(const chain* c, int pos, R r, bool substituted,
                                                 A... args) {
  thread_state& ts = tls;
  decode::scratch scratch;
  const chain_entry* entries = c->entries;
  const int saved_layer = ts.layer;
  const int end = entries[pos].group_end;
  strata_event ev = new_event(F, ts);
  if (substituted)
    ev.flags |= STRATA_EVENT_STATUS_FROM_CORE;
  set_result(ev, r);
  if (Decoder::completed(args...)) {
    Decoder::enter(ev, scratch, args...);
    Decoder::exit(ev, scratch, args...);
  }
  for (int i = end - 1; i >= pos; --i) {
    ts.layer = entries[i].layer;
    entries[i].untimed_poll(&ev, entries[i].state);
  }
  ts.layer = saved_layer;
  return r;
}

// An untimed poll of a group that does not count (a module without counters): no clocks and no
// enter callbacks; every poll reaches the untimed callbacks.
template <int F, typename Decoder, typename R, typename... P, typename... A>
R invoke_untimed_poll(const chain* c, int pos, R (*real)(P...), A... args) {
  MPI_Status status_space;
  const bool substituted = Decoder::substitute_ignored_status(status_space, args...);
  R r = invoke<F, Decoder>(c, c->entries[pos].group_end, real, args...);
  return deliver_untimed_poll<F, Decoder>(c, pos, r, substituted, args...);
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
        !time_this_poll(ts, interval))
      return invoke_untimed_poll<F, Decoder>(c, pos, real, args...);
  }
  const int saved_layer = ts.layer;
  const int end = entries[pos].group_end;
  strata_event ev = new_event(F, ts);
  decode::scratch scratch;
  Decoder::enter(ev, scratch, args...);
  ev.t_enter_ns = now_ns();
  for (int i = pos; i < end; ++i) {
    if (entries[i].enter != nullptr) {
      ts.layer = entries[i].layer;
      entries[i].enter(&ev, entries[i].state);
    }
  }
  ts.layer = saved_layer;
  R r = invoke<F, Decoder>(c, end, real, args...);
  ev.t_exit_ns = now_ns();
  set_result(ev, r);
  Decoder::exit(ev, scratch, args...);
  for (int i = end - 1; i >= pos; --i) {
    if (entries[i].exit != nullptr) {
      ts.layer = entries[i].layer;
      entries[i].exit(&ev, entries[i].state);
    }
  }
  ts.layer = saved_layer;
  return r;
}

template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R dispatch(const chain* c, const void* return_address,
                                                 R (*real)(P...), A... args) {
  thread_state& ts = tls;
  if (__builtin_expect(ts.in_real != 0, 0))
    return real(args...);
  if (ts.layer < 0) {
    ts.call_site = return_address;
    if constexpr (Decoder::has_comm) {
      if (__builtin_expect(world_replaced, false))
        Decoder::remap_comms(args...);
    }
  }
  return invoke<F, Decoder>(c, c->start_after[ts.layer + 1], real, args...);
}

// The entry point's own path for a chain that only counts (chain::direct_counter): the fewest
// instructions between the application and MPI. Anything else (a call from a module or from
// MPI itself, a poll due for timing, a poll that completed something) takes the usual path.
template <int F, typename Decoder, typename R, typename... P, typename... A>
__attribute__((noinline)) R counted(const chain* c, const void* return_address, R (*real)(P...),
                                    A... args) {
  thread_state& ts = tls;
  if (__builtin_expect((ts.in_real | (ts.layer + 1)) != 0, 0))
    return dispatch<F, Decoder>(c, return_address, real, args...);
  ts.call_site = return_address;
  if constexpr (Decoder::is_poll) {
    if (time_this_poll(ts, c->entries[0].poll_interval))
      return invoke_events<F, Decoder>(c, 0, real, args...);
    MPI_Status status_space;
    const bool substituted = Decoder::substitute_ignored_status(status_space, args...);
    ++ts.in_real;
    R r = real(args...);
    --ts.in_real;
    if (__builtin_expect(!Decoder::completed(args...), 1)) {
      ++*c->direct_counter;
      return r;
    }
    return deliver_untimed_poll<F, Decoder>(c, 0, r, substituted, args...);
  } else {
    ++*c->direct_counter;
    ++ts.in_real;
    R r = real(args...);
    --ts.in_real;
    return r;
  }
}

} // namespace strata::core
