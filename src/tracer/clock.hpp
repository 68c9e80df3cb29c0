// Clock alignment: each rank's offset to rank 0's clock is measured at MPI_Init and at finalize;
// timestamps in between (and beyond) are corrected along the line through the two points.
#pragma once

#include <cstdint>

namespace strata::trace {

struct clock_line {
  uint64_t t1 = 0; // local time of the first measurement
  int64_t o1 = 0;  // rank 0's clock minus ours, then
  uint64_t t2 = 0;
  int64_t o2 = 0;

  int64_t offset_at(uint64_t t) const {
    if (t2 <= t1)
      return o1;
    const double slope = static_cast<double>(o2 - o1) / static_cast<double>(t2 - t1);
    return o1 + static_cast<int64_t>(slope * (static_cast<double>(t) - static_cast<double>(t1)));
  }
  uint64_t correct(uint64_t t) const {
    return static_cast<uint64_t>(static_cast<int64_t>(t) + offset_at(t));
  }
};

} // namespace strata::trace
