#include "profiler/sole_counter.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace strata::profiler {

namespace {

long membarrier(int command) {
  return ::syscall(__NR_membarrier, command, 0, 0);
}

} // namespace

bool sole_counter::start() {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
      membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    shared_.store(true);
    handed_over_.store(true);
    return false;
  }
  return true;
}

bool sole_counter::enter_other(uintptr_t self) {
  if (handed_over_.load(std::memory_order_acquire))
    return false;
  uintptr_t none = 0;
  if (owner_.compare_exchange_strong(none, self, std::memory_order_acq_rel))
    return enter(); // the first thread to count
  share();
  return false;
}

void sole_counter::share() {
  // A thread that comes while another hands over waits here until the sole counter is done.
  std::lock_guard<std::mutex> lock(sharing_);
  if (handed_over_.load(std::memory_order_relaxed))
    return;
  shared_.store(true, std::memory_order_seq_cst);
  // Every running thread of the process passes a full barrier: the sole counter's busy mark is
  // visible now if it read `shared` before, and its next read sees it set.
  // It fails only for a process that did not register (a child forked since start()): the
  // global command needs no registration, and is slower (it waits for a grace period).
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
    membarrier(MEMBARRIER_CMD_GLOBAL);
  while (busy_.load(std::memory_order_acquire)) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  handed_over_.store(true, std::memory_order_release);
}

} // namespace strata::profiler
