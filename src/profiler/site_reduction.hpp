// The tree that carries the ranks' figures (packed_totals.hpp) and texts (host names and call
// sites, call_sites.hpp) to rank 0 at finalize, combining them on the way: each rank's subtree is a
// run of consecutive ranks with that rank first, the rest split into at most `fan_in` runs of
// nearly equal length, one per child. Merged child after child, a rank's summary lists hosts and
// call sites in the order of first appearance by rank, as merging every rank's text at rank 0 in
// rank order would; rank 0 receives `fan_in` summaries of at most the job's distinct call sites
// each, after about log_fan_in(P) rounds. No MPI here: the profile module sends the texts along
// this tree, and the unit tests and bench/site_reduction_sim run the same merge without MPI.
#pragma once

#include "profiler/call_sites.hpp"
#include "profiler/packed_totals.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::profiler {

// Rank 0 receives from two children: O(call sites) bytes there, about log2(P) rounds.
constexpr int site_tree_fan_in = 2;

struct site_tree_place {
  int parent = -1;           // -1 at rank 0
  std::vector<int> children; // in rank order
  int height = 0;            // rounds below this rank: 0 for a leaf
  int last_rank = 0;         // this rank's subtree is ranks [rank, last_rank]
};

// Where `rank` of `size` ranks sits in the tree.
site_tree_place site_tree_place_of(int rank, int size, int fan_in = site_tree_fan_in);

// What a rank sends its parent: how many ranks of its subtree answered, their figures combined
// (a packed buffer, as long on every rank; runs of zero words as a zero and the run's length),
// their summary_text, and their traffic (finalize.cpp: the message pairs of communication.hpp and
// the collectives by communicator of collectives.hpp; opaque here). One writer, one reader.
struct tree_message {
  uint64_t ranks = 0;
  packed_totals figures;
  std::string text;
  std::string pairs;
};
std::string write_tree_message(uint64_t ranks, const packed_totals& figures,
                               const std::string& text, std::string_view pairs = {});
// False when `bytes` is too short for the count and `words` words of figures and the pairs'
// length and words, holds a run past them or of no word, or a count of no rank.
bool read_tree_message(std::string_view bytes, size_t words, tree_message& out);

// What the tree cost each rank (indexed by rank): the bytes it received from its children and
// the CPU time it spent merging and writing its summary.
struct site_tree_costs {
  std::vector<uint64_t> received_bytes;
  std::vector<uint64_t> work_ns;
};

// The merge at every rank of the tree, without MPI: each rank's own text, then its children's
// summaries in rank order. `text_of(rank)` gives one rank's text (summary_text of that rank).
ranks_summary reduce_texts_over_tree(int size, const std::function<std::string(int)>& text_of,
                                     int fan_in = site_tree_fan_in,
                                     site_tree_costs* costs = nullptr);
ranks_summary reduce_texts_over_tree(const std::vector<std::string>& texts,
                                     int fan_in = site_tree_fan_in,
                                     site_tree_costs* costs = nullptr);

// Every rank's text merged at one place in rank order: what rank 0 did when it gathered them.
ranks_summary merge_texts_in_rank_order(int size, const std::function<std::string(int)>& text_of);
ranks_summary merge_texts_in_rank_order(const std::vector<std::string>& texts);

} // namespace strata::profiler
