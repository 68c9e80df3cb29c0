// What each blocked thread waits for, the edges of the wait-for graph: its blocking call's
// message, the requests it waits on, the members of its collective; whether a send or receive
// already matches a message (the transfer is then under way); the sends near a receive that
// nothing matches (a wrong tag, source or communicator).
#include "hang/analysis.hpp"

#include <algorithm>

namespace strata::hang::detail {

routines::blocking_wait blocking_wait_of(const std::string& routine) {
  const routines::info* r = routines::find(routine);
  return r != nullptr ? routines::blocking_wait_of(*r) : routines::blocking_wait::none;
}

namespace {

std::string tag_text(int32_t tag) {
  return tag == any_tag ? "any tag" : "tag " + std::to_string(tag);
}

bool send_matches_recv(const send_seen& s, const recv_seen& r) {
  return s.dest == r.receiver && s.comm == r.comm &&
         (r.source == any_source || r.source == s.sender) && (r.tag == any_tag || r.tag == s.tag);
}

} // namespace

void analysis::collect_messages() {
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
      const routines::blocking_wait k = blocking_wait_of(t.routine);
      if (k == routines::blocking_wait::send || k == routines::blocking_wait::sendrecv)
        sends_.push_back({rank, t.peer, t.tag, t.comm.id, false, &t});
      if (k == routines::blocking_wait::receive)
        recvs_.push_back({rank, t.peer, t.tag, t.comm.id});
      if (k == routines::blocking_wait::sendrecv)
        recvs_.push_back({rank, t.peer2, t.tag2, t.comm.id});
    }
  }
}

// Sends by destination, receives by receiver: each lookup sees only its rank's messages.
void analysis::index_messages() {
  sends_to_.assign(static_cast<size_t>(d_.world_size), {});
  recvs_at_.assign(static_cast<size_t>(d_.world_size), {});
  for (size_t i = 0; i < sends_.size(); ++i)
    if (sends_[i].dest >= 0 && sends_[i].dest < d_.world_size)
      sends_to_[static_cast<size_t>(sends_[i].dest)].push_back(i);
  for (size_t i = 0; i < recvs_.size(); ++i)
    recvs_at_[static_cast<size_t>(recvs_[i].receiver)].push_back(i);
}

bool analysis::recv_is_matched(const recv_seen& r) const {
  const auto& to = sends_to_[static_cast<size_t>(r.receiver)];
  return std::any_of(to.begin(), to.end(),
                     [&](size_t i) { return send_matches_recv(sends_[i], r); });
}

bool analysis::send_is_matched(const send_seen& s) const {
  if (s.dest < 0 || s.dest >= d_.world_size)
    return false;
  const auto& at = recvs_at_[static_cast<size_t>(s.dest)];
  return std::any_of(at.begin(), at.end(),
                     [&](size_t i) { return send_matches_recv(s, recvs_[i]); });
}

// The members of `comm` other than `self` (empty when they are not known).
std::vector<int32_t> analysis::others(const communicator& comm, int32_t self) const {
  std::vector<int32_t> out;
  if (!comm.members_known())
    return out;
  for (uint32_t i = 0; i < comm.size; ++i)
    if (comm.member(i) != self)
      out.push_back(comm.member(i));
  return out;
}

// Adds what a receive from `source` waits for, unless a send already matches it.
void analysis::add_recv(wait_item& w, int32_t source, int32_t tag, const communicator& comm) {
  const recv_seen r{w.rank, source, tag, comm.id};
  if (source == proc_null || recv_is_matched(r))
    return;
  if (source == any_source) {
    if (!comm.members_known() && comm.size > 1)
      w.known = false;
    else if (comm.size > 1 || (comm.size == 1 && comm.member(0) != w.rank))
      w.groups.push_back(group_of(comm));
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

// The group of a communicator's members, made on its first wildcard receive.
uint32_t analysis::group_of(const communicator& comm) {
  const auto key = std::make_tuple(comm.id, comm.first, comm.stride, comm.size);
  const auto [it, fresh] = group_index_.try_emplace(key, static_cast<uint32_t>(groups_.size()));
  if (fresh)
    groups_.push_back({comm, {}});
  return it->second;
}

bool analysis::waits_for_rank(const wait_item& w, int32_t rank) const {
  return std::binary_search(w.targets.begin(), w.targets.end(), rank) ||
         std::any_of(w.collectives.begin(), w.collectives.end(),
                     [&](uint32_t c) {
                       const auto& ranks = collectives_[c].ranks;
                       return std::binary_search(ranks.begin(), ranks.end(), rank);
                     }) ||
         (rank != w.rank && std::any_of(w.groups.begin(), w.groups.end(), [&](uint32_t g) {
            return groups_[g].comm.contains(rank);
          }));
}

std::vector<int32_t> analysis::all_targets(const wait_item& w) const {
  std::vector<int32_t> out = w.targets;
  for (const uint32_t c : w.collectives)
    out.insert(out.end(), collectives_[c].ranks.begin(), collectives_[c].ranks.end());
  if (!w.collectives.empty()) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

void analysis::add_send(wait_item& w, int32_t dest, int32_t tag, uint64_t bytes,
                        const communicator& comm) {
  if (dest == proc_null || send_is_matched({w.rank, dest, tag, comm.id, false, nullptr}))
    return;
  w.targets.push_back(dest);
  add_text(w, "rank " + std::to_string(dest) + " to receive its message (" + tag_text(tag) + ", " +
                  std::to_string(bytes) + " bytes)");
}

void analysis::add_text(wait_item& w, const std::string& text) {
  w.waits_for += (w.waits_for.empty() ? "" : "; ") + text;
}

// Sends to this receiver that differ only in tag, or only in source: the likely mistake.
void analysis::check_near_sends(const wait_item& w, const recv_seen& r) {
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
wait_item analysis::wait_of(int32_t rank, const thread_state& t) {
  wait_item w;
  w.rank = rank;
  w.thread = &t;
  if (t.torn) {
    w.known = false;
    return w;
  }
  using routines::blocking_wait;
  const blocking_wait kind = blocking_wait_of(t.routine);
  switch (kind) {
  case blocking_wait::receive:
    add_recv(w, t.peer, t.tag, t.comm);
    w.any = t.peer == any_source; // any one sender frees a wildcard receive
    break;
  case blocking_wait::send:
    add_send(w, t.peer, t.tag, t.bytes, t.comm);
    break;
  case blocking_wait::sendrecv:
    add_send(w, t.peer, t.tag, t.bytes, t.comm);
    add_recv(w, t.peer2, t.tag2, t.comm);
    break;
  case blocking_wait::all_requests:
  case blocking_wait::any_request: {
    w.any = kind == blocking_wait::any_request;
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
    // requests, a wait for all of them waits for each, the wildcard's senders as its group.
    if (w.wildcard && listed == 1)
      w.any = true;
    if (t.waited_total > listed) {
      // Any one of those not listed might complete: nothing is known of a Waitany's.
      if (w.any)
        w.known = false;
      add_text(w, std::to_string(t.waited_total - listed) + " more request" +
                      (t.waited_total - listed > 1 ? "s" : "") + " not in the state");
    }
    break;
  }
  case blocking_wait::members: {
    if (!t.comm.members_known() && t.comm.size > 1)
      w.known = false;
    const uint32_t c = collective_on(t.comm, t.routine, 0);
    add_collective(w, c);
    w.waits_for = collectives_[c].text;
    if (collectives_[c].missing.empty() && w.known)
      complete_collective_ranks_.insert(rank);
    break;
  }
  case blocking_wait::none:
    w.known = false;
    break;
  }
  if (w.known && w.targets.empty() && w.groups.empty() && w.collectives.empty() &&
      !complete_collective_ranks_.count(rank))
    w.known = false; // matched: the transfer is under way
  return w;
}

// A request of a nonblocking collective (MPI_Ibarrier, ...) waits for the members of its
// communicator that have not started the same collective on it.
void analysis::add_nonblocking_collective(wait_item& w, const pending_op& p) {
  if (!p.comm.members_known() && p.comm.size > 1) {
    w.known = false;
    return;
  }
  const uint32_t c =
      collective_on(p.comm, "MPI_I" + std::string(collective_name(p.collective)), p.collective);
  add_collective(w, c);
  if (!collectives_[c].text.empty())
    add_text(w, collectives_[c].text);
}

// Waits for every member missing from the collective: through the collective, shared with its
// other waiters; a wait for any one request names them (any one of them frees it).
void analysis::add_collective(wait_item& w, uint32_t c) {
  const collective_wait& cw = collectives_[c];
  if (cw.missing.empty())
    return;
  if (w.any) {
    w.targets.insert(w.targets.end(), cw.missing.begin(), cw.missing.end());
    return;
  }
  w.collectives_at.push_back(w.targets.size());
  w.collectives.push_back(c);
}

uint32_t analysis::collective_on(const communicator& comm, const std::string& routine,
                                 uint16_t nonblocking) {
  const auto key = std::make_tuple(comm.id, comm.first, comm.stride, comm.size, routine);
  const auto [found, fresh] =
      collective_index_.try_emplace(key, static_cast<uint32_t>(collectives_.size()));
  if (!fresh)
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
  for (const int32_t m : c.missing)
    if (m >= 0 && m < d_.world_size)
      c.ranks.push_back(m);
  std::sort(c.ranks.begin(), c.ranks.end());
  c.ranks.erase(std::unique(c.ranks.begin(), c.ranks.end()), c.ranks.end());
  collectives_.push_back(std::move(c));
  return found->second;
}

bool analysis::in_same_collective(int32_t member, const std::string& routine,
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
bool analysis::posted_collective(int32_t member, const communicator& comm,
                                 uint16_t collective) const {
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

waiting_rank analysis::waiting(const wait_item& w) const {
  waiting_rank out{w.rank,
                   w.thread->routine,
                   w.thread->file,
                   w.thread->function,
                   w.thread->line,
                   w.waits_for,
                   {},
                   {}};
  if (targets_final_) {
    out.targets = all_targets(w);
  } else { // as added so far, each collective's members where it came
    out.targets = w.targets;
    for (size_t k = w.collectives.size(); k-- > 0;) {
      const auto& missing = collectives_[w.collectives[k]].missing;
      out.targets.insert(out.targets.begin() + static_cast<std::ptrdiff_t>(w.collectives_at[k]),
                         missing.begin(), missing.end());
    }
  }
  for (const uint32_t g : w.groups)
    out.any_of.push_back(groups_[g].comm);
  // Which thread, where the rank describes more than one.
  const rank_state* r = state(w.rank);
  if (r != nullptr && std::count_if(r->threads.begin(), r->threads.end(), [](const auto& t) {
                        return t.phase != thread_phase::unused;
                      }) > 1)
    out.thread = w.thread->os_thread;
  return out;
}

} // namespace strata::hang::detail
