// Who sent how much to whom: each rank's point-to-point messages per destination (a world rank),
// counted at the sender, and the job's matrix made of them on the way to rank 0 at finalize
// (the record's `communication` section, docs/job-record.md). No MPI here: the module sends the
// words below up the tree of site_reduction.hpp, and the unit tests combine them without MPI.
#pragma once

#include "common/message_kinds.hpp"
#include "profiler/record/record.hpp"

#include <strata/module.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// The kinds of message kept apart, named as `strata analyze` names them from a trace.
using common::pair_kind;
using common::pair_kind_names;
using enum common::pair_kind;

// The kind of message a routine sends to its peer (its `dest`), or -1 when it sends none that
// is counted: MPI_Send and its kin, blocking or not, and MPI_Sendrecv(_replace); the one-sided
// operations to their target (put, get, accumulate-type); large-count variants alike. Persistent
// and partitioned requests (MPI_Send_init, MPI_Psend_init) send at MPI_Start, which names no
// peer: request_role_of.
int pair_kind_of(std::string_view routine);

// What a routine does with persistent requests, for the messages their starts send: a send's
// start sends one message (a partitioned send's, every partition together).
enum class request_role : uint8_t {
  none,
  makes_send,             // MPI_Send_init, _Bsend_init, _Ssend_init, _Rsend_init
  makes_partitioned_send, // MPI_Psend_init
  makes_receive,          // MPI_Recv_init, MPI_Precv_init: the handle is no send's any more
  makes_collective,       // MPI_Bcast_init and the other persistent collectives: a call per start
  starts_one,             // MPI_Start
  starts_many             // MPI_Startall
};
request_role request_role_of(std::string_view routine);

// The persistent sends and collectives of one rank by request handle (the handle's bits, as the
// core gives them in strata_event::request): what each start adds to which sums, a send's message
// to its destination's (sent_pairs), a collective's call to its communicator's (collectives.hpp).
// The table is the core's layout (module.h, strata_started_slot, STRATA_STARTED_SLOTS): the core
// looks up the starts it sums itself (strata_timed_counts::started), the profile those that reach
// it as events. Open addressing, mapped when first needed (its pages untouched until written); a
// handle made again (MPI reuses the handles of freed requests) takes its new request or, made by
// a receive, leaves the table. Not thread-safe: the caller locks under MPI_THREAD_MULTIPLE.
class persistent_requests {
public:
  using made = strata_started_slot;
  static constexpr size_t capacity = STRATA_STARTED_SLOTS;
  persistent_requests() = default;
  persistent_requests(const persistent_requests&) = delete;
  persistent_requests& operator=(const persistent_requests&) = delete;
  ~persistent_requests();
  // The table, mapped if it was not; null when memory is short (nothing is then kept).
  const strata_started_slot* open();
  // A request whose every start adds one to sums[0] and `bytes` to sums[1] (module.h); false
  // when the table is full or cannot be made (that request's starts are then not counted).
  bool note(uint64_t handle, uint64_t* sums, uint64_t bytes);
  void forget(uint64_t handle);
  const made* find(uint64_t handle) const {
    if (slots_ == nullptr || handle == 0)
      return nullptr;
    for (size_t i = home(handle);; i = (i + 1) & (capacity - 1)) {
      if (slots_[i].handle == handle)
        return &slots_[i];
      if (slots_[i].handle == 0)
        return nullptr;
    }
  }
  // Requests not kept for want of room.
  uint64_t not_kept() const { return not_kept_; }
  // The slot where a handle's search starts (handles are pointers under Open MPI, counters with
  // kind bits under MPICH: mixed).
  static size_t home(uint64_t handle) { return strata_started_home(handle); }

private:
  made* slots_ = nullptr;
  size_t used_ = 0;
  uint64_t not_kept_ = 0;
};

// One rank's sums per kind and destination: kinds x ranks strata_pair_sum in one mapping made
// at the start, so the call path adds to a slot it indexes with the world rank: no look-up, no
// allocation, no lock. Up to pairs_file_ranks ranks the mapping is a file's beside the rank file
// (its blocks reserved, as the rank file's: a full disk is found at the start, never by a store
// into the mapping), which a killed rank leaves for `strata recover`; beyond, anonymous memory
// whose pages the kernel provides only once a destination on them is counted (a rank with few
// partners touches a few pages whatever the job's size), lost with the process.
class sent_pairs {
public:
  sent_pairs() = default;
  sent_pairs(const sent_pairs&) = delete;
  sent_pairs& operator=(const sent_pairs&) = delete;
  ~sent_pairs();
  // False when the memory could not be mapped (then nothing is counted). With a `path` and few
  // enough ranks, the sums are that file's (written with this rank's number); when the file
  // cannot be made, in memory.
  bool open(uint32_t ranks, const std::string& path = {}, int32_t rank = 0);
  bool is_open() const { return sums_ != nullptr; }
  // The file, when the sums are in one ("" otherwise).
  const std::string& path() const { return path_; }
  // Every sum back to zero (MPI_Pcontrol(2)); the pages go back to the kernel.
  void clear();
  uint32_t ranks() const { return ranks_; }
  strata_pair_sum* row(int kind) const {
    return sums_ == nullptr ? nullptr : sums_ + static_cast<size_t>(kind) * ranks_;
  }

private:
  void* base_ = nullptr;
  strata_pair_sum* sums_ = nullptr;
  uint32_t ranks_ = 0;
  size_t bytes_ = 0;
  std::string path_;
};

// A pairs file: a header of pairs_file_header_bytes (magic, kinds, ranks, the sender's rank),
// then kinds x ranks strata_pair_sum. Named after the rank file: "<key>.rankR.pairs".
inline constexpr char pairs_file_magic[8] = {'S', 'T', 'R', 'P', 'A', 'I', 'R', '1'};
inline constexpr size_t pairs_file_header_bytes = 64;
inline constexpr uint32_t pairs_file_ranks = 4681; // 512 KiB of sums at most per rank (7 kinds)
// Files of jobs started under an earlier Strata hold one kind fewer (no partitioned sends), and
// were made for up to 5,461 ranks; they are still read.
inline constexpr uint32_t pairs_kinds_before_partitioned = pair_kind_count - 1;
inline constexpr uint32_t pairs_file_ranks_of(uint32_t kinds) {
  return kinds == pair_kind_count ? pairs_file_ranks : 5461;
}
std::string pairs_file_of(const std::string& rank_file_path);

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

// A pairs file read back as its rank's list (rank_pairs); false with `error` set when it is not
// one (never trusts sizes in the file).
bool read_pairs_file(const std::string& path, pair_list& out, std::string& error);

// The record's section of the pairs that reached rank 0.
record::communication_section communication_of(const pair_list& list);

} // namespace strata::profiler
