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

  // Clocks of one machine, or of nodes that NTP keeps, drift apart by at most a few hundred
  // parts per million. A steeper line says that the two measurements disagree by their own error
  // (a rank descheduled during the ping-pongs of a short job), and following it could even run
  // the corrected clock backwards (an archive OTF2 then refuses). Then both points take the
  // offset measured with the smaller uncertainty; returns false.
  static constexpr double max_drift = 1e-3;
  bool keep_plausible_drift(double uncertainty1, double uncertainty2) {
    if (t2 <= t1)
      return true;
    const double drift = static_cast<double>(o2 - o1) / static_cast<double>(t2 - t1);
    if (drift <= max_drift && drift >= -max_drift)
      return true;
    if (uncertainty2 < uncertainty1)
      o1 = o2;
    else
      o2 = o1;
    return false;
  }
};

} // namespace strata::trace
