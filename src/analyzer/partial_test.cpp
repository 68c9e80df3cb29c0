// The analysis shared by several processes, without MPI: K analyzers, each reading its block of
// ranks, hand each other their records as replay.cpp does over MPI; the assembled report must be
// the serial one, for every K.
#include "analyzer/analysis.hpp"
#include "analyzer/partial.hpp"
#include "analyzer/render.hpp"
#include "analyzer/trace_builder.hpp"
#include "analyzer/trace_reader.hpp"

#include <gtest/gtest.h>
#include <otf2/otf2.h>

#include <filesystem>
#include <memory>

namespace fs = std::filesystem;
using namespace strata::analyze;

namespace {

TEST(Partition, BlocksCoverEveryRankOnceInOrder) {
  for (uint32_t ranks = 1; ranks <= 40; ++ranks)
    for (uint32_t processes = 1; processes <= ranks; ++processes) {
      const partition part{processes, 0, ranks};
      EXPECT_EQ(part.first(0), 0U);
      EXPECT_EQ(part.first(processes), ranks);
      for (uint32_t p = 0; p < processes; ++p) {
        EXPECT_LT(part.first(p), part.first(p + 1)) << ranks << " " << processes;
        for (uint32_t r = part.first(p); r < part.first(p + 1); ++r)
          EXPECT_EQ(part.owner(r), p) << ranks << " ranks, " << processes << " processes";
      }
    }
}

// Moves each process's records to their processes, by sending process in turn.
template <class T>
std::vector<std::vector<T>> route(const std::vector<std::vector<std::vector<T>>>& out) {
  std::vector<std::vector<T>> in(out.size());
  for (size_t from = 0; from < out.size(); ++from)
    for (size_t to = 0; to < out.size(); ++to)
      in[to].insert(in[to].end(), out[from][to].begin(), out[from][to].end());
  return in;
}

report shared_analysis(const std::string& path, uint32_t processes) {
  std::vector<std::unique_ptr<trace_reader>> readers;
  std::vector<std::unique_ptr<analyzer>> parts;
  std::vector<uint64_t> events;
  for (uint32_t p = 0; p < processes; ++p) {
    readers.push_back(std::make_unique<trace_reader>(path));
    const definitions& defs = readers.back()->defs();
    const partition part{processes, p, static_cast<uint32_t>(defs.ranks())};
    parts.push_back(std::make_unique<analyzer>(defs, part));
    events.push_back(readers.back()->read_events(*parts.back(), part.first(p), part.first(p + 1)));
    parts.back()->close_ranks();
  }
  std::vector<std::vector<std::vector<remote_send>>> sends;
  std::vector<std::vector<std::vector<remote_member>>> members;
  for (auto& a : parts) {
    sends.push_back(a->take_sends());
    members.push_back(a->take_members());
  }
  const auto sends_in = route(sends);
  const auto members_in = route(members);
  std::vector<std::vector<std::vector<remote_wait>>> waits;
  for (uint32_t p = 0; p < processes; ++p) {
    parts[p]->receive_sends(sends_in[p].data(), sends_in[p].size());
    parts[p]->receive_members(members_in[p].data(), members_in[p].size());
    waits.push_back(parts[p]->take_waits());
  }
  const auto waits_in = route(waits);
  std::vector<partial_result> results;
  for (uint32_t p = 0; p < processes; ++p) {
    parts[p]->receive_waits(waits_in[p].data(), waits_in[p].size());
    // Through the wire form, as between processes.
    const std::vector<uint64_t> words = encode_partial(parts[p]->take_partial(events[p]));
    results.push_back(decode_partial(words.data(), words.size()));
  }
  return assemble_report(readers[0]->defs(), results);
}

class SharedAnalysisTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_shared_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string trace() const { return (dir_ / "trace").string(); }
  fs::path dir_;
};

TEST_F(SharedAnalysisTest, EveryPatternEqualsTheSerialReportAtEveryProcessCount) {
  constexpr uint32_t ranks = 5;
  {
    trace_builder b(trace(), ranks);
    const uint32_t sub = b.comm("odd", {3, 1});
    const uint32_t at = b.site("app.c", 10);
    uint64_t t = 0;
    for (int round = 0; round < 3; ++round, t += 100000) {
      // Late sender 4 -> 0, late receiver 0 -> 1 (blocking send), across the blocks.
      b.mpi_recv(0, t + 100, t + 900, 4, 7, 8, at);
      b.mpi_send(4, t + 800, t + 850, 0, 7, 8, at);
      b.mpi_send(0, t + 1000, t + 2000, 1, 8, 8, at);
      b.mpi_recv(1, t + 1500, t + 2100, 0, 8, 8, at);
      // Two receives on one channel completed out of posting order at rank 2, from rank 3.
      b.mpi_irecv(2, t + 100, t + 110, 1, at);
      b.mpi_irecv(2, t + 120, t + 130, 2, at);
      b.mpi_isend(3, t + 3000, t + 3010, 2, 9, 8, 11, at);
      b.mpi_isend(3, t + 3100, t + 3110, 2, 9, 8, 12, at);
      b.mpi_wait(2, t + 200, t + 3300, {{true, 2, 3, 9, 8}}, at);
      b.mpi_wait(2, t + 3400, t + 3500, {{true, 1, 3, 9, 8}}, at);
      b.mpi_wait(3, t + 3200, t + 3250, {{false, 11}, {false, 12}}, at);
      // Collectives on the world and on a sub-communicator, rooted and not.
      for (uint32_t r = 0; r < ranks; ++r) {
        b.mpi_collective(r, "MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE, t + 4000 + 100 * r,
                         t + 5000, trace_builder::none, trace_builder::world, at);
        b.mpi_collective(r, "MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST, t + 6000 + 50 * (ranks - r),
                         t + 7000, 2, trace_builder::world, at);
      }
      b.mpi_collective(3, "MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE, t + 8000, t + 9000, 3, sub, at);
      b.mpi_collective(1, "MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE, t + 8500, t + 8600, 3, sub, at);
      b.mpi_collective(2, "MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER, t + 9000, t + 9100,
                       trace_builder::none, b.comm("self2", {2}), at);
    }
    // An unmatched send across blocks and one within.
    b.mpi_send(4, t + 10, t + 20, 1, 99, 8, at);
    b.mpi_send(0, t + 10, t + 20, 0, 98, 8, at);
  }
  const report serial = analyze_trace(trace());
  ASSERT_EQ(serial.unmatched_sends, 2U);
  ASSERT_GT(serial.messages, 0U);
  ASSERT_EQ(serial.incomplete_collectives, 0U);
  const std::string expected = render_json(serial);
  for (uint32_t processes = 1; processes <= ranks; ++processes)
    EXPECT_EQ(render_json(shared_analysis(trace(), processes)), expected)
        << processes << " processes";
}

TEST(PartialResult, DamagedWordsAreRefused) {
  partial_result p;
  p.events = 5;
  p.ranks = {0};
  p.tables.emplace_back().operation(0, 1, 2, 30);
  p.waits[{late_sender, 0, 1, 2}] = {10, 1};
  std::vector<uint64_t> words = encode_partial(p);
  const partial_result back = decode_partial(words.data(), words.size());
  EXPECT_EQ(back.events, 5U);
  ASSERT_EQ(back.tables.size(), 1U);
  EXPECT_EQ(back.tables[0].ops.at((uint64_t{1} << 32) | 2).ticks, 30U);
  EXPECT_THROW(decode_partial(words.data(), words.size() - 1), trace_error);
  words[0] ^= 1;
  EXPECT_THROW(decode_partial(words.data(), words.size()), trace_error);
  words[0] ^= 1;
  words[11] = UINT64_MAX; // the count of ranks
  EXPECT_THROW(decode_partial(words.data(), words.size()), trace_error);
}

} // namespace
