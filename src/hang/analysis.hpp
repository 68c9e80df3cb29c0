// The analysis behind diagnose(), over the states of one job's ranks: diagnose.cpp forms the
// classes and reads the wait-for graph (which blocked ranks can never proceed, the cycles among
// them, the chains to a computing rank); waits.cpp finds the graph's edges, what each blocked
// thread waits for (messages and whether a send or receive matches them, requests, collectives),
// and the receives that no send can match. Internal to src/hang.
#pragma once

#include "gen/routines.hpp"
#include "hang/diagnose.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace strata::hang::detail {

// For whom a thread in `routine` waits (the routine table's answer; none for a routine it does
// not know).
routines::blocking_wait blocking_wait_of(const std::string& routine);

// A send as a receiver would see it: a blocked send or sendrecv, or an Isend in the queue.
struct send_seen {
  int32_t sender, dest, tag;
  uint64_t comm;
  bool pending;
  const thread_state* thread;
};
struct recv_seen {
  int32_t receiver, source, tag;
  uint64_t comm;
};

// What one blocked thread waits for: all of `targets`, `groups` and `collectives` (or any one of
// them when `any`). A group (analysis::groups_) stands for "any member of a communicator but the
// waiting rank", a wildcard receive's wait: kept once per communicator, not as an edge to each
// member, so that ranks all in wildcard receives make a graph linear in their number, not N².
// A collective (analysis::collectives_) stands for "every member not in this collective", kept
// once per collective and shared by all its waiters, so that N/2 ranks in a barrier waiting for
// N/2 others are N edges, not N²/4. (A wait for any one request copies a collective's members
// into `targets`: any one of them frees it.)
struct wait_item {
  int32_t rank = 0;
  const thread_state* thread = nullptr;
  bool any = false;
  bool known = true;     // false: its routine or communicator says too little to name whom
  bool wildcard = false; // among its waits a receive from MPI_ANY_SOURCE, with this tag:
  int32_t wildcard_tag = 0;
  std::vector<int32_t> targets;
  std::vector<uint32_t> groups;
  std::vector<uint32_t> collectives;
  // Where each collective's members were added among `targets` (until the graph sorts them):
  // an unmatched receive found meanwhile names them in that order.
  std::vector<size_t> collectives_at;
  std::string waits_for;
};

// The members of a communicator that wildcard receives wait on, and those wait items.
struct any_member_group {
  communicator comm;
  std::vector<size_t> waiters;
};

// The members of a communicator not in one collective on it (the same for every rank in it, so
// found once per collective), and the wait items that wait for all of them.
struct collective_wait {
  std::vector<int32_t> missing; // in the communicator's order, as the text names them
  std::vector<int32_t> ranks;   // those of the world, sorted: what the graph follows
  std::string text;
  std::vector<size_t> waiters;
};

class analysis {
public:
  analysis(const std::vector<rank_state>& states, diagnosis& d);

  const rank_state* state(int32_t rank) const {
    return rank >= 0 && rank < d_.world_size ? by_rank_[static_cast<size_t>(rank)] : nullptr;
  }
  // Every described thread inside MPI (none computing, at least one in a call).
  bool waits_in_mpi(int32_t rank) const;
  // Waits in MPI, and every thread of it that called MPI is described: the only ranks the graph
  // judges (one with a thread not described may have it computing, or sending).
  bool blocked(int32_t rank) const;
  bool finalized(int32_t rank) const;

  void classes();
  // The wait-for graph and what it shows: deadlocks, chains, receives nothing can match.
  void graph();

private:
  // The edges (waits.cpp).
  void collect_messages();
  void index_messages();
  bool recv_is_matched(const recv_seen& r) const;
  bool send_is_matched(const send_seen& s) const;
  std::vector<int32_t> others(const communicator& comm, int32_t self) const;
  void add_recv(wait_item& w, int32_t source, int32_t tag, const communicator& comm);
  uint32_t group_of(const communicator& comm);
  // The wait item waits for `rank`: names it, or a group it is a member of (the item's own
  // rank excepted).
  bool waits_for_rank(const wait_item& w, int32_t rank) const;
  void add_send(wait_item& w, int32_t dest, int32_t tag, uint64_t bytes, const communicator& comm);
  static void add_text(wait_item& w, const std::string& text);
  void check_near_sends(const wait_item& w, const recv_seen& r);
  wait_item wait_of(int32_t rank, const thread_state& t);
  void add_nonblocking_collective(wait_item& w, const pending_op& p);
  // The collective on `comm` (collectives_): `nonblocking`, the collective a request is of
  // (pending_op::collective), entered by posting it; 0: a blocking collective, entered by being
  // inside it.
  uint32_t collective_on(const communicator& comm, const std::string& routine,
                         uint16_t nonblocking);
  void add_collective(wait_item& w, uint32_t c);
  // Every rank the item waits for by name: its targets and its collectives' members, sorted.
  std::vector<int32_t> all_targets(const wait_item& w) const;
  bool in_same_collective(int32_t member, const std::string& routine,
                          const communicator& comm) const;
  bool posted_collective(int32_t member, const communicator& comm, uint16_t collective) const;
  waiting_rank waiting(const wait_item& w) const;

  // The graph (diagnose.cpp).
  std::pair<std::vector<wait_item>::const_iterator, std::vector<wait_item>::const_iterator>
  waits_of(int32_t rank) const;
  void fixed_point();
  void cycles();
  void chains();
  uint64_t computing_ns(int32_t rank) const;

  diagnosis& d_;
  std::vector<const rank_state*> by_rank_;
  std::vector<send_seen> sends_;
  std::vector<recv_seen> recvs_;
  std::vector<std::vector<size_t>> sends_to_, recvs_at_;
  std::vector<wait_item> waits_;
  std::vector<any_member_group> groups_;
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint32_t>, uint32_t> group_index_;
  std::vector<std::vector<uint32_t>> member_groups_; // rank -> the groups it is a member of
  std::vector<char> group_freed_;                    // per group: a member can act
  std::set<int32_t> wildcard_ranks_, complete_collective_ranks_;
  std::vector<collective_wait> collectives_;
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint32_t, std::string>, uint32_t>
      collective_index_;
  std::vector<std::vector<uint32_t>> missing_from_; // rank -> the collectives it is missing from
  bool targets_final_ = false; // the graph sorted the targets (no collective among them then)
  std::vector<char> can_act_;  // per rank: may still proceed (or make others proceed)
};

} // namespace strata::hang::detail
