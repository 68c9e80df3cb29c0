#include "profiler/poll_charging.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace strata::profiler;

namespace {
constexpr int barrier = 0, test = 1, iprobe = 2, comm_rank = 3;
} // namespace

TEST(PollCharging, TheMeanComesFromTheTimedPollsAlone) {
  poll_figures poll;
  EXPECT_EQ(sample_mean_ns(poll), 0u); // none timed yet
  poll.sample_calls = 4;
  poll.sample_ns = 1000;
  EXPECT_EQ(sample_mean_ns(poll), 250u);
  poll.untimed_moved = 1'000'000; // what was charged before does not move the mean
  EXPECT_EQ(sample_mean_ns(poll), 250u);
}

TEST(PollCharging, LeanPollsReceiveWhatTheTimedOnesDidPerPoll) {
  poll_figures poll;
  EXPECT_EQ(estimated_poll_bytes(poll, 100), 0u);
  poll.timed_polls = 3;
  poll.timed_poll_bytes = 64;
  EXPECT_EQ(estimated_poll_bytes(poll, 300), 6400u);
  EXPECT_EQ(estimated_poll_bytes(poll, 1), 21u); // rounded down
  // No overflow on the way: pending * bytes is over 2^64.
  poll.timed_polls = 1u << 20;
  poll.timed_poll_bytes = uint64_t{1} << 50;
  EXPECT_EQ(estimated_poll_bytes(poll, uint64_t{1} << 30), uint64_t{1} << 60);
}

TEST(PollCharging, UntimedPollsMoveIntoTheirSlotsAtTheMean) {
  std::vector<routine_slot> slots(4);
  std::vector<uint64_t> uncharged = {0, 10, 5, 0};
  std::vector<poll_figures> polls(4);
  const std::vector<uint8_t> traits = {routine_trait::collective, routine_trait::sampled_poll,
                                       routine_trait::sampled_poll | routine_trait::lean_poll,
                                       routine_trait::counted_only};
  slots[test] = {2, 300, 100, 200, 0, 0, 7, {}, {}};
  polls[test] = {2, 7, 2, 300, 0};
  slots[iprobe] = {1, 50, 50, 50, 0, 0, 8, {}, {}};
  polls[iprobe] = {1, 8, 1, 50, 0};
  charge_untimed_polls(slots.data(), uncharged.data(), polls.data(), traits);
  EXPECT_EQ(uncharged, (std::vector<uint64_t>{0, 0, 0, 0}));
  EXPECT_EQ(slots[test].calls, 12u);
  EXPECT_EQ(slots[test].time_ns, 300u + 10 * 150);
  EXPECT_EQ(slots[test].bytes_received, 7u); // exact polls brought their own bytes already
  EXPECT_EQ(polls[test].untimed_moved, 10u);
  EXPECT_EQ(slots[iprobe].calls, 6u);
  EXPECT_EQ(slots[iprobe].time_ns, 50u + 5 * 50);
  EXPECT_EQ(slots[iprobe].bytes_received, 8u + 5 * 8); // lean: estimated
  // Charged once: reading the figures again changes nothing.
  charge_untimed_polls(slots.data(), uncharged.data(), polls.data(), traits);
  EXPECT_EQ(slots[test].calls, 12u);

  // The profiler's own cost counts the calls that were events: not the polls the core only
  // counted, not the calls that cannot wait.
  slots[barrier].calls = 3;
  slots[comm_rank].calls = 1000;
  EXPECT_EQ(calls_with_events(slots.data(), polls.data(), traits), 3u + 2 + 1);
  EXPECT_TRUE(any_lean_poll(traits));
  EXPECT_FALSE(any_lean_poll({routine_trait::sampled_poll, 0}));
}

// The profiler's own cost charges a call the core summed into a lent slot at the calibrated
// cost of the core's sum, which is not the profile's exit callback: the same calls with events
// would cost the callback's each.
TEST(PollCharging, CallsSummedByTheCoreCostTheSumNotTheCallback) {
  std::vector<routine_slot> slots(4);
  std::vector<poll_figures> polls(4);
  const call_costs costs{100, 7};
  slots[barrier].calls = 3;
  slots[test].calls = 2;
  slots[comm_rank].calls = 1000;
  const std::vector<uint8_t> with_events = {routine_trait::collective, routine_trait::sampled_poll,
                                            0, routine_trait::counted_only};
  std::vector<uint8_t> lent = with_events;
  lent[barrier] |= routine_trait::core_summed;
  EXPECT_EQ(calls_cost_ns(slots.data(), polls.data(), with_events, costs), (3u + 2) * 100);
  EXPECT_EQ(calls_with_events(slots.data(), polls.data(), lent), 2u);
  EXPECT_EQ(calls_summed_by_core(slots.data(), lent), 3u);
  EXPECT_EQ(calls_cost_ns(slots.data(), polls.data(), lent, costs), 3u * 7 + 2 * 100);
  EXPECT_LT(calls_cost_ns(slots.data(), polls.data(), lent, costs),
            calls_cost_ns(slots.data(), polls.data(), with_events, costs));
}

// While MPI_Pcontrol(0) pauses the profile, the core goes on adding to the counters it was
// lent: their values at the pause are put back.
TEST(PollCharging, CountersLentToTheCoreArePutBackAfterAPause) {
  uint64_t calls = 5;
  uint64_t polls = 2;
  counters_lent_to_core lent;
  lent.lend(&calls);
  lent.lend(&polls);
  lent.remember_values(); // the pause
  calls += 100;
  polls += 7;
  lent.put_back_values(); // the resume
  EXPECT_EQ(calls, 5u);
  EXPECT_EQ(polls, 2u);
}
