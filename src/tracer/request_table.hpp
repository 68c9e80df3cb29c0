// The trace's own ids of the requests in flight: open addressing from the MPI request handle (its
// bits: a pointer under Open MPI, an integer under MPICH) to the id its Isend/Irecv record got,
// until the Wait/Test that completes it. Fixed size: no allocation per request; when full,
// requests go untracked. No MPI, no locks: the traced thread alone uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::trace {

struct pending_request {
  uint64_t handle = 0; // 0 = free
  uint32_t id = 0;
  uint32_t comm = 0;
  bool recv = false;
};

class request_table {
public:
  static constexpr size_t slots = 1u << 16;

  // A handle MPI reused replaces its old entry.
  void track(uint64_t handle, uint32_t id, uint32_t comm, bool recv) {
    size_t i = hash(handle);
    size_t free_slot = slots;
    for (size_t probes = 0; probes < slots; ++probes, i = (i + 1) & (slots - 1)) {
      pending_request& p = entries_[i];
      if (p.handle == handle || p.handle == 0) {
        if (p.handle == 0 && free_slot != slots)
          i = free_slot;
        entries_[i] = pending_request{handle, id, comm, recv};
        return;
      }
      if (p.handle == tombstone && free_slot == slots)
        free_slot = i;
    }
    if (free_slot != slots)
      entries_[free_slot] = pending_request{handle, id, comm, recv};
  }

  // The entry of `handle`, removed; false when the handle is not tracked (or is 0).
  bool take(uint64_t handle, pending_request& out) {
    if (handle == 0)
      return false;
    size_t i = hash(handle);
    for (size_t probes = 0; probes < slots; ++probes, i = (i + 1) & (slots - 1)) {
      pending_request& p = entries_[i];
      if (p.handle == 0)
        return false;
      if (p.handle == handle) {
        out = p;
        p.handle = tombstone;
        return true;
      }
    }
    return false;
  }

private:
  static constexpr uint64_t tombstone = ~uint64_t{0};
  static size_t hash(uint64_t handle) {
    return static_cast<size_t>((handle * 0x9E3779B97F4A7C15ull) >> 48) & (slots - 1);
  }

  std::vector<pending_request> entries_ = std::vector<pending_request>(slots);
};

} // namespace strata::trace
