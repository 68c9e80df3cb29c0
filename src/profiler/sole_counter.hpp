// Plain adds for the one thread that calls MPI, also under MPI_THREAD_MULTIPLE, until a second
// thread calls MPI. mpi4py asks for MPI_THREAD_MULTIPLE by default, so a Python program counts
// with atomic adds, and a locked add costs far more inside an interpreter than in a C loop: it
// waits for every store the interpreter left in flight (reference counts). Measured on the
// call-site profile of MPI_Comm_rank from Python: 80 ns per call with atomic adds, 36 ns with
// plain ones (bench/run_python.sh).
//
// The first thread that counts becomes the sole counter and counts with plain adds, marking
// each call's counting as busy. The first call from another thread ends that for good: it sets
// `shared`, makes every thread of the process pass a full memory barrier (membarrier(2),
// MEMBARRIER_CMD_PRIVATE_EXPEDITED: so the sole counter's plain adds and its busy mark are
// visible, and its next check sees `shared`), waits for a counting in progress to end, and from
// then on every thread counts with atomic adds. Until that wait has ended (`handed_over`), other
// threads that arrive wait for it too (share()): one that counted with atomics as soon as
// `shared` was set could add to a figure beside the sole counter's last plain add, and one of
// the two adds would be lost. The sole counter's path has no locked instruction and no fence,
// only compiler barriers. Where membarrier is refused (an old kernel, a seccomp filter), start()
// says so and every thread counts with atomic adds from the start.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <pthread.h>

namespace strata::profiler {

class sole_counter {
public:
  // Registers the process for expedited memory barriers; false where that is refused.
  bool start();

  // True: the calling thread is the sole counter and may count with plain adds until
  // leave(). False: count with atomic adds (after the first call of another thread).
  bool enter() {
    const auto self = static_cast<uintptr_t>(::pthread_self());
    if (owner_.load(std::memory_order_relaxed) != self)
      return enter_other(self);
    busy_.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst); // the mark before the check
    if (!shared_.load(std::memory_order_relaxed))
      return true;
    busy_.store(false, std::memory_order_relaxed);
    return false;
  }
  void leave() {
    std::atomic_signal_fence(std::memory_order_seq_cst); // the adds before the mark's end
    busy_.store(false, std::memory_order_release);
  }

  // True once the sole counting has ended and every thread counts with atomic adds. Tested
  // first on the call path: once set it stays, and the line is then only read, so threads do
  // not write the sole counter's line on every call.
  bool shared() const { return handed_over_.load(std::memory_order_acquire); }

private:
  bool enter_other(uintptr_t self);
  void share(); // ends the sole counting: see above

  std::atomic<uintptr_t> owner_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> shared_{false};      // the sole counting ends: its next enter() says false
  std::atomic<bool> handed_over_{false}; // and its last plain adds are done
  std::mutex sharing_;
};

} // namespace strata::profiler
