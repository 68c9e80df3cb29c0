// The kind of the application's requests, by handle: whether a request's latest maker was a
// receive (completions.hpp says why the core keeps it). No MPI here: a handle is its bits.
//
// Open addressing keyed by the handle's bits (a pointer under Open MPI, an int under MPICH: both
// below 2^63): (bits << 1) | 1 for a receive's request, (bits << 1) for another's once it was a
// receive's; 0 is empty. Keys stay: a handle's slot only changes its kind. Lock-free: a new key
// takes an empty slot by compare-and-swap; a handle is made by one call at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::decode {

inline constexpr size_t request_kind_slots = size_t{1} << 16;
// A new receive's key is left out once this many are in the table, so that it is never full
// and an empty slot ends every probe.
inline constexpr size_t request_kind_most_keys = request_kind_slots / 4 * 3;
extern std::atomic<uint64_t> request_kinds[request_kind_slots]
    __attribute__((visibility("hidden")));

inline size_t request_kind_home(uint64_t bits) {
  return static_cast<size_t>((bits * 0x9E3779B97F4A7C15ull) >> 48);
}
static_assert(request_kind_slots == size_t{1} << 16, "request_kind_home's shift");

// The request was made by a receive (its latest maker, among the application's calls).
inline bool made_by_receive(uint64_t bits) {
  for (size_t i = request_kind_home(bits);; i = (i + 1) & (request_kind_slots - 1)) {
    const uint64_t entry = request_kinds[i].load(std::memory_order_acquire);
    if (entry == 0)
      return false;
    if ((entry >> 1) == bits)
      return (entry & 1) != 0;
  }
}

// A handle not yet in the table, made by a receive: a new key (out of line, the rarer case: MPI
// reuses its handles). Once request_kind_most_keys are taken it is left out, and the first time
// that happens the core says that the bytes received by completions are short from then on
// (completions.cpp).
void mark_receive_request(uint64_t bits);

// The same without the message: false when the key was left out (request_kinds.cpp).
bool add_receive_key(uint64_t bits);

// A call made the request `bits` (a receive or not): its kind in the table, then `return` from
// the function it is written in. A handle another call made before keeps its slot with this
// kind; a new one takes a slot only if a receive made it. A macro, not a function: the request
// makers' exit decoders (completions.hpp, note_request_made) are compiled as with the loop
// written there (an inlined function of its own changed GCC's choices in the event path).
#define STRATA_NOTE_REQUEST_KIND(bits, receive)                                                    \
  do {                                                                                             \
    for (size_t i_ = request_kind_home(bits);; i_ = (i_ + 1) & (request_kind_slots - 1)) {         \
      const uint64_t entry_ = request_kinds[i_].load(std::memory_order_acquire);                   \
      if (entry_ == 0)                                                                             \
        break;                                                                                     \
      if ((entry_ >> 1) == (bits)) {                                                               \
        if ((entry_ & 1) != static_cast<uint64_t>(receive))                                        \
          request_kinds[i_].store(((bits) << 1) | static_cast<uint64_t>(receive),                  \
                                  std::memory_order_release);                                      \
        return;                                                                                    \
      }                                                                                            \
    }                                                                                              \
    if (receive)                                                                                   \
      mark_receive_request(bits);                                                                  \
  } while (false)

} // namespace strata::decode
