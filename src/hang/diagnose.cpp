// The analysis: classes, the wait-for graph, then which blocked ranks can never proceed (a fixed
// point from the ranks that can still act), the cycles among those, and the rest as chains to a
// computing rank. Only the states are used: no MPI.
#include "hang/diagnose.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <type_traits>

namespace strata::hang {

std::string rank_ranges(std::vector<int32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    text += (text.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i)
      text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

uint64_t latest_time(const std::vector<rank_state>& states) {
  uint64_t latest = 0;
  for (const rank_state& r : states) {
    latest = std::max(latest, r.observed_ns);
    for (const thread_state& t : r.threads)
      latest = std::max(latest, t.since_ns);
  }
  return latest;
}

namespace {

enum class call_kind { other, recv, send, sendrecv, wait_all, wait_any, collective };

call_kind kind_of(const std::string& routine) {
  static const std::map<std::string, call_kind, std::less<>> kinds = [] {
    std::map<std::string, call_kind, std::less<>> k;
    for (const char* name : {"MPI_Recv", "MPI_Probe", "MPI_Mprobe", "MPI_Mrecv"})
      k[name] = call_kind::recv;
    for (const char* name : {"MPI_Send", "MPI_Ssend", "MPI_Rsend"})
      k[name] = call_kind::send;
    for (const char* name : {"MPI_Sendrecv", "MPI_Sendrecv_replace"})
      k[name] = call_kind::sendrecv;
    for (const char* name : {"MPI_Wait", "MPI_Waitall"})
      k[name] = call_kind::wait_all;
    for (const char* name : {"MPI_Waitany", "MPI_Waitsome"})
      k[name] = call_kind::wait_any;
    for (const char* name : {"MPI_Barrier",
                             "MPI_Bcast",
                             "MPI_Reduce",
                             "MPI_Allreduce",
                             "MPI_Gather",
                             "MPI_Gatherv",
                             "MPI_Scatter",
                             "MPI_Scatterv",
                             "MPI_Allgather",
                             "MPI_Allgatherv",
                             "MPI_Alltoall",
                             "MPI_Alltoallv",
                             "MPI_Alltoallw",
                             "MPI_Reduce_scatter",
                             "MPI_Reduce_scatter_block",
                             "MPI_Scan",
                             "MPI_Exscan",
                             "MPI_Comm_split",
                             "MPI_Comm_split_type",
                             "MPI_Comm_dup",
                             "MPI_Comm_create",
                             "MPI_Cart_create",
                             "MPI_Graph_create",
                             "MPI_Dist_graph_create",
                             "MPI_Win_fence",
                             "MPI_Win_create",
                             "MPI_Win_allocate",
                             "MPI_File_open",
                             "MPI_Finalize",
                             "MPI_Neighbor_allgather",
                             "MPI_Neighbor_alltoall"})
      k[name] = call_kind::collective;
    return k;
  }();
  const auto it = kinds.find(routine);
  return it == kinds.end() ? call_kind::other : it->second;
}

std::string tag_text(int32_t tag) {
  return tag == any_tag ? "any tag" : "tag " + std::to_string(tag);
}

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

bool send_matches_recv(const send_seen& s, const recv_seen& r) {
  return s.dest == r.receiver && s.comm == r.comm &&
         (r.source == any_source || r.source == s.sender) && (r.tag == any_tag || r.tag == s.tag);
}

// What one blocked thread waits for: all of `targets` (or any one of them when `any`).
struct wait_item {
  int32_t rank = 0;
  const thread_state* thread = nullptr;
  bool any = false;
  bool known = true;     // false: its routine or communicator says too little to name whom
  bool wildcard = false; // among its waits a receive from MPI_ANY_SOURCE, with this tag:
  int32_t wildcard_tag = 0;
  std::vector<int32_t> targets;
  std::string waits_for;
};

class analysis {
public:
  analysis(const std::vector<rank_state>& states, diagnosis& d) : d_(d) {
    for (const rank_state& r : states)
      d_.world_size = std::max(d_.world_size, r.world_size);
    by_rank_.assign(static_cast<size_t>(d_.world_size), nullptr);
    for (const rank_state& r : states)
      if (r.world_rank >= 0 && r.world_rank < d_.world_size)
        by_rank_[static_cast<size_t>(r.world_rank)] = &r;
    for (int32_t r = 0; r < d_.world_size; ++r)
      if (by_rank_[static_cast<size_t>(r)] == nullptr)
        d_.missing_ranks.push_back(r);
  }

  const rank_state* state(int32_t rank) const {
    return rank >= 0 && rank < d_.world_size ? by_rank_[static_cast<size_t>(rank)] : nullptr;
  }

  // Every thread inside MPI (none computing, at least one in a call).
  bool blocked(int32_t rank) const {
    const rank_state* r = state(rank);
    if (r == nullptr)
      return false;
    bool any_in = false;
    for (const thread_state& t : r->threads) {
      if (t.phase == thread_phase::outside_mpi || t.phase == thread_phase::not_started)
        return false;
      any_in = any_in || t.phase == thread_phase::in_mpi;
    }
    return any_in;
  }

  bool finalized(int32_t rank) const {
    const rank_state* r = state(rank);
    if (r == nullptr || r->threads.empty())
      return false;
    return std::all_of(r->threads.begin(), r->threads.end(), [](const thread_state& t) {
      return t.phase == thread_phase::finalized || t.phase == thread_phase::unused;
    });
  }

  void classes() {
    using key = std::tuple<bool, int, std::string, std::string, uint32_t, std::string, uint64_t>;
    std::map<key, rank_class> found;
    for (int32_t rank = 0; rank < d_.world_size; ++rank) {
      const rank_state* r = state(rank);
      if (r == nullptr)
        continue;
      std::set<key> seen;
      for (const thread_state& t : r->threads) {
        if (t.phase == thread_phase::unused)
          continue; // a slot no thread has (yet)
        const bool in = t.phase == thread_phase::in_mpi;
        const key k{!in,      static_cast<int>(t.phase), t.routine, t.file, t.line, t.function,
                    t.comm.id};
        rank_class& c = found[k];
        c.in_mpi = in;
        c.phase = t.phase;
        c.routine = t.torn ? "(being updated)" : t.routine;
        c.file = t.file;
        c.function = t.function;
        c.line = t.line;
        c.comm = t.comm;
        if (seen.insert(k).second)
          c.ranks.push_back(rank);
        if (d_.now_ns > t.since_ns && t.since_ns != 0)
          c.longest_ns = std::max(c.longest_ns, d_.now_ns - t.since_ns);
      }
    }
    for (auto& [k, c] : found)
      d_.classes.push_back(std::move(c));
    std::stable_sort(d_.classes.begin(), d_.classes.end(),
                     [](const rank_class& a, const rank_class& b) {
                       if (a.in_mpi != b.in_mpi)
                         return a.in_mpi;
                       return a.ranks.size() > b.ranks.size();
                     });
  }

  void collect_messages() {
    for (int32_t rank = 0; rank < d_.world_size; ++rank) {
      const rank_state* r = state(rank);
      if (r == nullptr)
        continue;
      for (const thread_state& t : r->threads) {
        for (const pending_op& p : t.pending) {
          if (p.kind == op_kind::send)
            sends_.push_back({rank, p.peer, p.tag, p.comm.id, true, &t});
          else if (p.kind == op_kind::recv)
            recvs_.push_back({rank, p.peer, p.tag, p.comm.id});
        }
        if (t.phase != thread_phase::in_mpi)
          continue;
        const call_kind k = kind_of(t.routine);
        if (k == call_kind::send || k == call_kind::sendrecv)
          sends_.push_back({rank, t.peer, t.tag, t.comm.id, false, &t});
        if (k == call_kind::recv)
          recvs_.push_back({rank, t.peer, t.tag, t.comm.id});
        if (k == call_kind::sendrecv)
          recvs_.push_back({rank, t.peer2, t.tag2, t.comm.id});
      }
    }
  }

  // Sends by destination, receives by receiver: each lookup sees only its rank's messages.
  void index_messages() {
    sends_to_.assign(static_cast<size_t>(d_.world_size), {});
    recvs_at_.assign(static_cast<size_t>(d_.world_size), {});
    for (size_t i = 0; i < sends_.size(); ++i)
      if (sends_[i].dest >= 0 && sends_[i].dest < d_.world_size)
        sends_to_[static_cast<size_t>(sends_[i].dest)].push_back(i);
    for (size_t i = 0; i < recvs_.size(); ++i)
      recvs_at_[static_cast<size_t>(recvs_[i].receiver)].push_back(i);
  }

  bool recv_is_matched(const recv_seen& r) const {
    const auto& to = sends_to_[static_cast<size_t>(r.receiver)];
    return std::any_of(to.begin(), to.end(),
                       [&](size_t i) { return send_matches_recv(sends_[i], r); });
  }

  bool send_is_matched(const send_seen& s) const {
    if (s.dest < 0 || s.dest >= d_.world_size)
      return false;
    const auto& at = recvs_at_[static_cast<size_t>(s.dest)];
    return std::any_of(at.begin(), at.end(),
                       [&](size_t i) { return send_matches_recv(s, recvs_[i]); });
  }

  // The wait items of one rank (waits_ is in rank order).
  std::pair<std::vector<wait_item>::const_iterator, std::vector<wait_item>::const_iterator>
  waits_of(int32_t rank) const {
    return std::equal_range(waits_.begin(), waits_.end(), rank, [](const auto& a, const auto& b) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, int32_t>)
        return a < b.rank;
      else
        return a.rank < b;
    });
  }

  // The members of `comm` other than `self` (empty when they are not known).
  std::vector<int32_t> others(const communicator& comm, int32_t self) const {
    std::vector<int32_t> out;
    if (!comm.members_known())
      return out;
    for (uint32_t i = 0; i < comm.size; ++i)
      if (comm.member(i) != self)
        out.push_back(comm.member(i));
    return out;
  }

  // Adds what a receive from `source` waits for, unless a send already matches it.
  void add_recv(wait_item& w, int32_t source, int32_t tag, const communicator& comm) {
    const recv_seen r{w.rank, source, tag, comm.id};
    if (source == proc_null || recv_is_matched(r))
      return;
    if (source == any_source) {
      const std::vector<int32_t> members = others(comm, w.rank);
      if (members.empty() && comm.size > 1)
        w.known = false;
      w.targets.insert(w.targets.end(), members.begin(), members.end());
      add_text(w, "a message from any rank of its communicator (" + tag_text(tag) + ")");
      wildcard_ranks_.insert(w.rank);
      w.wildcard = true;
      w.wildcard_tag = tag;
    } else {
      w.targets.push_back(source);
      add_text(w, "a message from rank " + std::to_string(source) + " (" + tag_text(tag) + ")");
    }
    check_near_sends(w, r);
  }

  void add_send(wait_item& w, int32_t dest, int32_t tag, uint64_t bytes, const communicator& comm) {
    if (dest == proc_null || send_is_matched({w.rank, dest, tag, comm.id, false, nullptr}))
      return;
    w.targets.push_back(dest);
    add_text(w, "rank " + std::to_string(dest) + " to receive its message (" + tag_text(tag) +
                    ", " + std::to_string(bytes) + " bytes)");
  }

  static void add_text(wait_item& w, const std::string& text) {
    w.waits_for += (w.waits_for.empty() ? "" : "; ") + text;
  }

  // Sends to this receiver that differ only in tag, or only in source: the likely mistake.
  void check_near_sends(const wait_item& w, const recv_seen& r) {
    unmatched_receive u;
    u.receiver = waiting(w);
    u.source = r.source;
    u.tag = r.tag;
    auto reason = unmatched_receive::why::nothing_matches;
    auto rank_of = [](unmatched_receive::why why) {
      return why == unmatched_receive::why::wrong_tag      ? 3
             : why == unmatched_receive::why::wrong_source ? 2
                                                           : 1;
    };
    for (const size_t i : sends_to_[static_cast<size_t>(r.receiver)]) {
      const send_seen& s = sends_[i];
      const bool source_ok = r.source == any_source || r.source == s.sender;
      const bool tag_ok = r.tag == any_tag || r.tag == s.tag;
      unmatched_receive::why why;
      if (s.comm != r.comm && source_ok && tag_ok)
        why = unmatched_receive::why::wrong_communicator;
      else if (s.comm == r.comm && source_ok && !tag_ok)
        why = unmatched_receive::why::wrong_tag;
      else if (s.comm == r.comm && !source_ok && tag_ok)
        why = unmatched_receive::why::wrong_source;
      else
        continue; // matches (not here) or differs in more than one
      u.sends.push_back({s.sender, s.tag, s.comm, s.pending, s.pending ? "" : s.thread->routine,
                         s.pending ? "" : s.thread->file, s.pending ? 0 : s.thread->line});
      if (rank_of(why) > rank_of(reason) || reason == unmatched_receive::why::nothing_matches)
        reason = why;
    }
    if (u.sends.empty())
      return;
    u.reason = reason;
    d_.unmatched.push_back(std::move(u));
  }

  // The waits of one thread inside MPI.
  wait_item wait_of(int32_t rank, const thread_state& t) {
    wait_item w;
    w.rank = rank;
    w.thread = &t;
    if (t.torn) {
      w.known = false;
      return w;
    }
    switch (kind_of(t.routine)) {
    case call_kind::recv:
      add_recv(w, t.peer, t.tag, t.comm);
      w.any = t.peer == any_source; // any one sender frees a wildcard receive
      break;
    case call_kind::send:
      add_send(w, t.peer, t.tag, t.bytes, t.comm);
      break;
    case call_kind::sendrecv:
      add_send(w, t.peer, t.tag, t.bytes, t.comm);
      add_recv(w, t.peer2, t.tag2, t.comm);
      break;
    case call_kind::wait_all:
    case call_kind::wait_any: {
      w.any = kind_of(t.routine) == call_kind::wait_any;
      const bool flagged = std::any_of(t.pending.begin(), t.pending.end(),
                                       [](const pending_op& p) { return p.waited; });
      // A writer that marks the waited requests says how many there are (some may not be listed).
      if (t.waited_total > 0 && !flagged) {
        w.known = false; // none of its requests is known
        break;
      }
      size_t listed = 0;
      for (const pending_op& p : t.pending) {
        if (flagged && !p.waited)
          continue;
        ++listed;
        if (p.kind == op_kind::recv)
          add_recv(w, p.peer, p.tag, p.comm);
        else if (p.kind == op_kind::send)
          add_send(w, p.peer, p.tag, p.bytes, p.comm);
        else if (p.kind == op_kind::collective)
          add_nonblocking_collective(w, p);
        // A matched receive (MPI_Imrecv) waits for nobody: its message is on its way.
      }
      if (listed == 0)
        w.known = false; // its requests are not in the state
      // A wildcard receive waits for any one sender: alone, the wait does too; beside other
      // requests (all of them, and one of those senders) the graph cannot say it.
      if (w.wildcard && listed == 1)
        w.any = true;
      else if (w.wildcard && !w.any)
        w.known = false;
      if (t.waited_total > listed) {
        // Any one of those not listed might complete: nothing is known of a Waitany's.
        if (w.any)
          w.known = false;
        add_text(w, std::to_string(t.waited_total - listed) + " more request" +
                        (t.waited_total - listed > 1 ? "s" : "") + " not in the state");
      }
      break;
    }
    case call_kind::collective: {
      if (!t.comm.members_known() && t.comm.size > 1)
        w.known = false;
      const collective_wait& c = collective_on(t.comm, t.routine, 0);
      w.targets = c.missing;
      w.waits_for = c.text;
      if (c.missing.empty() && w.known)
        complete_collective_ranks_.insert(rank);
      break;
    }
    case call_kind::other:
      w.known = false;
      break;
    }
    if (w.known && w.targets.empty() && !complete_collective_ranks_.count(rank))
      w.known = false; // matched: the transfer is under way
    return w;
  }

  // A request of a nonblocking collective (MPI_Ibarrier, ...) waits for the members of its
  // communicator that have not started the same collective on it.
  void add_nonblocking_collective(wait_item& w, const pending_op& p) {
    if (!p.comm.members_known() && p.comm.size > 1) {
      w.known = false;
      return;
    }
    const collective_wait& c =
        collective_on(p.comm, "MPI_I" + std::string(collective_name(p.collective)), p.collective);
    w.targets.insert(w.targets.end(), c.missing.begin(), c.missing.end());
    if (!c.text.empty())
      add_text(w, c.text);
  }

  // The members of a communicator not in this collective on it: the same for every rank in it,
  // so found once per collective (a world of ranks in one barrier is linear, not quadratic).
  // `nonblocking`: the collective a request is of (pending_op::collective), entered by posting
  // it; 0: a blocking collective, entered by being inside it.
  struct collective_wait {
    std::vector<int32_t> missing;
    std::string text;
  };
  const collective_wait& collective_on(const communicator& comm, const std::string& routine,
                                       uint16_t nonblocking) {
    const auto key = std::make_tuple(comm.id, comm.first, comm.stride, comm.size, routine);
    const auto found = collectives_.find(key);
    if (found != collectives_.end())
      return found->second;
    collective_wait c;
    for (const int32_t m : others(comm, no_peer))
      if (nonblocking != 0 ? !posted_collective(m, comm, nonblocking)
                           : !in_same_collective(m, routine, comm))
        c.missing.push_back(m);
    if (!c.missing.empty())
      c.text = "rank" + std::string(c.missing.size() > 1 ? "s " : " ") + rank_ranges(c.missing) +
               " to enter " + routine + " on its communicator (" + std::to_string(comm.size) +
               " ranks)";
    return collectives_.emplace(key, std::move(c)).first->second;
  }

  bool in_same_collective(int32_t member, const std::string& routine,
                          const communicator& comm) const {
    const rank_state* r = state(member);
    if (r == nullptr)
      return false;
    return std::any_of(r->threads.begin(), r->threads.end(), [&](const thread_state& o) {
      return o.phase == thread_phase::in_mpi && o.routine == routine && o.comm.id == comm.id;
    });
  }

  // The member has that nonblocking collective on that communicator among its requests, or
  // requests its state does not list (one of them may be it: never named as missing).
  bool posted_collective(int32_t member, const communicator& comm, uint16_t collective) const {
    const rank_state* r = state(member);
    if (r == nullptr)
      return false;
    return std::any_of(r->threads.begin(), r->threads.end(), [&](const thread_state& o) {
      return o.pending_total > o.pending.size() ||
             std::any_of(o.pending.begin(), o.pending.end(), [&](const pending_op& p) {
               return p.kind == op_kind::collective && p.collective == collective &&
                      p.comm.id == comm.id;
             });
    });
  }

  waiting_rank waiting(const wait_item& w) const {
    waiting_rank out{w.rank,         w.thread->routine, w.thread->file, w.thread->function,
                     w.thread->line, w.waits_for,       w.targets};
    // Which thread, where the rank describes more than one.
    const rank_state* r = state(w.rank);
    if (r != nullptr && std::count_if(r->threads.begin(), r->threads.end(), [](const auto& t) {
                          return t.phase != thread_phase::unused;
                        }) > 1)
      out.thread = w.thread->os_thread;
    return out;
  }

  void graph();

private:
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
  std::set<int32_t> wildcard_ranks_, complete_collective_ranks_;
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint32_t, std::string>, collective_wait>
      collectives_;
  std::vector<char> can_act_; // per rank: may still proceed (or make others proceed)
};

void analysis::graph() {
  collect_messages();
  index_messages();
  for (int32_t rank = 0; rank < d_.world_size; ++rank)
    if (blocked(rank))
      for (const thread_state& t : state(rank)->threads)
        if (t.phase == thread_phase::in_mpi)
          waits_.push_back(wait_of(rank, t));
  fixed_point();
  cycles();
  chains();
  for (const int32_t rank : complete_collective_ranks_) {
    const thread_state* t = nullptr;
    for (const thread_state& o : state(rank)->threads)
      if (o.phase == thread_phase::in_mpi && kind_of(o.routine) == call_kind::collective)
        t = &o;
    if (t == nullptr)
      continue;
    auto same = std::find_if(
        d_.stuck_complete_collectives.begin(), d_.stuck_complete_collectives.end(),
        [&](const rank_class& c) { return c.comm.id == t->comm.id && c.routine == t->routine; });
    if (same == d_.stuck_complete_collectives.end()) {
      rank_class c;
      c.in_mpi = true;
      c.routine = t->routine;
      c.file = t->file;
      c.line = t->line;
      c.function = t->function;
      c.comm = t->comm;
      d_.stuck_complete_collectives.push_back(c);
      same = d_.stuck_complete_collectives.end() - 1;
    }
    same->ranks.push_back(rank);
  }
}

// Ranks that can act: those computing, without a state, or in a call whose waits are unknown or
// already matched; then, repeatedly, blocked ranks with a thread whose waits (all, or any one for
// Waitany and wildcards) are on ranks that can act. What remains can never proceed.
void analysis::fixed_point() {
  const size_t n = static_cast<size_t>(d_.world_size);
  can_act_.assign(n, 0);
  for (int32_t r = 0; r < d_.world_size; ++r)
    can_act_[static_cast<size_t>(r)] = static_cast<char>(!blocked(r) && !finalized(r) ? 1 : 0);
  std::vector<std::vector<size_t>> waiters(n); // rank -> wait items that wait for it
  std::vector<size_t> remaining(waits_.size());
  std::vector<size_t> work;
  auto release = [&](int32_t rank) {
    if (!can_act_[static_cast<size_t>(rank)]) {
      can_act_[static_cast<size_t>(rank)] = 1;
      work.push_back(static_cast<size_t>(rank));
    }
  };
  for (size_t i = 0; i < waits_.size(); ++i) {
    wait_item& w = waits_[i];
    std::sort(w.targets.begin(), w.targets.end());
    w.targets.erase(std::unique(w.targets.begin(), w.targets.end()), w.targets.end());
    std::erase_if(w.targets, [&](int32_t t) { return t < 0 || t >= d_.world_size; });
    remaining[i] = w.targets.size();
    for (const int32_t t : w.targets)
      waiters[static_cast<size_t>(t)].push_back(i);
  }
  for (const wait_item& w : waits_)
    if (!w.known || complete_collective_ranks_.count(w.rank))
      release(w.rank);
  for (int32_t r = 0; r < d_.world_size; ++r)
    if (can_act_[static_cast<size_t>(r)])
      work.push_back(static_cast<size_t>(r));
  while (!work.empty()) {
    const size_t r = work.back();
    work.pop_back();
    for (const size_t i : waiters[r]) {
      if (remaining[i] == 0)
        continue;
      remaining[i] = waits_[i].any ? 0 : remaining[i] - 1;
      if (remaining[i] == 0)
        release(waits_[i].rank);
    }
  }
}

uint64_t analysis::computing_ns(int32_t rank) const {
  const rank_state* r = state(rank);
  uint64_t since = 0;
  if (r != nullptr)
    for (const thread_state& t : r->threads)
      if (t.phase == thread_phase::outside_mpi || t.phase == thread_phase::finalized)
        since = std::max(since, t.since_ns);
  return since != 0 && d_.now_ns > since ? d_.now_ns - since : 0;
}

// The cycles among the ranks that can never proceed, each a deadlock; the other such ranks are
// behind one (or behind a finalized rank, named in chains()).
void analysis::cycles() {
  const auto stuck = [&](int32_t r) { return blocked(r) && !can_act_[static_cast<size_t>(r)]; };
  const size_t n = static_cast<size_t>(d_.world_size);
  std::vector<std::vector<int32_t>> next(n);
  std::vector<std::vector<int32_t>> previous(n);
  for (const wait_item& w : waits_)
    if (stuck(w.rank))
      for (const int32_t t : w.targets)
        if (stuck(t)) {
          next[static_cast<size_t>(w.rank)].push_back(t);
          previous[static_cast<size_t>(t)].push_back(w.rank);
        }
  std::vector<char> color(n, 0); // 0 unseen, 1 on the path, 2 done
  std::vector<int> cycle_of(n, -1);
  for (int32_t start = 0; start < d_.world_size; ++start) {
    if (!stuck(start) || color[static_cast<size_t>(start)] != 0)
      continue;
    std::vector<std::pair<int32_t, size_t>> path{{start, 0}};
    color[static_cast<size_t>(start)] = 1;
    while (!path.empty()) {
      auto& [u, edge] = path.back();
      const auto& out = next[static_cast<size_t>(u)];
      if (edge == out.size()) {
        color[static_cast<size_t>(u)] = 2;
        path.pop_back();
        continue;
      }
      const int32_t v = out[edge++];
      if (color[static_cast<size_t>(v)] == 0) {
        color[static_cast<size_t>(v)] = 1;
        path.push_back({v, 0});
      } else if (color[static_cast<size_t>(v)] == 1) {
        std::vector<int32_t> members;
        for (auto it = std::find_if(path.begin(), path.end(),
                                    [&](const auto& p) { return p.first == v; });
             it != path.end(); ++it)
          members.push_back(it->first);
        if (std::none_of(members.begin(), members.end(),
                         [&](int32_t m) { return cycle_of[static_cast<size_t>(m)] >= 0; })) {
          deadlock dl;
          for (size_t i = 0; i < members.size(); ++i) {
            const int32_t to = members[(i + 1) % members.size()];
            const auto [first, last] = waits_of(members[i]);
            // A rank that waits for itself: its threads wait for each other, each one named.
            for (auto w = first; w != last; ++w)
              if (std::binary_search(w->targets.begin(), w->targets.end(), to)) {
                dl.cycle.push_back(waiting(*w));
                if (members.size() > 1)
                  break;
              }
            cycle_of[static_cast<size_t>(members[i])] = static_cast<int>(d_.deadlocks.size());
          }
          d_.deadlocks.push_back(std::move(dl));
        }
      }
    }
  }
  // Behind a deadlock: the stuck ranks from which one of its members is reachable.
  std::vector<int32_t> work;
  for (int32_t r = 0; r < d_.world_size; ++r)
    if (cycle_of[static_cast<size_t>(r)] >= 0)
      work.push_back(r);
  while (!work.empty()) {
    const int32_t v = work.back();
    work.pop_back();
    for (const int32_t u : previous[static_cast<size_t>(v)])
      if (cycle_of[static_cast<size_t>(u)] < 0) {
        cycle_of[static_cast<size_t>(u)] = cycle_of[static_cast<size_t>(v)];
        d_.deadlocks[static_cast<size_t>(cycle_of[static_cast<size_t>(v)])]
            .blocked_behind.push_back(u);
        work.push_back(u);
      }
  }
  for (deadlock& dl : d_.deadlocks)
    std::sort(dl.blocked_behind.begin(), dl.blocked_behind.end());
  for (const int32_t r : wildcard_ranks_)
    if (stuck(r) && std::none_of(d_.unmatched.begin(), d_.unmatched.end(),
                                 [&](const unmatched_receive& u) { return u.receiver.rank == r; }))
      for (auto [w, last] = waits_of(r); w != last; ++w)
        if (w->wildcard) {
          unmatched_receive u;
          u.receiver = waiting(*w);
          u.source = any_source;
          u.tag = w->wildcard_tag;
          d_.unmatched.push_back(std::move(u));
          break;
        }
}

// Blocked ranks that wait, directly or through other blocked ranks, for a rank that computes,
// has finalized or has no state.
void analysis::chains() {
  const size_t n = static_cast<size_t>(d_.world_size);
  std::vector<std::vector<size_t>> waiting_on(n); // rank -> wait items with an edge to it
  for (size_t i = 0; i < waits_.size(); ++i)
    for (const int32_t t : waits_[i].targets)
      waiting_on[static_cast<size_t>(t)].push_back(i);
  for (int32_t c = 0; c < d_.world_size; ++c) {
    if (blocked(c) || waiting_on[static_cast<size_t>(c)].empty())
      continue;
    computing_rank cr;
    cr.rank = c;
    cr.has_state = state(c) != nullptr;
    cr.finalized = finalized(c);
    if (cr.has_state) {
      const thread_state* last = nullptr;
      for (const thread_state& t : state(c)->threads)
        if (t.phase == thread_phase::outside_mpi || t.phase == thread_phase::finalized ||
            t.phase == thread_phase::not_started)
          if (last == nullptr || t.since_ns > last->since_ns)
            last = &t;
      if (last != nullptr) {
        cr.last_routine = last->routine;
        cr.file = last->file;
        cr.function = last->function;
        cr.line = last->line;
      }
      cr.computing_ns = computing_ns(c);
    }
    // Breadth first from c against the edges: parents give one chain from the farthest waiter.
    std::map<int32_t, std::pair<int32_t, size_t>> parent; // rank -> (the rank it waits for, item)
    std::vector<int32_t> frontier{c};
    int32_t farthest = c;
    while (!frontier.empty()) {
      std::vector<int32_t> following;
      for (const int32_t v : frontier)
        for (const size_t i : waiting_on[static_cast<size_t>(v)]) {
          const int32_t u = waits_[i].rank;
          if (u == c || parent.count(u))
            continue;
          parent[u] = {v, i};
          (v == c ? cr.waiting_directly : cr.waiting_indirectly).push_back(u);
          if (following.empty())
            farthest = u; // the lowest rank at the deepest level
          following.push_back(u);
        }
      frontier = std::move(following);
    }
    std::sort(cr.waiting_directly.begin(), cr.waiting_directly.end());
    std::sort(cr.waiting_indirectly.begin(), cr.waiting_indirectly.end());
    for (int32_t u = farthest; u != c; u = parent[u].first)
      cr.chain.push_back(waiting(waits_[parent[u].second]));
    d_.computing.push_back(std::move(cr));
  }
  std::stable_sort(d_.computing.begin(), d_.computing.end(),
                   [](const computing_rank& a, const computing_rank& b) {
                     return a.waiting_directly.size() + a.waiting_indirectly.size() >
                            b.waiting_directly.size() + b.waiting_indirectly.size();
                   });
}

} // namespace

diagnosis diagnose(const std::vector<rank_state>& states, uint64_t now_ns, uint64_t threshold_ns) {
  diagnosis d;
  d.now_ns = now_ns;
  d.threshold_ns = threshold_ns;
  if (states.empty())
    return d;
  analysis a(states, d);
  a.classes();
  bool all_finished = true, any_blocked = false;
  for (int32_t r = 0; r < d.world_size; ++r) {
    all_finished = all_finished && a.finalized(r);
    any_blocked = any_blocked || a.blocked(r);
  }
  if (all_finished) {
    d.result = verdict::all_finished;
    d.progress_note = "every rank has finalized MPI";
    return d;
  }
  for (const rank_state& r : states)
    for (const thread_state& t : r.threads) {
      if (t.torn)
        d.torn_ranks.push_back(r.world_rank);
      const bool timed = t.phase == thread_phase::in_mpi || t.phase == thread_phase::outside_mpi;
      if (timed && t.since_ns + threshold_ns > now_ns && d.result != verdict::progressing) {
        d.result = verdict::progressing;
        const double ago = now_ns > t.since_ns ? static_cast<double>(now_ns - t.since_ns) / 1e9 : 0;
        char text[200];
        std::snprintf(text, sizeof(text), "rank %d %s %s %.1f s ago, within the %.1f s threshold",
                      r.world_rank, t.phase == thread_phase::in_mpi ? "entered" : "completed",
                      t.routine.c_str(), ago, static_cast<double>(threshold_ns) / 1e9);
        d.progress_note = text;
      }
    }
  std::sort(d.torn_ranks.begin(), d.torn_ranks.end());
  d.torn_ranks.erase(std::unique(d.torn_ranks.begin(), d.torn_ranks.end()), d.torn_ranks.end());
  if (d.result == verdict::progressing)
    return d;
  if (!any_blocked) {
    d.result = verdict::all_computing;
    d.progress_note = "no rank waits inside MPI: the ranks compute";
    return d;
  }
  d.result = verdict::hang;
  a.graph();
  return d;
}

} // namespace strata::hang
