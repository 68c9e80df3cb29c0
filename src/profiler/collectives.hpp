// Collectives per communicator: each rank's collective calls and the bytes it sent in them, by
// communicator, and the job's figures made of them on the way to rank 0 at finalize (the
// record's `communication.collectives`, docs/job-record.md). A communicator is known job-wide
// by its members (world ranks): the same communicator seen by all its members is one entry,
// whatever its handle on each; one freed and made again of the same members adds to it. No MPI
// here: the module sends the words below up the tree of site_reduction.hpp beside the pairs
// (communication.hpp), and the unit tests combine them without MPI.
#pragma once

#include "common/rank_ranges.hpp"
#include "profiler/communication.hpp"
#include "profiler/record/record.hpp"

#include <strata/module.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// One rank's sums by the core's communicator id (strata_event::comm_id), lent to the core for
// the collectives it sums (module.h, strata_timed_counts::comms) and added to by the profile's
// callback otherwise: indexed, no look-up on the call path. Id 0 (no communicator known) and
// the last element (ids past the table, which the core sends there) are not attributed. An
// anonymous mapping whose pages the kernel provides only where an id is counted: a program
// with few communicators touches one page. In memory only: a killed rank's are lost.
class communicator_sums {
public:
  static constexpr uint32_t capacity = uint32_t{1} << 16;
  communicator_sums() = default;
  communicator_sums(const communicator_sums&) = delete;
  communicator_sums& operator=(const communicator_sums&) = delete;
  ~communicator_sums();
  bool open();
  bool is_open() const { return sums_ != nullptr; }
  strata_comm_sum* sums() const { return sums_; }
  // Every call and byte back to zero (MPI_Pcontrol(2)); each id keeps its group.
  void clear();

private:
  strata_comm_sum* sums_ = nullptr;
};

using common::rank_run;

struct member_sum {
  uint32_t rank = 0;
  uint64_t calls = 0, bytes = 0;
  bool operator==(const member_sum&) const = default;
};

// One communicator's figures over the members whose figures arrived.
struct communicator_total {
  std::vector<rank_run> members; // the key: maximal runs of ascending world ranks
  uint32_t size = 0;
  uint32_t reported = 0;
  uint64_t calls = 0, bytes = 0;
  uint64_t calls_min = 0, calls_max = 0;
  uint64_t bytes_min = 0, bytes_max = 0;
  uint32_t bytes_min_rank = 0, bytes_max_rank = 0;
  std::vector<member_sum> per_member; // every member reported, when size <= per_member_limit
  bool operator==(const communicator_total&) const = default;
};

// Communicators of up to this many members keep each member's figures, in the tree and in the
// record; larger ones their spread (least, mean, most with the rank).
inline constexpr uint32_t collectives_per_member_limit = 32;

// A subtree's communicators: the heaviest `tree_communicators_limit` (bytes, then calls) and
// the figures of the rest summed. A communicator spans subtrees, so one cut in a subtree can
// still be listed from another with fewer members reported (communicator_total::reported):
// in jobs of more communicators than the limit, as every rank's MPI_COMM_SELF would make.
struct communicator_list {
  std::vector<communicator_total> communicators;
  record::collective_sums rest, unattributed;
};
inline constexpr size_t tree_communicators_limit = 1024;

// This rank's communicators from its sums (`count` ids), in ranks of a world of `world_size`;
// ids of the same members merged, a group outside the world or an intercommunicator's
// collectives not attributed.
communicator_list rank_communicators(uint32_t rank, uint32_t world_size,
                                     const strata_comm_sum* sums, uint32_t count,
                                     size_t limit = tree_communicators_limit);

// `more` added to `into` (the same members merged), then cut to the `limit` heaviest.
void combine_communicators(communicator_list& into, communicator_list more,
                           size_t limit = tree_communicators_limit);

// The words a subtree sends its parent, and back; false when `bytes` is malformed.
std::string write_communicator_list(const communicator_list& list);
bool read_communicator_list(std::string_view bytes, communicator_list& out);

// A rank's traffic as its tree message carries it (site_reduction.hpp's opaque words): the
// pairs' words (communication.hpp), their length first, then the communicators'.
std::string write_traffic(const pair_list& pairs, const communicator_list& communicators);
bool read_traffic(std::string_view bytes, pair_list& pairs, communicator_list& communicators);

// The record lists at most this many communicators, and of their members' runs at most this
// many in all (a communicator of scattered ranks is long to name): about 150 KiB of JSON at
// the most (collectives_test.cpp checks the bound for 100,000 ranks).
inline constexpr size_t listed_communicators_limit = 48;
inline constexpr size_t listed_member_runs_limit = 4096;

// The record's section of what reached rank 0.
record::collectives_section collectives_of(const communicator_list& list);

} // namespace strata::profiler
