// The tree that merges the ranks' host names and call sites at finalize, without MPI: its shape
// for every job size up to 64 ranks, and its result against merging every rank's text at rank 0
// in rank order (what the profile did with one MPI_Gather): the same hosts, the same call sites
// with the same figures, in the same order.
#include "profiler/site_reduction.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

using namespace strata::profiler;

namespace {

auto fields(const callsite_total& c) {
  return std::tie(c.function, c.file, c.line, c.caller, c.calls, c.time_ns, c.bytes, c.wasted_ns,
                  c.ranks);
}

// One rank's text: a few call sites every rank makes (the figures differ by rank), some only
// some ranks make, one only this rank makes, and a host per four ranks.
std::string rank_text_of(int rank) {
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank + 1);
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % 100000;
  };
  std::vector<callsite_total> sites;
  for (int line = 10; line < 15; ++line)
    sites.push_back({"MPI_Send", "solver.c", line, "step", next(), next(), next(), next() % 3, 1});
  if (rank % 3 == 0)
    sites.push_back({"MPI_Recv", "halo.c", 7, "exchange", 1, next(), 8, 0, 1});
  if (rank % 2 == 1) // the same line as one above, another function
    sites.push_back({"MPI_Irecv", "solver.c", 12, "step", 2, next(), 16, 0, 1});
  sites.push_back(
      {"MPI_Bcast", "rank.c", 100 + rank, "only_" + std::to_string(rank), 1, next(), 4, 0, 1});
  // The order of a rank's table differs between ranks.
  if (rank % 2 == 0)
    std::swap(sites.front(), sites.back());
  return summary_text({"node" + std::to_string(rank / 4)}, sites);
}

} // namespace

TEST(SiteReduction, EveryRankHasOneParentBelowItAndSubtreesAreRunsOfRanks) {
  for (int fan_in = 1; fan_in <= 4; ++fan_in) {
    for (int size = 1; size <= 64; ++size) {
      std::vector<int> parent_of(static_cast<size_t>(size), -2);
      for (int rank = 0; rank < size; ++rank) {
        const site_tree_place p = site_tree_place_of(rank, size, fan_in);
        EXPECT_LE(static_cast<int>(p.children.size()), fan_in);
        EXPECT_EQ(p.parent < 0, rank == 0);
        EXPECT_LT(p.parent, rank);
        int expect_next = rank + 1; // children's runs follow each other up to last_rank
        int height = 0;
        for (const int child : p.children) {
          EXPECT_EQ(child, expect_next) << size << " " << rank;
          const site_tree_place c = site_tree_place_of(child, size, fan_in);
          EXPECT_EQ(c.parent, rank);
          expect_next = c.last_rank + 1;
          height = std::max(height, c.height + 1);
          parent_of[static_cast<size_t>(child)] = rank;
        }
        EXPECT_EQ(expect_next, p.last_rank + 1) << size << " " << rank;
        EXPECT_EQ(p.height, height) << size << " " << rank;
      }
      for (int rank = 1; rank < size; ++rank)
        EXPECT_EQ(parent_of[static_cast<size_t>(rank)],
                  site_tree_place_of(rank, size, fan_in).parent);
      // About log2(P) rounds with two children per rank.
      if (fan_in == 2 && size > 1) {
        int rounds = 0;
        while ((1 << rounds) < size)
          ++rounds;
        EXPECT_LE(site_tree_place_of(0, size, fan_in).height, rounds) << size;
      }
    }
  }
}

TEST(SiteReduction, TheTreeGivesWhatRankZeroMergingEveryRankGave) {
  for (int size = 1; size <= 64; ++size) {
    std::vector<std::string> texts;
    for (int rank = 0; rank < size; ++rank)
      texts.push_back(rank_text_of(rank));
    const ranks_summary flat = merge_texts_in_rank_order(texts);
    for (int fan_in = 1; fan_in <= 4; ++fan_in) {
      site_tree_costs costs;
      const ranks_summary tree = reduce_texts_over_tree(texts, fan_in, &costs);
      ASSERT_EQ(tree.hosts(), flat.hosts()) << size << " ranks, fan-in " << fan_in;
      ASSERT_EQ(tree.callsites().size(), flat.callsites().size()) << size;
      for (size_t i = 0; i < flat.callsites().size(); ++i)
        ASSERT_EQ(fields(tree.callsites()[i]), fields(flat.callsites()[i])) << size << " " << i;
      const std::vector<callsite_total> a = tree.ordered_callsites();
      const std::vector<callsite_total> b = flat.ordered_callsites();
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(fields(a[i]), fields(b[i])) << size << " " << i;
      EXPECT_EQ(summary_text(tree), summary_text(flat));
      // Rank 0 receives at most fan_in summaries, none longer than the job's.
      EXPECT_LE(costs.received_bytes[0], static_cast<uint64_t>(fan_in) * summary_text(flat).size());
    }
    // Every rank's shared call sites count every rank.
    const auto shared = std::find_if(flat.callsites().begin(), flat.callsites().end(),
                                     [](const callsite_total& c) { return c.line == 11; });
    ASSERT_NE(shared, flat.callsites().end());
    EXPECT_EQ(shared->ranks, size);
  }
}

TEST(SiteReduction, OneRankReceivesNothing) {
  site_tree_costs costs;
  const ranks_summary one = reduce_texts_over_tree({rank_text_of(0)}, site_tree_fan_in, &costs);
  EXPECT_EQ(costs.received_bytes, std::vector<uint64_t>{0});
  EXPECT_EQ(one.hosts(), std::vector<std::string>{"node0"});
  EXPECT_TRUE(site_tree_place_of(0, 1).children.empty());
}

TEST(SiteReduction, AMessageReadsBackAsWritten) {
  const packed_totals figures = {3, 0, 4, 1, 0, 0, 0, 6};
  const std::string text = summary_text({"node0"}, {{"MPI_Send", "a.c", 3, "f", 1, 2, 3, 4, 5}});
  const std::string pairs = "pair words";
  const std::string bytes = write_tree_message(7, figures, text, pairs);
  tree_message back;
  ASSERT_TRUE(read_tree_message(bytes, figures.size(), back));
  EXPECT_EQ(back.ranks, 7u);
  EXPECT_EQ(back.figures, figures);
  EXPECT_EQ(back.text, text);
  EXPECT_EQ(back.pairs, pairs);
  // Runs of zero words are a zero and their length: the count, then 1 + 2 + 1 + 1 + 2 + 1 words,
  // then the pairs' length.
  EXPECT_EQ(bytes.size(), 10 * sizeof(uint64_t) + pairs.size() + text.size());
  // Shorter than its figures, a run past them, or of no rank: refused.
  EXPECT_FALSE(read_tree_message(std::string_view(bytes).substr(0, 7 * 8), figures.size(), back));
  EXPECT_FALSE(read_tree_message(write_tree_message(1, {1, 0, 0, 0}, ""), 2, back));
  EXPECT_FALSE(read_tree_message(write_tree_message(0, figures, text), figures.size(), back));
  const packed_totals zeros(1000, 0);
  EXPECT_EQ(write_tree_message(1, zeros, "").size(), 4 * sizeof(uint64_t));
  ASSERT_TRUE(read_tree_message(write_tree_message(1, zeros, ""), zeros.size(), back));
  EXPECT_EQ(back.figures, zeros);
  ASSERT_TRUE(read_tree_message(write_tree_message(1, {}, ""), 0, back));
  EXPECT_TRUE(back.figures.empty());
  EXPECT_TRUE(back.text.empty());
}
