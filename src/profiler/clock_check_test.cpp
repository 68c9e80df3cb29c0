#include "profiler/clock_check.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace strata::profiler;

namespace {

std::vector<uint32_t> combined(const std::vector<rank_clock>& ranks) {
  std::vector<uint32_t> all(clock_layout_words, 0);
  for (const rank_clock& r : ranks) {
    std::vector<uint32_t> mine;
    append_clock_layout(mine, r);
    for (size_t i = 0; i < clock_layout_words; ++i)
      all[i] = std::max(all[i], mine[i]); // MPI_MAX
  }
  return all;
}

rank_clock tsc_rank(double hz, int64_t offset_ns, double drift_ppm) {
  rank_clock r;
  r.tsc = true;
  r.tsc_hz = hz;
  r.offset_ns = offset_ns;
  r.drift_ppm = drift_ppm;
  return r;
}

} // namespace

TEST(ClockCheck, TrustedRanksAreOkWithTheirWorstFigures) {
  const auto words = combined({tsc_rank(2.1e9, 40, 0.2), tsc_rank(2.1e9 - 2100, -300, -1.5)});
  const strata::record::clock_facts c = clock_from_layout(words.data(), "kvm-clock");
  EXPECT_EQ(c.source, "tsc");
  EXPECT_EQ(c.kernel_clocksource, "kvm-clock");
  EXPECT_DOUBLE_EQ(c.tsc_hz, 2.1e9);
  EXPECT_NEAR(c.rate_spread_ppm, 1.0, 0.1); // kHz resolution
  EXPECT_NEAR(c.drift_ppm, 1.5, 1e-9);
  EXPECT_EQ(c.offset_ns, 300u);
  EXPECT_FALSE(c.migrated);
  EXPECT_EQ(c.status, "ok");
}

TEST(ClockCheck, ARateErrorIsCorrectedAndAStepBetweenCpusFlagged) {
  rank_clock rate = tsc_rank(2.1e9, 20'000'000, 200000);
  rate.trusted = false;
  rate.correction = 1 / 1.2;
  EXPECT_DOUBLE_EQ(duration_factor(rate), 1 / 1.2);
  rank_clock step = tsc_rank(2.1e9, 5'000'000, 5000);
  step.trusted = false;
  step.correctable = false;
  step.migrated = true;
  step.correction = 0.995;
  EXPECT_DOUBLE_EQ(duration_factor(step), 1.0); // a step cannot be undone by a factor
  EXPECT_DOUBLE_EQ(duration_factor(tsc_rank(2.1e9, 10, 0.1)), 1.0);

  auto words = combined({tsc_rank(2.1e9, 10, 0.1), rate});
  EXPECT_EQ(clock_from_layout(words.data(), "tsc").status, "corrected");
  words = combined({rate, step});
  const strata::record::clock_facts c = clock_from_layout(words.data(), "tsc");
  EXPECT_EQ(c.status, "flagged");
  EXPECT_TRUE(c.migrated);
  EXPECT_NEAR(c.drift_ppm, 200000, 1e-6);
}

TEST(ClockCheck, MonotonicAndMixedSources) {
  rank_clock mono;
  auto words = combined({mono, mono});
  strata::record::clock_facts c = clock_from_layout(words.data(), "kvm-clock");
  EXPECT_EQ(c.source, "monotonic");
  EXPECT_EQ(c.tsc_hz, 0);
  EXPECT_EQ(c.status, "ok");
  words = combined({mono, tsc_rank(3e9, 0, 0)});
  c = clock_from_layout(words.data(), "tsc");
  EXPECT_EQ(c.source, "mixed");
  EXPECT_DOUBLE_EQ(c.tsc_hz, 3e9);
  EXPECT_DOUBLE_EQ(c.rate_spread_ppm, 0);
}

TEST(ClockCheck, ScaledCopiesScaleOnlyTimes) {
  routine_slot slot{};
  slot.calls = 3;
  slot.time_ns = 1200;
  slot.min_ns = 300;
  slot.max_ns = 600;
  slot.bytes_sent = 77;
  routine_slot never{};
  never.min_ns = UINT64_MAX; // no call yet: stays "none"
  const routine_slot slots[2] = {slot, never};
  const auto out = scaled_slots(slots, 2, 0.5);
  EXPECT_EQ(out[0].calls, 3u);
  EXPECT_EQ(out[0].time_ns, 600u);
  EXPECT_EQ(out[0].min_ns, 150u);
  EXPECT_EQ(out[0].max_ns, 300u);
  EXPECT_EQ(out[0].bytes_sent, 77u);
  EXPECT_EQ(out[1].min_ns, UINT64_MAX);
  EXPECT_EQ(slots[0].time_ns, 1200u); // the rank file's figures stay as counted
  callsite_slot site{callsite_key(0x401000, 5), 2, 1000, 8, 400};
  const auto sites = scaled_callsites(&site, 1, 1.25);
  EXPECT_EQ(sites[0].key, site.key);
  EXPECT_EQ(sites[0].time_ns, 1250u);
  EXPECT_EQ(sites[0].wasted_ns, 500u);
}
