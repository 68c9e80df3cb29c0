// The monitor module's offload: an application rank's round, sent up the tree through a bounded
// set of buffers (policy drop or block), appended to its round file, or gathered to rank 0 with
// non-blocking collectives and reduced there (the inline transport).
#include "monitor/module/state.hpp"

#include "monitor/frontend.hpp"
#include "monitor/profile_round.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace strata::monitor {
namespace {

// ---- offload ---------------------------------------------------------------------------------

overlay::rank_profile snapshot(monitor_state& s, uint64_t round) {
  overlay::rank_profile p;
  p.rank = static_cast<uint32_t>(s.app_rank);
  p.round = round;
  p.elapsed_s = static_cast<double>(mono_ns() - s.start_ns) / 1e9;
  for (size_t f = 0; f < s.names.size(); ++f) {
    const uint64_t c = std::atomic_ref<uint64_t>(s.calls[f]).load(std::memory_order_relaxed);
    if (c == 0)
      continue;
    p.events.push_back({s.names[f], c,
                        std::atomic_ref<uint64_t>(s.time_ns[f]).load(std::memory_order_relaxed),
                        std::atomic_ref<uint64_t>(s.bytes[f]).load(std::memory_order_relaxed)});
  }
  p.events.push_back({"strata.monitor.dropped", s.dropped, 0, 0});
  p.events.push_back({"strata.monitor.blocked", s.blocked, 0, 0});
  return p;
}

// A free send buffer: finished sends are reaped; when none is free the policy decides (the
// final round always waits). Null: the round is dropped.
send_slot* free_slot(monitor_state& s, bool final) {
  for (send_slot& slot : s.slots) {
    if (slot.request == MPI_REQUEST_NULL)
      return &slot;
    int done = 0;
    MPI_Test(&slot.request, &done, MPI_STATUS_IGNORE);
    if (done != 0)
      return &slot;
  }
  if (s.opt.policy == "drop" && !final) {
    ++s.dropped;
    return nullptr;
  }
  if (!final)
    ++s.blocked;
  std::vector<MPI_Request> requests;
  for (send_slot& slot : s.slots)
    requests.push_back(slot.request);
  int index = 0;
  MPI_Waitany(static_cast<int>(requests.size()), requests.data(), &index, MPI_STATUS_IGNORE);
  s.slots[static_cast<size_t>(index)].request = MPI_REQUEST_NULL;
  return &s.slots[static_cast<size_t>(index)];
}

} // namespace

void send_packet(monitor_state& s, const overlay::packet& p, bool final) {
  send_slot* slot = free_slot(s, final);
  if (slot == nullptr)
    return;
  slot->bytes = overlay::encode_packet(p);
  // Synchronous mode: a buffer is in flight until its node has taken it, so the bounded set of
  // buffers measures how far the overlay has fallen behind (eager sends would complete at once
  // and hide it until MPI's own buffers filled).
  MPI_Issend(slot->bytes.data(), static_cast<int>(slot->bytes.size()), MPI_BYTE, s.parent,
             overlay_tag, s.overlay, &slot->request);
}

namespace {

// ---- the inline transport (no tool ranks) ----------------------------------------------------

// Rank 0 reduces a gathered round with the same filters and tree code as the tool ranks.
void reduce_gathered(monitor_state& s, const inline_round& r) {
  std::vector<std::vector<std::string>> leaves;
  for (size_t rank = 0; rank < r.sizes.size(); ++rank)
    if (r.sizes[rank] > 0)
      leaves.push_back({r.gathered.substr(static_cast<size_t>(r.displs[rank]),
                                          static_cast<size_t>(r.sizes[rank]))});
  if (leaves.empty() || s.inline_out == nullptr)
    return;
  try {
    const overlay::simulation_result sim = overlay::simulate(*s.filter, leaves, s.opt.fanout);
    const double t = static_cast<double>(mono_ns() - s.start_ns) / 1e9;
    for (const overlay::round_result& result : sim.rounds)
      std::fprintf(s.inline_out, "%s\n",
                   overlay::round_json_line(result, s.filter->name(), t).c_str());
    std::fflush(s.inline_out);
  } catch (const std::exception& e) {
    log_line(s, std::string("inline round not reduced: ") + e.what());
  }
}

// Moves a round to its next stage when its collective has completed (or waits, when `wait`).
bool advance_inline(monitor_state& s, inline_round& r, bool wait) {
  if (r.stage == 2)
    return true;
  int done = 0;
  if (wait) {
    MPI_Wait(&r.request, MPI_STATUS_IGNORE);
    done = 1;
  } else {
    MPI_Test(&r.request, &done, MPI_STATUS_IGNORE);
  }
  if (done == 0)
    return false;
  if (r.stage == 0) {
    if (s.app_rank == 0) {
      r.displs.assign(r.sizes.size(), 0);
      int total = 0;
      for (size_t i = 0; i < r.sizes.size(); ++i) {
        r.displs[i] = total;
        total += r.sizes[i];
      }
      r.gathered.resize(static_cast<size_t>(total));
    }
    MPI_Igatherv(r.bytes.data(), r.size, MPI_BYTE, r.gathered.data(), r.sizes.data(),
                 r.displs.data(), MPI_BYTE, 0, s.overlay, &r.request);
    r.stage = 1;
    return wait ? advance_inline(s, r, true) : false;
  }
  r.stage = 2;
  if (s.app_rank == 0)
    reduce_gathered(s, r);
  return true;
}

// Completed rounds leave the queue in order. A round whose sizes are not in yet holds back the
// byte gathers of the rounds after it (their order on `overlay` must be the round order).
void progress_inline(monitor_state& s) {
  for (auto& r : s.inline_rounds) {
    if (r->stage < 2)
      advance_inline(s, *r, false);
    if (r->stage == 0)
      break;
  }
  while (!s.inline_rounds.empty() && s.inline_rounds.front()->stage == 2)
    s.inline_rounds.pop_front();
}

void post_inline(monitor_state& s, std::string bytes) {
  auto r = std::make_unique<inline_round>();
  r->bytes = std::move(bytes);
  r->size = static_cast<int>(r->bytes.size());
  r->sizes.assign(s.app_rank == 0 ? static_cast<size_t>(s.app_size) : 1, 0);
  MPI_Igather(&r->size, 1, MPI_INT, r->sizes.data(), 1, MPI_INT, 0, s.control, &r->request);
  s.inline_rounds.push_back(std::move(r));
  ++s.inline_posted;
}

void offload_inline(monitor_state& s) {
  progress_inline(s);
  // At most `buffers` rounds in flight: the others' ranks have not all caught up.
  if (s.inline_rounds.size() >= static_cast<size_t>(s.opt.buffers)) {
    if (s.opt.policy == "drop") {
      ++s.dropped;
      return;
    }
    ++s.blocked;
    while (s.inline_rounds.size() >= static_cast<size_t>(s.opt.buffers)) {
      advance_inline(s, *s.inline_rounds.front(), true);
      progress_inline(s);
    }
  }
  // Rounds are matched by their place in each rank's sequence of collectives.
  overlay::rank_profile p = snapshot(s, s.inline_posted);
  post_inline(s, overlay::encode_profile(p));
}

} // namespace

// At finalize: the ranks that offloaded fewer rounds pad with empty ones, so that every rank
// posts the same collectives. The count is agreed on a communicator of its own first: a rank
// that waited for its own rounds before that would wait for padding not yet posted.
void finish_inline(monitor_state& s) {
  unsigned long long mine = s.inline_posted;
  unsigned long long most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, s.count);
  while (s.inline_posted < most)
    post_inline(s, std::string());
  post_inline(s, overlay::encode_profile(snapshot(s, overlay::final_round)));
  for (auto& r : s.inline_rounds) // in round order: the byte gathers keep their order
    advance_inline(s, *r, true);
  s.inline_rounds.clear();
  if (s.inline_out != nullptr)
    std::fclose(s.inline_out);
  s.inline_out = nullptr;
}

namespace {

void dump_now(monitor_state& s, bool final) {
  const uint64_t round = final ? overlay::final_round : s.next_round++;
  if (s.opt.transport == "tree") {
    // A round whose buffer is not free is dropped before the profile is even built.
    if (!final && s.opt.policy == "drop") {
      bool any_free = false;
      for (send_slot& slot : s.slots) {
        int done = 1;
        if (slot.request != MPI_REQUEST_NULL)
          MPI_Test(&slot.request, &done, MPI_STATUS_IGNORE);
        any_free = any_free || done != 0;
      }
      if (!any_free) {
        ++s.dropped;
        return;
      }
    }
    send_packet(s,
                overlay::packet{overlay::packet_kind::profile, round, 1,
                                overlay::encode_profile(snapshot(s, round))},
                final);
  } else if (s.opt.transport == "file") {
    if (s.file_fd >= 0 &&
        !overlay::append_record(s.file_fd, overlay::encode_profile(snapshot(s, round)))) {
      log_line(s, "cannot append to the round file: " + std::string(std::strerror(errno)) +
                      "; no more rounds from this rank");
      ::close(s.file_fd);
      s.file_fd = -1;
    }
  } else {
    offload_inline(s); // (the final round: finish_inline, at finalize)
  }
}

} // namespace

void dump(monitor_state& s, bool final) {
  if (!s.ready.load(std::memory_order_relaxed) || s.finalized)
    return;
  // One dump at a time (threads): a dump already running covers this one.
  if (s.dumping.exchange(true, std::memory_order_acquire))
    return;
  // The offload is the monitor's own traffic, on its communicator of every process (tool ranks
  // included): straight to MPI, seen by no other layer, as its callbacks' own calls are
  // (module.h). A dump also comes from the application's thread (strata_monitor_dump).
  const int saved = s.host->set_layer(STRATA_LAYER_MPI);
  dump_now(s, final);
  if (s.period_ns > 0)
    s.next_due_ns.store(mono_ns() + s.period_ns, std::memory_order_relaxed);
  s.host->set_layer(saved);
  s.dumping.store(false, std::memory_order_release);
}

} // namespace strata::monitor
