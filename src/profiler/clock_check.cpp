#include "profiler/clock_check.hpp"

#include <algorithm>
#include <cmath>

namespace strata::profiler {

namespace {

uint64_t scaled(uint64_t ns, double factor) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(ns) * factor));
}

uint32_t saturated(double value) {
  if (!(value > 0))
    return 0;
  return value >= static_cast<double>(UINT32_MAX) ? UINT32_MAX
                                                  : static_cast<uint32_t>(std::llround(value));
}

enum word : size_t {
  any_tsc,
  any_monotonic,
  max_rate_khz,
  min_rate_khz_complement, // UINT32_MAX - rate: the maximum is the smallest rate
  max_drift_ppb,
  max_offset_ns,
  any_migrated,
  any_corrected,
  any_flagged,
};
static_assert(any_flagged + 1 == clock_layout_words);

} // namespace

double duration_factor(const rank_clock& clock) {
  return !clock.trusted && clock.correctable && clock.correction > 0 ? clock.correction : 1.0;
}

std::vector<routine_slot> scaled_slots(const routine_slot* slots, size_t count, double factor) {
  std::vector<routine_slot> out(slots, slots + count);
  for (routine_slot& slot : out) {
    slot.time_ns = scaled(slot.time_ns, factor);
    if (slot.min_ns != UINT64_MAX)
      slot.min_ns = scaled(slot.min_ns, factor);
    slot.max_ns = scaled(slot.max_ns, factor);
  }
  return out;
}

std::vector<callsite_slot> scaled_callsites(const callsite_slot* slots, size_t count,
                                            double factor) {
  std::vector<callsite_slot> out(slots, slots + count);
  for (callsite_slot& slot : out) {
    slot.time_ns = scaled(slot.time_ns, factor);
    slot.wasted_ns = scaled(slot.wasted_ns, factor);
  }
  return out;
}

void append_clock_layout(std::vector<uint32_t>& layout, const rank_clock& clock) {
  uint32_t words[clock_layout_words] = {};
  words[any_tsc] = clock.tsc ? 1 : 0;
  words[any_monotonic] = clock.tsc ? 0 : 1;
  if (clock.tsc) {
    const uint32_t khz = saturated(clock.tsc_hz / 1e3);
    words[max_rate_khz] = khz;
    words[min_rate_khz_complement] = UINT32_MAX - khz;
  }
  words[max_drift_ppb] = saturated(std::fabs(clock.drift_ppm) * 1e3);
  words[max_offset_ns] = saturated(std::fabs(static_cast<double>(clock.offset_ns)));
  words[any_migrated] = clock.migrated ? 1 : 0;
  words[any_corrected] = !clock.trusted && clock.correctable ? 1 : 0;
  words[any_flagged] = !clock.trusted && !clock.correctable ? 1 : 0;
  layout.insert(layout.end(), words, words + clock_layout_words);
}

record::clock_facts clock_from_layout(const uint32_t* words,
                                      const std::string& kernel_clocksource) {
  record::clock_facts c;
  c.source = words[any_tsc] != 0 ? (words[any_monotonic] != 0 ? "mixed" : "tsc") : "monotonic";
  c.kernel_clocksource = kernel_clocksource;
  if (words[any_tsc] != 0) {
    const double largest = static_cast<double>(words[max_rate_khz]);
    const double smallest = static_cast<double>(UINT32_MAX - words[min_rate_khz_complement]);
    c.tsc_hz = largest * 1e3;
    c.rate_spread_ppm = largest > 0 ? (largest - smallest) / largest * 1e6 : 0;
  }
  c.drift_ppm = static_cast<double>(words[max_drift_ppb]) / 1e3;
  c.offset_ns = words[max_offset_ns];
  c.migrated = words[any_migrated] != 0;
  c.status = words[any_flagged] != 0 ? "flagged" : words[any_corrected] != 0 ? "corrected" : "ok";
  return c;
}

} // namespace strata::profiler
