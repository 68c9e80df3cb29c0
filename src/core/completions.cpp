// The message when the table of requests' kinds is full, and the space of the completions of many
// requests (completions.hpp): the parts off the usual call path.
#include "core/completions.hpp"
#include "core/core_internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace strata::decode {

namespace {

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
  if (!add_receive_key(bits) && !receives_left_out.exchange(true))
    core::report_line("more than " + std::to_string(request_kind_most_keys) +
                      " receive requests in flight: the bytes received that MPI_Wait, MPI_Test "
                      "and their other forms report are short from here on");
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
