// The event clock's arithmetic (clock.hpp): the rate and base the calibration computes from two
// samples of both clocks, and the scaling of counter readings into CLOCK_MONOTONIC nanoseconds
// that the call path and the clock's check use. The samples are made up: no clock is read.
#include "core/clock.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace strata::core {
namespace {

// A 2.5 GHz counter calibrated over 10 ms, anchored 5 s after the machine's start.
constexpr int64_t first_tsc = 1'000'000;
constexpr uint64_t first_ns = 4'990'000'000;
constexpr int64_t anchor_tsc = first_tsc + 25'000'000;
constexpr uint64_t anchor_ns = 5'000'000'000;

event_clock calibrated_2_5_ghz() {
  return clock_between(first_tsc, first_ns, anchor_tsc, anchor_ns);
}

TEST(ClockArithmetic, RateFromTwoSamples) {
  const event_clock c = calibrated_2_5_ghz();
  ASSERT_TRUE(c.use_tsc);
  // 0.4 ns a tick with 32 fraction bits, truncated.
  EXPECT_EQ(c.ns_per_tick_q32, uint64_t{1'717'986'918});
}

TEST(ClockArithmetic, AnchorReadsItsOwnTime) {
  const event_clock c = calibrated_2_5_ghz();
  EXPECT_EQ(event_ns_of(c, anchor_tsc), static_cast<int64_t>(anchor_ns));
  EXPECT_NEAR(static_cast<double>(event_ns_of(c, anchor_tsc + 2'500'000'000)),
              static_cast<double>(anchor_ns + 1'000'000'000), 1.0);
  // Between the two samples the counter reads the clock's time too.
  EXPECT_NEAR(static_cast<double>(event_ns_of(c, first_tsc)), static_cast<double>(first_ns), 1.0);
}

TEST(ClockArithmetic, ReadingsBeforeTheBaseAreEarlierTimes) {
  const event_clock c = calibrated_2_5_ghz();
  // The base lies 2^32 ticks (about 1.7 s) before the anchor, its time as far before.
  EXPECT_EQ(c.tsc_base, anchor_tsc - (int64_t{1} << 32));
  EXPECT_NEAR(static_cast<double>(anchor_ns - c.ns_base), 1'717'986'918.0, 1.0);
  EXPECT_NEAR(static_cast<double>(event_ns_of(c, c.tsc_base - 2'500'000'000)),
              static_cast<double>(c.ns_base) - 1e9, 1.0);
}

TEST(ClockArithmetic, ForcedRateErrorScalesTheRate) {
  const event_clock exact = calibrated_2_5_ghz();
  const event_clock fast = clock_between(first_tsc, first_ns, anchor_tsc, anchor_ns, 100.0);
  ASSERT_TRUE(fast.use_tsc);
  const double one_second = 2'500'000'000.0;
  const auto span = [&](const event_clock& c) {
    return static_cast<double>(event_ns_of(c, anchor_tsc + static_cast<int64_t>(one_second)) -
                               event_ns_of(c, anchor_tsc));
  };
  EXPECT_NEAR(span(exact), 1e9, 1.0);
  EXPECT_NEAR(span(fast), 1e9 * (1 + 100e-6), 2.0);
}

TEST(ClockArithmetic, NoTscWhenNeitherClockAdvanced) {
  EXPECT_FALSE(clock_between(first_tsc, first_ns, first_tsc, anchor_ns).use_tsc);
  EXPECT_FALSE(clock_between(anchor_tsc, first_ns, first_tsc, anchor_ns).use_tsc);
  EXPECT_FALSE(clock_between(first_tsc, anchor_ns, anchor_tsc, anchor_ns).use_tsc);
}

TEST(ClockArithmetic, MonotonicReadingsAreNanoseconds) {
  EXPECT_EQ(monotonic_readings::time_ns(123'456'789), uint64_t{123'456'789});
  EXPECT_EQ(monotonic_readings::duration_ns(1'000, 3'500), uint64_t{2'500});
  EXPECT_EQ(monotonic_readings::raw_per_ms(), uint64_t{1'000'000});
}

#if defined(__x86_64__)
// The call path's readings (tsc_readings) scale by the clock in use, g_event_clock.
class TscReadings : public ::testing::Test {
protected:
  void SetUp() override {
    saved_ = g_event_clock;
    g_event_clock = calibrated_2_5_ghz();
  }
  void TearDown() override { g_event_clock = saved_; }

private:
  event_clock saved_;
};

TEST_F(TscReadings, TimeAndDuration) {
  EXPECT_EQ(tsc_readings::time_ns(anchor_tsc), anchor_ns);
  EXPECT_NEAR(static_cast<double>(tsc_readings::time_ns(anchor_tsc + 2'500'000'000)),
              static_cast<double>(anchor_ns + 1'000'000'000), 1.0);
  EXPECT_EQ(tsc_readings::duration_ns(anchor_tsc, anchor_tsc + 2'500), uint64_t{999});
  EXPECT_NEAR(static_cast<double>(tsc_readings::duration_ns(0, 2'500'000'000)), 1e9, 1.0);
  EXPECT_EQ(tsc_readings::raw_per_ms(), uint64_t{2'500'000});
}

// Another core's counter a few ticks behind the anchor's: a time a little earlier, not one
// wrapped round the unsigned range.
TEST_F(TscReadings, ACounterBehindTheAnchorReadsEarlier) {
  EXPECT_EQ(tsc_readings::time_ns(anchor_tsc - 250), anchor_ns - 100);
}

// An anchor earlier than the base's margin (a machine started less than 1.7 s before): the
// base's time wraps, the readings do not.
TEST_F(TscReadings, AnchorEarlierThanTheMargin) {
  g_event_clock = clock_between(1'000, 1'000'000, 25'001'000, 11'000'000);
  ASSERT_TRUE(g_event_clock.use_tsc);
  EXPECT_GT(g_event_clock.ns_base, uint64_t{1} << 63); // wrapped
  EXPECT_EQ(tsc_readings::time_ns(25'001'000), uint64_t{11'000'000});
  EXPECT_NEAR(static_cast<double>(tsc_readings::time_ns(25'001'000 + 2'500)), 11'001'000.0, 1.0);
}

// Ten hours of a counter that has run for years: no overflow, the rate's truncation within a
// part per billion.
TEST_F(TscReadings, LongSpansOfALargeCounter) {
  const int64_t start = int64_t{1} << 62;
  g_event_clock = clock_between(start, anchor_ns, start + 25'000'000, anchor_ns + 10'000'000);
  const uint64_t ten_hours_ticks = uint64_t{2'500'000'000} * 36'000;
  const double ten_hours_ns = 36'000e9;
  EXPECT_NEAR(static_cast<double>(
                  tsc_readings::duration_ns(static_cast<uint64_t>(start), start + ten_hours_ticks)),
              ten_hours_ns, ten_hours_ns * 1e-9);
}
#endif

} // namespace
} // namespace strata::core
