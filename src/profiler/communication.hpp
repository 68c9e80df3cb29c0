// Who sent how much to whom: each rank's point-to-point messages per destination (a world rank),
// counted at the sender, and the job's matrix made of them on the way to rank 0 at finalize
// (the record's `communication` section, docs/job-record.md). No MPI here: the module sends the
// words below up the tree of site_reduction.hpp, and the unit tests combine them without MPI.
#pragma once

#include "profiler/record/record.hpp"

#include <strata/module.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// The kinds of message kept apart, named as `strata analyze` names them from a trace.
enum pair_kind : uint8_t { pair_kind_point_to_point, pair_kind_sendrecv, pair_kind_count };
inline constexpr const char* pair_kind_names[pair_kind_count] = {"point_to_point", "sendrecv"};

// The kind of message a routine sends to its peer (its `dest`), or -1 when it sends none that
// is counted: MPI_Send and its kin, blocking or not, and MPI_Sendrecv(_replace); large-count
// variants alike. Persistent requests (MPI_Send_init) send at MPI_Start, which names no peer.
int pair_kind_of(std::string_view routine);

// One rank's sums per kind and destination: kinds x ranks strata_pair_sum in one anonymous
// mapping made at the start, whose pages the kernel provides only once a destination on them is
// counted (a rank with few partners touches a few pages whatever the job's size), so the call
// path adds to a slot it indexes with the world rank: no look-up, no allocation, no lock.
class sent_pairs {
public:
  sent_pairs() = default;
  sent_pairs(const sent_pairs&) = delete;
  sent_pairs& operator=(const sent_pairs&) = delete;
  ~sent_pairs();
  // False when the memory could not be mapped (then nothing is counted).
  bool open(uint32_t ranks);
  bool is_open() const { return sums_ != nullptr; }
  // Every sum back to zero (MPI_Pcontrol(2)); the pages go back to the kernel.
  void clear();
  uint32_t ranks() const { return ranks_; }
  strata_pair_sum* row(int kind) const {
    return sums_ == nullptr ? nullptr : sums_ + static_cast<size_t>(kind) * ranks_;
  }

private:
  strata_pair_sum* sums_ = nullptr;
  uint32_t ranks_ = 0;
  size_t bytes_ = 0;
};

// One pair's figures, each kind apart.
struct pair_figures {
  uint32_t from = 0, to = 0;
  uint64_t messages[pair_kind_count] = {};
  uint64_t bytes[pair_kind_count] = {};
  uint64_t total_messages() const;
  uint64_t total_bytes() const;
};

// The pairs a subtree of ranks sends up the tree: the heaviest `listed_pairs_limit` pairs (by
// bytes, then messages), every other pair summed into `rest`. Since each pair belongs to its
// sender's subtree alone, the heaviest pairs of the job are among the heaviest of the subtrees:
// what reaches rank 0 is the job's heaviest pairs, exact, and every pair when they are few.
struct pair_list {
  std::vector<pair_figures> pairs;
  record::unlisted_pairs rest;
};

// At most this many pairs are listed in a record: about 0.7 MiB of the record's JSON at the
// most (communication_test.cpp checks the bound for 100,000 ranks), every pair of a job of up
// to 45 ranks that all talk to all.
inline constexpr size_t listed_pairs_limit = 4096;

// This rank's pairs from its sums (`rows[kind]`, each `ranks` long, null for none).
pair_list rank_pairs(uint32_t from, const strata_pair_sum* const rows[pair_kind_count],
                     uint32_t ranks, size_t limit = listed_pairs_limit);

// `more` added to `into`, then cut to the `limit` heaviest pairs.
void combine_pairs(pair_list& into, pair_list more, size_t limit = listed_pairs_limit);

// The words a subtree sends its parent, and back; false when `bytes` is malformed.
std::string write_pair_list(const pair_list& list);
bool read_pair_list(std::string_view bytes, pair_list& out);

// The record's section of the pairs that reached rank 0.
record::communication_section communication_of(const pair_list& list);

} // namespace strata::profiler
