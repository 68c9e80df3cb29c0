#include "analyzer/wait_states.hpp"

#include <gtest/gtest.h>
#include <otf2/OTF2_Events.h>

#include <map>
#include <vector>

namespace strata::analyze {
namespace {

struct member {
  uint64_t enter, leave;
};

std::map<uint32_t, uint64_t> waits(wait_pattern kind, const std::vector<member>& m,
                                   uint32_t root = no_member) {
  std::map<uint32_t, uint64_t> out;
  collective_waits(kind, m, root, [&](uint32_t i, uint64_t ticks) { out[i] += ticks; });
  return out;
}

TEST(WaitStates, LateSenderWaitsForTheSendAtMostUntilItLeaves) {
  EXPECT_EQ(late_sender_wait(150, 100, 200), 50u);
  EXPECT_EQ(late_sender_wait(300, 100, 200), 100u); // left before the send began (a test)
  EXPECT_EQ(late_sender_wait(90, 100, 200), 0u);    // the send was first
  EXPECT_EQ(late_sender_wait(100, 100, 200), 0u);
}

TEST(WaitStates, LateReceiverOnlyWhilstTheSendIsInProgress) {
  EXPECT_EQ(late_receiver_wait(100, 200, 160), 60u);
  EXPECT_EQ(late_receiver_wait(100, 200, 90), 0u);  // posted before the send
  EXPECT_EQ(late_receiver_wait(100, 200, 200), 0u); // the send had returned
}

TEST(WaitStates, CollectivesByTheirPattern) {
  wait_pattern kind{};
  ASSERT_TRUE(collective_pattern(OTF2_COLLECTIVE_OP_BARRIER, kind));
  EXPECT_EQ(kind, wait_at_barrier);
  ASSERT_TRUE(collective_pattern(OTF2_COLLECTIVE_OP_ALLTOALLV, kind));
  EXPECT_EQ(kind, wait_at_nxn);
  ASSERT_TRUE(collective_pattern(OTF2_COLLECTIVE_OP_SCATTERV, kind));
  EXPECT_EQ(kind, late_broadcast);
  ASSERT_TRUE(collective_pattern(OTF2_COLLECTIVE_OP_GATHER, kind));
  EXPECT_EQ(kind, early_reduce);
  EXPECT_FALSE(collective_pattern(OTF2_COLLECTIVE_OP_SCAN, kind));
  EXPECT_STREQ(pattern_names[early_reduce], "early_reduce");
}

TEST(WaitStates, NxNEveryoneWaitsForTheLastToEnter) {
  const std::vector<member> m = {{100, 400}, {250, 400}, {300, 401}, {120, 200}};
  // The last member entered at 300; member 3 left at 200, so it waited only until then.
  EXPECT_EQ(waits(wait_at_nxn, m), (std::map<uint32_t, uint64_t>{{0, 200}, {1, 50}, {3, 80}}));
  EXPECT_EQ(waits(wait_at_barrier, m, 1), waits(wait_at_nxn, m)); // a root changes nothing
  EXPECT_TRUE(waits(wait_at_nxn, {{100, 200}}).empty());          // one member waits for nobody
}

TEST(WaitStates, LateBroadcastTheOthersWaitForTheRoot) {
  const std::vector<member> m = {{100, 400}, {300, 350}, {50, 120}};
  EXPECT_EQ(waits(late_broadcast, m, 1), (std::map<uint32_t, uint64_t>{{0, 200}, {2, 70}}));
  EXPECT_TRUE(waits(late_broadcast, m, no_member).empty()); // no root: nothing to say
  EXPECT_TRUE(waits(late_broadcast, m, 7).empty());
}

TEST(WaitStates, EarlyReduceTheRootWaitsForTheFirstOther) {
  const std::vector<member> m = {{100, 400}, {300, 350}, {250, 260}};
  EXPECT_EQ(waits(early_reduce, m, 0), (std::map<uint32_t, uint64_t>{{0, 150}}));
  EXPECT_TRUE(waits(early_reduce, m, 1).empty()); // the root came late: no early reduce
  const std::vector<member> short_root = {{100, 180}, {300, 350}};
  EXPECT_EQ(waits(early_reduce, short_root, 0), (std::map<uint32_t, uint64_t>{{0, 80}}));
}

} // namespace
} // namespace strata::analyze
