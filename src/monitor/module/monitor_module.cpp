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
//    application ranks over communicators of their own, with non-blocking collectives.
//
// Offloads are non-blocking sends from a bounded set of buffers; when all are in flight the
// policy applies: `drop` skips the round, `block` waits for the oldest. Both are counted and
// travel with the profile as the events strata.monitor.dropped and strata.monitor.blocked.
#include "monitor/module/state.hpp"

#include "monitor/frontend.hpp"
#include "monitor/profile_round.hpp"

#include <strata/zmpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace strata::monitor {

monitor_state* g_state = nullptr;

namespace {

// ---- the call path --------------------------------------------------------------------------

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

// strata_monitor_dump() from the application (include/strata/annotate.h), through the core.
struct dump_service {
  void (*dump)(void* state);
  void* state;
};
dump_service g_dump_service{};

void dump_from_application(void* raw) {
  dump(*static_cast<monitor_state*>(raw), false);
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
    // They wait inside MPI's progress: MPICH aborts a communicator other than MPI_COMM_WORLD
    // by a message to each member, which ends the member when its progress reads it, and
    // rank 0 spins until every one is read (asleep for the whole bound, they kept it spinning
    // for a minute).
    const uint64_t deadline = mono_ns() + 60000000000ULL;
    while (mono_ns() < deadline) {
      int arrived = 0;
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s.world, &arrived, MPI_STATUS_IGNORE);
      sleep_us(10000);
    }
  }
  PMPI_Abort(s.world, 1);
  std::_Exit(1);
}

// A communicator of the processes [first, first + count) of the world, in their order, for the
// monitor alone; called by those processes only. Made with MPI_Comm_create_group, not
// MPI_Comm_dup or MPI_Comm_split: under Open MPI those agree on the new context id with a
// nonblocking allreduce on the world, which puts the nonblocking-collective component's
// progress function in every later MPI_Test and MPI_Wait of the application (about 20
// instructions and a lock each) for as long as the world lives, as the core's tools'
// communicator avoids too (src/core/README.md). The tree's world is freed at once (the core
// replaces it), which would take the function out again; the inline transport's lives on. The
// group variant agrees with point-to-point messages on the world under `tag`, one per
// communicator made here.
MPI_Comm monitor_communicator(const monitor_state& s, int first, int count, int tag) {
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(s.world, &world);
  int range[1][3] = {{first, first + count - 1, 1}};
  MPI_Group_range_incl(world, 1, range, &group);
  MPI_Comm made = MPI_COMM_NULL;
  MPI_Comm_create_group(s.world, group, tag, &made);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return made;
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
  // The overlay's traffic, between application and tool ranks: every process. The application's
  // world: the first P; the tool ranks need no communicator of their own.
  s.overlay = monitor_communicator(s, 0, W, overlay_comm_tag);
  const bool application = s.world_rank < P;
  s.app = application ? monitor_communicator(s, 0, P, app_comm_tag) : MPI_COMM_NULL;
  if (s.world_rank == 0)
    send_rank0_facts(s, P); // the root tool rank, which asks of the job's hang states go to
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
    // Its gathers are nonblocking collectives, which under Open MPI put the progress function
    // in every later poll of the application all the same, but from the first round on (a dump,
    // Pcontrol, the period, finalize), not from MPI_Init.
    s->overlay = monitor_communicator(*s, 0, s->world_size, overlay_comm_tag);
    s->control = monitor_communicator(*s, 0, s->world_size, control_comm_tag);
    s->count = monitor_communicator(*s, 0, s->world_size, count_comm_tag);
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

int on_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
            void** state, char* error, size_t error_size) {
  auto s = std::make_unique<monitor_state>();
  s->host = host;
  s->self = self;
  s->start_ns = mono_ns();
  // The filter is made once, by the check of its options.
  const std::string problem = parse_options(args, nargs, s->opt, true, &s->filter);
  if (!problem.empty()) {
    std::snprintf(error, error_size, "%s", problem.c_str());
    return 1;
  }
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
  return strata::monitor::declared_options();
}

// With transport=tree (the default) the monitor takes its tool ranks out of the application's
// world: the core places it first in the stack.
extern "C" STRATA_MODULE_EXPORT int strata_module_takes_ranks_v1(const strata_module_arg* args,
                                                                 int nargs) {
  strata::monitor::options o;
  const std::string problem = strata::monitor::parse_options(args, nargs, o, false);
  return problem.empty() && o.transport == "tree" ? 1 : 0; // load says what is wrong
}

// The tree's tool ranks for P application ranks: `strata run -np P` starts P + M(P, fanout).
extern "C" STRATA_MODULE_EXPORT int strata_module_extra_ranks_v1(const strata_module_arg* args,
                                                                 int nargs, int app_ranks) {
  strata::monitor::options o;
  if (!strata::monitor::parse_options(args, nargs, o, false).empty())
    return 0; // load says what is wrong
  return strata::overlay::tool_ranks_for(app_ranks, o.fanout);
}
