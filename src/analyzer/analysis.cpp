#include "analyzer/analysis.hpp"

#include "analyzer/partial.hpp"
#include "analyzer/tables.hpp"
#include "analyzer/wait_states.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>

namespace strata::analyze {
namespace {

constexpr uint32_t no_slot = UINT32_MAX;
constexpr uint64_t direct = UINT64_MAX; // a receive that needs no reordering

// A FIFO that reuses its storage: channels see millions of push/pop pairs.
template <class T> class fifo {
public:
  [[nodiscard]] bool empty() const { return head_ == items_.size(); }
  [[nodiscard]] size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  void push(const T& item) { items_.push_back(item); }
  void pop() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

private:
  std::vector<T> items_;
  size_t head_ = 0;
};

struct send_end {
  uint64_t enter, leave, op;
  uint32_t slot;    // late-receiver accounting of a blocking send, or no_slot
  uint32_t process; // the analysis process holding the slot
};

struct recv_end {
  uint64_t post;         // enter of the operation that posted the receive
  uint64_t enter, leave; // the operation that completed it
  uint64_t op;
  uint32_t slot; // late-sender accounting of the completing operation
};

struct channel_key {
  uint32_t comm, source, dest, tag;
  bool operator==(const channel_key&) const = default;
};
struct channel_hash {
  size_t operator()(const channel_key& k) const {
    uint64_t a = (uint64_t{k.comm} << 32) | k.tag;
    uint64_t b = (uint64_t{k.source} << 32) | k.dest;
    a ^= b * 0x9E3779B97F4A7C15ULL;
    a ^= a >> 29;
    return static_cast<size_t>(a * 0xBF58476D1CE4E5B9ULL);
  }
};

// Messages of one (communicator, source, destination, tag) are matched in order: MPI's
// non-overtaking rule. Sends queue in issue order, receives in posting order.
struct channel {
  fifo<send_end> sends;
  fifo<recv_end> recvs;
};

// An operation waiting for its messages to be matched before its wait time is known.
struct wait_slot {
  uint64_t enter, leave;
  uint64_t worst;
  uint64_t op;
  uint32_t rank, region, site;
  uint32_t pending;
  wait_pattern kind;
};

enum class msg_kind : uint8_t { send, recv };

struct pending_msg {
  msg_kind kind;
  uint32_t peer, comm, tag;
  uint64_t post; // receive: enter of the posting operation
  uint64_t seq;  // receive: posting order, or direct
};

struct open_op {
  uint64_t id, enter;
  uint32_t region, site;
  uint32_t msg_begin;
  bool collective;
  uint32_t coll_op, coll_comm, coll_root;
};

struct irecv_post {
  uint64_t seq, post;
};

struct reorder_entry {
  bool resolved = false;
  bool valid = false;
  channel_key key{};
  recv_end end{};
};

struct location_state {
  std::vector<open_op> stack;
  std::vector<pending_msg> msgs;
  uint64_t next_seq = 0;
  uint32_t mpi_depth = 0;
  rank_tables tables; // what the report's tables need of this rank
  // Receives complete out of posting order (Irecv A, Recv B, Wait A); the completed ones wait
  // here until every earlier-posted receive is complete, then enter their channels in order.
  std::unordered_map<uint64_t, irecv_post> requests;
  std::deque<reorder_entry> reorder;
  uint64_t reorder_base = 0;
  uint64_t next_recv_seq = 0;
  uint64_t unbalanced = 0;
};

struct coll_member {
  uint64_t enter = 0, leave = 0, op = 0;
  uint32_t region = 0, site = 0;
  bool present = false;
};

struct coll_instance {
  uint32_t op = 0;
  uint32_t root = no_root;
  uint32_t arrived = 0;
  std::vector<coll_member> members;
};

struct comm_state {
  bool ready = false;
  uint32_t size = 0;
  std::vector<uint32_t> local_of_world;
  std::vector<uint64_t> done; // collectives each member has finished on this communicator
  std::deque<coll_instance> open;
  uint64_t base = 0;
};

bool is_blocking_send(const std::string& name) {
  return name == "MPI_Send" || name == "MPI_Ssend" || name == "MPI_Sendrecv" ||
         name == "MPI_Sendrecv_replace";
}

bool is_sendrecv(const std::string& name) {
  return name == "MPI_Sendrecv" || name == "MPI_Sendrecv_replace";
}

// The messages a persistent request sends are recorded inside the start that sent them (a
// partitioned request's are marked besides).
bool is_start(const std::string& name) {
  return name == "MPI_Start" || name == "MPI_Startall";
}

} // namespace

struct analyzer::impl {
  const definitions& defs;
  graph_observer* observer;
  partition part;
  uint32_t first_rank = 0; // locs[i] is rank first_rank + i
  std::vector<location_state> locs;
  std::vector<uint8_t> region_is_mpi, region_blocking_send;
  std::vector<uint8_t> region_pair_kind; // a message_kind for the sends inside it
  std::unordered_map<channel_key, channel, channel_hash> channels;
  std::vector<wait_slot> slots;
  std::vector<uint32_t> free_slots;
  std::vector<comm_state> comms;
  wait_totals waits;
  uint64_t matched = 0, collectives = 0;
  uint64_t foreign_collectives = 0;
  uint64_t abandoned_receives = 0;
  uint64_t open_at_end = 0;
  std::vector<uint64_t> scratch_ids;
  // Records for the other analysis processes, by process.
  std::vector<std::vector<remote_send>> out_sends;
  std::vector<std::vector<remote_member>> out_members;
  std::vector<std::vector<remote_wait>> out_waits;

  impl(const definitions& d, graph_observer* o, const partition& p)
      : defs(d), observer(o), part(p), first_rank(p.first(p.self)),
        locs(p.first(p.self + 1) - p.first(p.self)), out_sends(p.processes),
        out_members(p.processes), out_waits(p.processes) {
    region_is_mpi.resize(d.regions.size());
    region_blocking_send.resize(d.regions.size());
    region_pair_kind.resize(d.regions.size());
    for (size_t i = 0; i < d.regions.size(); ++i) {
      region_is_mpi[i] = d.regions[i].cat == category::mpi;
      region_blocking_send[i] = region_is_mpi[i] && is_blocking_send(d.regions[i].name);
      region_pair_kind[i] = !region_is_mpi[i]                ? pair_kind_point_to_point
                            : is_sendrecv(d.regions[i].name) ? pair_kind_sendrecv
                            : is_start(d.regions[i].name)    ? pair_kind_persistent
                                                             : pair_kind_point_to_point;
    }
    comms.resize(d.comms.size());
  }

  void add_wait(wait_pattern kind, uint32_t rank, uint32_t region, uint32_t site, uint64_t ticks) {
    auto& w = waits[{kind, rank, region, site}];
    w.first += ticks;
    ++w.second;
  }

  uint32_t new_slot(const wait_slot& s) {
    if (free_slots.empty()) {
      slots.push_back(s);
      return static_cast<uint32_t>(slots.size() - 1);
    }
    const uint32_t i = free_slots.back();
    free_slots.pop_back();
    slots[i] = s;
    return i;
  }

  void settle(uint32_t i) {
    wait_slot& s = slots[i];
    if (s.worst > 0) {
      add_wait(s.kind, s.rank, s.region, s.site, s.worst);
      if (observer)
        observer->on_wait({s.op, s.enter, s.leave, s.worst, s.kind});
    }
    s.pending = 0;
    free_slots.push_back(i);
  }

  location_state& loc(uint32_t rank) { return locs[rank - first_rank]; }
  [[nodiscard]] uint32_t owner(uint32_t rank) const {
    return rank < part.ranks ? part.owner(rank) : part.self;
  }

  void match(const send_end& s, const recv_end& r) {
    ++matched;
    if (observer)
      observer->on_partner({s.op, s.enter, s.leave, r.op, r.enter, r.leave});
    if (r.slot != no_slot) {
      wait_slot& w = slots[r.slot];
      w.worst = std::max(w.worst, late_sender_wait(s.enter, r.enter, r.leave));
      if (--w.pending == 0)
        settle(r.slot);
    }
    if (s.slot != no_slot && s.process != part.self) {
      out_waits[s.process].push_back({s.slot, 0, late_receiver_wait(s.enter, s.leave, r.post)});
    } else if (s.slot != no_slot) {
      wait_slot& w = slots[s.slot];
      w.worst = std::max(w.worst, late_receiver_wait(s.enter, s.leave, r.post));
      if (--w.pending == 0)
        settle(s.slot);
    }
  }

  void deliver_send(const channel_key& key, const send_end& s) {
    channel& c = channels[key];
    if (!c.recvs.empty()) {
      const recv_end r = c.recvs.front();
      c.recvs.pop();
      match(s, r);
    } else {
      c.sends.push(s);
    }
  }

  void deliver_recv(const channel_key& key, const recv_end& r) {
    channel& c = channels[key];
    if (!c.sends.empty()) {
      const send_end s = c.sends.front();
      c.sends.pop();
      match(s, r);
    } else {
      c.recvs.push(r);
    }
  }

  void drain(location_state& ls) {
    while (!ls.reorder.empty() && ls.reorder.front().resolved) {
      const reorder_entry e = ls.reorder.front();
      ls.reorder.pop_front();
      ++ls.reorder_base;
      if (e.valid)
        deliver_recv(e.key, e.end);
    }
  }

  uint64_t post_receive(location_state& ls) {
    ls.reorder.emplace_back();
    // A receive request that never completes in the trace (freed with MPI_Request_free, or
    // cancelled without a record) would hold back every later receive of its rank: after this
    // many, it is given up, so memory stays bounded.
    if (ls.reorder.size() > max_reorder && !ls.reorder.front().resolved) {
      ls.reorder.front().resolved = true;
      ++abandoned_receives;
      drain(ls);
    }
    return ls.reorder_base + ls.reorder.size() - 1;
  }

  void enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site) {
    location_state& ls = loc(rank);
    ls.tables.first = std::min(ls.tables.first, t);
    ls.tables.last = std::max(ls.tables.last, t);
    const uint64_t id = (uint64_t{rank} << 40) | ls.next_seq++;
    ls.stack.push_back(
        {id, t, region, site, static_cast<uint32_t>(ls.msgs.size()), false, 0, 0, no_root});
    if (region_is_mpi[region])
      ++ls.mpi_depth;
  }

  void leave(uint32_t rank, uint64_t t, uint32_t region) {
    location_state& ls = loc(rank);
    ls.tables.last = std::max(ls.tables.last, t);
    if (ls.stack.empty()) {
      ++ls.unbalanced;
      return;
    }
    if (ls.stack.back().region != region)
      ++ls.unbalanced;
    close(rank, ls, t);
  }

  void close(uint32_t rank, location_state& ls, uint64_t t) {
    const open_op op = ls.stack.back();
    const uint32_t level = static_cast<uint32_t>(ls.stack.size() - 1);
    // The observer hears of the operation before any edge or wait of it.
    if (observer) {
      operation v;
      v.id = op.id;
      v.parent = ls.stack.size() >= 2 ? ls.stack[ls.stack.size() - 2].id : no_parent;
      v.rank = rank;
      v.level = level;
      v.region = op.region;
      v.site = op.site;
      v.enter = op.enter;
      v.leave = t;
      observer->on_operation(v);
    }

    // Messages this operation sent or completed, now that its leave time is known.
    uint32_t sends = 0, recvs = 0;
    for (size_t i = op.msg_begin; i < ls.msgs.size(); ++i)
      (ls.msgs[i].kind == msg_kind::send ? sends : recvs)++;
    uint32_t send_slot = no_slot, recv_slot = no_slot;
    if (recvs)
      recv_slot = new_slot({op.enter, t, 0, op.id, rank, op.region, op.site, recvs, late_sender});
    if (sends && region_blocking_send[op.region])
      send_slot = new_slot({op.enter, t, 0, op.id, rank, op.region, op.site, sends, late_receiver});
    for (size_t i = op.msg_begin; i < ls.msgs.size(); ++i) {
      const pending_msg m = ls.msgs[i];
      if (m.kind == msg_kind::send) {
        const uint32_t to = owner(m.peer);
        if (to == part.self)
          deliver_send({m.comm, rank, m.peer, m.tag}, {op.enter, t, op.id, send_slot, part.self});
        else
          out_sends[to].push_back(
              {m.comm, rank, m.peer, m.tag, op.enter, t, op.id, send_slot, part.self});
        continue;
      }
      const channel_key key{m.comm, m.peer, rank, m.tag};
      const recv_end end{m.post, op.enter, t, op.id, recv_slot};
      if (m.seq == direct) {
        deliver_recv(key, end);
      } else if (m.seq >= ls.reorder_base && m.seq - ls.reorder_base < ls.reorder.size()) {
        reorder_entry& e = ls.reorder[m.seq - ls.reorder_base];
        e = {true, true, key, end};
        drain(ls);
      }
    }
    ls.msgs.resize(op.msg_begin);

    if (op.collective)
      collective(rank, op, t);

    ls.tables.operation(level, op.region, op.site, t - op.enter);
    if (region_is_mpi[op.region]) {
      if (--ls.mpi_depth == 0)
        ls.tables.comm_ticks += t - op.enter;
    }
    ls.stack.pop_back();
  }

  comm_state& comm_of(uint32_t comm) {
    comm_state& c = comms[comm];
    if (!c.ready) {
      c.ready = true;
      const auto& members = defs.comms[comm].world_ranks;
      c.local_of_world.assign(defs.ranks(), UINT32_MAX);
      c.size = static_cast<uint32_t>(members.size());
      for (uint32_t i = 0; i < members.size(); ++i)
        if (members[i] < c.local_of_world.size())
          c.local_of_world[members[i]] = i;
      c.done.assign(c.size, 0);
    }
    return c;
  }

  void collective(uint32_t rank, const open_op& op, uint64_t t) {
    if (defs.comms[op.coll_comm].world_ranks.empty()) {
      // A self communicator: every rank has its own, an instance of one member.
      ++collectives;
      if (observer) {
        scratch_ids.assign(1, op.id);
        observer->on_collective(scratch_ids);
      }
      return;
    }
    comm_state& c = comm_of(op.coll_comm);
    const uint32_t local = c.local_of_world[rank];
    if (local == UINT32_MAX) {
      ++foreign_collectives;
      return;
    }
    const uint64_t n = c.done[local]++;
    const remote_member m{op.coll_comm, local,     n,       op.enter,   t,
                          op.id,        op.region, op.site, op.coll_op, op.coll_root};
    const uint32_t to = owner(defs.comms[op.coll_comm].world_ranks[0]);
    if (to == part.self)
      add_member(m);
    else
      out_members[to].push_back(m);
  }

  // The instance is completed by the process reading the communicator's first member.
  void add_member(const remote_member& rm) {
    comm_state& c = comm_of(rm.comm);
    if (rm.local >= c.size || rm.instance < c.base)
      return;
    const uint64_t n = rm.instance;
    while (c.base + c.open.size() <= n) {
      c.open.emplace_back();
      c.open.back().members.resize(c.size);
    }
    coll_instance& inst = c.open[n - c.base];
    coll_member& m = inst.members[rm.local];
    if (m.present)
      return;
    m = {rm.enter, rm.leave, rm.op, rm.region, rm.site, true};
    inst.op = rm.coll_op;
    if (rm.root != no_root)
      inst.root = rm.root;
    if (++inst.arrived == c.size)
      complete(c, inst);
    while (!c.open.empty() && c.open.front().arrived == c.size) {
      c.open.pop_front();
      ++c.base;
    }
  }

  void complete(comm_state& c, const coll_instance& inst) {
    ++collectives;
    if (observer) {
      scratch_ids.clear();
      for (const coll_member& m : inst.members)
        scratch_ids.push_back(m.op);
      observer->on_collective(scratch_ids);
    }
    wait_pattern kind{};
    if (!collective_pattern(inst.op, kind))
      return;
    uint32_t root = no_member;
    if (inst.root != no_root && inst.root < c.local_of_world.size())
      root = c.local_of_world[inst.root];
    collective_waits(kind, inst.members, root, [&](uint32_t i, uint64_t ticks) {
      const coll_member& m = inst.members[i];
      add_wait(kind, rank_of(m.op), m.region, m.site, ticks);
      if (observer)
        observer->on_wait({m.op, m.enter, m.leave, ticks, static_cast<uint8_t>(kind)});
    });
  }

  uint64_t top_enter(location_state& ls, uint64_t t) {
    return ls.stack.empty() ? t : ls.stack.back().enter;
  }

  // Every recorded send counts towards its pair, also one outside any operation; its kind is
  // that of the operation it is in, unless the trace marked it (a partitioned request's start).
  void count_send(uint32_t rank, uint32_t receiver, uint64_t bytes, int marked_kind = -1) {
    location_state& ls = loc(rank);
    const uint64_t kind = marked_kind >= 0   ? static_cast<uint64_t>(marked_kind)
                          : ls.stack.empty() ? uint64_t{pair_kind_point_to_point}
                                             : region_pair_kind[ls.stack.back().region];
    pair_stat& p = ls.tables.pairs[(kind << 32) | receiver];
    ++p.messages;
    p.bytes += bytes;
  }

  void add_msg(uint32_t rank, uint64_t t, const pending_msg& m) {
    location_state& ls = loc(rank);
    ls.tables.last = std::max(ls.tables.last, t);
    if (ls.stack.empty()) {
      // A message event outside any operation: give it a zero-length operation of its own, so
      // it is still matched.
      ++ls.unbalanced;
      return;
    }
    ls.msgs.push_back(m);
  }

  void finish_rank(uint32_t rank, location_state& ls) {
    while (!ls.stack.empty())
      close(rank, ls, ls.tables.last);
    // Receives whose request never completed are dropped; the completed ones behind them enter
    // their channels now.
    for (reorder_entry& e : ls.reorder)
      if (!e.resolved)
        e.resolved = true;
    drain(ls);
  }
};

analyzer::analyzer(const definitions& defs, graph_observer* observer)
    : impl_(std::make_unique<impl>(defs, observer,
                                   partition{1, 0, static_cast<uint32_t>(defs.ranks())})) {}
analyzer::analyzer(const definitions& defs, const partition& part, graph_observer* observer)
    : impl_(std::make_unique<impl>(defs, observer, part)) {}
analyzer::~analyzer() = default;

void analyzer::enter(uint32_t rank, uint64_t time, uint32_t region, uint32_t site) {
  impl_->enter(rank, time, region, site);
}
void analyzer::leave(uint32_t rank, uint64_t time, uint32_t region) {
  impl_->leave(rank, time, region);
}
void analyzer::send(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
                    uint64_t bytes) {
  impl_->count_send(rank, receiver, bytes);
  impl_->add_msg(rank, time, {msg_kind::send, receiver, comm, tag, 0, direct});
}
void analyzer::isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
                     uint64_t bytes, uint64_t) {
  impl_->count_send(rank, receiver, bytes);
  impl_->add_msg(rank, time, {msg_kind::send, receiver, comm, tag, 0, direct});
}
void analyzer::partitioned_isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm,
                                 uint32_t tag, uint64_t bytes, uint64_t) {
  impl_->count_send(rank, receiver, bytes, pair_kind_partitioned);
  impl_->add_msg(rank, time, {msg_kind::send, receiver, comm, tag, 0, direct});
}
void analyzer::isend_complete(uint32_t rank, uint64_t time, uint64_t) {
  location_state& ls = impl_->loc(rank);
  ls.tables.last = std::max(ls.tables.last, time);
}
void analyzer::irecv_request(uint32_t rank, uint64_t time, uint64_t request) {
  location_state& ls = impl_->loc(rank);
  ls.tables.last = std::max(ls.tables.last, time);
  const uint64_t seq = impl_->post_receive(ls);
  ls.requests[request] = {seq, impl_->top_enter(ls, time)};
}
void analyzer::recv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
                    uint64_t) {
  location_state& ls = impl_->loc(rank);
  const uint64_t seq = ls.reorder.empty() ? direct : impl_->post_receive(ls);
  impl_->add_msg(rank, time, {msg_kind::recv, sender, comm, tag, impl_->top_enter(ls, time), seq});
}
void analyzer::irecv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
                     uint64_t, uint64_t request) {
  location_state& ls = impl_->loc(rank);
  auto it = ls.requests.find(request);
  pending_msg m{msg_kind::recv, sender, comm, tag, impl_->top_enter(ls, time), direct};
  if (it != ls.requests.end()) {
    m.seq = it->second.seq;
    m.post = it->second.post;
    ls.requests.erase(it);
  } else if (!ls.reorder.empty()) {
    m.seq = impl_->post_receive(ls); // posted before the trace began: as if posted now
  }
  impl_->add_msg(rank, time, m);
}
void analyzer::request_cancelled(uint32_t rank, uint64_t time, uint64_t request) {
  location_state& ls = impl_->loc(rank);
  ls.tables.last = std::max(ls.tables.last, time);
  auto it = ls.requests.find(request);
  if (it == ls.requests.end())
    return;
  const uint64_t seq = it->second.seq;
  ls.requests.erase(it);
  if (seq >= ls.reorder_base && seq - ls.reorder_base < ls.reorder.size()) {
    ls.reorder[seq - ls.reorder_base].resolved = true;
    impl_->drain(ls);
  }
}
// One-sided operations count towards their pair (origin to target) as their own kind; they are
// no messages to match.
void analyzer::one_sided(uint32_t rank, uint64_t, uint8_t kind, uint32_t target, uint64_t bytes) {
  pair_stat& p = impl_->loc(rank).tables.pairs[(uint64_t{kind} << 32) | target];
  ++p.messages;
  p.bytes += bytes;
}

void analyzer::collective_end(uint32_t rank, uint64_t time, uint32_t op, uint32_t comm,
                              uint32_t root, uint64_t, uint64_t) {
  location_state& ls = impl_->loc(rank);
  ls.tables.last = std::max(ls.tables.last, time);
  if (ls.stack.empty()) {
    ++ls.unbalanced;
    return;
  }
  open_op& top = ls.stack.back();
  top.collective = true;
  top.coll_op = op;
  top.coll_comm = comm;
  top.coll_root = root;
}

void analyzer::program_event(uint32_t rank, uint64_t time) {
  location_state& ls = impl_->loc(rank);
  ls.tables.first = std::min(ls.tables.first, time);
  ls.tables.last = std::max(ls.tables.last, time);
}

void analyzer::close_ranks() {
  impl& s = *impl_;
  for (uint32_t i = 0; i < s.locs.size(); ++i) {
    s.open_at_end += s.locs[i].stack.size();
    s.finish_rank(s.first_rank + i, s.locs[i]);
  }
}

std::vector<std::vector<remote_send>> analyzer::take_sends() {
  return std::exchange(impl_->out_sends,
                       std::vector<std::vector<remote_send>>(impl_->part.processes));
}
std::vector<std::vector<remote_member>> analyzer::take_members() {
  return std::exchange(impl_->out_members,
                       std::vector<std::vector<remote_member>>(impl_->part.processes));
}
std::vector<std::vector<remote_wait>> analyzer::take_waits() {
  return std::exchange(impl_->out_waits,
                       std::vector<std::vector<remote_wait>>(impl_->part.processes));
}

void analyzer::receive_sends(const remote_send* sends, size_t count) {
  impl& s = *impl_;
  for (size_t i = 0; i < count; ++i) {
    const remote_send& r = sends[i];
    if (r.process >= s.part.processes || s.owner(r.dest) != s.part.self)
      throw trace_error("a send from another analysis process is not for this one");
    s.deliver_send({r.comm, r.source, r.dest, r.tag}, {r.enter, r.leave, r.op, r.slot, r.process});
  }
}

void analyzer::receive_members(const remote_member* members, size_t count) {
  impl& s = *impl_;
  for (size_t i = 0; i < count; ++i) {
    if (members[i].comm >= s.comms.size())
      throw trace_error("a collective from another analysis process names no communicator");
    s.add_member(members[i]);
  }
}

void analyzer::receive_waits(const remote_wait* waits, size_t count) {
  impl& s = *impl_;
  for (size_t i = 0; i < count; ++i) {
    const remote_wait& r = waits[i];
    if (r.slot >= s.slots.size() || s.slots[r.slot].pending == 0)
      throw trace_error("a late-receiver time from another analysis process has no send");
    wait_slot& w = s.slots[r.slot];
    w.worst = std::max(w.worst, r.ticks);
    if (--w.pending == 0)
      s.settle(r.slot);
  }
}

partial_result analyzer::take_partial(uint64_t events) {
  impl& s = *impl_;
  partial_result out;
  out.events = events;
  out.open_at_end = s.open_at_end;
  // Operations whose messages never found a partner still report what they waited for.
  for (uint32_t i = 0; i < s.slots.size(); ++i)
    if (s.slots[i].pending > 0)
      s.settle(i);
  for (auto& [key, c] : s.channels) {
    out.unmatched_sends += c.sends.size();
    out.unmatched_receives += c.recvs.size();
  }
  out.messages = s.matched;
  out.collectives = s.collectives;
  for (const comm_state& c : s.comms)
    out.incomplete_collectives += c.open.size();
  for (const location_state& ls : s.locs)
    out.unbalanced += ls.unbalanced;
  out.abandoned_receives = s.abandoned_receives;
  out.foreign_collectives = s.foreign_collectives;
  for (uint32_t i = 0; i < s.locs.size(); ++i) {
    out.ranks.push_back(s.first_rank + i);
    out.tables.push_back(std::move(s.locs[i].tables));
  }
  out.waits = std::move(s.waits);
  return out;
}

report analyzer::finish(uint64_t events) {
  close_ranks();
  std::vector<partial_result> parts;
  parts.push_back(take_partial(events));
  return assemble_report(impl_->defs, parts);
}

report analyze_trace(const std::string& path, graph_observer* observer) {
  trace_reader reader(path);
  analyzer a(reader.defs(), observer);
  const uint64_t events = reader.read_events(a);
  report r = a.finish(events);
  r.warnings.insert(r.warnings.begin(), reader.warnings().begin(), reader.warnings().end());
  return r;
}

} // namespace strata::analyze
