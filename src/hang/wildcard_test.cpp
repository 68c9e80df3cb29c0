// Wildcard receives (MPI_ANY_SOURCE) in the analysis, on recorded states: a wildcard waits for
// any one member of its communicator but itself (an OR-wait, as MUST defines it), so it is in a
// deadlock only when every possible sender is blocked.
#include "hang/diagnose.hpp"
#include "hang/recorded_states.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace strata::hang {
namespace {

using namespace recorded;

// The even ranks of a world of 8, as MPI_Comm_split by parity makes them.
constexpr communicator evens{7, 4, 0, 2};

rank_state on(rank_state r, const communicator& comm) {
  r.threads[0].comm = comm;
  return r;
}

TEST(Wildcard, EveryRankInAWildcardReceiveIsADeadlockOfNamedCalls) {
  std::vector<rank_state> states;
  states.reserve(6);
  for (int32_t r = 0; r < 6; ++r)
    states.push_back(rank_in(r, 6, "MPI_Recv", any_source, 9, 63));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.computing.empty());
  // Each rank is in a cycle, named with its call and line.
  std::set<int32_t> in_cycles;
  for (const deadlock& dl : d.deadlocks) {
    EXPECT_GE(dl.cycle.size(), 2u);
    for (const waiting_rank& w : dl.cycle) {
      in_cycles.insert(w.rank);
      EXPECT_EQ(w.routine, "MPI_Recv");
      EXPECT_EQ(w.line, 63u);
      EXPECT_EQ(w.waits_for, "a message from any rank of its communicator (tag 9)");
    }
  }
  EXPECT_EQ(in_cycles.size(), 6u) << format_text(d);
  const std::string text = format_text(d);
  EXPECT_NE(text.find("DEADLOCK: ranks 0-1 wait for each other in a cycle:\n"
                      "  rank 0 in MPI_Recv at app.c:63 (main)\n"
                      "    waits for a message from any rank of its communicator (tag 9)\n"),
            std::string::npos)
      << text;
  // Each receive is one nothing can match.
  ASSERT_EQ(d.unmatched.size(), 6u);
  for (const unmatched_receive& u : d.unmatched) {
    EXPECT_EQ(u.reason, unmatched_receive::why::nothing_matches);
    EXPECT_EQ(u.source, any_source);
  }
  // Whom it waits for, in the JSON: any member of the world but itself.
  const auto j = nlohmann::json::parse(format_json(d));
  const auto& member = j["deadlocks"][0]["cycle"][0];
  EXPECT_EQ(member["targets"], nlohmann::json::array());
  EXPECT_EQ(member["any_of"], nlohmann::json::parse(R"([{"communicator": 1,
      "communicator_size": 6, "first": 0, "stride": 1}])"));
  EXPECT_EQ(j["unmatched_receives"][0]["source"], "any");
}

TEST(Wildcard, OneSenderComputingFreesTheWildcardAndIsNamed) {
  // Rank 0 takes any message; ranks 1-2 wait for rank 0; rank 3 computes: it may still send to
  // rank 0, so nobody is in a deadlock, and rank 3 is what they all wait for.
  const diagnosis d = diagnose(
      {rank_in(0, 4, "MPI_Recv", any_source, any_tag, 70), rank_in(1, 4, "MPI_Recv", 0, 1, 80),
       rank_in(2, 4, "MPI_Recv", 0, 1, 80), computing(3, 4, "MPI_Allreduce", 90, 300)},
      now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  EXPECT_TRUE(d.unmatched.empty()) << format_text(d);
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 3);
  EXPECT_EQ(d.computing[0].waiting_directly, std::vector<int32_t>{0});
  EXPECT_EQ(d.computing[0].waiting_indirectly, (std::vector<int32_t>{1, 2}));
  ASSERT_EQ(d.computing[0].chain.size(), 2u);
  EXPECT_EQ(d.computing[0].chain[0].rank, 1);
  EXPECT_EQ(d.computing[0].chain[1].rank, 0);
  const std::string text = format_text(d);
  EXPECT_NE(text.find("WAITING FOR A COMPUTING RANK: rank 3 has been outside MPI for 300.0 s, "
                      "since MPI_Allreduce at app.c:90 (main)\n"
                      "  Waiting for it directly: rank 0\n"
                      "  Waiting through them: ranks 1-2\n"),
            std::string::npos)
      << text;
}

TEST(Wildcard, EveryPossibleSenderBlockedIsADeadlock) {
  // As above with rank 3 also waiting for rank 0: no member can send to rank 0.
  const diagnosis d = diagnose(
      {rank_in(0, 4, "MPI_Recv", any_source, any_tag, 70), rank_in(1, 4, "MPI_Recv", 0, 1, 80),
       rank_in(2, 4, "MPI_Recv", 0, 1, 80), rank_in(3, 4, "MPI_Recv", 0, 1, 80)},
      now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  ASSERT_EQ(d.deadlocks[0].cycle.size(), 2u);
  EXPECT_EQ(d.deadlocks[0].cycle[0].rank, 0);
  EXPECT_EQ(d.deadlocks[0].cycle[1].rank, 1);
  EXPECT_EQ(d.deadlocks[0].blocked_behind, (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(d.computing.empty());
  ASSERT_EQ(d.unmatched.size(), 1u);
  EXPECT_EQ(d.unmatched[0].receiver.rank, 0);
}

TEST(Wildcard, OnADerivedCommunicatorOnlyItsMembersCanSend) {
  // Rank 2 takes any message on the even ranks' communicator; ranks 0, 4 and 6 wait for it; the
  // odd ranks compute, but they are not members: they cannot free it.
  std::vector<rank_state> states;
  for (int32_t r = 0; r < 8; ++r)
    if (r % 2 == 1)
      states.push_back(computing(r, 8, "MPI_Barrier", 20, 100));
    else if (r == 2)
      states.push_back(on(rank_in(r, 8, "MPI_Recv", any_source, 3, 70), evens));
    else
      states.push_back(on(rank_in(r, 8, "MPI_Recv", 2, 3, 80), evens));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  ASSERT_EQ(d.deadlocks[0].cycle.size(), 2u);
  EXPECT_EQ(d.deadlocks[0].cycle[0].rank, 0);
  EXPECT_EQ(d.deadlocks[0].cycle[1].rank, 2);
  EXPECT_EQ(d.deadlocks[0].blocked_behind, (std::vector<int32_t>{4, 6}));
  EXPECT_TRUE(d.computing.empty()) << "nobody waits for an odd rank";
  const auto j = nlohmann::json::parse(format_json(d));
  EXPECT_EQ(j["deadlocks"][0]["cycle"][0]["targets"], nlohmann::json::array({2}));
  EXPECT_EQ(j["deadlocks"][0]["cycle"][1]["any_of"][0]["stride"], 2);
  EXPECT_EQ(j["deadlocks"][0]["cycle"][1]["any_of"][0]["communicator"], 7);

  // Rank 6 computing instead: a member that may still send to rank 2; the others wait for it.
  states[6] = computing(6, 8, "MPI_Allreduce", 90, 200);
  const diagnosis freed = diagnose(states, now, threshold);
  EXPECT_TRUE(freed.deadlocks.empty()) << format_text(freed);
  ASSERT_EQ(freed.computing.size(), 1u) << format_text(freed);
  EXPECT_EQ(freed.computing[0].rank, 6);
  EXPECT_EQ(freed.computing[0].waiting_directly, std::vector<int32_t>{2});
  EXPECT_EQ(freed.computing[0].waiting_indirectly, (std::vector<int32_t>{0, 4}));
}

TEST(Wildcard, ASendrecvFromAnySourceWaitsForItsDestinationAndAnyOneSender) {
  // Rank 0 sends to rank 1 (computing) and takes a message from any rank; rank 2 waits for rank
  // 0. Rank 1 may receive and may send, so rank 0 is not stuck, nor is rank 2.
  rank_state zero = rank_in(0, 3, "MPI_Sendrecv", 1, 4, 30);
  zero.threads[0].peer2 = any_source;
  zero.threads[0].tag2 = any_tag;
  const diagnosis d =
      diagnose({zero, computing(1, 3, "MPI_Barrier", 9, 100), rank_in(2, 3, "MPI_Recv", 0, 5, 40)},
               now, threshold);
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 1);
}

// Rank 0 in MPI_Waitall on a receive from any rank (tag 9) and one from rank 1 (tag 5).
rank_state waitall_with_a_wildcard(int32_t size) {
  rank_state zero = rank_in(0, size, "MPI_Waitall", no_peer, 0, 70);
  zero.threads[0].pending = {{op_kind::recv, true, any_source, 9, 8, world(size)},
                             {op_kind::recv, true, 1, 5, 8, world(size)}};
  zero.threads[0].pending_total = zero.threads[0].waited_total = 2;
  return zero;
}

TEST(Wildcard, AWaitallOnAWildcardBesideAnotherReceiveWaitsForEach) {
  // Ranks 1 and 2 receive from rank 0 (tag 3): rank 0 needs rank 1's message and anyone's, so
  // ranks 0 and 1 are a deadlock, rank 2 behind it; the wildcard nothing can match is named.
  const diagnosis d = diagnose({waitall_with_a_wildcard(3), rank_in(1, 3, "MPI_Recv", 0, 3, 40),
                                rank_in(2, 3, "MPI_Recv", 0, 3, 41)},
                               now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  const deadlock& dl = d.deadlocks[0];
  ASSERT_EQ(dl.cycle.size(), 2u);
  EXPECT_EQ(dl.cycle[0].rank, 0);
  EXPECT_EQ(dl.cycle[1].rank, 1);
  EXPECT_EQ(dl.cycle[0].waits_for, "a message from any rank of its communicator (tag 9); a message "
                                   "from rank 1 (tag 5)");
  EXPECT_EQ(dl.cycle[0].targets, (std::vector<int32_t>{1}));
  ASSERT_EQ(dl.cycle[0].any_of.size(), 1u);
  EXPECT_EQ(dl.cycle[0].any_of[0], world(3));
  EXPECT_EQ(dl.blocked_behind, (std::vector<int32_t>{2}));
  ASSERT_EQ(d.unmatched.size(), 1u);
  EXPECT_EQ(d.unmatched[0].receiver.rank, 0);
  EXPECT_EQ(d.unmatched[0].source, any_source);
  EXPECT_EQ(d.unmatched[0].tag, 9);
}

TEST(Wildcard, AWaitallOnAWildcardNeedsItsOtherRequestsToo) {
  // Rank 2 computes and may send to rank 0, but rank 0 needs rank 1's message as well: the
  // deadlock of ranks 0 and 1 stays, and the wildcard is not one nothing can match.
  const diagnosis d = diagnose({waitall_with_a_wildcard(3), rank_in(1, 3, "MPI_Recv", 0, 3, 40),
                                computing(2, 3, "MPI_Send", 50, 100)},
                               now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  EXPECT_EQ(d.deadlocks[0].cycle.size(), 2u);
  EXPECT_TRUE(d.unmatched.empty()) << format_text(d);
  // Rank 1 computing instead: it can send the named message, rank 2 anyone's; nothing is stuck.
  const diagnosis free = diagnose({waitall_with_a_wildcard(3), computing(1, 3, "MPI_Send", 50, 100),
                                   rank_in(2, 3, "MPI_Recv", 0, 3, 41)},
                                  now, threshold);
  EXPECT_TRUE(free.deadlocks.empty()) << format_text(free);
  ASSERT_EQ(free.computing.size(), 1u);
  EXPECT_EQ(free.computing[0].rank, 1);
  EXPECT_EQ(free.computing[0].waiting_directly, (std::vector<int32_t>{0}));
  EXPECT_EQ(free.computing[0].waiting_indirectly, (std::vector<int32_t>{2}));
}

TEST(Wildcard, TheJsonOfAThousandWildcardReceivesIsLinear) {
  // Each receive names its communicator, not its 999 possible senders (a list of them each, in
  // the unmatched receives and the cycles, would be two million numbers, 20 MB).
  std::vector<rank_state> states;
  states.reserve(1000);
  for (int32_t r = 0; r < 1000; ++r)
    states.push_back(rank_in(r, 1000, "MPI_Recv", any_source, 9, 63));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.unmatched.size(), 1000u);
  EXPECT_LT(format_json(d).size(), 2'000'000u);
}

} // namespace
} // namespace strata::hang
