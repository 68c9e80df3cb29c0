// The `monitor` module: online monitoring (Nataraj et al., TAU over MRNet). Every application rank
// keeps a compact per-function table (calls, time, bytes) and offloads it as one round every
// `period` seconds, at strata_monitor_dump(), at MPI_Pcontrol(level) and at MPI_Finalize.
//
// Transports:
//  - tree: the job has P + M processes. In MPI_Init the world is split: the first P are the
//    application (its MPI_COMM_WORLD is replaced by their communicator), the last M are tool
//    ranks forming a K-ary tree whose nodes reduce the rounds with a filter (src/monitor). Tool
//    ranks never return from MPI_Init: they run the overlay, sleeping with back-off between
//    probes, finalize when the root tells them the application has, and exit.
//  - file: each rank appends its rounds to DIR/rank.<r>.rounds; `strata monitor DIR` (or rank 0
//    at finalize, when `out` is set) reduces them with the same filters.
//  - inline: no extra ranks (launchers that cannot add them): the same filters on the
//    application ranks over a duplicated communicator, with non-blocking collectives.
//
// Offloads are non-blocking sends from a bounded set of buffers; when all are in flight the
// policy applies: `drop` skips the round, `block` waits for the oldest. Both are counted and
// travel with the profile as the events strata.monitor.dropped and strata.monitor.blocked.
#include "config/options.hpp"
#include "monitor/engine.hpp"
#include "monitor/filter.hpp"
#include "monitor/frontend.hpp"
#include "monitor/monitor_options.hpp"
#include "monitor/profile_round.hpp"
#include "monitor/tree.hpp"

#include <mpi.h>
#include <strata/module.h>
#include <strata/zmpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <iterator>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace strata::monitor {
namespace {

constexpr int overlay_tag = 0x5173; // every overlay message: one tag keeps each pair in order

struct send_slot {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

// One round of the inline transport: the sizes gathered first (on `control`), then the bytes
// (on `overlay`). Collectives match by their order on each communicator: every rank posts the
// size gathers in round order, and each round's byte gather once its sizes are in, in round
// order too, so several rounds can be in flight.
struct inline_round {
  std::string bytes; // this rank's encoded profile; empty for the padding rounds of finalize
  int size = 0;
  std::vector<int> sizes; // rank 0
  std::vector<int> displs;
  std::string gathered;
  MPI_Request request = MPI_REQUEST_NULL;
  int stage = 0; // 0: sizes in flight, 1: bytes in flight, 2: done
};

struct monitor_state {
  const strata_host* host = nullptr;
  int self = 0;
  MPI_Comm world = MPI_COMM_NULL; // every process at mpi_ready (strata_host::world)
  options opt;
  std::unique_ptr<overlay::filter> filter;
  std::vector<std::string> names;
  // By function id: calls, time, bytes. Relaxed atomics under MPI_THREAD_MULTIPLE.
  std::vector<uint64_t> calls;
  std::vector<uint64_t> time_ns;
  std::vector<uint64_t> bytes;
  bool threaded = false;
  uint64_t start_ns = 0;
  uint64_t period_ns = 0;
  std::atomic<uint64_t> next_due_ns{UINT64_MAX};
  std::atomic<bool> dumping{false};
  std::atomic<bool> ready{false};
  bool finalized = false;

  int world_rank = 0;
  int world_size = 1;
  int app_rank = 0;
  int app_size = 1;
  MPI_Comm app = MPI_COMM_NULL;     // what the application sees as its world
  MPI_Comm overlay = MPI_COMM_NULL; // the monitor's own traffic (a duplicate of the real world)
  int parent = -1;                  // tree: the world rank this application rank offloads to
  std::vector<send_slot> slots;
  uint64_t next_round = 0;
  uint64_t dropped = 0;
  uint64_t blocked = 0;
  int file_fd = -1;
  // inline transport: rounds gathered to rank 0 with non-blocking collectives on `overlay`
  std::deque<std::unique_ptr<struct inline_round>> inline_rounds;
  uint64_t inline_posted = 0;
  MPI_Comm control = MPI_COMM_NULL; // inline: the gathers of the rounds' sizes
  MPI_Comm count = MPI_COMM_NULL;   // inline: the count of rounds, agreed at finalize
  std::FILE* inline_out = nullptr;  // rank 0
};

monitor_state* g_state = nullptr;

uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_us(long us) {
  timespec t{us / 1000000, (us % 1000000) * 1000};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void log_line(const monitor_state& s, const std::string& message) {
  s.host->log(s.self, message.c_str());
}

// ---- the call path --------------------------------------------------------------------------

void dump(monitor_state& s, bool final);

void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<monitor_state*>(raw);
  const auto f = static_cast<size_t>(ev->function);
  const uint64_t t = ev->t_exit_ns - ev->t_enter_ns;
  const uint64_t moved = static_cast<uint64_t>(ev->bytes_sent > 0 ? ev->bytes_sent : 0) +
                         static_cast<uint64_t>(ev->bytes_received > 0 ? ev->bytes_received : 0);
  if (!s->threaded) {
    ++s->calls[f];
    s->time_ns[f] += t;
    s->bytes[f] += moved;
  } else {
    std::atomic_ref<uint64_t>(s->calls[f]).fetch_add(1, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(s->time_ns[f]).fetch_add(t, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(s->bytes[f]).fetch_add(moved, std::memory_order_relaxed);
  }
  // The periodic offload: one compare per call, at the application's own MPI calls.
  if (ev->t_exit_ns >= s->next_due_ns.load(std::memory_order_relaxed))
    dump(*s, false);
}

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

// strata_monitor_dump() from the application (include/strata/annotate.h), through the core.
struct dump_service {
  void (*dump)(void* state);
  void* state;
};
dump_service g_dump_service{};

void dump_from_application(void* raw) {
  dump(*static_cast<monitor_state*>(raw), false);
}

// ---- the tool ranks --------------------------------------------------------------------------

// A tool rank never returns to the application: the core finalizes MPI without the other
// modules' finalize callbacks (they never saw it return from MPI_Init) and ends the process.
[[noreturn]] void finalize_tool_rank() {
  g_state->host->end_process(g_state->self, 0);
  std::_Exit(0); // end_process does not return
}

struct pending_send {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

[[noreturn]] void run_tool_rank(monitor_state& s, const overlay::tree_layout& tree, int node) {
  const int P = tree.leaves;
  const std::vector<int> children = tree.children(node);
  const bool leaf_children = tree.children_are_leaves(node);
  const bool root = node == 0;
  const int parent = root ? -1 : P + tree.parent_of_node(node);
  auto world_of_child = [&](size_t i) { return leaf_children ? children[i] : P + children[i]; };
  overlay::node_engine engine(*s.filter, static_cast<int>(children.size()), leaf_children, root);
  std::FILE* out = nullptr;
  if (root) {
    out = std::fopen(s.opt.out.c_str(), "w");
    if (out == nullptr)
      log_line(s, s.opt.out + ": cannot write the monitor's rounds (" + std::strerror(errno) +
                      "); they are reduced but not kept");
  }
  std::vector<std::unique_ptr<pending_send>> sends;
  auto send = [&](int dest, const overlay::packet& p) {
    auto ps = std::make_unique<pending_send>();
    ps->bytes = overlay::encode_packet(p);
    MPI_Isend(ps->bytes.data(), static_cast<int>(ps->bytes.size()), MPI_BYTE, dest, overlay_tag,
              s.overlay, &ps->request);
    sends.push_back(std::move(ps));
  };
  auto reap = [&] {
    std::erase_if(sends, [](std::unique_ptr<pending_send>& ps) {
      int done = 0;
      MPI_Test(&ps->request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
  };
  auto send_fini_down = [&] {
    if (!leaf_children)
      for (size_t i = 0; i < children.size(); ++i)
        send(world_of_child(i), overlay::packet{overlay::packet_kind::fini, 0, 0, {}});
  };
  std::vector<overlay::node_output> outputs;
  std::string buffer;
  const double loop_cpu0 = cpu_seconds();
  const uint64_t loop_wall0 = mono_ns();
  // Idle back-off: each wakeup costs the tool rank about 25 us here (the probe, Open MPI's
  // sched_yield when oversubscribed, two context switches). A 5 ms cap halves that cost, but
  // a burst of rounds (strata_monitor_dump() in a loop) then overruns the offload buffers and
  // rounds are dropped under the default policy; 2 ms does not. Periodic rounds come no faster
  // than the period, so a sleep of up to half of it still takes each round before the next:
  // with a period the cap follows it, from 2 to 5 ms.
  constexpr long backoff_first_us = 10;
  constexpr long backoff_growth = 2;
  const long backoff_cap_us =
      s.period_ns > 0 ? std::clamp(static_cast<long>(s.period_ns / 2000), 2000L, 5000L) : 2000L;
  long backoff_us = backoff_first_us;
  bool fini = false;
  while (!fini) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, overlay_tag, s.overlay, &flag, &status);
    if (flag == 0) {
      reap();
      sleep_us(backoff_us); // no busy spin: the application may share these cores
      backoff_us = std::min(backoff_us * backoff_growth, backoff_cap_us);
      continue;
    }
    backoff_us = backoff_first_us;
    if (s.opt.node_delay_s > 0) // a slow overlay, on purpose (tests, benchmarks)
      sleep_us(static_cast<long>(s.opt.node_delay_s * 1e6));
    int size = 0;
    MPI_Get_count(&status, MPI_BYTE, &size);
    buffer.resize(static_cast<size_t>(size));
    MPI_Recv(buffer.data(), size, MPI_BYTE, status.MPI_SOURCE, overlay_tag, s.overlay,
             MPI_STATUS_IGNORE);
    outputs.clear();
    try {
      overlay::packet p = overlay::decode_packet(buffer);
      if (status.MPI_SOURCE == parent) {
        if (p.kind == overlay::packet_kind::fini) {
          send_fini_down();
          fini = true;
        } else {
          engine.on_parent(p, outputs);
        }
      } else {
        auto it = std::find_if(children.begin(), children.end(), [&](int c) {
          return (leaf_children ? c : P + c) == status.MPI_SOURCE;
        });
        if (it != children.end())
          engine.on_child(static_cast<int>(it - children.begin()), std::move(p), outputs);
      }
    } catch (const std::exception& e) {
      log_line(s, "overlay node " + std::to_string(node) + ": bad packet from rank " +
                      std::to_string(status.MPI_SOURCE) + ": " + e.what());
    }
    for (overlay::node_output& o : outputs) {
      switch (o.to) {
      case overlay::node_output::target::parent:
        send(parent, o.p);
        break;
      case overlay::node_output::target::child:
        send(world_of_child(static_cast<size_t>(o.child)), o.p);
        break;
      case overlay::node_output::target::front:
        if (out != nullptr) {
          const double t = static_cast<double>(mono_ns() - s.start_ns) / 1e9;
          std::string line = overlay::round_json_line(o.result, s.filter->name(), t);
          if (o.result.round == overlay::final_round && line.ends_with("}")) {
            // What the front end's own loop cost: it sleeps while idle, so CPU << wall.
            char extra[128];
            std::snprintf(extra, sizeof(extra), ",\"root_cpu_s\":%.6f,\"root_wall_s\":%.6f}",
                          cpu_seconds() - loop_cpu0,
                          static_cast<double>(mono_ns() - loop_wall0) / 1e9);
            line.pop_back();
            line += extra;
          }
          std::fprintf(out, "%s\n", line.c_str());
          std::fflush(out); // live: a reader follows the file
        }
        break;
      }
    }
    if (root && engine.done()) {
      send_fini_down();
      fini = true;
    }
  }
  while (!sends.empty()) {
    reap();
    if (!sends.empty())
      sleep_us(100);
  }
  if (out != nullptr)
    std::fclose(out);
  finalize_tool_rank();
}

// ---- life cycle ------------------------------------------------------------------------------

void fail(monitor_state& s, const std::string& message) {
  // Every rank reaches the same verdict from the same options and world size, so rank 0 will
  // get here too: it says it once and its abort ends the job. The others wait for that abort
  // rather than racing it (on a loaded machine rank 0 can be seconds behind); the bound only
  // keeps a job from hanging if rank 0 died on the way.
  if (s.world_rank == 0) {
    log_line(s, "error: " + message);
    // The launcher forwards the line through a pipe; MPICH's mpiexec, told of the abort, could
    // end before it had (the job's stderr came back empty on a loaded machine).
    sleep_us(500000);
  } else {
    sleep_us(60000000);
  }
  PMPI_Abort(s.world, 1);
  std::_Exit(1);
}

void ready_tree(monitor_state& s) {
  const int W = s.world_size;
  const int K = s.opt.fanout;
  int P = s.opt.ranks;
  if (P == 0)
    P = overlay::leaves_for_world(W, K);
  if (P < 1 || P + overlay::tool_ranks_for(P, K) != W) {
    const std::string hint =
        P >= 1 ? std::to_string(P) + " application ranks and a fanout-" + std::to_string(K) +
                     " tree need " + std::to_string(P + overlay::tool_ranks_for(P, K)) +
                     " processes, not " + std::to_string(W)
               : "no number of application ranks P gives P + M(P, " + std::to_string(K) +
                     ") = " + std::to_string(W) + " processes";
    fail(s, "transport=tree: " + hint +
                "; start the job with 'strata run -np P --tools monitor:fanout=K', "
                "or use transport=inline (no extra ranks)");
  }
  const overlay::tree_layout tree = overlay::make_tree(P, K);
  MPI_Comm_dup(s.world, &s.overlay);
  const bool application = s.world_rank < P;
  MPI_Comm_split(s.world, application ? 0 : 1, s.world_rank, &s.app);
  if (!application) {
    const MPI_Comm none = MPI_COMM_NULL;
    s.host->replace_world(s.self, &none);
    run_tool_rank(s, tree, s.world_rank - P);
  }
  MPI_Comm_rank(s.app, &s.app_rank);
  MPI_Comm_size(s.app, &s.app_size);
  s.parent = P + tree.parent_of_leaf(s.app_rank);
  s.slots.resize(static_cast<size_t>(s.opt.buffers));
  s.host->replace_world(s.self, &s.app);
}

void on_mpi_ready(void* raw) {
  auto* s = static_cast<monitor_state*>(raw);
  // Every process, the tool ranks to be included: the tools' world before the replacement (the
  // monitor is first in the stack), in the world model and the Sessions model alike.
  s->world = *static_cast<const MPI_Comm*>(s->host->world());
  MPI_Comm_rank(s->world, &s->world_rank);
  MPI_Comm_size(s->world, &s->world_size);
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  s->threaded = provided == MPI_THREAD_MULTIPLE;
  s->app = s->world;
  s->app_rank = s->world_rank;
  s->app_size = s->world_size;
  if (s->opt.transport == "tree") {
    ready_tree(*s);
  } else if (s->opt.transport == "file") {
    ::mkdir(s->opt.dir.c_str(), 0777); // may exist; the open below says what is wrong
    const std::string path = s->opt.dir + "/rank." + std::to_string(s->world_rank) + ".rounds";
    s->file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (s->file_fd < 0)
      log_line(*s, path + ": " + std::strerror(errno) + "; this rank's rounds are not kept");
  } else {
    MPI_Comm_dup(s->world, &s->overlay);
    MPI_Comm_dup(s->world, &s->control);
    MPI_Comm_dup(s->world, &s->count);
    if (s->world_rank == 0) {
      s->inline_out = std::fopen(s->opt.out.c_str(), "w");
      if (s->inline_out == nullptr)
        log_line(*s, s->opt.out + ": cannot write the monitor's rounds: " + std::strerror(errno));
    }
  }
  // Other modules (profile) reduce over the application's ranks, not the tool ranks.
  s->host->publish(s->self, "strata.app_world", "MPI_Comm", &s->app);
  g_dump_service = {dump_from_application, s};
  s->host->publish(s->self, "monitor.dump", "v1", &g_dump_service);
  s->ready = true;
  if (s->period_ns > 0)
    s->next_due_ns = mono_ns() + s->period_ns;
}

void on_finalize(void* raw) {
  auto* s = static_cast<monitor_state*>(raw);
  if (!s->ready)
    return;
  if (s->opt.transport != "inline") // inline: finish_inline offloads the final round
    dump(*s, true);
  s->finalized = true;
  if (s->opt.transport == "tree") {
    send_packet(*s, overlay::packet{overlay::packet_kind::fin, 0, 0, {}}, true);
    // Offloads still in flight: the tool ranks are receiving; bounded all the same.
    const uint64_t deadline = mono_ns() + static_cast<uint64_t>(s->opt.timeout_s * 1e9);
    for (send_slot& slot : s->slots) {
      int done = slot.request == MPI_REQUEST_NULL ? 1 : 0;
      while (done == 0 && mono_ns() < deadline) {
        MPI_Test(&slot.request, &done, MPI_STATUS_IGNORE);
        if (done == 0)
          sleep_us(100);
      }
      if (done == 0) {
        log_line(*s, "offloads still in flight after " + std::to_string(s->opt.timeout_s) +
                         " s: the overlay is not answering");
        break;
      }
    }
  } else if (s->opt.transport == "file") {
    if (s->file_fd >= 0)
      ::close(s->file_fd);
    s->file_fd = -1;
    // Rank 0 reduces the files once every rank has written its last round (the front end
    // `strata monitor DIR` does the same, during the run or after it).
    MPI_Barrier(s->world);
    if (s->world_rank == 0) {
      std::string error;
      const auto lines = overlay::read_round_files(s->opt.dir, *s->filter, s->opt.fanout, error);
      if (!error.empty())
        log_line(*s, error);
      if (std::FILE* out = std::fopen(s->opt.out.c_str(), "w")) {
        for (const std::string& l : lines)
          std::fprintf(out, "%s\n", l.c_str());
        std::fclose(out);
      } else {
        log_line(*s, s->opt.out + ": cannot write the monitor's rounds: " + std::strerror(errno));
      }
    }
  } else {
    finish_inline(*s);
  }
}

void on_pcontrol(int level, void* raw) {
  auto* s = static_cast<monitor_state*>(raw);
  if (level == s->opt.pcontrol_level)
    dump(*s, false);
}

// The monitor's options (strata_module_options_v1): the core resolves each from the argument,
// then STRATA_MONITOR_<KEY>, then the default, and checks its type; parse_options checks ranges.
const strata_option monitor_options[] = {
    {"transport", "enum:tree|file|inline", "tree",
     "tree: tool ranks beside the application reduce the rounds; file: rounds to files; inline: "
     "rounds reduced on rank 0 (no extra ranks)",
     nullptr},
    {"fanout", "uint", "2", "children per node of the tree", nullptr},
    {"ranks", "uint", "0", "application ranks (0: from the world size and the fanout)", nullptr},
    {"period", "duration", "0", "offload a round this often (0: only at dumps, Pcontrol, end)",
     nullptr},
    {"filter", "string", "histogram", "raw, stats, histogram, classes or a plug-in .so", nullptr},
    {"bins", "uint", nullptr, "histogram bins", nullptr},
    {"metric", "enum:calls|time|bytes", nullptr, "what the histogram bins", nullptr},
    {"class-events", "string", nullptr, "classes filter: mpi or a glob of events", nullptr},
    {"policy", "enum:drop|block", "drop", "when every buffer is in flight", nullptr},
    {"buffers", "uint", "4", "offloads in flight per rank", nullptr},
    {"pcontrol", "int", "5", "the MPI_Pcontrol level that offloads a round", nullptr},
    {"dir", "string", "strata-monitor", "the file transport's directory", nullptr},
    {"out", "string", "strata-monitor.jsonl", "the front end's JSON lines", nullptr},
    {"timeout", "duration", "60", "how long MPI_Finalize waits for offloads in flight", nullptr},
    {"node-delay", "duration", "0", "tool nodes pause this long per packet (tests, benchmarks)",
     nullptr},
};
const strata_module_options monitor_option_list = {
    sizeof(strata_module_options), static_cast<int>(std::size(monitor_options)), monitor_options};

// An argument as the core resolved it (every declared option with a value is given).
const char* option_value(const strata_module_arg* args, int nargs, const char* key) {
  for (int i = 0; i < nargs; ++i)
    if (std::strcmp(args[i].key, key) == 0)
      return args[i].value;
  return nullptr;
}

int on_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
            void** state, char* error, size_t error_size) {
  auto s = std::make_unique<monitor_state>();
  s->host = host;
  s->self = self;
  s->start_ns = mono_ns();
  auto lookup = [&](const char* key) { return option_value(args, nargs, key); };
  const std::string problem = parse_options(lookup, s->opt);
  if (!problem.empty()) {
    std::snprintf(error, error_size, "%s", problem.c_str());
    return 1;
  }
  std::string why;
  s->filter = overlay::make_filter(s->opt.filter, s->opt.filter_options, why);
  s->period_ns = static_cast<uint64_t>(s->opt.period_s * 1e9);
  const int n = host->function_count();
  s->names.resize(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f)
    s->names[static_cast<size_t>(f)] = host->function_name(f);
  s->calls.assign(static_cast<size_t>(n), 0);
  s->time_ns.assign(static_cast<size_t>(n), 0);
  s->bytes.assign(static_cast<size_t>(n), 0);
  host->subscribe(self, "*");
  g_state = s.get();
  *state = s.release();
  return 0;
}

const strata_module monitor_module = {STRATA_MODULE_ABI_VERSION,
                                      "monitor",
                                      STRATA_MPI_FLAVOR,
                                      "online monitoring: profiles offloaded in rounds through a "
                                      "tree of tool ranks that reduce them (stats, histograms, "
                                      "classes)",
                                      on_load,
                                      on_mpi_ready,
                                      nullptr,
                                      on_exit,
                                      on_pcontrol,
                                      on_finalize,
                                      nullptr};

} // namespace
} // namespace strata::monitor

// MPI_Abort on the application's world must end the whole job, tool ranks included: the
// application's (replaced) world becomes the monitor's communicator of every process.
extern "C" STRATA_MODULE_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  strata::monitor::monitor_state* s = strata::monitor::g_state;
  if (s != nullptr && s->opt.transport == "tree" && s->app != MPI_COMM_NULL && comm == s->app)
    comm = s->overlay; // every process of the job
  return ZMPI_Abort(comm, errorcode);
}

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &strata::monitor::monitor_module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return &strata::monitor::monitor_option_list;
}

// With transport=tree (the default) the monitor takes its tool ranks out of the application's
// world: the core places it first in the stack.
extern "C" STRATA_MODULE_EXPORT int strata_module_takes_ranks_v1(const strata_module_arg* args,
                                                                 int nargs) {
  const char* transport = strata::monitor::option_value(args, nargs, "transport");
  return transport == nullptr || std::strcmp(transport, "tree") == 0 ? 1 : 0;
}

// The tree's tool ranks for P application ranks: `strata run -np P` starts P + M(P, fanout).
extern "C" STRATA_MODULE_EXPORT int strata_module_extra_ranks_v1(const strata_module_arg* args,
                                                                 int nargs, int app_ranks) {
  const char* fanout = strata::monitor::option_value(args, nargs, "fanout");
  const auto k = strata::config::parse_uint(fanout != nullptr ? fanout : "2");
  if (!k || *k < 2 || *k > 65536)
    return 0; // load says what is wrong
  return strata::overlay::tool_ranks_for(app_ranks, static_cast<int>(*k));
}
