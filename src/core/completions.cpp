// The kinds of the application's requests and the space of the completions of many requests
// (completions.hpp): the parts off the usual call path.
#include "core/completions.hpp"
#include "core/core_internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace strata::decode {

std::atomic<uint64_t> request_kinds[request_kind_slots];

namespace {

std::atomic<size_t> receive_keys{0};
std::atomic<bool> receives_left_out{false};

// Frees the thread's space when the thread ends.
struct owned_completion_space {
  completion_space space;
  ~owned_completion_space() {
    std::free(space.receive);
    std::free(space.statuses);
  }
};

} // namespace

void mark_receive_request(uint64_t bits) {
  if (receive_keys.fetch_add(1, std::memory_order_relaxed) >= request_kind_slots / 4 * 3) {
    receive_keys.fetch_sub(1, std::memory_order_relaxed);
    if (!receives_left_out.exchange(true))
      core::report_line("more than " + std::to_string(request_kind_slots / 4 * 3) +
                        " receive requests in flight: the bytes received that MPI_Wait, MPI_Test "
                        "and their other forms report are short from here on");
    return;
  }
  const uint64_t key = (bits << 1) | 1;
  for (size_t i = request_kind_home(bits);; i = (i + 1) & (request_kind_slots - 1)) {
    uint64_t entry = request_kinds[i].load(std::memory_order_acquire);
    if (entry == 0 &&
        request_kinds[i].compare_exchange_strong(entry, key, std::memory_order_acq_rel))
      return;
    if ((entry >> 1) == bits) { // another thread put it there: this call's kind wins
      request_kinds[i].store(key, std::memory_order_release);
      receive_keys.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

completion_space* completion_space_for(size_t count) {
  thread_local owned_completion_space owned;
  completion_space& space = owned.space;
  if (count <= space.capacity)
    return &space;
  // Grown by half again at least, so that slowly growing counts do not allocate every call.
  const size_t capacity = std::max(count, space.capacity + space.capacity / 2);
  auto* receive = static_cast<uint8_t*>(std::malloc(capacity));
  auto* statuses = static_cast<MPI_Status*>(std::malloc(capacity * sizeof(MPI_Status)));
  if (receive == nullptr || statuses == nullptr) {
    std::free(receive);
    std::free(statuses);
    return nullptr;
  }
  std::free(space.receive);
  std::free(space.statuses);
  space = {receive, statuses, capacity};
  return &space;
}

} // namespace strata::decode
