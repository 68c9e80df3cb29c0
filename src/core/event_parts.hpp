// The parts every event and every note of the thread's place are built from: an event's fields
// set before decoding (start_event), the timed call's note in strata_where (note_call), and the
// event around the real call (begin_event, end_event), and the real call (call_real). The call
// paths that use them are dispatch.hpp and summed_call.hpp.
#pragma once

#include "core/chains.hpp"
#include "core/clock.hpp"
#include "core/decode.hpp"
#include "python_sites/capture.hpp"
#include <strata/module.h>
#include <strata/where.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace strata::core {

template <typename R> inline void set_result(strata_event& ev, const R& r) {
  if constexpr (std::is_same_v<R, int>)
    ev.result = r;
}

// An event before decoding: the fields every event has, and of the groups the segment's modules
// read (chain_entry::fields) every "none" value set (zero is a valid rank or tag), the rare groups
// (decode::rare_fields) behind one test; the rest is left as the stack had it (module.h,
// strata_module_fields_v1). The communicator's fields are left to a decoder that always sets them
// (Decoder::sets_comm) when its enter step runs (comm_decoded), the byte fields likewise
// (Decoder::sets_bytes). Without enter callbacks the exit time is set later (exit_set_later).
template <bool comm_decoded = false, bool bytes_decoded = false, bool exit_set_later = false,
          bool with_call_site = true>
__attribute__((always_inline)) inline void start_event(strata_event& ev, int function,
                                                       const thread_state& ts, uint32_t fields) {
  ev.function = function;
  ev.flags = 0;
  if (!exit_set_later)
    ev.t_exit_ns = 0;
  // A call from a Python extension module (mpi4py) in a process running CPython takes the
  // innermost Python frame's site here, where an event needs it, rather than on every call:
  // a counted call never reads it (python_sites/capture.hpp; one byte tested otherwise).
  if (with_call_site)
    ev.call_site = python_sites::call_site(ts.call_site);
  ev.result = 0;
  ev.thread_layer = 0;
  if (!comm_decoded && (fields & STRATA_FIELD_COMM) != 0) {
    ev.comm_id = 0;
    ev.comm_size = 0;
    ev.comm_world_ranks = nullptr;
    ev.comm_rank = -1;
  }
  if ((fields & decode::rare_fields) != 0) {
    if ((fields & STRATA_FIELD_PEER) != 0) {
      ev.peer = STRATA_NO_RANK;
      ev.root = STRATA_NO_RANK;
      ev.is_root = 0;
    }
    if ((fields & STRATA_FIELD_TAG) != 0)
      ev.tag = STRATA_NO_TAG;
    if ((fields & STRATA_FIELD_REQUESTS) != 0) {
      ev.request = 0;
      ev.request_count = 0;
      ev.requests = nullptr;
    }
    if ((fields & STRATA_FIELD_STATUS) != 0) {
      ev.source = STRATA_NO_RANK;
      ev.status_source = STRATA_NO_RANK;
      ev.status_tag = STRATA_NO_TAG;
    }
  }
  if (!bytes_decoded && (fields & STRATA_FIELD_BYTES) != 0) {
    ev.count = 0;
    ev.bytes_sent = 0;
    ev.bytes_expected = 0;
  }
  if ((fields & STRATA_FIELD_RECEIVED) != 0)
    ev.bytes_received = -1;
}

// An argument as strata_where keeps it: pointers and 8-byte integers as their bits; a 4-byte
// integer (an int, MPICH's handles) in the low half alone, the high half left as it was
// (strata/where.h): one store of the register, where widening it first took a move more.
template <typename T>
__attribute__((always_inline)) inline void keep_argument(uint64_t& kept, T value) {
  constexpr bool integer = std::is_integral_v<T> || std::is_enum_v<T>;
  if constexpr (std::is_pointer_v<T>) {
    kept = reinterpret_cast<uint64_t>(value);
  } else if constexpr (integer && sizeof(T) == 4) {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the low half first");
    std::memcpy(&kept, &value, sizeof value);
  } else if constexpr (integer) {
    kept = static_cast<uint64_t>(static_cast<int64_t>(value));
  } else {
    kept = 0;
  }
}

// The timed call's entry into strata_where: function, call site and the arguments the hang
// diagnosis reads (`Kept`, a bit per position: the decoder's where_kept, the positions of the
// roles routines::info::at names; never a buffer or a status, nor a Sendrecv's receive count
// and type), then the counter made odd.
// Plain stores ordered for the compiler; x86-64 keeps stores in order for the reader on
// another CPU. Leaving makes the counter even again.
template <int F, uint32_t Kept, typename... A, size_t... I>
__attribute__((always_inline)) inline void
note_call(const void* call_site, std::index_sequence<I...> /*unused*/, A... args) {
  strata_where& where = tls.where;
  where.function = F;
  where.call_site = call_site;
  ((I < STRATA_WHERE_ARGS && ((Kept >> I) & 1) != 0
        ? keep_argument(where.args[I % STRATA_WHERE_ARGS], args)
        : void()),
   ...);
  asm volatile("" ::: "memory");
  ++where.seq;
  asm volatile("" ::: "memory");
}
template <int F, uint32_t Kept, typename... A>
__attribute__((always_inline)) inline void note_call(const void* call_site, A... args) {
  note_call<F, Kept>(call_site, std::index_sequence_for<A...>{}, args...);
}
__attribute__((always_inline)) inline void note_return() {
  asm volatile("" ::: "memory");
  ++tls.where.seq;
}

// An event up to the call: its fields, what the arguments say, the time of entry.
template <int F, typename Decoder, bool no_enter_callbacks = false, typename... A>
__attribute__((always_inline)) inline void begin_event(strata_event& ev, decode::scratch& scratch,
                                                       const thread_state& ts, uint32_t fields,
                                                       A&... args) {
  start_event<Decoder::sets_comm, Decoder::sets_bytes, no_enter_callbacks>(ev, F, ts, fields);
  Decoder::enter(ev, scratch, fields, args...);
  ev.t_enter_ns = now_ns();
}

// An event after the call: the time of exit, the result, what the call wrote. `where_noted`:
// the call's entry noted it in the thread's strata_where (note_call), which a request it made
// is copied from (decode::note_request_made).
template <typename Decoder, bool where_noted = false, typename R, typename... A>
__attribute__((always_inline)) inline void end_event(strata_event& ev, decode::scratch& scratch,
                                                     uint32_t fields, const R& r, A&... args) {
  ev.t_exit_ns = now_ns();
  set_result(ev, r);
  Decoder::template exit<where_noted>(ev, scratch, fields, args...);
}

// The real function, with MPI's own calls to the exported entry points passing straight through.
// in_real is raised and lowered together with the layer, as one 8-byte word: the entry points
// read the two as one word, and a load that a narrower store before it only partly wrote cannot
// be forwarded from the store buffer (it waits for the store to reach the cache: several ns a
// call on AMD EPYC when the program calls MPI again at once).
template <typename R, typename... P, typename... A>
__attribute__((always_inline)) inline R call_real(R (*real)(P...), A... args) {
  thread_state& ts = tls;
  add_to_layer_word(ts, in_real_one);
  R r = real(args...);
  add_to_layer_word(ts, -in_real_one);
  return r;
}

} // namespace strata::core
