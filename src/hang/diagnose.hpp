// The hang diagnosis over the states of all ranks of a job: classes of ranks as STAT forms them
// (what they are in, where, on which communicator), the wait-for graph from blocking calls,
// pending requests and collectives, deadlocks (its cycles), ranks that wait for a computing
// rank, and receives that no send can match.
#pragma once

#include "hang/state.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::hang {

// "0-3,7" for {0, 1, 2, 3, 7} (any order, duplicates ignored).
std::string rank_ranges(std::vector<int32_t> ranks);

enum class verdict {
  no_states,     // nothing to judge
  progressing,   // a rank completed an MPI call within the threshold: not a hang
  all_computing, // no rank waits inside MPI: a long computation, not a hang
  all_finished,  // every rank finalized
  hang,          // ranks have waited inside MPI for the threshold and none completed a call
};

// Ranks that are in the same routine at the same call site on the same communicator (or, outside
// MPI, after the same last call).
struct rank_class {
  bool in_mpi = false;
  thread_phase phase = thread_phase::unused;
  std::string routine, file, function;
  uint32_t line = 0;
  communicator comm;
  std::vector<int32_t> ranks;
  uint64_t longest_ns = 0; // the longest time one of them has been so
};

// Where one rank of a deadlock or chain is: its blocking call and what it waits for.
struct waiting_rank {
  int32_t rank = 0;
  std::string routine, file, function;
  uint32_t line = 0;
  std::string waits_for; // e.g. "a message from rank 1 (tag 7)"
  std::vector<int32_t> targets;
  // A wildcard receive's: any member of each of these communicators but this rank (members not
  // copied into `targets`: a job of ranks all in wildcard receives would make N² of them).
  std::vector<communicator> any_of;
  uint64_t thread = 0; // its OS thread id, when the rank has more than one thread described
};

struct deadlock {
  // Each waits for the next, the last for the first; a rank that waits for itself (its threads
  // wait for each other) has each of those threads here.
  std::vector<waiting_rank> cycle;
  std::vector<int32_t> blocked_behind; // other ranks that cannot proceed because of it
};

// A rank outside MPI (or without a state, or with threads its state does not describe) that
// blocked ranks wait for.
struct computing_rank {
  int32_t rank = 0;
  bool has_state = true; // false: no state file for this rank
  bool finalized = false;
  // Not 0: its described threads all wait inside MPI (last_routine is where one waits), but this
  // many threads of it that called MPI are not described: it may act, so it is not judged.
  uint32_t threads_not_described = 0;
  std::string last_routine, file, function;
  uint32_t line = 0;
  uint64_t computing_ns = 0;
  std::vector<int32_t> waiting_directly;   // blocked ranks with an edge to it
  std::vector<int32_t> waiting_indirectly; // blocked behind those
  std::vector<waiting_rank> chain;         // one path from a waiting rank to it, for the text
};

// A receive that nothing sent or pending can match, with what the would-be sender has.
struct unmatched_receive {
  enum class why {
    wrong_tag,
    wrong_source,
    wrong_communicator,
    nothing_matches
  } reason = why::nothing_matches;
  waiting_rank receiver;
  int32_t source = no_peer; // the receive's source (any_source for a wildcard)
  int32_t tag = 0;
  // Sends to the receiver that do not match: the sender, its tag, communicator id, and where.
  struct near_send {
    int32_t sender = 0;
    int32_t tag = 0;
    uint64_t comm = 0;
    bool pending = false; // an Isend in its queue, else its blocking send
    std::string routine, file;
    uint32_t line = 0;
  };
  std::vector<near_send> sends;
};

struct diagnosis {
  verdict result = verdict::no_states;
  uint64_t now_ns = 0;
  uint64_t threshold_ns = 0;
  int32_t world_size = 0;
  std::vector<int32_t> missing_ranks; // no state for them
  std::vector<int32_t> torn_ranks;    // a slot changing on every read
  // Ranks with threads that made MPI calls but are not in their state (more threads than it
  // keeps), with how many: what those threads do is unknown.
  std::vector<std::pair<int32_t, uint32_t>> threads_not_described;
  std::vector<rank_class> classes;
  std::vector<deadlock> deadlocks;
  std::vector<computing_rank> computing;
  std::vector<unmatched_receive> unmatched;
  // Ranks all of whose members are in one collective on one communicator, still inside it.
  std::vector<rank_class> stuck_complete_collectives;
  std::string progress_note; // why this is no hang, in one line
  // When the states came through the monitor's tree of tool ranks (tree_ask.hpp; else 0): how
  // many merged them, the bytes its root received, how long the ask took there, and the ranks
  // whose state no tool rank could read (with why).
  uint32_t tree_tool_ranks = 0;
  uint64_t tree_root_bytes = 0;
  uint64_t tree_merge_ns = 0;
  std::vector<std::pair<int32_t, std::string>> tree_unread;
};

// The classes of one rank's threads, and two lists of classes (of disjoint ranks) combined: a
// tree that merges pairwise (STAT's way) forms the same classes diagnose() forms over all states.
std::vector<rank_class> rank_classes(const rank_state& r, uint64_t now_ns);
std::vector<rank_class> merge_classes(std::vector<rank_class> a, std::vector<rank_class> b);

// Analyses `states` (one per rank) as of `now_ns`; a rank that has waited inside one MPI call for
// `threshold_ns` with no rank completing a call in that time is hung.
diagnosis diagnose(const std::vector<rank_state>& states, uint64_t now_ns, uint64_t threshold_ns);

// The latest time the states show (their heartbeats and changes): "now" for a job that ended.
uint64_t latest_time(const std::vector<rank_state>& states);

// For people and for tools.
std::string format_text(const diagnosis& d);
std::string format_json(const diagnosis& d);

} // namespace strata::hang
