// The analysis on recorded states, each a way programs hang, without MPI.
#include "hang/diagnose.hpp"
#include "hang/recorded_states.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::hang {
namespace {

using namespace recorded;

TEST(RankRanges, MergesRunsInAnyOrder) {
  EXPECT_EQ(rank_ranges({7, 0, 2, 1, 3, 3}), "0-3,7");
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({5}), "5");
  EXPECT_EQ(rank_ranges({1, 3, 4}), "1,3-4");
}

TEST(Diagnose, ThreadsTheStatesDoNotDescribeAreCountedPerRank) {
  std::vector<rank_state> states{rank_in(0, 3, "MPI_Recv", 1, 7, 12),
                                 rank_in(1, 3, "MPI_Recv", 2, 7, 18),
                                 rank_in(2, 3, "MPI_Recv", 0, 7, 24)};
  states[0].threads_not_described = 55;
  states[2].threads_not_described = 55;
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_EQ(d.threads_not_described, (std::vector<std::pair<int32_t, uint32_t>>{{0, 55}, {2, 55}}));
  EXPECT_TRUE(d.deadlocks.empty()) << "ranks 0 and 2 may have a thread that computes";
  const std::string text = format_text(d);
  EXPECT_NE(text.find("Not described: 55 threads of ranks 0,2 (more threads than the state "
                      "keeps)"),
            std::string::npos)
      << text;
  EXPECT_NE(format_json(d).find("\"threads_not_described\": [\n    {\n      \"rank\": 0,"),
            std::string::npos)
      << format_json(d);
}

TEST(Diagnose, ARankWithAThreadNotDescribedIsNotJudgedBlocked) {
  // Ranks 0 and 1 receive from each other, but rank 1 has a thread that called MPI and that its
  // state does not describe: it may compute and send, so no deadlock is claimed, and rank 1 is
  // named as what rank 0 waits for.
  std::vector<rank_state> states{rank_in(0, 2, "MPI_Recv", 1, 7, 12),
                                 rank_in(1, 2, "MPI_Recv", 0, 7, 18)};
  ASSERT_EQ(diagnose(states, now, threshold).deadlocks.size(), 1u);
  states[1].threads_not_described = 1;
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang); // nothing it shows moved: still judged a hang
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  ASSERT_EQ(d.computing.size(), 1u) << format_text(d);
  EXPECT_EQ(d.computing[0].rank, 1);
  EXPECT_EQ(d.computing[0].threads_not_described, 1u);
  EXPECT_EQ(d.computing[0].waiting_directly, std::vector<int32_t>{0});
  const std::string text = format_text(d);
  EXPECT_NE(text.find("WAITING FOR A RANK WITH THREADS NOT DESCRIBED: rank 1 has 1 thread that "
                      "called MPI and that its state does not describe (they may compute or "
                      "send); its described threads wait inside MPI, e.g. in MPI_Recv at "
                      "app.c:18 (main)\n"
                      "  Waiting for it directly: rank 0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json::parse(format_json(d))["waiting_for"][0]["state"], "not_described");
}

TEST(Diagnose, ARankWaitingForItselfWithThreadsNotDescribedIsNoDeadlock) {
  // Every described thread of the only rank receives from it; 55 more are not described.
  rank_state zero = rank_in(0, 1, "MPI_Recv", 0, 1, 30);
  zero.threads.push_back(zero.threads[0]);
  zero.threads[1].tag = 2;
  zero.threads_not_described = 55;
  const diagnosis d = diagnose({zero}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  EXPECT_NE(format_text(d).find("No cause found in the states: the ranks wait in calls whose "
                                "peers the states do not name, or for threads they do not "
                                "describe"),
            std::string::npos)
      << format_text(d);
}

TEST(Diagnose, TwoRanksReceivingFromEachOtherAreADeadlockWithTheirLines) {
  const diagnosis d = diagnose(
      {rank_in(0, 2, "MPI_Recv", 1, 7, 12), rank_in(1, 2, "MPI_Recv", 0, 7, 18)}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  const auto& cycle = d.deadlocks[0].cycle;
  ASSERT_EQ(cycle.size(), 2u);
  EXPECT_EQ(cycle[0].rank, 0);
  EXPECT_EQ(cycle[0].line, 12u);
  EXPECT_EQ(cycle[0].waits_for, "a message from rank 1 (tag 7)");
  EXPECT_EQ(cycle[1].rank, 1);
  EXPECT_EQ(cycle[1].line, 18u);
  EXPECT_TRUE(d.computing.empty());
  EXPECT_TRUE(d.unmatched.empty());
  const std::string text = format_text(d);
  EXPECT_NE(text.find("DEADLOCK: ranks 0-1 wait for each other"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 in MPI_Recv at app.c:12 (main)"), std::string::npos) << text;
}

TEST(Diagnose, SendSendWithLargeMessagesIsADeadlock) {
  const diagnosis d = diagnose(
      {rank_in(0, 2, "MPI_Send", 1, 0, 30), rank_in(1, 2, "MPI_Send", 0, 0, 30)}, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_EQ(d.deadlocks[0].cycle[0].waits_for,
            "rank 1 to receive its message (tag 0, 1048576 bytes)");
  // The large-count twins wait as their base routines do (the routine table says so).
  const diagnosis twins =
      diagnose({rank_in(0, 2, "MPI_Send_c", 1, 0, 30), rank_in(1, 2, "MPI_Ssend_c", 0, 0, 30)}, now,
               threshold);
  EXPECT_EQ(twins.deadlocks.size(), 1u);
}

TEST(Diagnose, AMatchingSendAndReceiveInProgressIsNotADeadlock) {
  // A receive and the send it matches, both still inside MPI: the transfer is under way.
  const diagnosis d = diagnose(
      {rank_in(0, 2, "MPI_Recv", 1, 7, 12), rank_in(1, 2, "MPI_Send", 0, 7, 20)}, now, threshold);
  EXPECT_TRUE(d.deadlocks.empty());
  EXPECT_TRUE(d.unmatched.empty());
}

TEST(Diagnose, ARankThatNeverReachesTheCollectiveIsNamedWithItsLastCallAndTime) {
  std::vector<rank_state> states;
  states.reserve(4);
  for (int32_t r = 0; r < 4; ++r)
    states.push_back(r == 2 ? computing(2, 4, "MPI_Allreduce", 88, 300)
                            : rank_in(r, 4, "MPI_Barrier", no_peer, 0, 40));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.deadlocks.empty());
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 2);
  EXPECT_EQ(d.computing[0].last_routine, "MPI_Allreduce");
  EXPECT_EQ(d.computing[0].line, 88u);
  EXPECT_EQ(d.computing[0].computing_ns, 300 * second);
  EXPECT_EQ(rank_ranges(d.computing[0].waiting_directly), "0-1,3");
  const std::string text = format_text(d);
  EXPECT_NE(text.find("rank 2 has been outside MPI for 300.0 s, since MPI_Allreduce at app.c:88"),
            std::string::npos)
      << text;
}

TEST(Diagnose, AChainEndsAtTheComputingRank) {
  // 0 waits for 1, 1 waits for 2, 2 computes.
  const diagnosis d =
      diagnose({rank_in(0, 3, "MPI_Recv", 1, 0, 10), rank_in(1, 3, "MPI_Recv", 2, 0, 20),
                computing(2, 3, "MPI_Send", 30, 120)},
               now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.deadlocks.empty());
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 2);
  EXPECT_EQ(d.computing[0].waiting_directly, std::vector<int32_t>{1});
  EXPECT_EQ(d.computing[0].waiting_indirectly, std::vector<int32_t>{0});
  ASSERT_EQ(d.computing[0].chain.size(), 2u);
  EXPECT_EQ(d.computing[0].chain[0].rank, 0);
  EXPECT_EQ(d.computing[0].chain[1].rank, 1);
}

TEST(Diagnose, AReceiveWithTheWrongTagNamesTheSendersPendingSend) {
  rank_state sender = rank_in(0, 2, "MPI_Wait", no_peer, 0, 50);
  sender.threads[0].pending.push_back({op_kind::recv, true, 1, 3, 8, world(2)});
  sender.threads[0].pending.push_back({op_kind::send, false, 1, 6, 8, world(2)});
  sender.threads[0].pending_total = 2;
  const diagnosis d = diagnose({sender, rank_in(1, 2, "MPI_Recv", 0, 5, 60)}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_FALSE(d.unmatched.empty());
  const unmatched_receive& u = d.unmatched[0];
  EXPECT_EQ(u.reason, unmatched_receive::why::wrong_tag);
  EXPECT_EQ(u.receiver.rank, 1);
  EXPECT_EQ(u.receiver.line, 60u);
  ASSERT_EQ(u.sends.size(), 1u);
  EXPECT_EQ(u.sends[0].sender, 0);
  EXPECT_EQ(u.sends[0].tag, 6);
  EXPECT_TRUE(u.sends[0].pending);
  const std::string text = format_text(d);
  EXPECT_NE(text.find("UNMATCHED RECEIVE (wrong tag): rank 1 in MPI_Recv at app.c:60"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 0 sends to it with tag 6 (an MPI_Isend not yet completed)"),
            std::string::npos)
      << text;
}

TEST(Diagnose, AReceiveFromTheWrongSourceIsNamed) {
  // Rank 2 receives from 0, but it is rank 1 that sends to it (with the right tag).
  const diagnosis d =
      diagnose({rank_in(0, 3, "MPI_Barrier", no_peer, 0, 9), rank_in(1, 3, "MPI_Send", 2, 4, 20),
                rank_in(2, 3, "MPI_Recv", 0, 4, 30)},
               now, threshold);
  ASSERT_FALSE(d.unmatched.empty());
  EXPECT_EQ(d.unmatched[0].reason, unmatched_receive::why::wrong_source);
  EXPECT_EQ(d.unmatched[0].sends[0].sender, 1);
  EXPECT_EQ(d.unmatched[0].sends[0].line, 20u);
}

TEST(Diagnose, AWildcardReceiveNothingMatchesIsNamed) {
  // Rank 0 takes any message; the others wait in a barrier for rank 0.
  std::vector<rank_state> states{rank_in(0, 4, "MPI_Recv", any_source, any_tag, 70)};
  for (int32_t r = 1; r < 4; ++r)
    states.push_back(rank_in(r, 4, "MPI_Barrier", no_peer, 0, 80));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_FALSE(d.deadlocks.empty());
  ASSERT_EQ(d.unmatched.size(), 1u);
  EXPECT_EQ(d.unmatched[0].reason, unmatched_receive::why::nothing_matches);
  EXPECT_EQ(d.unmatched[0].source, any_source);
  EXPECT_EQ(d.unmatched[0].receiver.line, 70u);
  EXPECT_NE(format_text(d).find("UNMATCHED RECEIVE (nothing matches): rank 0 in MPI_Recv"),
            std::string::npos);
}

TEST(Diagnose, AWildcardReceiveIsNotStuckWhileARankItWaitsForComputes) {
  const diagnosis d =
      diagnose({rank_in(0, 3, "MPI_Recv", any_source, any_tag, 70),
                rank_in(1, 3, "MPI_Barrier", no_peer, 0, 80), computing(2, 3, "MPI_Send", 5, 100)},
               now, threshold);
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  EXPECT_TRUE(d.unmatched.empty());
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 2);
}

TEST(Diagnose, CollectivesInADifferentOrderAreADeadlock) {
  const diagnosis d =
      diagnose({rank_in(0, 2, "MPI_Bcast", 0, 0, 10), rank_in(1, 2, "MPI_Barrier", no_peer, 0, 11)},
               now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_NE(d.deadlocks[0].cycle[0].waits_for.find("to enter MPI_Bcast"), std::string::npos);
}

TEST(Diagnose, ARecentCallMeansProgressNotAHang) {
  std::vector<rank_state> states{rank_in(0, 2, "MPI_Recv", 1, 0, 10)};
  states.push_back(computing(1, 2, "MPI_Send", 20, 3)); // computing for 3 s < 10 s
  const diagnosis d = diagnose(states, now, threshold);
  EXPECT_EQ(d.result, verdict::progressing);
  EXPECT_TRUE(d.computing.empty());
  EXPECT_NE(
      format_text(d).find("No hang: the job made progress (rank 1 completed MPI_Send 3.0 s ago"),
      std::string::npos);
  // The same deadlock entered just now is not reported yet.
  EXPECT_EQ(diagnose({rank_in(0, 2, "MPI_Recv", 1, 7, 12, 2), rank_in(1, 2, "MPI_Recv", 0, 7, 18)},
                     now, threshold)
                .result,
            verdict::progressing);
}

TEST(Diagnose, EveryRankComputingIsNoHang) {
  const diagnosis d = diagnose(
      {computing(0, 2, "MPI_Bcast", 1, 600), computing(1, 2, "MPI_Bcast", 1, 600)}, now, threshold);
  EXPECT_EQ(d.result, verdict::all_computing);
  EXPECT_TRUE(d.deadlocks.empty());
}

TEST(Diagnose, AMissingRankIsNamedAsWhatTheOthersWaitFor) {
  const diagnosis d = diagnose({rank_in(0, 2, "MPI_Recv", 1, 0, 10)}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_EQ(d.missing_ranks, std::vector<int32_t>{1});
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_FALSE(d.computing[0].has_state);
}

TEST(Diagnose, ARankThatFinalizedIsNamedAsSuch) {
  rank_state done = computing(1, 2, "MPI_Finalize", 80, 12);
  done.threads[0].phase = thread_phase::finalized;
  const diagnosis d = diagnose({rank_in(0, 2, "MPI_Recv", 1, 0, 10), done}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_TRUE(d.computing[0].finalized);
  EXPECT_NE(format_text(d).find("WAITING FOR A FINALIZED RANK: rank 1 called MPI_Finalize 12.0 s "
                                "ago at app.c:80 (main)"),
            std::string::npos)
      << format_text(d);
}

TEST(Diagnose, WaitallOnRequestsWaitsForTheirPeers) {
  rank_state a = rank_in(0, 2, "MPI_Waitall", no_peer, 0, 10);
  a.threads[0].pending = {{op_kind::recv, true, 1, 1, 8, world(2)}};
  rank_state b = rank_in(1, 2, "MPI_Waitall", no_peer, 0, 20);
  b.threads[0].pending = {{op_kind::recv, true, 0, 1, 8, world(2)}};
  const diagnosis d = diagnose({a, b}, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_EQ(d.deadlocks[0].cycle.size(), 2u);
}

TEST(Diagnose, AWaitOnAWildcardReceiveNothingMatchesIsNamed) {
  rank_state a = rank_in(0, 2, "MPI_Wait", no_peer, 0, 10);
  a.threads[0].pending = {{op_kind::recv, true, any_source, any_tag, 4, world(2)}};
  a.threads[0].pending_total = a.threads[0].waited_total = 1;
  const diagnosis d = diagnose({a, rank_in(1, 2, "MPI_Barrier", no_peer, 0, 20)}, now, threshold);
  ASSERT_EQ(d.unmatched.size(), 1u);
  EXPECT_EQ(d.unmatched[0].reason, unmatched_receive::why::nothing_matches);
  EXPECT_NE(format_text(d).find("UNMATCHED RECEIVE (nothing matches): rank 0 in MPI_Wait"),
            std::string::npos);
  ASSERT_EQ(d.deadlocks.size(), 1u);
}

TEST(Diagnose, AWaitWhoseRequestsAreNotAllListedSaysSo) {
  // A Waitany with one of its two requests unknown: the unknown one may complete.
  rank_state a = rank_in(0, 2, "MPI_Waitany", no_peer, 0, 10);
  a.threads[0].pending = {{op_kind::recv, true, 1, 1, 8, world(2)}};
  a.threads[0].pending_total = a.threads[0].waited_total = 2;
  rank_state b = rank_in(1, 2, "MPI_Recv", 0, 1, 20);
  EXPECT_TRUE(diagnose({a, b}, now, threshold).deadlocks.empty());
  // A Waitall: the known one is enough for the cycle, and the rest is said.
  a.threads[0].routine = "MPI_Waitall";
  const diagnosis d = diagnose({a, b}, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_NE(format_text(d).find("1 more request not in the state"), std::string::npos);
  // Its requests counted but none known (not among the latest posts): nothing is claimed.
  a.threads[0].pending = {{op_kind::send, false, 1, 2, 8, world(2)}};
  EXPECT_TRUE(diagnose({a, b}, now, threshold).deadlocks.empty());
}

TEST(Diagnose, AWaitOnAnIbarrierWaitsForTheMembersThatHaveNotStartedIt) {
  constexpr uint16_t barrier = 1; // routines::collective_op::barrier
  ASSERT_EQ(collective_name(barrier), "barrier");
  const pending_op ibarrier{op_kind::collective, true, no_peer, 0, 0, world(4), barrier};
  // Ranks 0 and 1 wait on it; rank 2 posted it and computes; rank 3 never started it.
  rank_state a = rank_in(0, 4, "MPI_Wait", no_peer, 0, 10);
  a.threads[0].pending = {ibarrier};
  a.threads[0].pending_total = a.threads[0].waited_total = 1;
  rank_state b = a;
  b.world_rank = 1;
  rank_state c = computing(2, 4, "MPI_Ibarrier", 9, 300);
  c.threads[0].pending = {ibarrier};
  c.threads[0].pending[0].waited = false;
  c.threads[0].pending_total = 1;
  const diagnosis d = diagnose({a, b, c, computing(3, 4, "MPI_Send", 30, 300)}, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.computing.size(), 1u) << format_text(d);
  EXPECT_EQ(d.computing[0].rank, 3);
  EXPECT_EQ(d.computing[0].waiting_directly, (std::vector<int32_t>{0, 1}));
  EXPECT_NE(format_text(d).find("waits for rank 3 to enter MPI_Ibarrier on its communicator "
                                "(4 ranks)"),
            std::string::npos)
      << format_text(d);
  // Rank 3 lists requests its state does not hold: one of them may be the Ibarrier.
  rank_state many = computing(3, 4, "MPI_Send", 30, 300);
  many.threads[0].pending_total = 9;
  EXPECT_TRUE(diagnose({a, b, c, many}, now, threshold).computing.empty());
  // Another collective on that communicator is not this one.
  rank_state other = computing(3, 4, "MPI_Iallreduce", 30, 300);
  other.threads[0].pending = {{op_kind::collective, false, no_peer, 0, 4, world(4), 13}};
  other.threads[0].pending_total = 1;
  const diagnosis d2 = diagnose({a, b, c, other}, now, threshold);
  ASSERT_EQ(d2.computing.size(), 1u);
  EXPECT_EQ(d2.computing[0].rank, 3);
}

TEST(Diagnose, AWaitOnAMatchedReceiveWaitsForNobody) {
  rank_state a = rank_in(0, 2, "MPI_Wait", no_peer, 0, 10);
  a.threads[0].pending = {{op_kind::matched_recv, true, no_peer, 0, 4, {}}};
  a.threads[0].pending_total = a.threads[0].waited_total = 1;
  const diagnosis d = diagnose({a, rank_in(1, 2, "MPI_Recv", 0, 1, 20)}, now, threshold);
  EXPECT_TRUE(d.deadlocks.empty()) << format_text(d);
  EXPECT_TRUE(d.unmatched.empty());
}

TEST(Diagnose, ThreadsOfARankWaitingForEachOtherAreADeadlockWithEachThread) {
  // Under MPI_THREAD_MULTIPLE each rank's two threads receive from their own rank, each the
  // message the other sends after its receive; a third slot is unused.
  std::vector<rank_state> states;
  for (int32_t r = 0; r < 2; ++r) {
    rank_state s = rank_in(r, 2, "MPI_Recv", r, 1, 30);
    s.threads[0].os_thread = 100 + 10 * static_cast<uint64_t>(r);
    thread_state other = s.threads[0];
    other.tag = 2;
    other.line = 40;
    other.os_thread = s.threads[0].os_thread + 1;
    s.threads.push_back(other);
    s.threads.push_back(thread_state{});
    states.push_back(s);
  }
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.deadlocks.size(), 2u) << format_text(d);
  ASSERT_EQ(d.deadlocks[0].cycle.size(), 2u);
  EXPECT_EQ(d.deadlocks[0].cycle[0].thread, 100u);
  EXPECT_EQ(d.deadlocks[0].cycle[1].thread, 101u);
  const std::string text = format_text(d);
  EXPECT_NE(text.find("DEADLOCK: the threads of rank 0 wait for each other in a cycle:\n"
                      "  rank 0 (thread 100) in MPI_Recv at app.c:30 (main)\n"
                      "    waits for a message from rank 0 (tag 1)\n"
                      "  rank 0 (thread 101) in MPI_Recv at app.c:40 (main)\n"
                      "    waits for a message from rank 0 (tag 2)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("unused"), std::string::npos) << "an unused slot is no class";
  EXPECT_EQ(nlohmann::json::parse(format_json(d))["deadlocks"][0]["cycle"][1]["thread"], 101);
  // One thread of rank 1 computing: rank 1 can act, rank 0 still cannot.
  states[1].threads[1].phase = thread_phase::outside_mpi;
  EXPECT_EQ(diagnose(states, now, threshold).deadlocks.size(), 1u);
}

TEST(Diagnose, EveryThreadOfARankWaitingForItsOwnRankIsInItsCycle) {
  // Three threads of rank 0 receive from rank 0, each a message another sends after its
  // receive: any of them could free the others, so all three are the deadlock, none behind it.
  rank_state zero = rank_in(0, 2, "MPI_Recv", 0, 1, 30);
  zero.threads[0].os_thread = 100;
  for (uint32_t i = 1; i < 3; ++i) {
    thread_state other = zero.threads[0];
    other.tag = static_cast<int32_t>(i + 1);
    other.line = 30 + 10 * i;
    other.os_thread = 100 + i;
    zero.threads.push_back(other);
  }
  const diagnosis d = diagnose({zero, computing(1, 2, "MPI_Barrier", 9, 100)}, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  const auto& cycle = d.deadlocks[0].cycle;
  ASSERT_EQ(cycle.size(), 3u) << format_text(d);
  for (uint32_t i = 0; i < 3; ++i)
    EXPECT_EQ(cycle[i].thread, 100u + i);
  const std::string text = format_text(d);
  EXPECT_NE(text.find("DEADLOCK: the threads of rank 0 wait for each other in a cycle:\n"
                      "  rank 0 (thread 100) in MPI_Recv at app.c:30 (main)\n"
                      "    waits for a message from rank 0 (tag 1)\n"
                      "  rank 0 (thread 101) in MPI_Recv at app.c:40 (main)\n"
                      "    waits for a message from rank 0 (tag 2)\n"
                      "  rank 0 (thread 102) in MPI_Recv at app.c:50 (main)\n"
                      "    waits for a message from rank 0 (tag 3)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json::parse(format_json(d))["deadlocks"][0]["cycle"].size(), 3u);
}

// Two threads in each of two ranks: rank 0's first thread receives from rank 1 (tag 1) and its
// second from rank 0 (tag 3); rank 1's first from rank 1 (tag 4), its second from rank 0 (tag 2).
// `swapped`: each rank's threads in the other order in its slots.
std::vector<rank_state> threads_across_ranks(bool swapped) {
  std::vector<rank_state> states;
  const int32_t peer[2][2] = {{1, 0}, {1, 0}};
  const int32_t tag[2][2] = {{1, 3}, {4, 2}};
  for (int32_t r = 0; r < 2; ++r) {
    rank_state s = rank_in(r, 2, "MPI_Recv", peer[r][0], tag[r][0], 30);
    s.threads[0].os_thread = 100 + 10 * static_cast<uint64_t>(r);
    thread_state other = s.threads[0];
    other.peer = peer[r][1];
    other.tag = tag[r][1];
    other.line = 40;
    other.os_thread = s.threads[0].os_thread + 1;
    s.threads.push_back(other);
    if (swapped)
      std::swap(s.threads[0], s.threads[1]);
    states.push_back(s);
  }
  return states;
}

TEST(Diagnose, ThreadsOfTwoRanksWaitingForEachOtherAreOneDeadlockOfThoseThreads) {
  // Thread 100 of rank 0 waits for rank 1, whose thread 111 waits for rank 0: the cycle, named
  // with those threads; each rank's other thread waits for its own rank behind it, not a
  // deadlock of a rank's threads of its own.
  for (const bool swapped : {false, true}) {
    const diagnosis d = diagnose(threads_across_ranks(swapped), now, threshold);
    ASSERT_EQ(d.result, verdict::hang);
    ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
    const auto& cycle = d.deadlocks[0].cycle;
    ASSERT_EQ(cycle.size(), 2u) << format_text(d);
    EXPECT_EQ(cycle[0].rank, 0);
    EXPECT_EQ(cycle[0].thread, 100u);
    EXPECT_EQ(cycle[1].rank, 1);
    EXPECT_EQ(cycle[1].thread, 111u);
    EXPECT_TRUE(d.deadlocks[0].blocked_behind.empty());
    const std::string text = format_text(d);
    EXPECT_NE(text.find("DEADLOCK: threads of ranks 0-1 wait for each other in a cycle:\n"
                        "  rank 0 (thread 100) in MPI_Recv at app.c:30 (main)\n"
                        "    waits for a message from rank 1 (tag 1)\n"
                        "  rank 1 (thread 111) in MPI_Recv at app.c:40 (main)\n"
                        "    waits for a message from rank 0 (tag 2)\n"),
              std::string::npos)
        << text;
    const auto j = nlohmann::json::parse(format_json(d));
    EXPECT_EQ(j["deadlocks"][0]["cycle"][0]["thread"], 100);
    EXPECT_EQ(j["deadlocks"][0]["cycle"][1]["thread"], 111);
  }
  // A third rank waiting for rank 0 is behind that deadlock.
  std::vector<rank_state> three = threads_across_ranks(false);
  for (rank_state& s : three)
    s.world_size = 3;
  three.push_back(rank_in(2, 3, "MPI_Recv", 0, 5, 50));
  const diagnosis d = diagnose(three, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  EXPECT_EQ(d.deadlocks[0].blocked_behind, std::vector<int32_t>{2});
  // Rank 1's thread that waits for rank 0 computing instead: rank 1 can act, so can rank 0.
  std::vector<rank_state> acting = threads_across_ranks(false);
  acting[1].threads[1].phase = thread_phase::outside_mpi;
  EXPECT_TRUE(diagnose(acting, now, threshold).deadlocks.empty());
}

TEST(Diagnose, TheThreadsOfARankInTwoCyclesAreTwoDeadlocks) {
  // Rank 0's threads wait one for rank 1, one for rank 2; each of those waits for rank 0.
  rank_state zero = rank_in(0, 3, "MPI_Recv", 1, 1, 10);
  thread_state to_two = zero.threads[0];
  to_two.peer = 2;
  to_two.os_thread = 2;
  zero.threads[0].os_thread = 1;
  zero.threads.push_back(to_two);
  const diagnosis d =
      diagnose({zero, rank_in(1, 3, "MPI_Recv", 0, 1, 20), rank_in(2, 3, "MPI_Recv", 0, 1, 30)},
               now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 2u) << format_text(d);
  EXPECT_EQ(d.deadlocks[0].cycle[0].thread, 1u);
  EXPECT_EQ(d.deadlocks[0].cycle[1].rank, 1);
  EXPECT_EQ(d.deadlocks[1].cycle[0].thread, 2u);
  EXPECT_EQ(d.deadlocks[1].cycle[1].rank, 2);
}

TEST(Diagnose, ARankReceivingFromItselfAloneWaitsForItself) {
  const diagnosis d = diagnose(
      {rank_in(0, 2, "MPI_Recv", 0, 1, 5), computing(1, 2, "MPI_Barrier", 9, 100)}, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u) << format_text(d);
  EXPECT_NE(format_text(d).find("DEADLOCK: rank 0 waits for itself:\n"
                                "  rank 0 in MPI_Recv at app.c:5 (main)\n"),
            std::string::npos)
      << format_text(d);
}

TEST(Diagnose, ClassesAndRangesAtAThousandRanks) {
  // 997 ranks in a barrier, rank 500 computing, 998-999 in a receive from 500.
  std::vector<rank_state> states;
  for (int32_t r = 0; r < 1000; ++r) {
    if (r == 500)
      states.push_back(computing(r, 1000, "MPI_Allreduce", 88, 400));
    else if (r >= 998)
      states.push_back(rank_in(r, 1000, "MPI_Recv", 500, 1, 55));
    else
      states.push_back(rank_in(r, 1000, "MPI_Barrier", no_peer, 0, 40));
  }
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  ASSERT_EQ(d.classes.size(), 3u);
  EXPECT_EQ(d.classes[0].routine, "MPI_Barrier");
  EXPECT_EQ(rank_ranges(d.classes[0].ranks), "0-499,501-997");
  EXPECT_EQ(d.classes[0].line, 40u);
  EXPECT_EQ(rank_ranges(d.classes[1].ranks), "998-999");
  EXPECT_EQ(rank_ranges(d.classes[2].ranks), "500");
  EXPECT_FALSE(d.classes[2].in_mpi);
  ASSERT_EQ(d.computing.size(), 1u);
  EXPECT_EQ(d.computing[0].rank, 500);
  EXPECT_EQ(d.computing[0].waiting_directly.size(), 999u);
  EXPECT_TRUE(d.deadlocks.empty());
  const auto j = nlohmann::json::parse(format_json(d));
  EXPECT_EQ(j["verdict"], "hang");
  EXPECT_EQ(j["classes"][0]["ranks"], "0-499,501-997");
  EXPECT_EQ(j["waiting_for"][0]["rank"], 500);
  EXPECT_EQ(j["waiting_for"][0]["waiting_directly"], "0-499,501-999");
}

TEST(Diagnose, ARingDeadlockAtAThousandRanksListsAFewMembersInText) {
  std::vector<rank_state> states;
  states.reserve(1000);
  for (int32_t r = 0; r < 1000; ++r)
    states.push_back(rank_in(r, 1000, "MPI_Recv", (r + 999) % 1000, 0, 12));
  const diagnosis d = diagnose(states, now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_EQ(d.deadlocks[0].cycle.size(), 1000u);
  EXPECT_NE(format_text(d).find("... and 992 more"), std::string::npos);
}

TEST(Diagnose, RanksBehindADeadlockAreNamed) {
  const diagnosis d =
      diagnose({rank_in(0, 3, "MPI_Recv", 1, 0, 10), rank_in(1, 3, "MPI_Recv", 0, 0, 10),
                rank_in(2, 3, "MPI_Recv", 0, 0, 20)},
               now, threshold);
  ASSERT_EQ(d.deadlocks.size(), 1u);
  EXPECT_EQ(d.deadlocks[0].blocked_behind, std::vector<int32_t>{2});
}

TEST(Diagnose, AllMembersInsideOneCollectiveIsNamedAsSuch) {
  const diagnosis d = diagnose({rank_in(0, 2, "MPI_Allreduce", no_peer, 0, 10),
                                rank_in(1, 2, "MPI_Allreduce", no_peer, 0, 10)},
                               now, threshold);
  ASSERT_EQ(d.result, verdict::hang);
  EXPECT_TRUE(d.deadlocks.empty());
  ASSERT_EQ(d.stuck_complete_collectives.size(), 1u);
  EXPECT_EQ(d.stuck_complete_collectives[0].ranks, (std::vector<int32_t>{0, 1}));
}

TEST(Diagnose, JsonOfNamesThatAreNotUtf8IsStillJson) {
  rank_state r = rank_in(0, 1, "MPI_Recv", 0, 1, 5);
  r.threads[0].file = "caf\xe9.c"; // Latin-1, as an old source tree may name it
  const diagnosis d = diagnose({r}, now, threshold);
  const auto j = nlohmann::json::parse(format_json(d));
  EXPECT_EQ(j["classes"][0]["file"], "caf\xef\xbf\xbd.c");
}

} // namespace
} // namespace strata::hang
