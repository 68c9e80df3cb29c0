// The analysis: classes, then over the wait-for graph (its edges from waits.cpp) which blocked
// ranks can never proceed (a fixed point from the ranks that can still act), the cycles among
// those, and the rest as chains to a computing rank. Only the states are used: no MPI.
#include "hang/diagnose.hpp"

#include "hang/analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

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

// Classes are the same when all but their ranks and times are.
using class_key = std::tuple<bool, int, std::string, std::string, uint32_t, std::string, uint64_t>;
using class_table = std::map<class_key, rank_class>;

class_key key_of(const rank_class& c) {
  return {!c.in_mpi, static_cast<int>(c.phase), c.routine, c.file, c.line, c.function, c.comm.id};
}

void add_class(class_table& found, rank_class&& c) {
  const auto [it, fresh] = found.try_emplace(key_of(c));
  if (fresh) {
    it->second = std::move(c);
    return;
  }
  rank_class& into = it->second;
  into.ranks.insert(into.ranks.end(), c.ranks.begin(), c.ranks.end());
  into.longest_ns = std::max(into.longest_ns, c.longest_ns);
}

// Those in MPI first, the largest first.
std::vector<rank_class> sorted_classes(class_table&& found) {
  std::vector<rank_class> out;
  out.reserve(found.size());
  for (auto& [k, c] : found)
    out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(), [](const rank_class& a, const rank_class& b) {
    if (a.in_mpi != b.in_mpi)
      return a.in_mpi;
    return a.ranks.size() > b.ranks.size();
  });
  return out;
}

} // namespace

std::vector<rank_class> rank_classes(const rank_state& r, uint64_t now_ns) {
  class_table found;
  for (const thread_state& t : r.threads) {
    if (t.phase == thread_phase::unused)
      continue; // a slot no thread has (yet)
    rank_class c;
    c.in_mpi = t.phase == thread_phase::in_mpi;
    c.phase = t.phase;
    c.routine = t.torn ? "(being updated)" : t.routine;
    c.file = t.file;
    c.function = t.function;
    c.line = t.line;
    c.comm = t.comm;
    c.ranks = {r.world_rank};
    if (now_ns > t.since_ns && t.since_ns != 0)
      c.longest_ns = now_ns - t.since_ns;
    const auto [it, fresh] = found.try_emplace(key_of(c), c);
    if (!fresh) // another thread of the rank in the same class: the rank once
      it->second.longest_ns = std::max(it->second.longest_ns, c.longest_ns);
  }
  return sorted_classes(std::move(found));
}

std::vector<rank_class> merge_classes(std::vector<rank_class> a, std::vector<rank_class> b) {
  class_table found;
  for (rank_class& c : a)
    add_class(found, std::move(c));
  for (rank_class& c : b)
    add_class(found, std::move(c));
  return sorted_classes(std::move(found));
}

namespace detail {

analysis::analysis(const std::vector<rank_state>& states, diagnosis& d) : d_(d) {
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

bool analysis::blocked(int32_t rank) const {
  const rank_state* r = state(rank);
  return r != nullptr && r->threads_not_described == 0 && waits_in_mpi(rank);
}

// Every described thread inside MPI (none computing, at least one in a call).
bool analysis::waits_in_mpi(int32_t rank) const {
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

bool analysis::finalized(int32_t rank) const {
  const rank_state* r = state(rank);
  if (r == nullptr || r->threads.empty())
    return false;
  return std::all_of(r->threads.begin(), r->threads.end(), [](const thread_state& t) {
    return t.phase == thread_phase::finalized || t.phase == thread_phase::unused;
  });
}

void analysis::classes() {
  class_table found;
  for (int32_t rank = 0; rank < d_.world_size; ++rank)
    if (const rank_state* r = state(rank); r != nullptr)
      for (rank_class& c : rank_classes(*r, d_.now_ns))
        add_class(found, std::move(c));
  d_.classes = sorted_classes(std::move(found));
}

// The wait items of one rank (waits_ is in rank order).
std::pair<std::vector<wait_item>::const_iterator, std::vector<wait_item>::const_iterator>
analysis::waits_of(int32_t rank) const {
  return std::equal_range(waits_.begin(), waits_.end(), rank, [](const auto& a, const auto& b) {
    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, int32_t>)
      return a < b.rank;
    else
      return a.rank < b;
  });
}

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
      if (o.phase == thread_phase::in_mpi &&
          blocking_wait_of(o.routine) == routines::blocking_wait::members)
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
// Waitany and wildcards) are on ranks that can act. What remains can never proceed. A wildcard's
// group is freed once, by its first member that can act (the waiting rank itself only once it
// can act already), and frees each of its waits in turn.
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
    std::sort(w.groups.begin(), w.groups.end());
    w.groups.erase(std::unique(w.groups.begin(), w.groups.end()), w.groups.end());
    std::sort(w.collectives.begin(), w.collectives.end());
    w.collectives.erase(std::unique(w.collectives.begin(), w.collectives.end()),
                        w.collectives.end());
    w.collectives_at.clear();
    remaining[i] = w.targets.size() + w.groups.size();
    for (const int32_t t : w.targets)
      waiters[static_cast<size_t>(t)].push_back(i);
    for (const uint32_t g : w.groups)
      groups_[g].waiters.push_back(i);
    for (const uint32_t c : w.collectives) {
      collectives_[c].waiters.push_back(i);
      // (One whose members are all outside the world waits for nobody: as none named.)
      remaining[i] += collectives_[c].ranks.empty() ? 0 : 1;
    }
  }
  targets_final_ = true;
  // A collective frees its waiters once all its missing members can act.
  missing_from_.assign(n, {});
  std::vector<size_t> collective_left(collectives_.size());
  for (uint32_t c = 0; c < collectives_.size(); ++c) {
    collective_left[c] = collectives_[c].ranks.size();
    for (const int32_t m : collectives_[c].ranks)
      missing_from_[static_cast<size_t>(m)].push_back(c);
  }
  member_groups_.assign(n, {});
  for (uint32_t g = 0; g < groups_.size(); ++g)
    for (uint32_t k = 0; k < groups_[g].comm.size; ++k)
      if (const int32_t m = groups_[g].comm.member(k); m >= 0 && m < d_.world_size)
        member_groups_[static_cast<size_t>(m)].push_back(g);
  group_freed_.assign(groups_.size(), 0);
  auto satisfy = [&](size_t i) {
    if (remaining[i] == 0)
      return;
    remaining[i] = waits_[i].any ? 0 : remaining[i] - 1;
    if (remaining[i] == 0)
      release(waits_[i].rank);
  };
  // (Marked, not released: each rank that can act is worked on once, below.)
  for (const wait_item& w : waits_)
    if (!w.known || complete_collective_ranks_.count(w.rank))
      can_act_[static_cast<size_t>(w.rank)] = 1;
  for (int32_t r = 0; r < d_.world_size; ++r)
    if (can_act_[static_cast<size_t>(r)])
      work.push_back(static_cast<size_t>(r));
  while (!work.empty()) {
    const size_t r = work.back();
    work.pop_back();
    for (const size_t i : waiters[r])
      satisfy(i);
    for (const uint32_t g : member_groups_[r])
      if (!group_freed_[g]) {
        group_freed_[g] = 1;
        for (const size_t i : groups_[g].waiters)
          satisfy(i);
      }
    for (const uint32_t c : missing_from_[r])
      if (--collective_left[c] == 0)
        for (const size_t i : collectives_[c].waiters)
          satisfy(i);
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

// The cycles among the threads of the ranks that can never proceed, each a deadlock. A thread
// waits for ranks, any thread of which might free it: an edge goes from it to each thread of
// such a rank but itself (to itself only as its rank's one thread, waiting for its own message),
// those that wait back for its own rank first, so that the cycles found are the short ones (a
// thread of rank 0 waits for rank 1, whose thread waits for rank 0) rather than a detour through
// a thread waiting for another thread of its own rank. A member's twins (threads of its rank
// waiting for the same ranks) are members too: three threads of a rank waiting for their own
// rank are one deadlock of three. The other stuck ranks are behind a deadlock (or behind a
// finalized rank, named in chains()).
void analysis::cycles() {
  const auto stuck = [&](int32_t r) { return blocked(r) && !can_act_[static_cast<size_t>(r)]; };
  const size_t n = waits_.size();
  std::vector<std::vector<size_t>> next(n);
  const auto items_of = [&](int32_t rank) {
    const auto [first, last] = waits_of(rank);
    return std::make_pair(static_cast<size_t>(first - waits_.begin()),
                          static_cast<size_t>(last - waits_.begin()));
  };
  // A collective whose members each have one thread waiting is one node, shared by its waiters
  // that wait for nothing else: its edges go to the members in rank order, as each waiter's
  // edges would. (A member with more threads orders them by whether they wait back for the
  // waiter, which differs per waiter: then each waiter has its own edges.) The search walks a
  // shared node's edges from each waiter in turn, as its own (the same cycles found), skipping
  // for good those to threads done or in a deadlock already: linear, not one walk per waiter.
  std::vector<size_t> node_of(collectives_.size(), 0); // 0: none
  for (uint32_t c = 0; c < collectives_.size(); ++c) {
    const collective_wait& cw = collectives_[c];
    const auto stuck_waiter = [&](size_t i) {
      const wait_item& w = waits_[i];
      return stuck(w.rank) && w.targets.empty() && w.groups.empty() && w.collectives.size() == 1;
    };
    if (std::none_of(cw.waiters.begin(), cw.waiters.end(), stuck_waiter) ||
        std::any_of(cw.ranks.begin(), cw.ranks.end(), [&](int32_t m) {
          const auto [begin, end] = items_of(m);
          return stuck(m) && end - begin > 1;
        }))
      continue;
    node_of[c] = next.size();
    next.emplace_back();
    for (const int32_t m : cw.ranks)
      if (stuck(m))
        for (auto [j, end] = items_of(m); j < end; ++j)
          next[node_of[c]].push_back(j);
  }
  const size_t shared_end = next.size(); // shared nodes are n .. shared_end - 1
  for (size_t i = 0; i < n; ++i) {
    const wait_item& w = waits_[i];
    if (!stuck(w.rank))
      continue;
    if (w.targets.empty() && w.groups.empty() && w.collectives.size() == 1 &&
        node_of[w.collectives[0]] != 0) {
      next[i].push_back(node_of[w.collectives[0]]);
      continue;
    }
    for (const int32_t t : all_targets(w)) {
      if (!stuck(t))
        continue;
      const auto [begin, end] = items_of(t);
      for (const bool back : {true, false})
        for (size_t j = begin; j < end; ++j)
          if ((j != i || end - begin == 1) && waits_for_rank(waits_[j], w.rank) == back)
            next[i].push_back(j);
    }
  }
  // A wildcard's group as two chains of nodes over its members in order, "any of members 0..k"
  // and "any of members k..": a waiter that is member k has an edge to the first chain at k - 1
  // and to the second at k + 1, so it reaches every other member (in the order of their ranks,
  // as edges to each would) and never itself, with two edges a waiter and four a member.
  for (const any_member_group& g : groups_) {
    if (std::none_of(g.waiters.begin(), g.waiters.end(),
                     [&](size_t i) { return stuck(waits_[i].rank); }))
      continue;
    const size_t size = g.comm.size, before = next.size(), after = before + size;
    next.resize(next.size() + 2 * size);
    for (size_t k = 0; k < size; ++k) {
      const int32_t m = g.comm.member(static_cast<uint32_t>(k));
      const bool reach = m >= 0 && m < d_.world_size && stuck(m);
      if (k > 0)
        next[before + k].push_back(before + k - 1);
      if (reach) {
        const auto [begin, end] = items_of(m);
        for (size_t j = begin; j < end; ++j) {
          next[before + k].push_back(j);
          next[after + k].push_back(j);
        }
      }
      if (k + 1 < size)
        next[after + k].push_back(after + k + 1);
    }
    for (const size_t i : g.waiters) {
      if (!stuck(waits_[i].rank))
        continue;
      const int64_t offset = int64_t{waits_[i].rank} - g.comm.first;
      const size_t k = g.comm.contains(waits_[i].rank)
                           ? static_cast<size_t>(g.comm.stride != 0 ? offset / g.comm.stride : 0)
                           : size; // not a member: every member
      if (k > 0)
        next[i].push_back(before + k - 1);
      if (k + 1 < size)
        next[i].push_back(after + k + 1);
    }
  }
  const size_t nodes = next.size();
  std::vector<std::vector<size_t>> previous(nodes);
  for (size_t u = 0; u < nodes; ++u)
    for (const size_t v : next[u])
      previous[v].push_back(u);
  const auto twins = [&](size_t a, size_t b) {
    return a != b && waits_[a].rank == waits_[b].rank && waits_[a].groups == waits_[b].groups &&
           (waits_[a].collectives.empty() && waits_[b].collectives.empty()
                ? waits_[a].targets == waits_[b].targets
                : all_targets(waits_[a]) == all_targets(waits_[b]));
  };
  std::vector<char> color(nodes, 0);        // 0 unseen, 1 on the path, 2 done
  std::vector<size_t> on_path_at(nodes, 0); // where a node on the path is on it
  std::vector<int> cycle_of(nodes, -1);
  // Per shared node, past each edge the next one that may still matter (a skip list).
  std::vector<std::vector<size_t>> skip(shared_end - n);
  for (size_t x = n; x < shared_end; ++x) {
    skip[x - n].resize(next[x].size() + 1);
    for (size_t k = 0; k < skip[x - n].size(); ++k)
      skip[x - n][k] = k;
  }
  const auto next_live = [&](size_t x, size_t k) {
    auto& to = skip[x - n];
    const auto& out = next[x];
    for (;;) {
      size_t r = k;
      while (r < out.size() && to[r] != r)
        r = to[r];
      for (size_t p = k; p != r;)
        p = std::exchange(to[p], r);
      if (r == out.size() || color[out[r]] == 0 || (color[out[r]] == 1 && cycle_of[out[r]] < 0))
        return r;
      to[r] = r + 1; // done, or in a deadlock: no edge to it matters any more
      k = r + 1;
    }
  };
  struct step {
    size_t node, edge, shared_edge; // shared_edge: where in a shared node's edges it walks
  };
  for (size_t start = 0; start < n; ++start) {
    if (!stuck(waits_[start].rank) || color[start] != 0)
      continue;
    std::vector<step> path{{start, 0, 0}};
    color[start] = 1;
    on_path_at[start] = 0;
    while (!path.empty()) {
      step& at = path.back();
      const auto& out = next[at.node];
      if (at.edge == out.size()) {
        color[at.node] = 2;
        path.pop_back();
        continue;
      }
      size_t v = out[at.edge];
      if (v >= n && v < shared_end) {
        const size_t k = next_live(v, at.shared_edge);
        if (k == next[v].size()) {
          ++at.edge;
          at.shared_edge = 0;
          continue;
        }
        at.shared_edge = k + 1;
        v = next[v][k];
      } else {
        ++at.edge;
      }
      if (color[v] == 0) {
        color[v] = 1;
        on_path_at[v] = path.size();
        path.push_back({v, 0, 0});
      } else if (color[v] == 1 && cycle_of[v] < 0) {
        // (A back edge to a member of a deadlock found is no new one: checked at once, since a
        // rank waiting for every other, a wildcard receive, gives a back edge per pair.)
        std::vector<size_t> members; // the wait items on it (not a group's nodes)
        for (auto it = path.begin() + static_cast<std::ptrdiff_t>(on_path_at[v]); it != path.end();
             ++it)
          if (it->node < n)
            members.push_back(it->node);
        if (std::none_of(members.begin(), members.end(),
                         [&](size_t m) { return cycle_of[m] >= 0; })) {
          const int number = static_cast<int>(d_.deadlocks.size());
          deadlock dl;
          for (size_t k = 0; k < members.size(); ++k) {
            const size_t m = members[k];
            dl.cycle.push_back(waiting(waits_[m]));
            cycle_of[m] = number;
            // The member's twins (the same rank, waiting for the same ranks: the same edges) are
            // in the cycle as much as it is; named after the last of a run of twins.
            if (k + 1 < members.size() && twins(m, members[k + 1]))
              continue;
            const auto [first, last] = waits_of(waits_[m].rank);
            for (auto j = static_cast<size_t>(first - waits_.begin());
                 j < static_cast<size_t>(last - waits_.begin()); ++j)
              if (cycle_of[j] < 0 && twins(m, j)) {
                dl.cycle.push_back(waiting(waits_[j]));
                cycle_of[j] = number;
              }
          }
          d_.deadlocks.push_back(std::move(dl));
        }
      }
    }
  }
  // Behind a deadlock: the stuck ranks none of whose threads is in a cycle, from one of which a
  // member is reachable (through a group's nodes too).
  std::vector<char> named(static_cast<size_t>(d_.world_size), 0);
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i)
    if (cycle_of[i] >= 0) {
      named[static_cast<size_t>(waits_[i].rank)] = 1;
      work.push_back(i);
    }
  while (!work.empty()) {
    const size_t v = work.back();
    work.pop_back();
    for (const size_t u : previous[v])
      if (cycle_of[u] < 0) {
        cycle_of[u] = cycle_of[v];
        work.push_back(u);
        if (u >= n)
          continue;
        const auto rank = static_cast<size_t>(waits_[u].rank);
        if (!named[rank]) {
          named[rank] = 1;
          d_.deadlocks[static_cast<size_t>(cycle_of[v])].blocked_behind.push_back(waits_[u].rank);
        }
      }
  }
  for (deadlock& dl : d_.deadlocks)
    std::sort(dl.blocked_behind.begin(), dl.blocked_behind.end());
  std::vector<char> unmatched_at(static_cast<size_t>(d_.world_size), 0);
  for (const unmatched_receive& u : d_.unmatched)
    unmatched_at[static_cast<size_t>(u.receiver.rank)] = 1;
  // A stuck rank's wildcard that no member can feed any more (one beside other waits may be
  // stuck by those alone).
  for (const int32_t r : wildcard_ranks_)
    if (stuck(r) && !unmatched_at[static_cast<size_t>(r)])
      for (auto [w, last] = waits_of(r); w != last; ++w)
        if (w->wildcard && std::none_of(w->groups.begin(), w->groups.end(),
                                        [&](uint32_t g) { return group_freed_[g] != 0; })) {
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
  std::vector<std::vector<size_t>> waiting_on(n); // rank -> wait items that name it
  for (size_t i = 0; i < waits_.size(); ++i)
    for (const int32_t t : waits_[i].targets)
      waiting_on[static_cast<size_t>(t)].push_back(i);
  // Whether a group waits for `rank`: a waiter of another rank (a rank never waits for itself
  // through a wildcard).
  const auto group_waits_for = [&](uint32_t g, int32_t rank) {
    const auto& w = groups_[g].waiters;
    return std::any_of(w.begin(), w.end(), [&](size_t i) { return waits_[i].rank != rank; });
  };
  std::vector<char> group_seen(groups_.size(), 0), collective_seen(collectives_.size(), 0);
  for (int32_t c = 0; c < d_.world_size; ++c) {
    const auto& groups_of_c = member_groups_[static_cast<size_t>(c)];
    const auto& missing_from_c = missing_from_[static_cast<size_t>(c)];
    if (blocked(c) || (waiting_on[static_cast<size_t>(c)].empty() &&
                       std::none_of(groups_of_c.begin(), groups_of_c.end(),
                                    [&](uint32_t g) { return group_waits_for(g, c); }) &&
                       std::all_of(missing_from_c.begin(), missing_from_c.end(),
                                   [&](uint32_t k) { return collectives_[k].waiters.empty(); })))
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
      if (waits_in_mpi(c)) { // not blocked: it has threads not described
        cr.threads_not_described = state(c)->threads_not_described;
        for (const thread_state& t : state(c)->threads)
          if (t.phase == thread_phase::in_mpi) {
            cr.last_routine = t.routine;
            cr.file = t.file;
            cr.function = t.function;
            cr.line = t.line;
            break;
          }
      }
    }
    // Breadth first from c against the edges: parents give one chain from the farthest waiter.
    std::map<int32_t, std::pair<int32_t, size_t>> parent; // rank -> (the rank it waits for, item)
    // A group is entered once, from its first member reached: its waiters are then all reached
    // (the one of that member's own rank already was); so is a collective, from its first
    // missing member reached.
    std::vector<int32_t> frontier{c};
    std::vector<uint32_t> groups_entered, collectives_entered;
    int32_t farthest = c;
    while (!frontier.empty()) {
      std::vector<int32_t> following;
      const auto reach = [&](int32_t v, size_t i) {
        const int32_t u = waits_[i].rank;
        if (u == c || parent.count(u))
          return;
        parent[u] = {v, i};
        (v == c ? cr.waiting_directly : cr.waiting_indirectly).push_back(u);
        if (following.empty() || u < farthest)
          farthest = u; // the lowest rank at the deepest level
        following.push_back(u);
      };
      std::vector<size_t> items; // those waiting for v, in their order (as the chain's choice)
      for (const int32_t v : frontier) {
        items = waiting_on[static_cast<size_t>(v)];
        for (const uint32_t g : member_groups_[static_cast<size_t>(v)])
          if (!group_seen[g]) {
            group_seen[g] = 1;
            groups_entered.push_back(g);
            items.insert(items.end(), groups_[g].waiters.begin(), groups_[g].waiters.end());
          }
        for (const uint32_t k : missing_from_[static_cast<size_t>(v)])
          if (!collective_seen[k]) {
            collective_seen[k] = 1;
            collectives_entered.push_back(k);
            items.insert(items.end(), collectives_[k].waiters.begin(),
                         collectives_[k].waiters.end());
          }
        std::sort(items.begin(), items.end());
        for (const size_t i : items)
          reach(v, i);
      }
      frontier = std::move(following);
    }
    for (const uint32_t g : groups_entered)
      group_seen[g] = 0;
    for (const uint32_t k : collectives_entered)
      collective_seen[k] = 0;
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

} // namespace detail

diagnosis diagnose(const std::vector<rank_state>& states, uint64_t now_ns, uint64_t threshold_ns) {
  diagnosis d;
  d.now_ns = now_ns;
  d.threshold_ns = threshold_ns;
  if (states.empty())
    return d;
  detail::analysis a(states, d);
  a.classes();
  bool all_finished = true, any_blocked = false;
  for (int32_t r = 0; r < d.world_size; ++r) {
    all_finished = all_finished && a.finalized(r);
    any_blocked = any_blocked || a.waits_in_mpi(r);
  }
  if (all_finished) {
    d.result = verdict::all_finished;
    d.progress_note = "every rank has finalized MPI";
    return d;
  }
  for (const rank_state& r : states)
    if (r.threads_not_described > 0)
      d.threads_not_described.emplace_back(r.world_rank, r.threads_not_described);
  std::sort(d.threads_not_described.begin(), d.threads_not_described.end());
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
