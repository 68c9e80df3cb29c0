// The states of many ranks in one compact message (strata.hang-batch/1), as the monitor's tree of
// tool ranks carries them to its root: each node reads or receives its children's states and sends
// one batch up, so the root receives a few tens of bytes per rank where the files are 776. Every
// field of a state is kept (the root's diagnosis is the one the files give): texts once per batch
// in a table (a job's ranks share their routines, files and functions), numbers as varints, times
// as differences from the batch's first heartbeat. No MPI.
#pragma once

#include "hang/state.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::hang {

// A rank whose state a node could not read (on another node, its file missing or damaged): named
// with the reason, never guessed.
struct unread_rank {
  int32_t rank = 0;
  std::string why;
  bool operator==(const unread_rank&) const = default;
};

struct state_batch {
  std::vector<rank_state> states;
  std::vector<unread_rank> unread;
  uint32_t tool_ranks = 0; // the tool ranks it went through
  // Set by the root: the bytes its children's batches brought it, and how long the ask took there
  // (from its arrival to the merged batch).
  uint64_t root_bytes = 0;
  uint64_t merge_ns = 0;
};

std::string encode_batch(const state_batch& batch);

// The batch in `bytes`, or `error` set (one line) for a truncated or malformed one; bounded by
// the input: a corrupt count never makes it allocate more than the bytes could hold.
struct batch_read_result {
  state_batch batch;
  std::string error;
  [[nodiscard]] bool ok() const { return error.empty(); }
};
batch_read_result decode_batch(std::string_view bytes);

// Two batches of disjoint ranks as one (an inner node's merge); the tool ranks add up.
void merge_batch(state_batch& into, state_batch&& from);

} // namespace strata::hang
