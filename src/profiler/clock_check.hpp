// The event clock's check at finalize and at subtotals, per rank and over ranks: what a rank's
// check found (the core's strata_clock_check, module.h), the factor its durations take, and the
// record's "clock" figures, combined over ranks through the words each rank appends to the
// layout that the first collective at finalize reduces with MPI_MAX (packed_totals.hpp). No MPI.
#pragma once

#include "profiler/rank_file.hpp"
#include "profiler/record/record.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::profiler {

struct rank_clock {
  bool tsc = false;
  double tsc_hz = 0;
  int64_t offset_ns = 0;   // event clock minus CLOCK_MONOTONIC at the check
  double drift_ppm = 0;    // offset_ns over the time since the calibration's anchor
  bool migrated = false;   // checked on another CPU than the anchor's (both known)
  bool trusted = true;     // the offset within the core's tolerance
  bool correctable = true; // untrusted: a rate error, which `correction` undoes
  double correction = 1;   // CLOCK_MONOTONIC time over event-clock time since the anchor
};

// What this rank's durations are multiplied by before they are reported: 1 unless the check
// found a rate error it can undo.
double duration_factor(const rank_clock& clock);

// Times of copies of the slots scaled by `factor` (calls, bytes and histograms unchanged).
std::vector<routine_slot> scaled_slots(const routine_slot* slots, size_t count, double factor);
std::vector<callsite_slot> scaled_callsites(const callsite_slot* slots, size_t count,
                                            double factor);

// Words appended to the reduction's layout, combined by MPI_MAX over ranks.
inline constexpr size_t clock_layout_words = 9;
void append_clock_layout(std::vector<uint32_t>& layout, const rank_clock& clock);
// The record's figures from the combined words (the last clock_layout_words of the layout).
record::clock_facts clock_from_layout(const uint32_t* words, const std::string& kernel_clocksource);

} // namespace strata::profiler
