// The reduction at MPI_Finalize (one packed MPI_Reduce) against add_rank, the path `strata
// recover` takes from rank files: the same ranks must give the same job totals, whatever order
// MPI combines them in, with ranks that call different routines and maxima away from rank 0.
#include "profiler/packed_totals.hpp"

#include "profiler/call_sites.hpp"
#include "profiler/job_figures.hpp"
#include "profiler/site_reduction.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>

using namespace strata::profiler;

namespace {

const std::vector<std::string> names = {"MPI_Init",  "MPI_Send",  "MPI_Recv",
                                        "MPI_Bcast", "MPI_Wtime", "MPI_Finalize"};
constexpr int world = 5;

routine_slot called(uint64_t calls, uint64_t time_ns, uint64_t min_ns, uint64_t max_ns) {
  routine_slot s{};
  s.calls = calls;
  s.time_ns = time_ns;
  s.min_ns = min_ns;
  s.max_ns = max_ns;
  return s;
}

// Five ranks, each with its own set of routines: rank 0 never sends or receives, rank 3 sends
// the most and alone calls MPI_Wtime, rank 2 waits longest in MPI_Recv, rank 4 longest in
// MPI_Bcast; rank 1 has the largest MPI share.
rank_data make_rank(int rank) {
  rank_data r;
  r.names = names;
  r.slots.assign(names.size(), routine_slot{});
  for (routine_slot& s : r.slots)
    s.min_ns = UINT64_MAX;
  rank_header& h = r.header;
  h.rank = rank;
  h.world_size = world;
  h.status = static_cast<int32_t>(job_status::finalized);
  h.init_mono_ns = 1000;
  h.final_mono_ns = 1000 + 1'000'000'000ull + 1000ull * static_cast<uint64_t>(rank);
  h.overhead_ns = 100 + static_cast<uint64_t>(rank);
  h.counter_count = 2;
  h.counters_in_mpi[0] = 10 * static_cast<uint64_t>(rank + 1);
  h.counters_outside_mpi[1] = 7;
  h.callsites_dropped = static_cast<uint32_t>(rank);
  h.model_clamped = 2;
  copy_field(h.host, sizeof(h.host), rank % 2 == 0 ? "even" : "odd");
  copy_field(h.job_id, sizeof(h.job_id), "local:x:1:2");
  r.slots[0] = called(1, 50'000'000, 50'000'000, 50'000'000); // MPI_Init: not MPI time
  routine_slot& bcast = r.slots[3];
  bcast = called(2, rank == 4 ? 90'000'000 : 1'000'000 * static_cast<uint64_t>(rank + 1), 400,
                 rank == 4 ? 80'000'000 : 900);
  bcast.count_sum = 2 * 8;
  bcast.bytes_sent = rank == 0 ? 2 * 64 : 0;
  bcast.bytes_received = rank == 0 ? 0 : 2 * 64;
  bcast.size_hist[size_bin(64)] = 2;
  bcast.comm_hist[comm_bin(world)] = 2;
  if (rank == 1 || rank == 3) {
    const uint64_t sends = rank == 3 ? 7 : 5;
    routine_slot& send = r.slots[1];
    send = called(sends, rank == 1 ? 300'000'000 : 3000, 200 + static_cast<uint64_t>(rank),
                  rank == 1 ? 290'000'000 : 700);
    send.count_sum = sends * 100;
    send.bytes_sent = sends * 400;
    send.size_hist[size_bin(400)] = sends;
  }
  if (rank == 2) {
    routine_slot& recv = r.slots[2];
    recv = called(12, 250'000'000, 30, 200'000'000);
    recv.bytes_received = 12 * 400;
    recv.size_hist[size_bin(400)] = 12;
  }
  if (rank == 3)
    r.slots[4] = called(100, 2000, 15, 40);
  return r;
}

std::vector<rank_data> make_job() {
  std::vector<rank_data> ranks;
  for (int r = 0; r < world; ++r)
    ranks.push_back(make_rank(r));
  return ranks;
}

// As the module chooses them: called on some rank (MPI_Allreduce of the flags).
std::vector<int> used_functions(const std::vector<rank_data>& ranks) {
  std::vector<int> used;
  for (size_t f = 0; f < names.size(); ++f)
    if (std::any_of(ranks.begin(), ranks.end(),
                    [f](const rank_data& r) { return r.slots[f].calls != 0; }))
      used.push_back(static_cast<int>(f));
  return used;
}

packed_totals reduce(const std::vector<rank_data>& ranks, const std::vector<int>& order,
                     const std::vector<int>& used) {
  packed_totals acc = pack_rank(ranks[static_cast<size_t>(order[0])].header, order[0], names,
                                ranks[static_cast<size_t>(order[0])].slots.data(), used);
  for (size_t i = 1; i < order.size(); ++i) {
    const rank_data& r = ranks[static_cast<size_t>(order[i])];
    const packed_totals mine = pack_rank(r.header, order[i], names, r.slots.data(), used);
    EXPECT_TRUE(combine_packed(mine.data(), acc.data()));
  }
  return acc;
}

// As a binomial tree combines them: pairs, then pairs of pairs.
packed_totals reduce_as_a_tree(const std::vector<rank_data>& ranks, const std::vector<int>& used) {
  std::vector<packed_totals> level;
  for (int r = 0; r < world; ++r)
    level.push_back(pack_rank(ranks[static_cast<size_t>(r)].header, r, names,
                              ranks[static_cast<size_t>(r)].slots.data(), used));
  while (level.size() > 1) {
    std::vector<packed_totals> next;
    for (size_t i = 0; i < level.size(); i += 2) {
      if (i + 1 < level.size()) {
        EXPECT_TRUE(combine_packed(level[i + 1].data(), level[i].data()));
      }
      next.push_back(level[i]);
    }
    level = next;
  }
  return level[0];
}

void expect_same_spread(const spread& a, const spread& b, const std::string& what) {
  EXPECT_EQ(a.min, b.min) << what;
  EXPECT_EQ(a.max, b.max) << what;
  EXPECT_DOUBLE_EQ(a.sum, b.sum) << what;
  EXPECT_EQ(a.min_rank, b.min_rank) << what;
  EXPECT_EQ(a.max_rank, b.max_rank) << what;
}

} // namespace

TEST(PackedTotals, OneReductionGivesWhatRecoverGives) {
  const std::vector<rank_data> ranks = make_job();
  const std::vector<int> used = used_functions(ranks);
  ASSERT_EQ(used, (std::vector<int>{0, 1, 2, 3, 4})); // MPI_Finalize not called yet

  job_figures expected;
  for (const rank_data& r : ranks)
    add_rank(expected, r);

  job_figures packed;
  const uint64_t clamped = unpack_totals(reduce_as_a_tree(ranks, used), names, used, packed);
  EXPECT_EQ(clamped, 2u * world);
  EXPECT_EQ(packed.callsites_dropped, 0u + 1 + 2 + 3 + 4);
  EXPECT_DOUBLE_EQ(packed.wall_s, expected.wall_s);
  EXPECT_DOUBLE_EQ(packed.mpi_s, expected.mpi_s);
  EXPECT_DOUBLE_EQ(packed.overhead_s, expected.overhead_s);
  expect_same_spread(packed.mpi_percent, expected.mpi_percent, "MPI %");
  for (int c = 0; c < max_counters; ++c) {
    EXPECT_EQ(packed.counters_in_mpi[c], expected.counters_in_mpi[c]);
    EXPECT_EQ(packed.counters_outside_mpi[c], expected.counters_outside_mpi[c]);
  }
  ASSERT_EQ(packed.routines.size(), expected.routines.size());
  for (const auto& [name, want] : expected.routines) {
    ASSERT_TRUE(packed.routines.count(name) == 1) << name;
    const routine_total& got = packed.routines.at(name);
    EXPECT_EQ(got.calls, want.calls) << name;
    EXPECT_EQ(got.time_ns, want.time_ns) << name;
    EXPECT_EQ(got.min_ns, want.min_ns) << name;
    EXPECT_EQ(got.max_ns, want.max_ns) << name;
    EXPECT_EQ(got.count_sum, want.count_sum) << name;
    EXPECT_EQ(got.bytes_sent, want.bytes_sent) << name;
    EXPECT_EQ(got.bytes_received, want.bytes_received) << name;
    EXPECT_TRUE(std::equal(got.size_hist, got.size_hist + size_bins, want.size_hist)) << name;
    EXPECT_TRUE(std::equal(got.comm_hist, got.comm_hist + comm_bins, want.comm_hist)) << name;
    expect_same_spread(got.calls_per_rank, want.calls_per_rank, name + " calls per rank");
    expect_same_spread(got.time_per_rank, want.time_per_rank, name + " time per rank");
  }

  // The figures themselves, so that a mix-up common to both paths would show too.
  const routine_total& send = packed.routines.at("MPI_Send");
  EXPECT_EQ(send.calls, 12u);
  EXPECT_EQ(send.min_ns, 201u);
  EXPECT_EQ(send.max_ns, 290'000'000u);
  EXPECT_EQ(send.calls_per_rank.min, 0.0); // ranks 0, 2 and 4 never sent
  EXPECT_EQ(send.calls_per_rank.min_rank, 0);
  EXPECT_EQ(send.calls_per_rank.max, 7.0);
  EXPECT_EQ(send.calls_per_rank.max_rank, 3);
  EXPECT_EQ(send.time_per_rank.max_rank, 1);
  const routine_total& recv = packed.routines.at("MPI_Recv");
  EXPECT_EQ(recv.calls_per_rank.max_rank, 2);
  EXPECT_EQ(recv.time_per_rank.max, 0.25);
  EXPECT_EQ(recv.time_per_rank.min, 0.0);
  const routine_total& bcast = packed.routines.at("MPI_Bcast");
  EXPECT_EQ(bcast.calls_per_rank.min, 2.0);
  EXPECT_EQ(bcast.calls_per_rank.max_rank, 0); // a tie: the lowest rank
  EXPECT_EQ(bcast.time_per_rank.max_rank, 4);
  EXPECT_EQ(bcast.comm_hist[comm_bin(world)], 2u * world);
  EXPECT_EQ(bcast.bytes_received, 4u * 2 * 64);
  EXPECT_EQ(packed.routines.at("MPI_Wtime").calls_per_rank.max_rank, 3);
  EXPECT_EQ(packed.mpi_percent.max_rank, 1);
  EXPECT_EQ(packed.mpi_percent.min_rank, 0);
  EXPECT_EQ(packed.counters_in_mpi[0], 10u + 20 + 30 + 40 + 50);
  EXPECT_DOUBLE_EQ(packed.wall_s, 1.0 + 4e-6);

  // In the record: the rank of the maximum per routine.
  packed.ranks = packed.ranks_reported = world;
  const nlohmann::json record = nlohmann::json::parse(strata::record::to_json(to_record(packed)));
  EXPECT_EQ(record["routines"]["MPI_Send"]["per_rank"]["calls"]["max_rank"], 3);
  EXPECT_EQ(record["routines"]["MPI_Recv"]["per_rank"]["time_s"]["max_rank"], 2);
  EXPECT_EQ(record["routines"]["MPI_Send"]["per_rank"]["calls"]["mean"], 12.0 / world);
}

TEST(PackedTotals, TheOrderOfCombiningDoesNotMatter) {
  const std::vector<rank_data> ranks = make_job();
  const std::vector<int> used = used_functions(ranks);
  std::vector<int> order(world);
  std::iota(order.begin(), order.end(), 0);
  const packed_totals first = reduce(ranks, order, used);
  // Sums of doubles (the MPI % per rank) may differ in the last bit; everything else is exact.
  auto expect_same = [&](const packed_totals& other) {
    job_figures a;
    job_figures b;
    unpack_totals(first, names, used, a);
    unpack_totals(other, names, used, b);
    EXPECT_DOUBLE_EQ(a.mpi_percent.sum, b.mpi_percent.sum);
    a.mpi_percent.sum = b.mpi_percent.sum = 0;
    EXPECT_EQ(strata::record::to_json(to_record(a)), strata::record::to_json(to_record(b)));
  };
  expect_same(reduce_as_a_tree(ranks, used));
  int permutations = 0;
  while (std::next_permutation(order.begin(), order.end())) {
    expect_same(reduce(ranks, order, used));
    ++permutations;
  }
  EXPECT_EQ(permutations, 119);
}

TEST(PackedTotals, BuffersOfDifferentLayoutsAreNotCombined) {
  const std::vector<rank_data> ranks = make_job();
  packed_totals two = pack_rank(ranks[1].header, 1, names, ranks[1].slots.data(), {1, 3});
  const packed_totals three =
      pack_rank(ranks[2].header, 2, names, ranks[2].slots.data(), {1, 2, 3});
  const packed_totals before = two;
  EXPECT_FALSE(combine_packed(three.data(), two.data()));
  EXPECT_EQ(two, before);
  EXPECT_EQ(two.size(), packed_words(2));
}

// The reduction at finalize as the module runs it, without MPI: the layout agreed with MPI_MAX,
// every rank's figures packed and combined, every rank's text merged up the tree; rank 0's
// figures then equal what strata recover builds from the same ranks' files, plus the merged call
// sites.
TEST(PackedTotals, TheFinalizeReductionWithoutMpi) {
  const std::vector<rank_data> ranks = make_job();
  std::vector<std::string> texts;
  for (const rank_data& r : ranks)
    texts.push_back(
        summary_text({r.header.host}, {{"MPI_Bcast", "solver.c", 40, "step", 2, 1000, 128,
                                        static_cast<uint64_t>(r.header.rank), 1}}));
  std::vector<uint32_t> layout;
  for (const rank_data& r : ranks) {
    const std::vector<uint32_t> mine = reduction_layout(r.slots.data(), names.size());
    if (layout.empty())
      layout = mine;
    for (size_t i = 0; i < layout.size(); ++i) // MPI_MAX
      layout[i] = std::max(layout[i], mine[i]);
  }
  const reduction_plan plan = plan_reduction(layout, names.size());
  EXPECT_EQ(plan.functions, used_functions(ranks));

  job_figures job;
  complete_at_root(job, reduce_as_a_tree(ranks, plan.functions), names, plan.functions,
                   reduce_texts_over_tree(texts), ranks[0].header, world, world, true);
  EXPECT_EQ(job.ranks, world);
  EXPECT_EQ(job.ranks_reported, world);
  EXPECT_EQ(job.model_clamped_calls, 2 * world);
  EXPECT_EQ(job.callsites_dropped, 0u + 1 + 2 + 3 + 4);
  ASSERT_EQ(job.callsites.size(), 1u);
  EXPECT_EQ(job.callsites[0].ranks, world);
  EXPECT_EQ(job.callsites[0].calls, 2u * world);
  EXPECT_EQ(job.callsites[0].wasted_ns, 0u + 1 + 2 + 3 + 4);
  EXPECT_EQ(job.host_names, (std::vector<std::string>{"even", "odd"}));

  // The figures themselves are those of strata recover's path (OneReductionGivesWhatRecoverGives).
  job_figures recovered;
  for (const rank_data& r : ranks)
    add_rank(recovered, r);
  EXPECT_EQ(job.facts.rank, recovered.facts.rank);
  EXPECT_EQ(job.status, recovered.status);
  EXPECT_DOUBLE_EQ(job.wall_s, recovered.wall_s);
  EXPECT_DOUBLE_EQ(job.mpi_s, recovered.mpi_s);
  ASSERT_EQ(job.routines.size(), recovered.routines.size());
  for (const auto& [name, want] : recovered.routines) {
    EXPECT_EQ(job.routines.at(name).calls, want.calls) << name;
    EXPECT_EQ(job.routines.at(name).time_ns, want.time_ns) << name;
  }
}
