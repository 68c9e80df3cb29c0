// How a rank's figures are updated on the call path: plain adds while one thread at a time calls
// MPI, relaxed atomics under MPI_THREAD_MULTIPLE (no count is lost and no call waits for
// another). The counting code is written once over these two policies. No MPI here.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {

struct plain_adds {
  template <typename T> static void add(T& to, T value) { to += value; }
  // Stored only when the figure moves (rarely, once a routine has its range): two stores fewer
  // per timed call than a select stored back every time.
  static void keep_min(uint64_t& to, uint64_t value) {
    if (value < to)
      to = value;
  }
  static void keep_max(uint64_t& to, uint64_t value) {
    if (value > to)
      to = value;
  }
  // The latest of a series of times: one thread sees them in order.
  static void set_latest(uint64_t& to, uint64_t value) { to = value; }
  // Claims a free (zero) key for `key`; returns the key the slot then holds.
  static uint64_t claim(uint64_t& slot_key, uint64_t key) {
    if (slot_key == 0)
      slot_key = key;
    return slot_key;
  }
};

struct atomic_adds {
  template <typename T> static void add(T& to, T value) {
    std::atomic_ref<T>(to).fetch_add(value, std::memory_order_relaxed);
  }
  static void keep_min(uint64_t& to, uint64_t value) {
    std::atomic_ref<uint64_t> ref(to);
    uint64_t seen = ref.load(std::memory_order_relaxed);
    while (value < seen && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  static void keep_max(uint64_t& to, uint64_t value) {
    std::atomic_ref<uint64_t> ref(to);
    uint64_t seen = ref.load(std::memory_order_relaxed);
    while (value > seen && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  // Threads finish their calls in any order.
  static void set_latest(uint64_t& to, uint64_t value) { keep_max(to, value); }
  static uint64_t claim(uint64_t& slot_key, uint64_t key) {
    std::atomic_ref<uint64_t> claimed(slot_key);
    uint64_t seen = claimed.load(std::memory_order_relaxed);
    if (seen == 0 && claimed.compare_exchange_strong(seen, key, std::memory_order_relaxed))
      seen = key;
    return seen;
  }
};

} // namespace strata
