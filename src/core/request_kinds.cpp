// The table of the application's requests' kinds (request_kinds.hpp): its storage and new keys.
// No MPI: unit-tested on its own (request_kinds_test.cpp).
#include "core/request_kinds.hpp"

namespace strata::decode {

std::atomic<uint64_t> request_kinds[request_kind_slots];

namespace {
std::atomic<size_t> receive_keys{0};
} // namespace

bool add_receive_key(uint64_t bits) {
  if (receive_keys.fetch_add(1, std::memory_order_relaxed) >= request_kind_most_keys) {
    receive_keys.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  const uint64_t key = (bits << 1) | 1;
  for (size_t i = request_kind_home(bits);; i = (i + 1) & (request_kind_slots - 1)) {
    uint64_t entry = request_kinds[i].load(std::memory_order_acquire);
    if (entry == 0 &&
        request_kinds[i].compare_exchange_strong(entry, key, std::memory_order_acq_rel))
      return true;
    if ((entry >> 1) == bits) { // another thread put it there: this call's kind wins
      request_kinds[i].store(key, std::memory_order_release);
      receive_keys.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
  }
}

} // namespace strata::decode
