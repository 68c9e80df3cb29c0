#include "profiler/counting.hpp"

#include "profiler/clock.hpp"

#include <algorithm>
#include <sys/mman.h>

namespace strata::profiler {

namespace {
// The arrays this thread claimed from, and its own (null: none was left). Internal linkage: the
// profile and the overhead module, loaded together, each keep their own.
struct thread_claim {
  const thread_slot_arrays* arrays = nullptr;
  routine_slot* own = nullptr;
};
thread_local thread_claim this_thread;

// The arrays threads have claimed so far (the counter may pass the arrays there are).
uint32_t claimed_arrays(const thread_slot_arrays& arrays) {
  return arrays.claimed != nullptr
             ? std::min(arrays.claimed->load(std::memory_order_relaxed), arrays.count)
             : 0;
}

// Zeroed pages from the kernel, given back when it goes: scratch memory that leaves the heap alone.
class scratch_mapping {
public:
  explicit scratch_mapping(size_t bytes) : bytes_(bytes) {
    void* p = bytes == 0 ? MAP_FAILED
                         : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : p;
  }
  scratch_mapping(const scratch_mapping&) = delete;
  scratch_mapping& operator=(const scratch_mapping&) = delete;
  ~scratch_mapping() {
    if (data_ != nullptr)
      ::munmap(data_, bytes_);
  }
  void* data() const { return data_; }

private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The mean time of one call counted by `count(t_enter, t_exit)`, given the call's two readings
// of the clock, over 2000 rounds: what the calibrations below time.
template <typename Count> uint64_t mean_call_ns(Count count) {
  constexpr int rounds = 2000;
  const uint64_t start = mono_ns();
  for (int i = 0; i < rounds; ++i) {
    const uint64_t t_enter = mono_ns();
    const uint64_t t_exit = mono_ns();
    count(t_enter, t_exit);
  }
  return (mono_ns() - start) / rounds;
}

} // namespace

routine_slot* own_thread_slots(const thread_slot_arrays& arrays) {
  if (this_thread.arrays == &arrays)
    return this_thread.own;
  routine_slot* own = nullptr;
  if (arrays.claimed != nullptr) {
    const uint32_t i = arrays.claimed->fetch_add(1, std::memory_order_relaxed);
    if (i < arrays.count) {
      own = arrays.slots + size_t{i} * arrays.functions;
      std::fill_n(own, arrays.functions, empty_routine_slot);
    }
  }
  this_thread = {&arrays, own};
  return own;
}

std::vector<routine_slot> merged_slots(const routine_slot* shared, size_t functions,
                                       const thread_slot_arrays& arrays) {
  std::vector<routine_slot> out(shared, shared + functions);
  const uint32_t claimed = claimed_arrays(arrays);
  for (uint32_t a = 0; a < claimed; ++a)
    for (uint32_t f = 0; f < arrays.functions; ++f)
      merge_slot(out[f], arrays.slots[size_t{a} * arrays.functions + f]);
  return out;
}

void clear_thread_slots(const thread_slot_arrays& arrays) {
  std::fill_n(arrays.slots, size_t{claimed_arrays(arrays)} * arrays.functions, empty_routine_slot);
}

uint64_t calibrate_call_cost(const std::vector<uint8_t>& traits, bool with_callsites) {
  // The calibration's event is the first routine's, so one slot of each kind is enough. Nothing
  // here may come from the heap in a block of 128 KiB or more: freeing one raises glibc's mmap
  // threshold for the rest of the process, and the application's later buffers of that size
  // would come from the heap instead of mappings of their own, as they do without the profile.
  routine_slot slot{};
  const uint8_t first_traits = traits.empty() ? 0 : traits[0] & routine_trait::collective;
  poll_figures poll{};
  rank_header header{};
  call_counting scratch;
  scratch.slots = &slot;
  scratch.header = &header;
  scratch.traits = &first_traits;
  scratch.polls = &poll;
  const scratch_mapping sites(with_callsites ? callsite_table::capacity * sizeof(callsite_slot)
                                             : 0);
  if (with_callsites) {
    if (sites.data() == nullptr)
      return 0;
    scratch.callsites.slots = static_cast<callsite_slot*>(sites.data()); // zeroed: every slot free
  }
  strata_event ev{};
  ev.peer = STRATA_NO_RANK;
  return mean_call_ns([&](uint64_t t_enter, uint64_t t_exit) {
    ev.t_enter_ns = t_enter;
    ev.t_exit_ns = t_exit;
    count_call(scratch, ev);
  });
}

uint64_t calibrate_core_sum_cost(const std::vector<uint8_t>& traits) {
  routine_slot slot = empty_routine_slot;
  uint64_t latest_exit_ns = 0;
  const uint32_t histograms =
      slot_histograms(traits.empty() ? 0 : traits[0] & routine_trait::collective);
  return mean_call_ns([&](uint64_t t_enter, uint64_t t_exit) {
    add_timed_call<plain_adds>(slot, {t_exit - t_enter, 1, 8, 0, 0, 2}, histograms);
    latest_exit_ns = t_exit;
    // The slot and the latest exit in memory after each call, as the lent ones are.
    asm volatile("" : : "r"(&slot), "r"(&latest_exit_ns) : "memory");
  });
}

} // namespace strata::profiler
