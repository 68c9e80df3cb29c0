// Collectives in the analysis, on recorded states: every rank in a collective waits for all the
// members not in it (an AND-wait), through one node per collective that all its waiters share.
// Each test fails if the node loses a member: a waiter freed too soon, or a member not named.
#include "hang/diagnose.hpp"
#include "hang/recorded_states.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::hang {
namespace {

using namespace recorded;

constexpr uint16_t barrier = 1; // routines::collective_op::barrier

// Ranks 0..half-1 in MPI_Barrier on the world, the others as `rest` makes them.
template <typename Rest> std::vector<rank_state> half_in_barrier(int32_t size, Rest rest) {
  std::vector<rank_state> states;
  states.reserve(static_cast<size_t>(size));
  for (int32_t r = 0; r < size; ++r)
    states.push_back(r < size / 2 ? rank_in(r, size, "MPI_Barrier", no_peer, 0, 95) : rest(r));
  return states;
}

std::vector<int32_t> ranks_of(const deadlock& dl) {
  std::vector<int32_t> out;
  for (const waiting_rank& w : dl.cycle)
    out.push_back(w.rank);
  return out;
}

TEST(Collective, ABarrierStaysStuckWhileOneMissingMemberIsStuck) {
  // Ranks 0-2 in a barrier; rank 3 computes; ranks 4 and 5 receive from each other. The
  // barrier needs rank 3 and both of the deadlock: its ranks are behind that deadlock.
  const auto states = half_in_barrier(6, [](int32_t r) {
    return r == 3 ? computing(3, 6, "MPI_Send", 30, 300) : rank_in(r, 6, "MPI_Recv", 9 - r, 1, 40);
  });
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  EXPECT_EQ(ranks_of(d.deadlocks[0]), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(d.deadlocks[0].blocked_behind, (std::vector<int32_t>{0, 1, 2}));
  // And they wait for the computing rank: the chain names it.
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 3);
  EXPECT_EQ(d.computing[0].waiting_directly, (std::vector<int32_t>{0, 1, 2}));
  ASSERT_EQ(d.computing[0].chain.size(), 1u);
  EXPECT_EQ(d.computing[0].chain[0].targets, (std::vector<int32_t>{3, 4, 5}));
  // The same ranks with the deadlock's ranks computing instead: nobody is stuck.
  const auto free_states = half_in_barrier(
      6, [](int32_t r) { return computing(r, 6, "MPI_Send", 30 + static_cast<uint32_t>(r), 300); });
  const diagnosis free = diagnose(free_states, now, threshold);
  EXPECT_TRUE(free.deadlocks.empty());
  EXPECT_EQ(free.computing.size(), 3u);
}

TEST(Collective, EachOfTwoCollectivesNamesEveryRankOfTheOther) {
  // Ranks 0-3 in MPI_Barrier, 4-7 in MPI_Allreduce on the same world: each waits for every rank
  // of the other half, and the cycles are pairs of one of each.
  const auto states =
      half_in_barrier(8, [](int32_t r) { return rank_in(r, 8, "MPI_Allreduce", no_peer, 0, 88); });
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 4u) << format_text(d);
  for (int32_t k = 0; k < 4; ++k) {
    const deadlock& dl = d.deadlocks[static_cast<size_t>(k)];
    EXPECT_EQ(ranks_of(dl), (std::vector<int32_t>{k, k + 4}));
    EXPECT_EQ(dl.cycle[0].targets, (std::vector<int32_t>{4, 5, 6, 7}));
    EXPECT_EQ(dl.cycle[1].targets, (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(dl.cycle[0].waits_for,
              "ranks 4-7 to enter MPI_Barrier on its communicator (8 ranks)");
  }
  const auto j = nlohmann::json::parse(format_json(d));
  EXPECT_EQ(j["deadlocks"][3]["cycle"][1]["targets"], nlohmann::json({0, 1, 2, 3}));
}

TEST(Collective, ABarrierBehindARingIsBehindItWhole) {
  // Ranks 0-4 in a barrier; ranks 5-9 receive each from the one before (a ring): one deadlock,
  // the barrier's ranks behind it.
  const auto states = half_in_barrier(
      10, [](int32_t r) { return rank_in(r, 10, "MPI_Recv", r == 5 ? 9 : r - 1, 7, 40); });
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  EXPECT_EQ(rank_ranges(ranks_of(d.deadlocks[0])), "5-9");
  EXPECT_EQ(d.deadlocks[0].blocked_behind, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(d.computing.empty());
}

TEST(Collective, AMissingMemberWithTwoThreadsIsFollowedThroughBoth) {
  // Ranks 0-1 in a barrier; rank 2 has two threads, one receiving from rank 3, one from rank 0;
  // rank 3 receives from rank 2.
  auto states =
      half_in_barrier(4, [](int32_t r) { return rank_in(r, 4, "MPI_Recv", 5 - r, 1, 40); });
  thread_state second = states[2].threads[0];
  second.peer = 0;
  second.os_thread = 7;
  states[2].threads.push_back(second);
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 2u) << format_text(d);
  EXPECT_EQ(ranks_of(d.deadlocks[0]), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(d.deadlocks[0].cycle[0].targets, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(d.deadlocks[0].cycle[1].thread, 7u);
  EXPECT_EQ(ranks_of(d.deadlocks[1]), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(d.deadlocks[1].blocked_behind, (std::vector<int32_t>{1}));
}

TEST(Collective, AWaitallOnAnIbarrierAndASendWaitsForBoth) {
  // Rank 0 waits for its Ibarrier (rank 2 has not started it) and its send to rank 1, which
  // receives from rank 0 with another tag: it needs rank 1 and rank 2.
  const pending_op ibarrier{op_kind::collective, true, no_peer, 0, 0, world(3), barrier};
  const pending_op send{op_kind::send, true, 1, 5, 64, world(3)};
  rank_state a = rank_in(0, 3, "MPI_Waitall", no_peer, 0, 10);
  a.threads[0].pending = {ibarrier, send};
  a.threads[0].pending_total = a.threads[0].waited_total = 2;
  rank_state b = rank_in(1, 3, "MPI_Wait", no_peer, 0, 20);
  b.threads[0].pending = {ibarrier};
  b.threads[0].pending_total = b.threads[0].waited_total = 1;
  // Rank 2 computes: both wait for it, and nothing else is stuck.
  const diagnosis d = diagnose({a, b, computing(2, 3, "MPI_Send", 30, 300)}, now, threshold);
  ASSERT_EQ(d.computing.size(), 1u) << format_text(d);
  EXPECT_EQ(d.computing[0].waiting_directly, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(d.deadlocks.empty());
  // Rank 2 receiving from rank 0 instead: rank 0 needs rank 1 (its send) and rank 2 (the
  // Ibarrier's missing member), rank 1 needs rank 2: one cycle of the three.
  const diagnosis stuck = diagnose({a, b, rank_in(2, 3, "MPI_Recv", 0, 3, 30)}, now, threshold);
  ASSERT_EQ(stuck.deadlocks.size(), 1u) << format_text(stuck);
  EXPECT_EQ(ranks_of(stuck.deadlocks[0]), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(stuck.deadlocks[0].cycle[0].targets, (std::vector<int32_t>{1, 2}));
}

} // namespace
} // namespace strata::hang
