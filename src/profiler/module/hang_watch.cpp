// Where this rank is with respect to MPI, in its hang state file (src/hang, strata.hang-state/1)
// in the spool, and on one rank the watch over every rank's file (the option hang_after).
//
// The call path only stores the call's function, call site and raw arguments in the thread's
// strata_where (libstrata, strata/where.h). A thread of the module's own reads that record a few
// times a second and turns it into the file's slot: the routine's name, peers and roots as world
// ranks (the core's communicator cache, read without calling MPI), tags, bytes, the call site's
// source line (resolved once per address, and only for a call that lasts). So a rank stuck inside
// MPI is described without its cooperation, and the call path pays a few stores.
#include "hang_watch.hpp"

#include "common/symbols.hpp"
#include "hang/command.hpp"
#include "hang/diagnose.hpp"
#include "hang/state.hpp"
#include "options.hpp"

#include <strata/where.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

namespace strata::profiler {
namespace {

using namespace std::chrono_literals;
constexpr auto tick = 100ms;
// A call that has lasted this many ticks has its call site resolved (a short one never does).
constexpr int ticks_before_resolving = 2;

// Which arguments of a routine the diagnosis reads (indices into strata_where::args; -1: none).
struct argument_roles {
  int8_t peer = -1, tag = -1, comm = -1, count = -1, type = -1;
  int8_t peer2 = -1, tag2 = -1; // the receive side of a Sendrecv
  bool root = false;            // `peer` is a collective's root
};

std::optional<argument_roles> roles_of(std::string_view name) {
  // Point to point: (buf, count, type, peer, tag, comm, ...).
  for (const char* p2p : {"MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend", "MPI_Recv"})
    if (name == p2p)
      return argument_roles{3, 4, 5, 1, 2};
  if (name == "MPI_Probe" || name == "MPI_Mprobe")
    return argument_roles{0, 1, 2};
  if (name == "MPI_Sendrecv")
    return argument_roles{3, 4, 10, 1, 2, 8, 9};
  if (name == "MPI_Sendrecv_replace")
    return argument_roles{3, 4, 7, 1, 2, 5, 6};
  // Collectives: the communicator last, a root just before it.
  if (name == "MPI_Barrier")
    return argument_roles{-1, -1, 0};
  if (name == "MPI_Bcast")
    return argument_roles{3, -1, 4, 1, 2, -1, -1, true};
  if (name == "MPI_Reduce")
    return argument_roles{5, -1, 6, 2, 3, -1, -1, true};
  if (name == "MPI_Gather" || name == "MPI_Scatter")
    return argument_roles{6, -1, 7, 1, 2, -1, -1, true};
  if (name == "MPI_Gatherv" || name == "MPI_Scatterv")
    return argument_roles{7, -1, 8, -1, -1, -1, -1, true};
  if (name == "MPI_Allreduce")
    return argument_roles{-1, -1, 5, 2, 3};
  if (name == "MPI_Allgather" || name == "MPI_Alltoall")
    return argument_roles{-1, -1, 6, 1, 2};
  if (name == "MPI_Allgatherv" || name == "MPI_Reduce_scatter")
    return argument_roles{-1, -1, name == "MPI_Allgatherv" ? int8_t{7} : int8_t{5}};
  if (name == "MPI_Alltoallv")
    return argument_roles{-1, -1, 8};
  if (name == "MPI_Alltoallw")
    return argument_roles{-1, -1, 8};
  if (name == "MPI_Reduce_scatter_block" || name == "MPI_Scan" || name == "MPI_Exscan")
    return argument_roles{-1, -1, 5, 2, 3};
  return std::nullopt;
}

hang::language language_of(const std::string& file) {
  auto ends = [&](std::string_view suffix) { return file.ends_with(suffix); };
  if (ends(".c"))
    return hang::language::c;
  if (ends(".cpp") || ends(".cc") || ends(".cxx") || ends(".C"))
    return hang::language::cxx;
  if (ends(".f90") || ends(".F90") || ends(".f") || ends(".F") || ends(".f95") || ends(".f08"))
    return hang::language::fortran;
  if (ends(".py"))
    return hang::language::python;
  return hang::language::unknown;
}

// A whole copy of the record, or nullopt while its thread keeps changing it.
std::optional<strata_where> copy_where(const strata_where* where) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t before =
        std::atomic_ref<const uint64_t>(where->seq).load(std::memory_order_acquire);
    strata_where copy;
    std::memcpy(&copy, where, sizeof(copy));
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t after =
        std::atomic_ref<const uint64_t>(where->seq).load(std::memory_order_relaxed);
    if (before == after) {
      copy.seq = before;
      return copy;
    }
  }
  return std::nullopt;
}

struct hang_watch {
  std::optional<hang::state_writer> writer;
  const strata_where* where = nullptr;
  std::vector<std::string> names;
  std::vector<std::optional<argument_roles>> roles;
  int world_size = 1;
  int rank = 0;
  uint64_t world_bits = 0; // MPI_COMM_WORLD's handle as the record keeps it
  // The watch over the job (hang_after): rank 0 only.
  std::string spool, key;
  uint64_t hang_after_ns = 0;
  bool reported = false;

  uint64_t last_seq = ~uint64_t{0};
  uint64_t since_ns = 0;
  int ticks_same = 0;
  bool site_resolved = false;
  hang::thread_state described;
  std::map<uint64_t, common::source_location> sites;

  std::thread thread;
  std::mutex lock;
  std::condition_variable wake;
  bool stopping = false;
};

hang_watch* watch = nullptr;
std::string state_path; // this rank's file, removed once the job's record is written

// A rank of the communicator as a world rank, or MPI's special values as the state file has them.
int32_t to_world(int64_t rank, const hang::communicator& comm) {
  if (rank == MPI_ANY_SOURCE)
    return hang::any_source;
  if (rank == MPI_PROC_NULL)
    return hang::proc_null;
  if (rank < 0 || rank >= comm.size || !comm.members_known())
    return hang::no_peer;
  return comm.member(static_cast<uint32_t>(rank));
}

// The communicator of the record's argument `index` as members in world ranks.
hang::communicator communicator_of(const hang_watch& h, const strata_where& w, int index,
                                   std::vector<int>& table) {
  hang::communicator c;
  if (index < 0)
    return c;
  const uint64_t bits = w.args[index];
  int32_t size = 0;
  const int* ranks = nullptr;
  table.clear();
  if (strata_where_comm != nullptr && strata_where_comm(&w.args[index], &size, &ranks) != 0) {
    if (ranks == nullptr)
      for (int i = 0; i < size; ++i)
        table.push_back(i);
    else
      table.assign(ranks, ranks + size);
  } else if (bits == h.world_bits) {
    for (int i = 0; i < h.world_size; ++i)
      table.push_back(i);
  } else {
    c.id = bits;
    return c; // unknown members
  }
  c.size = static_cast<uint32_t>(table.size());
  if (table.empty())
    return c;
  c.first = table[0];
  c.stride = table.size() > 1 ? table[1] - table[0] : 0;
  for (size_t i = 1; i < table.size() && c.stride != 0; ++i)
    if (table[i] - table[i - 1] != c.stride)
      c.stride = 0;
  // The same id on every rank for the same members: a handle's bits differ between processes.
  c.id = (uint64_t{c.size} << 40) ^ (uint64_t(uint32_t(c.first)) << 20) ^ uint32_t(c.stride) ^
         (c.stride == 0 && c.size > 1 ? bits : 0);
  return c;
}

void describe(hang_watch& h, const strata_where& w, hang::thread_state& t) {
  t.os_thread = 0;
  t.calls_completed = w.seq / 2;
  if (w.seq == 0) {
    t.phase = hang::thread_phase::not_started;
    return;
  }
  t.phase = (w.seq & 1) != 0 ? hang::thread_phase::in_mpi : hang::thread_phase::outside_mpi;
  const auto fid = static_cast<size_t>(w.function);
  t.routine = fid < h.names.size() ? h.names[fid] : "";
  t.peer = t.peer2 = hang::no_peer;
  t.tag = t.tag2 = 0;
  t.bytes = 0;
  t.comm = {};
  if (fid >= h.roles.size() || !h.roles[fid])
    return;
  const argument_roles& r = *h.roles[fid];
  std::vector<int> table;
  t.comm = communicator_of(h, w, r.comm, table);
  auto int_at = [&](int i) { return static_cast<int64_t>(static_cast<int32_t>(w.args[i])); };
  if (r.peer >= 0)
    t.peer = to_world(int_at(r.peer), t.comm);
  if (r.peer2 >= 0)
    t.peer2 = to_world(int_at(r.peer2), t.comm);
  if (r.tag >= 0)
    t.tag = static_cast<int32_t>(int_at(r.tag));
  if (r.tag2 >= 0)
    t.tag2 = static_cast<int32_t>(int_at(r.tag2));
  if (r.count >= 0 && r.type >= 0 && strata_where_type_size != nullptr) {
    const int64_t size = strata_where_type_size(&w.args[r.type]);
    const int64_t count = int_at(r.count);
    if (size > 0 && count > 0)
      t.bytes = static_cast<uint64_t>(size * count);
  }
}

void resolve_site(hang_watch& h, const strata_where& w, hang::thread_state& t) {
  const auto address = reinterpret_cast<uint64_t>(w.call_site);
  auto found = h.sites.find(address);
  if (found == h.sites.end()) {
    std::vector<common::source_location> resolved = common::resolve_return_addresses({address});
    found =
        h.sites.emplace(address, resolved.empty() ? common::source_location{} : resolved[0]).first;
  }
  t.file = found->second.file;
  t.line = found->second.line > 0 ? static_cast<uint32_t>(found->second.line) : 0;
  t.function = found->second.function;
  t.lang = language_of(t.file);
}

// Rank 0 with hang_after: every rank's file, and the diagnosis once the job hangs.
void check_job(hang_watch& h, uint64_t now) {
  if (h.hang_after_ns == 0 || h.reported || h.spool.empty())
    return;
  hang::hang_options o;
  o.inputs = {h.spool};
  o.job = h.key;
  const hang::loaded_states loaded = hang::load_states(o);
  if (!loaded.error.empty())
    return; // a rank still creating its file: the next tick
  const hang::diagnosis d = hang::diagnose(loaded.states, now, h.hang_after_ns);
  if (d.result != hang::verdict::hang)
    return;
  h.reported = true;
  const std::string text = hang::format_text(d);
  const std::string path = h.spool + "/" + h.key + ".hang.txt";
  std::ofstream(path) << text;
  std::fprintf(stderr, "strata: the job hangs (hang_after=%llu s; also in %s):\n%s",
               static_cast<unsigned long long>(h.hang_after_ns / 1000000000ULL), path.c_str(),
               text.c_str());
  std::fflush(stderr);
}

void watch_loop(hang_watch& h) {
  int ticks = 0;
  std::unique_lock guard(h.lock);
  while (!h.stopping) {
    guard.unlock();
    const uint64_t now = hang::realtime_ns();
    if (const std::optional<strata_where> w = copy_where(h.where)) {
      bool changed = false;
      if (w->seq != h.last_seq) {
        h.last_seq = w->seq;
        h.since_ns = now;
        h.ticks_same = 0;
        h.site_resolved = false;
        describe(h, *w, h.described);
        h.described.file.clear();
        h.described.function.clear();
        h.described.line = 0;
        h.described.since_ns = now;
        changed = true;
      } else if (++h.ticks_same >= ticks_before_resolving && !h.site_resolved && w->seq != 0) {
        resolve_site(h, *w, h.described);
        h.site_resolved = true;
        changed = true;
      }
      if (changed)
        h.writer->write(0, h.described);
    }
    h.writer->observe(now);
    if (++ticks % 5 == 0)
      check_job(h, now);
    guard.lock();
    h.wake.wait_for(guard, tick, [&] { return h.stopping; });
  }
}

} // namespace

void start_hang_watch(module_state& s) {
  // One job's files per spool: the overhead module, in the same job, keeps none.
  if (is_overhead_module || s.spool.empty() || strata_where_of_this_thread == nullptr ||
      watch != nullptr)
    return;
  auto* h = new hang_watch;
  const std::string path = s.spool + "/" + s.key + ".rank" + std::to_string(s.rank) + ".hang";
  std::string error;
  std::optional<hang::state_writer> opened =
      hang::state_writer::open(path, s.rank, s.world_size, 1, error);
  if (opened)
    h->writer.emplace(std::move(*opened));
  if (!h->writer) {
    ::unlink(path.c_str()); // what a failed reservation left
    // A full spool is said once already, by the rank file or the record.
    if (s.rank == 0 && error.find(std::strerror(ENOSPC)) == std::string::npos)
      s.host->log(s.self, ("no hang state is kept: " + error).c_str());
    delete h;
    return;
  }
  // `strata run --hang-after` watches the job's files where it said.
  if (const char* dir = std::getenv("STRATA_HANG_WATCH_DIR"); dir != nullptr && *dir != '\0') {
    const std::string link =
        std::string(dir) + "/" + s.key + ".rank" + std::to_string(s.rank) + ".hang";
    if (::symlink(path.c_str(), link.c_str()) != 0 && s.rank == 0)
      s.host->log(s.self, ("strata run cannot watch this job for hangs: cannot link " + link +
                           " (" + std::strerror(errno) + ")")
                              .c_str());
  }
  state_path = path;
  h->where = strata_where_of_this_thread();
  h->names = s.names;
  for (const std::string& name : s.names)
    h->roles.push_back(roles_of(name));
  h->world_size = s.world_size;
  h->rank = s.rank;
  MPI_Comm world = MPI_COMM_WORLD;
  std::memcpy(&h->world_bits, &world, sizeof(world)); // NOLINT(bugprone-sizeof-expression)
  if constexpr (sizeof(MPI_Comm) < sizeof(uint64_t))  // an integer handle, widened as its sign says
    h->world_bits = static_cast<uint64_t>(
        static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(h->world_bits))));
  h->spool = s.spool;
  h->key = s.key;
  if (s.rank == 0)
    h->hang_after_ns = options::hang_after_s() * 1000000000ULL;
  h->thread = std::thread([h] { watch_loop(*h); });
  watch = h;
}

void stop_hang_watch(bool finalized) {
  hang_watch* h = watch;
  if (h == nullptr)
    return;
  {
    std::lock_guard guard(h->lock);
    h->stopping = true;
  }
  h->wake.notify_all();
  h->thread.join();
  if (finalized) {
    h->described.phase = hang::thread_phase::finalized;
    h->described.routine = "MPI_Finalize";
    h->described.since_ns = hang::realtime_ns();
    h->writer->write(0, h->described);
  }
  watch = nullptr;
  delete h;
}

void remove_hang_state() {
  if (!state_path.empty())
    ::unlink(state_path.c_str());
  state_path.clear();
}

} // namespace strata::profiler
