// The trace's own ids of the requests in flight: open addressing from the MPI request handle (its
// bits: a pointer under Open MPI, an integer under MPICH) to the id its Isend/Irecv record got,
// until the Wait/Test that completes it. Linear probing with removal by moving entries back, so
// probes stay as short as the live entries make them. Fixed size: no allocation per request; when
// full, requests go untracked. No MPI, no locks: the traced thread alone uses it.
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
    for (size_t probes = 0; probes < slots; ++probes, i = (i + 1) & (slots - 1)) {
      pending_request& p = entries_[i];
      if (p.handle == handle || p.handle == 0) {
        p = pending_request{handle, id, comm, recv};
        return;
      }
    }
  }

  // The entry of `handle`, removed; false when the handle is not tracked (or is 0).
  bool take(uint64_t handle, pending_request& out) {
    if (handle == 0)
      return false;
    size_t i = hash(handle);
    for (size_t probes = 0; probes < slots; ++probes, i = (i + 1) & (slots - 1)) {
      const pending_request& p = entries_[i];
      if (p.handle == 0)
        return false;
      if (p.handle == handle) {
        out = p;
        remove(i);
        return true;
      }
    }
    return false;
  }

private:
  static size_t hash(uint64_t handle) {
    return static_cast<size_t>((handle * 0x9E3779B97F4A7C15ull) >> 48) & (slots - 1);
  }

  // Empties slot i and moves back the entries after it that probed past it, so that every entry
  // stays reachable from its home slot without markers of removed ones (which, never cleared,
  // would end with every insertion probing the whole table).
  void remove(size_t i) {
    size_t j = i;
    for (size_t step = 1; step < slots; ++step) { // a full table: every other slot once
      j = (j + 1) & (slots - 1);
      if (entries_[j].handle == 0)
        break;
      const size_t home = hash(entries_[j].handle);
      // Entry j stays when its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) {
        entries_[i] = entries_[j];
        i = j;
      }
    }
    entries_[i].handle = 0;
  }

  std::vector<pending_request> entries_ = std::vector<pending_request>(slots);
};

} // namespace strata::trace
