// The analyzer on archives written with the OTF2 writer library, following the conventions of
// the trace module and Score-P, with known times: every matching rule, every wait-state pattern,
// the tables, the traversals, the XML export, and damaged archives.
#include "analyzer/analysis.hpp"
#include "analyzer/anchor_probe.hpp"
#include "analyzer/graph.hpp"
#include "analyzer/render.hpp"
#include "analyzer/trace_builder.hpp"
#include "analyzer/trace_reader.hpp"
#include "analyzer/xml_export.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <otf2/otf2.h>
#include <strata/version.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;
using namespace strata::analyze;

namespace {

class AnalyzeTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_analyze_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string trace() const { return (dir_ / "trace").string(); }

  // The waiting time of one pattern at one (rank, line), in seconds; -1 when absent.
  static double wait(const report& r, const std::string& pattern, uint32_t rank, uint32_t line) {
    for (const wait_state_row& w : r.wait_states)
      if (w.pattern == pattern && w.rank == rank && w.line == line)
        return w.time_s;
    return -1;
  }
  static size_t count_pattern(const report& r, const std::string& pattern) {
    size_t n = 0;
    for (const wait_state_row& w : r.wait_states)
      n += w.pattern == pattern;
    return n;
  }

  fs::path dir_;
};

constexpr double ns = 1e-9;

TEST_F(AnalyzeTest, LateSenderAtTheReceiveLineWithTheInjectedTime) {
  {
    trace_builder b(trace(), 2);
    const uint32_t send_site = b.site("app.c", 20);
    const uint32_t recv_site = b.site("app.c", 30);
    b.mpi_send(0, 5000, 5200, 1, 7, 64, send_site);
    b.mpi_recv(1, 1000, 5300, 0, 7, 64, recv_site);
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.ranks, 2U);
  EXPECT_EQ(r.messages, 1U);
  EXPECT_EQ(r.unmatched_sends + r.unmatched_receives, 0U);
  EXPECT_NEAR(wait(r, "late_sender", 1, 30), 4000 * ns, 1e-12);
  ASSERT_EQ(r.wait_states.size(), 1U);
  EXPECT_EQ(r.wait_states[0].function, "MPI_Recv");
  EXPECT_EQ(r.wait_states[0].file, "app.c");
  EXPECT_EQ(count_pattern(r, "late_receiver"), 0U); // the send did not wait
}

TEST_F(AnalyzeTest, LateReceiverOnABlockingSend) {
  {
    trace_builder b(trace(), 2);
    b.mpi_send(0, 1000, 6000, 1, 0, 1 << 20, b.site("a.c", 11));
    b.mpi_recv(1, 4000, 6100, 0, 0, 1 << 20, b.site("a.c", 12));
  }
  const report r = analyze_trace(trace());
  EXPECT_NEAR(wait(r, "late_receiver", 0, 11), 3000 * ns, 1e-12);
  EXPECT_EQ(count_pattern(r, "late_sender"), 0U);
}

TEST_F(AnalyzeTest, SameChannelMatchesInOrderDifferentTagsByTag) {
  // Rank 0 sends tag 1, tag 1, tag 2; rank 1 receives tag 2 first (a specific tag), then two
  // receives that were posted with MPI_ANY_TAG and resolved to tag 1. Non-overtaking pairs the
  // tag-1 messages in order; the tag-2 receive takes the third send.
  event_graph g;
  {
    trace_builder b(trace(), 2);
    b.mpi_send(0, 100, 200, 1, 1, 8, b.site("s.c", 1));
    b.mpi_send(0, 300, 400, 1, 1, 8, b.site("s.c", 2));
    b.mpi_send(0, 500, 600, 1, 2, 8, b.site("s.c", 3));
    b.mpi_recv(1, 50, 700, 0, 2, 8, b.site("r.c", 1));
    b.mpi_recv(1, 800, 900, 0, 1, 8, b.site("r.c", 2));
    b.mpi_recv(1, 1000, 1100, 0, 1, 8, b.site("r.c", 3));
  }
  const report r = analyze_trace(trace(), &g);
  EXPECT_EQ(r.messages, 3U);
  const uint64_t rank1 = uint64_t{1} << 40;
  ASSERT_EQ(g.partners(rank1 + 0).size(), 1U);
  EXPECT_EQ(g.partners(rank1 + 0)[0], 2U); // tag 2 <- third send (rank 0, op 2)
  EXPECT_EQ(g.partners(rank1 + 1)[0], 0U);
  EXPECT_EQ(g.partners(rank1 + 2)[0], 1U);
  // The tag-2 receive waited for the third send: 500 - 50 ns.
  EXPECT_NEAR(wait(r, "late_sender", 1, 1), 450 * ns, 1e-12);
}

TEST_F(AnalyzeTest, WildcardSourceResolvedToTheActualSender) {
  // MPI_ANY_SOURCE receives on rank 0 record the actual sources; the first completes with rank 2.
  event_graph g;
  {
    trace_builder b(trace(), 3);
    b.mpi_send(1, 900, 950, 0, 5, 4);
    b.mpi_send(2, 100, 150, 0, 5, 4);
    b.mpi_recv(0, 50, 200, 2, 5, 4);
    b.mpi_recv(0, 300, 1000, 1, 5, 4);
  }
  const report r = analyze_trace(trace(), &g);
  EXPECT_EQ(r.messages, 2U);
  EXPECT_EQ(g.partners(0)[0], uint64_t{2} << 40);
  EXPECT_EQ(g.partners(1)[0], uint64_t{1} << 40);
  EXPECT_NEAR(wait(r, "late_sender", 0, 0), (50 + 600) * ns, 1e-12); // both at line 0
}

TEST_F(AnalyzeTest, IsendIrecvWaitallMatchedByRequest) {
  event_graph g;
  {
    trace_builder b(trace(), 2);
    const uint32_t waitall = b.site("halo.c", 40);
    // Rank 1 posts two receives, then waits for both; rank 0 sends late.
    b.mpi_irecv(1, 100, 110, 11, b.site("halo.c", 31));
    b.mpi_irecv(1, 120, 130, 12, b.site("halo.c", 32));
    b.mpi_isend(0, 2000, 2010, 1, 0, 8, 21, b.site("halo.c", 35));
    b.mpi_isend(0, 2020, 2030, 1, 1, 8, 22, b.site("halo.c", 36));
    b.mpi_wait(0, 2040, 2100, {{false, 21}, {false, 22}}, b.site("halo.c", 41));
    b.mpi_wait(1, 200, 2500, {{true, 12, 0, 1, 8}, {true, 11, 0, 0, 8}}, waitall);
  }
  const report r = analyze_trace(trace(), &g);
  EXPECT_EQ(r.messages, 2U);
  EXPECT_EQ(r.unmatched_sends + r.unmatched_receives, 0U);
  // One Waitall (rank 1, op 2) is the partner of both Isends (rank 0, ops 0 and 1).
  const uint64_t waitall_op = (uint64_t{1} << 40) | 2;
  auto p = g.partners(waitall_op);
  std::sort(p.begin(), p.end());
  EXPECT_EQ(p, (std::vector<uint64_t>{0, 1}));
  // Late sender in the Waitall: the last send entered 2020 - 200 ns after it.
  EXPECT_NEAR(wait(r, "late_sender", 1, 40), 1820 * ns, 1e-12);
}

TEST_F(AnalyzeTest, ReceivesCompletedOutOfPostingOrderMatchInPostingOrder) {
  // Rank 1: Irecv A (posted first), blocking Recv B, Wait A; both from rank 0 with tag 3. MPI
  // gives A the first message, although B completes first in the trace.
  event_graph g;
  {
    trace_builder b(trace(), 2);
    b.mpi_send(0, 100, 150, 1, 3, 8);
    b.mpi_send(0, 200, 250, 1, 3, 8);
    b.mpi_irecv(1, 10, 20, 77);
    b.mpi_recv(1, 30, 260, 0, 3, 8);
    b.mpi_wait(1, 300, 310, {{true, 77, 0, 3, 8}});
  }
  const report r = analyze_trace(trace(), &g);
  EXPECT_EQ(r.messages, 2U);
  const uint64_t rank1 = uint64_t{1} << 40;
  EXPECT_EQ(g.partners(rank1 + 2)[0], 0U); // the Wait completing A <- first send
  EXPECT_EQ(g.partners(rank1 + 1)[0], 1U); // the Recv B <- second send
}

TEST_F(AnalyzeTest, RecordsWithoutUseAreSkippedNotTakenForTruncation) {
  {
    trace_builder b(trace(), 2);
    const uint32_t test = b.mpi("MPI_Test");
    for (uint64_t i = 0; i < 100; ++i) {
      b.enter(0, 10 * i, test);
      b.request_test(0, 10 * i + 1, 5);
      b.leave(0, 10 * i + 2, test);
    }
    b.mpi_send(0, 2000, 2100, 1, 0, 8);
    b.mpi_recv(1, 0, 2200, 0, 0, 8);
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.events, 306U);
  EXPECT_EQ(r.messages, 1U);
}

TEST_F(AnalyzeTest, AReceiveThatNeverCompletesDoesNotHoldBackTheOthers) {
  // Rank 1 posts an Irecv it never completes, then 70,000 blocking receives: they must all be
  // matched (the reorder queue gives the lost request up instead of growing without bound).
  const uint64_t n = 70000;
  {
    trace_builder b(trace(), 2);
    b.mpi_irecv(1, 0, 1, 99);
    for (uint64_t i = 0; i < n; ++i) {
      b.mpi_send(0, 10 + 10 * i, 15 + 10 * i, 1, 0, 8);
      b.mpi_recv(1, 10 + 10 * i, 16 + 10 * i, 0, 0, 8);
    }
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.messages, n);
  EXPECT_EQ(r.unmatched_sends + r.unmatched_receives, 0U);
  bool warned = false;
  for (const std::string& w : r.warnings)
    warned |= w.find("not completed") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(AnalyzeTest, UnmatchedMessagesAreCountedNotFatal) {
  {
    trace_builder b(trace(), 2);
    b.mpi_send(0, 100, 150, 1, 3, 8);
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.unmatched_sends, 1U);
  EXPECT_FALSE(r.warnings.empty());
}

TEST_F(AnalyzeTest, AnOddEventIsLeftOutWithAWarningNotARefusal) {
  // Rank 1's second receive completes with a sender outside the communicator (what a cancelled
  // receive's status held before the tracer wrote cancellations as such): that event alone is
  // left out; the message before and after it still match.
  {
    trace_builder b(trace(), 2);
    b.mpi_send(0, 100, 150, 1, 3, 8);
    b.mpi_recv(1, 100, 160, 0, 3, 8);
    b.mpi_irecv(1, 200, 210, 7);
    b.mpi_wait(1, 300, 310, {{true, 7, 4294967295U, 4294967295U, 0}});
    b.mpi_send(0, 400, 450, 1, 4, 8);
    b.mpi_recv(1, 400, 460, 0, 4, 8);
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.messages, 2U);
  EXPECT_EQ(r.unmatched_sends + r.unmatched_receives, 0U);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("1 events left out"), std::string::npos) << r.warnings.front();
  EXPECT_NE(r.warnings.front().find("peer 4294967295 outside communicator 0 of 2 ranks"),
            std::string::npos)
      << r.warnings.front();
}

TEST_F(AnalyzeTest, WaitAtBarrierAndAtNxN) {
  {
    trace_builder b(trace(), 3);
    const uint64_t enter[3] = {1000, 2000, 5000};
    for (uint32_t r = 0; r < 3; ++r) {
      b.mpi_collective(r, "MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER, enter[r], 5100,
                       trace_builder::none, trace_builder::world, b.site("b.c", 50));
      b.mpi_collective(r, "MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE, 6000 + enter[2 - r], 12000,
                       trace_builder::none, trace_builder::world, b.site("b.c", 60));
    }
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.collectives, 2U);
  EXPECT_NEAR(wait(r, "wait_at_barrier", 0, 50), 4000 * ns, 1e-12);
  EXPECT_NEAR(wait(r, "wait_at_barrier", 1, 50), 3000 * ns, 1e-12);
  EXPECT_EQ(wait(r, "wait_at_barrier", 2, 50), -1);
  // Allreduce enters: rank 0 at 11000, rank 1 at 8000, rank 2 at 7000.
  EXPECT_NEAR(wait(r, "wait_at_nxn", 1, 60), 3000 * ns, 1e-12);
  EXPECT_NEAR(wait(r, "wait_at_nxn", 2, 60), 4000 * ns, 1e-12);
  EXPECT_EQ(wait(r, "wait_at_nxn", 0, 60), -1);
}

TEST_F(AnalyzeTest, LateBroadcastAndEarlyReduceOnASubCommunicator) {
  // Communicator {3, 1, 2} of 4 ranks: local root 0 is world rank 3.
  {
    trace_builder b(trace(), 4);
    const uint32_t sub = b.comm("sub", {3, 1, 2});
    b.mpi_collective(3, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, 5000, 5100, 3, sub,
                     b.site("c.c", 70));
    b.mpi_collective(1, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, 1000, 5200, 3, sub,
                     b.site("c.c", 70));
    b.mpi_collective(2, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, 2000, 5200, 3, sub,
                     b.site("c.c", 70));
    // Reduce to world rank 3, which enters first: early reduce until rank 2 enters at 8000.
    b.mpi_collective(3, "MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE, 6000, 9500, 3, sub,
                     b.site("c.c", 80));
    b.mpi_collective(1, "MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE, 9000, 9100, 3, sub,
                     b.site("c.c", 80));
    b.mpi_collective(2, "MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE, 8000, 8100, 3, sub,
                     b.site("c.c", 80));
    b.mpi_collective(0, "MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER, 0, 10, trace_builder::none,
                     b.comm("self", {0}));
  }
  const report r = analyze_trace(trace());
  EXPECT_EQ(r.incomplete_collectives, 0U);
  EXPECT_NEAR(wait(r, "late_broadcast", 1, 70), 4000 * ns, 1e-12);
  EXPECT_NEAR(wait(r, "late_broadcast", 2, 70), 3000 * ns, 1e-12);
  EXPECT_EQ(wait(r, "late_broadcast", 3, 70), -1);
  EXPECT_NEAR(wait(r, "early_reduce", 3, 80), 2000 * ns, 1e-12);
  EXPECT_EQ(count_pattern(r, "early_reduce"), 1U);
}

TEST_F(AnalyzeTest, TablesCountLevelsCallSitesAndTimes) {
  // The HieraAnalyses paper's OOPS example: a user method (level 0) calling a library method (level
  // 1) calling MPI (level 2), twice per rank; rank 0 also calls MPI_Send directly (level 0).
  {
    trace_builder b(trace(), 2);
    const uint32_t grid = b.region("TopologyGrid::bcast", false);
    const uint32_t group = b.region("Group::bcast", false);
    const uint32_t bcast = b.mpi("MPI_Bcast");
    for (uint32_t r = 0; r < 2; ++r) {
      for (uint64_t i = 0; i < 2; ++i) {
        const uint64_t t = 1000 + 1000 * i;
        b.enter(r, t, grid, b.site("md.cc", 45 + static_cast<uint32_t>(i)));
        b.enter(r, t + 100, group, b.site("Topology.cc", 2335));
        b.enter(r, t + 200, bcast, b.site("Topology.cc", 2335));
        b.collective_begin(r, t + 200);
        b.collective_end(r, t + 300, OTF2_COLLECTIVE_OP_BCAST, trace_builder::world, 0, 4, 4);
        b.leave(r, t + 300, bcast);
        b.leave(r, t + 400, group);
        b.leave(r, t + 500, grid);
      }
    }
    b.mpi_send(0, 4000, 4500, 1, 0, 8, b.site("md.cc", 90));
    b.mpi_recv(1, 4000, 4600, 0, 0, 8, b.site("md.cc", 91));
  }
  const report r = analyze_trace(trace());
  auto level = [&](uint32_t rank, uint32_t l) -> uint64_t {
    for (const level_row& row : r.levels)
      if (row.rank == rank && row.level == l)
        return row.count;
    return 0;
  };
  EXPECT_EQ(level(0, 0), 3U);
  EXPECT_EQ(level(0, 1), 2U);
  EXPECT_EQ(level(0, 2), 2U);
  EXPECT_EQ(level(1, 0), 3U);
  auto ops = [&](uint32_t rank, const std::string& op, uint32_t line) -> const operation_row* {
    for (const operation_row& o : r.operations)
      if (o.rank == rank && o.operation == op && o.line == line)
        return &o;
    return nullptr;
  };
  ASSERT_NE(ops(0, "TopologyGrid::bcast", 45), nullptr);
  EXPECT_EQ(ops(0, "TopologyGrid::bcast", 45)->count, 1U);
  EXPECT_EQ(ops(0, "TopologyGrid::bcast", 45)->category, "user");
  ASSERT_NE(ops(1, "MPI_Bcast", 2335), nullptr);
  EXPECT_EQ(ops(1, "MPI_Bcast", 2335)->count, 2U);
  EXPECT_EQ(ops(1, "MPI_Bcast", 2335)->category, "mpi");
  EXPECT_EQ(ops(1, "MPI_Bcast", 2335)->file, "Topology.cc");
  EXPECT_NEAR(ops(1, "MPI_Bcast", 2335)->time_s, 200 * ns, 1e-12);
  for (const operation_total& t : r.totals) {
    if (t.operation == "MPI_Bcast" || t.operation == "Group::bcast") {
      EXPECT_EQ(t.count, 4U);
    }
  }
  ASSERT_EQ(r.processes.size(), 2U);
  // Rank 0: two bcasts of 100 ns and a send of 500 ns in MPI; events from 1000 to 4500.
  EXPECT_NEAR(r.processes[0].communication_s, 700 * ns, 1e-12);
  EXPECT_NEAR(r.processes[0].total_s, 3500 * ns, 1e-12);

  // The text, JSON and CSV forms carry the same figures.
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["ranks"], 2);
  // The release that analysed it, and the one that wrote the archive (the archive's creator).
  EXPECT_EQ(j["strata_version"], STRATA_VERSION);
  EXPECT_EQ(j["written_by"], "Strata " STRATA_VERSION);
  EXPECT_EQ(render_text(r).rfind("Strata " STRATA_VERSION
                                 " analysis of a trace written by Strata " STRATA_VERSION "\n",
                                 0),
            0U);
  bool found = false;
  for (const auto& w : j["wait_states"])
    found |= w["pattern"] == "late_sender" && w["line"] == 91 && w["rank"] == 1 &&
             w["function"] == "MPI_Recv" && w["file"] == "md.cc";
  EXPECT_FALSE(found); // the send and receive entered together: nobody waited
  EXPECT_NE(render_text(r).find("TopologyGrid::bcast"), std::string::npos);
  EXPECT_NE(render_csv(r).find("operations,1,mpi,MPI_Bcast,Topology.cc,2335,2,"),
            std::string::npos);
}

TEST_F(AnalyzeTest, GraphTraversalsByOperationAndByPartner) {
  event_graph g;
  {
    trace_builder b(trace(), 2);
    const uint32_t solve = b.region("solve", false);
    b.enter(0, 10, solve);
    b.mpi_send(0, 20, 30, 1, 0, 8);
    b.leave(0, 40, solve);
    b.mpi_recv(1, 15, 35, 0, 0, 8);
    b.mpi_collective(0, "MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER, 50, 60);
    b.mpi_collective(1, "MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER, 45, 60);
  }
  analyze_trace(trace(), &g);
  ASSERT_EQ(g.size(), 5U);
  std::vector<std::pair<uint32_t, uint32_t>> order; // (rank, level)
  g.traverse_by_operation([&](const operation& op) { order.emplace_back(op.rank, op.level); });
  EXPECT_EQ(order,
            (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 1}, {0, 0}, {1, 0}, {1, 0}}));
  EXPECT_EQ(g.children(0), (std::vector<uint64_t>{1}));
  EXPECT_EQ(g.vertex(1).parent, 0U);
  std::vector<uint64_t> visits;
  g.traverse_by_partner([&](const operation& op) { visits.push_back(op.id); });
  const uint64_t r1 = uint64_t{1} << 40;
  // solve; send, its receive; barrier, its peer; receive, its send; barrier, its peer.
  EXPECT_EQ(visits, (std::vector<uint64_t>{0, 1, r1, 2, r1 + 1, r1, 1, r1 + 1, 2}));
  // Both traversals see every operation; by operation exactly once.
  EXPECT_EQ(order.size(), g.size());
}

TEST_F(AnalyzeTest, StreamingTablesEqualATraversalOfTheGraph) {
  // Counting operations per (rank, level) by traversing the graph gives Table 1 exactly.
  event_graph g;
  {
    trace_builder b(trace(), 3);
    const uint32_t step = b.region("step", false);
    for (uint32_t r = 0; r < 3; ++r)
      for (uint64_t i = 0; i < 5; ++i) {
        const uint64_t t = 1000 * i;
        b.enter(r, t, step);
        b.mpi_send(r, t + 10, t + 20, (r + 1) % 3, 0, 8);
        b.mpi_recv(r, t + 30, t + 40, (r + 2) % 3, 0, 8);
        b.leave(r, t + 50, step);
      }
  }
  const report r = analyze_trace(trace(), &g);
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> counted;
  g.traverse_by_operation([&](const operation& op) { ++counted[{op.rank, op.level}]; });
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> table;
  for (const level_row& l : r.levels)
    table[{l.rank, l.level}] = l.count;
  EXPECT_EQ(counted, table);
  EXPECT_EQ(r.messages, 15U);
}

TEST_F(AnalyzeTest, XmlExportNestsOperationsAsHieraAnalysesDoes) {
  {
    trace_builder b(trace(), 2);
    const uint32_t grid = b.region("OOPS::TopologyGrid::bcast", false);
    for (uint32_t r = 0; r < 2; ++r) {
      b.enter(r, 1000, grid, b.site("molecularDynamicsOOPS.cc", 45));
      b.mpi_collective(r, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, 1100, 1200, 0,
                       trace_builder::world, b.site("Topology.cc", 2335));
      b.leave(r, 1300, grid);
    }
    b.mpi_send(0, 2000, 2100, 1, 4, 16, b.site("auxfmd.c", 58));
    b.mpi_recv(1, 2000, 2200, 0, 4, 16, b.site("auxfmd.c", 51));
  }
  const std::string out = (dir_ / "xml").string();
  const xml_export_result x = export_xml(trace(), out);
  EXPECT_EQ(x.ranks, 2U);
  EXPECT_EQ(x.operations, 6U);
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string config = slurp(x.config);
  EXPECT_NE(config.find("count_proc=\"2\""), std::string::npos);
  EXPECT_NE(config.find("<collect_file rank=\"P1\">trace1.xml</collect_file>"), std::string::npos);
  const std::string t0 = slurp(fs::path(out) / "trace0.xml");
  const std::string expected_nest =
      "  <hieraOOPS name=\"OOPS::TopologyGrid::bcast\" class=\"OOPS::TopologyGrid\" "
      "method=\"bcast\" file=\"molecularDynamicsOOPS.cc\" line=\"45\" "
      "start_time=\"0.000001000\" finish_time=\"0.000001300\">\n"
      "    <hieraMPI operation=\"broadcast\" file=\"Topology.cc\" line=\"2335\" "
      "start_time=\"0.000001100\" finish_time=\"0.000001200\" root=\"0\" comm=\"MPI_COMM_WORLD\" "
      "sent=\"8\" received=\"8\"/>\n"
      "  </hieraOOPS>\n";
  EXPECT_NE(t0.find(expected_nest), std::string::npos) << t0;
  EXPECT_NE(t0.find("<hieraMPI operation=\"send\" file=\"auxfmd.c\" line=\"58\" "
                    "start_time=\"0.000002000\" finish_time=\"0.000002100\" dest=\"1\" tag=\"4\" "
                    "comm=\"MPI_COMM_WORLD\" bytes=\"16\"/>"),
            std::string::npos)
      << t0;
  EXPECT_NE(t0.find("<processor rank=\"P0\" init=\"0.000001000\" finalize=\"0.000002100\">"),
            std::string::npos);
  const std::string t1 = slurp(fs::path(out) / "trace1.xml");
  EXPECT_NE(t1.find("operation=\"receive\" file=\"auxfmd.c\" line=\"51\""), std::string::npos);
  EXPECT_NE(t1.find("rem=\"0\""), std::string::npos);
  EXPECT_NE(t1.rfind("</processor>\n"), std::string::npos);
}

// The parts several processes share (xml_export_mpi.hpp): each block of ranks written alone, and
// the configuration, give the files of the whole export.
TEST_F(AnalyzeTest, XmlExportByBlocksOfRanksEqualsTheWholeExport) {
  {
    trace_builder b(trace(), 3);
    const uint32_t step = b.region("solver::step", false);
    for (uint32_t r = 0; r < 3; ++r) {
      b.enter(r, 1000 + r, step, b.site("solver.cc", 10));
      b.mpi_collective(r, "MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE, 1100, 1200 + r,
                       trace_builder::none, trace_builder::world, b.site("solver.cc", 11));
      b.leave(r, 1300, step);
    }
    b.mpi_send(0, 2000, 2100, 2, 4, 16, b.site("halo.c", 58));
    b.mpi_recv(2, 2000, 2200, 0, 4, 16, b.site("halo.c", 51));
  }
  const fs::path whole = dir_ / "whole";
  const fs::path blocks = dir_ / "blocks";
  const xml_export_result x = export_xml(trace(), whole.string());
  create_xml_dir(blocks.string());
  const unsigned long long operations = export_xml_ranks(trace(), blocks.string(), 0, 1) +
                                        export_xml_ranks(trace(), blocks.string(), 1, 3);
  EXPECT_EQ(operations, x.operations);
  const definitions defs = trace_reader(trace()).defs();
  write_xml_config(defs, blocks.string());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  for (const char* name : {"hieraCollector.xml", "trace0.xml", "trace1.xml", "trace2.xml"}) {
    EXPECT_FALSE(slurp(whole / name).empty()) << name;
    EXPECT_EQ(slurp(blocks / name), slurp(whole / name)) << name;
  }
  // A block writes its own ranks' files only.
  const fs::path alone = dir_ / "alone";
  create_xml_dir(alone.string());
  EXPECT_EQ(export_xml_ranks(trace(), alone.string(), 1, 2), 2U);
  EXPECT_TRUE(fs::exists(alone / "trace1.xml"));
  EXPECT_FALSE(fs::exists(alone / "trace0.xml"));
  EXPECT_FALSE(fs::exists(alone / "trace2.xml"));
}

// An archive as Score-P writes it, with the OTF2 writer directly: location ids that are not the
// ranks (and a COMM_LOCATIONS group giving rank order), events that use each location's own
// region ids mapped to the global ones through its local definitions, a timer that is not in ns
// with a global offset, records the analysis does not use (ProgramBegin/End), and no call-site
// attribute: the call site is then the region's own source location.
TEST_F(AnalyzeTest, ReadsAnArchiveAsScorePWritesIt) {
  const uint64_t ticks = 2'500'000'000; // per second
  const uint64_t offset = 1'000'000;
  const uint64_t loc[2] = {uint64_t{1} << 33, 7}; // rank 0, rank 1
  {
    OTF2_Archive* a = OTF2_Archive_Open(trace().c_str(), "traces", OTF2_FILEMODE_WRITE, 1 << 20,
                                        4 << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    ASSERT_NE(a, nullptr);
    static OTF2_FlushCallbacks flush = {
        [](void*, OTF2_FileType, OTF2_LocationRef, void*, bool) -> OTF2_FlushType {
          return OTF2_FLUSH;
        },
        [](void*, OTF2_FileType, OTF2_LocationRef) -> OTF2_TimeStamp { return 0; }};
    OTF2_Archive_SetFlushCallbacks(a, &flush, nullptr);
    OTF2_Archive_SetSerialCollectiveCallbacks(a);
    OTF2_Archive_OpenEvtFiles(a);
    // Local region ids: rank 0 calls MPI_Send its region 0, rank 1 calls MPI_Recv its region 3.
    OTF2_EvtWriter* w0 = OTF2_Archive_GetEvtWriter(a, loc[0]);
    OTF2_EvtWriter_ProgramBegin(w0, nullptr, offset, 4, 0, nullptr);
    OTF2_EvtWriter_Enter(w0, nullptr, offset + 3 * ticks, 0);
    OTF2_EvtWriter_MpiSend(w0, nullptr, offset + 3 * ticks, 1, 0, 9, 4);
    OTF2_EvtWriter_Leave(w0, nullptr, offset + 3 * ticks + 100, 0);
    OTF2_EvtWriter_ProgramEnd(w0, nullptr, offset + 4 * ticks, 0);
    OTF2_EvtWriter* w1 = OTF2_Archive_GetEvtWriter(a, loc[1]);
    OTF2_EvtWriter_ProgramBegin(w1, nullptr, offset, 4, 0, nullptr);
    OTF2_EvtWriter_Enter(w1, nullptr, offset + ticks, 3);
    OTF2_EvtWriter_MpiRecv(w1, nullptr, offset + 3 * ticks + 200, 0, 0, 9, 4);
    OTF2_EvtWriter_Leave(w1, nullptr, offset + 3 * ticks + 200, 3);
    OTF2_EvtWriter_ProgramEnd(w1, nullptr, offset + 4 * ticks, 0);
    uint64_t n0 = 0, n1 = 0;
    OTF2_EvtWriter_GetNumberOfEvents(w0, &n0);
    OTF2_EvtWriter_GetNumberOfEvents(w1, &n1);
    OTF2_Archive_CloseEvtWriter(a, w0);
    OTF2_Archive_CloseEvtWriter(a, w1);
    OTF2_Archive_CloseEvtFiles(a);
    OTF2_Archive_OpenDefFiles(a);
    const uint64_t global_region[2][4] = {{1, 0, 0, 0}, {0, 0, 0, 2}};
    for (int r = 0; r < 2; ++r) {
      OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(a, loc[r]);
      OTF2_IdMap* map = OTF2_IdMap_CreateFromUint64Array(4, global_region[r], false);
      OTF2_DefWriter_WriteMappingTable(d, OTF2_MAPPING_REGION, map);
      OTF2_IdMap_Free(map);
      OTF2_Archive_CloseDefWriter(a, d);
    }
    OTF2_Archive_CloseDefFiles(a);
    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(a);
    OTF2_GlobalDefWriter_WriteClockProperties(g, ticks, offset, 4 * ticks, 0);
    const char* strings[] = {"",    "MPI_Recv", "MPI_Send",      "scorep_app.c",
                             "app", "MPI Rank", "MPI_COMM_WORLD"};
    for (uint32_t i = 0; i < 7; ++i)
      OTF2_GlobalDefWriter_WriteString(g, i, strings[i]);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 4, 4, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (uint32_t r = 0; r < 2; ++r) {
      OTF2_GlobalDefWriter_WriteLocationGroup(g, r, 5, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                              OTF2_UNDEFINED_LOCATION_GROUP);
      OTF2_GlobalDefWriter_WriteLocation(g, loc[r], 5, OTF2_LOCATION_TYPE_CPU_THREAD,
                                         r == 0 ? n0 : n1, r);
    }
    // Global region 0 (unused), 1: MPI_Send, 2: MPI_Recv (defined at scorep_app.c:77).
    OTF2_GlobalDefWriter_WriteRegion(g, 0, 4, 4, 0, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                     OTF2_REGION_FLAG_NONE, 3, 10, 20);
    OTF2_GlobalDefWriter_WriteRegion(g, 1, 2, 2, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, 2, 1, 1, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 3, 77, 77);
    const uint64_t locations[2] = {loc[0], loc[1]};
    const uint64_t ranks[2] = {0, 1};
    OTF2_GlobalDefWriter_WriteGroup(g, 0, 0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 2, locations);
    OTF2_GlobalDefWriter_WriteGroup(g, 1, 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 2, ranks);
    OTF2_GlobalDefWriter_WriteComm(g, 0, 6, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    OTF2_Archive_CloseGlobalDefWriter(a, g);
    OTF2_Archive_Close(a);
  }
  event_graph graph;
  const report r = analyze_trace(trace(), &graph);
  EXPECT_EQ(r.ranks, 2U);
  EXPECT_EQ(r.events, 10U);
  EXPECT_EQ(r.messages, 1U);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.wait_states.size(), 1U);
  EXPECT_EQ(r.wait_states[0].pattern, "late_sender");
  EXPECT_EQ(r.wait_states[0].function, "MPI_Recv");
  EXPECT_EQ(r.wait_states[0].rank, 1U);
  EXPECT_EQ(r.wait_states[0].file, "scorep_app.c");
  EXPECT_EQ(r.wait_states[0].line, 77U);
  EXPECT_NEAR(r.wait_states[0].time_s, 2.0, 1e-9);
  // Rank 0 is the location the COMM_LOCATIONS group lists first, whatever its id.
  EXPECT_EQ(graph.vertex(0).region, 1U);
  EXPECT_NEAR(r.processes[0].total_s, 4.0, 1e-9);
}

// Damaged archives: one clear trace_error each, never a crash.
class DamagedArchiveTest : public AnalyzeTest {
protected:
  void write_good() {
    trace_builder b(trace(), 2);
    for (uint64_t i = 0; i < 2000; ++i) {
      b.mpi_send(0, 100 * i, 100 * i + 50, 1, 0, 8);
      b.mpi_recv(1, 100 * i, 100 * i + 60, 0, 0, 8);
    }
  }
  std::string error_of(const std::string& path) {
    try {
      analyze_trace(path);
    } catch (const trace_error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(DamagedArchiveTest, MissingArchive) {
  const std::string e = error_of((dir_ / "nowhere").string());
  EXPECT_NE(e.find("no such trace archive"), std::string::npos) << e;
  fs::create_directories(dir_ / "empty");
  EXPECT_NE(error_of((dir_ / "empty").string()).find("no OTF2 anchor"), std::string::npos);
}

TEST_F(DamagedArchiveTest, DeletedEventFile) {
  write_good();
  fs::remove(fs::path(trace()) / "traces" / "1.evt");
  const std::string e = error_of(trace());
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST_F(DamagedArchiveTest, TruncatedEventFile) {
  write_good();
  const fs::path evt = fs::path(trace()) / "traces" / "0.evt";
  fs::resize_file(evt, fs::file_size(evt) / 2);
  const std::string e = error_of(trace());
  EXPECT_FALSE(e.empty());
}

TEST_F(DamagedArchiveTest, TruncatedAtAChunkBoundary) {
  // OTF2 reads a file cut after a whole chunk without complaint; the declared counts tell.
  {
    trace_builder b(trace(), 2);
    for (uint64_t i = 0; i < 120000; ++i) {
      b.mpi_send(0, 100 * i, 100 * i + 50, 1, 0, 8);
      b.mpi_recv(1, 100 * i, 100 * i + 60, 0, 0, 8);
    }
  }
  const fs::path evt = fs::path(trace()) / "traces" / "0.evt";
  ASSERT_GT(fs::file_size(evt), 1024U * 1024);
  fs::resize_file(evt, 1024 * 1024); // the builder's chunk size
  const std::string e = error_of(trace());
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(DamagedArchiveTest, TruncatedAnchorAndDefinitions) {
  write_good();
  const fs::path anchor = fs::path(trace()) / "traces.otf2";
  fs::resize_file(anchor, fs::file_size(anchor) / 2);
  EXPECT_NE(error_of(trace()).find("traces.otf2"), std::string::npos);
  fs::remove_all(trace());
  write_good();
  const fs::path defs = fs::path(trace()) / "traces.def";
  fs::resize_file(defs, fs::file_size(defs) / 2);
  EXPECT_FALSE(error_of(trace()).empty());
}

TEST_F(DamagedArchiveTest, AnchorWhosePropertyCountTheLibraryMisreads) {
  // OTF2 3.0.2 frees memory it never allocated when the count before the first property is out
  // of range: the analyzer must say the anchor is damaged, not end on the library's bad free
  // (the probe runs otf2-print, which scripts/setup.sh installs with otf2-tools).
  write_good();
  const fs::path anchor = fs::path(trace()) / "traces.otf2";
  std::string bytes(fs::file_size(anchor), '\0');
  std::ifstream(anchor, std::ios::binary)
      .read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const size_t name = bytes.find("STRATA::VERSION");
  ASSERT_NE(name, std::string::npos);
  bytes[name - 1] = '\x80';
  std::ofstream(anchor, std::ios::binary | std::ios::trunc) << bytes;
  const std::string e = error_of(trace());
  EXPECT_NE(e.find("traces.otf2: a damaged OTF2 anchor file: the OTF2 library fails reading it"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST_F(DamagedArchiveTest, AnchorProbedOncePerContent) {
  // The XML export opens three readers of one archive: one probe. The anchor rewritten with
  // other bytes of the same size (within the file system's timestamp tick, as a damaged copy
  // written over a good one may be) is probed again; bytes seen before are not.
  write_good();
  const fs::path anchor = fs::path(trace()) / "traces.otf2";
  const std::string good = read_anchor_bytes(anchor.string()).value();
  const uint64_t before = anchor_probes_started();
  EXPECT_EQ(export_xml(trace(), (dir_ / "xml").string()).ranks, 2U);
  EXPECT_EQ(anchor_probes_started() - before, 1U);
  std::string damaged = good;
  const size_t name = damaged.find("STRATA::VERSION");
  ASSERT_NE(name, std::string::npos);
  damaged[name - 1] = '\x80';
  std::ofstream(anchor, std::ios::binary | std::ios::trunc) << damaged;
  for (int i = 0; i < 2; ++i)
    EXPECT_NE(error_of(trace()).find("a damaged OTF2 anchor file"), std::string::npos);
  EXPECT_EQ(anchor_probes_started() - before, 2U);
  std::ofstream(anchor, std::ios::binary | std::ios::trunc) << good;
  EXPECT_EQ(error_of(trace()), "");
  EXPECT_EQ(anchor_probes_started() - before, 2U);
}

TEST_F(DamagedArchiveTest, RandomBytesEverywhere) {
  std::mt19937 rng(42);
  for (const char* victim : {"traces.otf2", "traces.def", "traces/0.evt"}) {
    fs::remove_all(trace());
    write_good();
    const fs::path file = fs::path(trace()) / victim;
    std::string bytes(fs::file_size(file), '\0');
    for (char& c : bytes)
      c = static_cast<char>(rng());
    std::ofstream(file, std::ios::binary) << bytes;
    // Either a clear error or (garbage that happens to parse) a report; never a crash.
    try {
      analyze_trace(trace());
    } catch (const trace_error& e) {
      EXPECT_NE(std::string(e.what()).find(trace()), std::string::npos) << e.what();
    }
  }
}

} // namespace
