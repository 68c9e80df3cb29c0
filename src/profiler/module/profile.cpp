// The `profile` module: always-on per-routine counters for every job (seed 000), one job record
// per job, written at MPI_Finalize with MPI collectives. Each rank counts straight into a file
// mapping (src/profile/rank_file.hpp), so a rank that aborts, dies of a signal or is killed
// still leaves what it counted for `strata recover`.
#include "user_report.hpp"

#include "common/atomic_file.hpp"
#include "common/symbols.hpp"
#include "config/config.hpp"
#include "model/grid.hpp"
#include "model/model_file.hpp"
#include "model/stats.hpp"
#include "profiler/counters/counters.hpp"
#include "profiler/job_figures.hpp"
#include "profiler/packed_totals.hpp"
#include "profiler/rank_file.hpp"
#include "profiler/spool.hpp"

#include <mpi.h>
#include <strata/module.h>
#include <strata/zmpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <map>
#include <memory>
#include <mutex>
#include <pwd.h>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace strata::profiler {
namespace {

struct profile_state {
  const strata_host* host = nullptr;
  int self = 0;
  std::vector<std::string> names;
  std::vector<uint8_t> collective;       // by function id: gets a communicator-size histogram
  std::vector<routine_slot> early_slots; // counts before the rank file exists (MPI_Init)
  rank_header early_header{};
  routine_slot* slots = nullptr;
  rank_header* header = nullptr;
  // STRATA_PROFILE_CALLSITES=1: calls keyed by (function, return address) as well.
  bool want_callsites = false;
  callsite_slot* callsites = nullptr;
  uint32_t callsite_mask = 0;
  std::vector<callsite_slot> callsites_in_memory; // when the spool cannot hold a rank file
  // The overhead module (this code built as overhead.so, seed 002): T_f(p, b) per function from
  // the machine model in STRATA_MODEL; a call's time over it is wasted, charged to its call site.
  std::vector<stats::interpolation_table> tables;
  std::vector<int> table_of; // by function id: index into tables, or -1
  rank_mapping mapping;
  bool threaded = false;
  std::atomic<bool> paused{false};
  uint64_t per_call_overhead_ns = 0;
  std::string spool;
  std::string key;
  int rank = 0;
  int world_size = 1;
  // The application's world: MPI_COMM_WORLD, or the ranks the monitor module leaves to the
  // application when it runs tool ranks beside them (its service "strata.app_world").
  MPI_Comm world = MPI_COMM_WORLD;
  // STRATA_COUNTERS: counted for the thread that called MPI_Init, split in and out of MPI.
  counters::counter_set counters;
  counters::split_accumulator split;
  std::vector<uint64_t> counter_values;
  // By function id: untimed polls not yet in the routine's slot (counted by the core, or by
  // count_untimed_poll when they completed something); in the rank file, so a rank that dies
  // keeps them. Moved into the slot, charged the mean of the routine's timed calls, whenever
  // the figures are read (charge_untimed_polls).
  uint64_t* uncharged = nullptr;
  std::vector<uint64_t> uncharged_in_memory; // before the rank file exists, or without one
  // By function id: the core samples this routine's polls (it asked for an empty-poll counter),
  // and the timed calls that set the mean charged to the untimed ones (sample_mean_ns).
  std::vector<uint8_t> sampled_poll;
  std::vector<uint64_t> sample_calls;
  std::vector<uint64_t> sample_ns;
  // Lean polls (STRATA_PROFILE_POLLS, default): the core counts every untimed poll without a
  // look at what it completed, so their received bytes are estimated when they are charged:
  // the bytes per timed poll of the routine (all timed polls, long ones included).
  bool lean_polls = true;
  // Settings the module could not use, read before MPI_Init (and in the launcher, which loads
  // the module too): said once per job, by rank 0, when it knows it is rank 0 (start_rank).
  std::vector<std::string> setting_problems;
  std::vector<uint8_t> lean_poll;
  std::vector<uint64_t> timed_polls;
  std::vector<uint64_t> timed_poll_bytes;
  // By function id: calls counted by the core alone (every call of a routine that cannot wait,
  // untimed polls): they cost a few ns, not the calibrated per-call cost of an event.
  std::vector<uint8_t> counted_only;
  std::vector<uint64_t> untimed_moved;
  // Sampling and counting without events are off with call sites and with STRATA_COUNTERS,
  // which charge each call its own time and its own counter readings.
  bool counting_allowed = false;
  // Counters handed to the core (strata_module_counter_v1), which goes on adding to them while
  // MPI_Pcontrol(0) pauses the profile: their values at the pause, put back on resume.
  std::vector<std::pair<uint64_t*, uint64_t>> handed_counters;
};

thread_local bool t_counting_thread = false;

profile_state* g_state = nullptr; // for the signal handlers, MPI_Abort and atexit

uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

int64_t unix_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool is_collective_name(const std::string& name) {
  static const char* const stems[] = {
      "Barrier",  "Bcast",     "Reduce",    "Allreduce",      "Gather",
      "Gatherv",  "Scatter",   "Scatterv",  "Allgather",      "Allgatherv",
      "Alltoall", "Alltoallv", "Alltoallw", "Reduce_scatter", "Reduce_scatter_block",
      "Scan",     "Exscan"};
  std::string stem = name.substr(4); // after "MPI_"
  if (stem.size() > 2 && stem.compare(stem.size() - 2, 2, "_c") == 0)
    stem.resize(stem.size() - 2);
  if (!stem.empty() && stem[0] == 'I' && stem != "Init")
    stem.erase(0, 1);
  for (const char* s : stems)
    if (stem == s)
      return true;
  return false;
}

// Calls that never wait for another process and take a few ns of the library's own
// bookkeeping (queries, datatypes, groups, info objects, the clock): the profile counts them
// without timing them (docs/PERFORMANCE.md, "Untimed polls and cheap calls"); the record says
// "timed": false for them. Large-count "_c" twins go with their base routine.
bool counted_without_time(std::string name) {
  static const char* const routines[] = {"MPI_Comm_rank",
                                         "MPI_Comm_size",
                                         "MPI_Comm_remote_size",
                                         "MPI_Comm_test_inter",
                                         "MPI_Comm_compare",
                                         "MPI_Comm_group",
                                         "MPI_Comm_remote_group",
                                         "MPI_Comm_get_name",
                                         "MPI_Comm_get_attr",
                                         "MPI_Attr_get",
                                         "MPI_Get_count",
                                         "MPI_Get_elements",
                                         "MPI_Get_elements_x",
                                         "MPI_Get_address",
                                         "MPI_Aint_add",
                                         "MPI_Aint_diff",
                                         "MPI_Wtime",
                                         "MPI_Wtick",
                                         "MPI_Initialized",
                                         "MPI_Finalized",
                                         "MPI_Query_thread",
                                         "MPI_Is_thread_main",
                                         "MPI_Get_version",
                                         "MPI_Get_library_version",
                                         "MPI_Get_processor_name",
                                         "MPI_Error_class",
                                         "MPI_Error_string",
                                         "MPI_Test_cancelled",
                                         "MPI_Topo_test",
                                         "MPI_Cart_rank",
                                         "MPI_Cart_coords",
                                         "MPI_Cart_get",
                                         "MPI_Cartdim_get",
                                         "MPI_Cart_shift",
                                         "MPI_Dims_create",
                                         "MPI_Status_set_elements",
                                         "MPI_Status_set_elements_x",
                                         "MPI_Status_set_cancelled"};
  static const char* const families[] = {"MPI_Type_", "MPI_Group_", "MPI_Info_"};
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_c") == 0)
    name.resize(name.size() - 2);
  for (const char* r : routines)
    if (name == r)
      return true;
  for (const char* prefix : families)
    if (name.rfind(prefix, 0) == 0)
      return true;
  return false;
}

// ---- the call path --------------------------------------------------------------------------

inline void atomic_min(uint64_t& target, uint64_t value) {
  std::atomic_ref<uint64_t> ref(target);
  uint64_t seen = ref.load(std::memory_order_relaxed);
  while (value < seen && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
inline void atomic_max(uint64_t& target, uint64_t value) {
  std::atomic_ref<uint64_t> ref(target);
  uint64_t seen = ref.load(std::memory_order_relaxed);
  while (value > seen && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
inline void atomic_add(uint64_t& target, uint64_t value) {
  std::atomic_ref<uint64_t>(target).fetch_add(value, std::memory_order_relaxed);
}

constexpr uint32_t callsite_capacity = 4096;
constexpr int callsite_probes = 32;

// Open addressing on the packed key; a full neighbourhood counts the call as dropped rather
// than slowing the call down.
void count_callsite(profile_state& s, const strata_event& ev, uint64_t t, uint64_t bytes,
                    uint64_t wasted) {
  const uint64_t key = callsite_key(reinterpret_cast<uint64_t>(ev.call_site), ev.function);
  uint32_t i = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & s.callsite_mask;
  for (int probe = 0; probe < callsite_probes; ++probe, i = (i + 1) & s.callsite_mask) {
    callsite_slot& slot = s.callsites[i];
    if (!s.threaded) {
      if (slot.key == 0)
        slot.key = key;
      if (slot.key != key)
        continue;
      ++slot.calls;
      slot.time_ns += t;
      slot.bytes += bytes;
      slot.wasted_ns += wasted;
      return;
    }
    std::atomic_ref<uint64_t> claimed(slot.key);
    uint64_t seen = claimed.load(std::memory_order_relaxed);
    if (seen == 0 && claimed.compare_exchange_strong(seen, key, std::memory_order_relaxed))
      seen = key;
    if (seen != key)
      continue;
    atomic_add(slot.calls, 1);
    atomic_add(slot.time_ns, t);
    atomic_add(slot.bytes, bytes);
    atomic_add(slot.wasted_ns, wasted);
    return;
  }
  if (s.threaded)
    std::atomic_ref<uint32_t>(s.header->callsites_dropped).fetch_add(1, std::memory_order_relaxed);
  else
    ++s.header->callsites_dropped;
}

// t_oh = max(0, t - T_f(p, b)): p the communicator size, b the bytes of the call.
uint64_t wasted_ns(profile_state& s, const strata_event& ev, uint64_t t, uint64_t bytes) {
  const int table = s.table_of.empty() ? -1 : s.table_of[static_cast<size_t>(ev.function)];
  if (table < 0)
    return 0;
  const stats::interpolation_table::result expected = s.tables[static_cast<size_t>(table)].lookup(
      static_cast<double>(ev.comm_size), static_cast<double>(bytes));
  if (expected.clamped) // outside the benchmarked grid: flagged in the record
    std::atomic_ref<uint64_t>(s.header->model_clamped).fetch_add(1, std::memory_order_relaxed);
  const double expected_s = expected.value;
  const double expected_ns = expected_s * 1e9;
  return static_cast<double>(t) > expected_ns ? t - static_cast<uint64_t>(expected_ns) : 0;
}

// A timed poll longer than this was, in all likelihood, descheduled: it keeps its own time in
// the slot but does not set the mean charged to the untimed polls, which would multiply it by
// the sampling interval (one 40 ms preemption among 1-in-64 samples charged 2.5 s to a 0.8 s
// run on a loaded machine).
constexpr uint64_t max_sample_ns = 250'000;

void count_call(profile_state& s, const strata_event& ev) {
  routine_slot& slot = s.slots[ev.function];
  const uint64_t t = ev.t_exit_ns - ev.t_enter_ns;
  const uint64_t received = ev.bytes_received > 0 ? static_cast<uint64_t>(ev.bytes_received) : 0;
  const uint64_t sent = ev.bytes_sent > 0 ? static_cast<uint64_t>(ev.bytes_sent) : 0;
  const uint64_t count = ev.count > 0 ? static_cast<uint64_t>(ev.count) : 0;
  const bool p2p = ev.peer != STRATA_NO_RANK;
  const bool collective = s.collective[static_cast<size_t>(ev.function)] != 0;
  // The message size of a call: what it sends, else what arrived, else what it posted.
  const uint64_t size =
      sent != 0       ? sent
      : received != 0 ? received
                      : (ev.bytes_expected > 0 ? static_cast<uint64_t>(ev.bytes_expected) : 0);
  if (!s.threaded) {
    ++slot.calls;
    slot.time_ns += t;
    slot.min_ns = t < slot.min_ns ? t : slot.min_ns;
    slot.max_ns = t > slot.max_ns ? t : slot.max_ns;
    slot.count_sum += count;
    slot.bytes_sent += sent;
    slot.bytes_received += received;
    if (p2p || collective)
      ++slot.size_hist[size_bin(size)];
    if (collective)
      ++slot.comm_hist[comm_bin(static_cast<uint64_t>(ev.comm_size))];
    s.header->last_mono_ns = ev.t_exit_ns;
    if (s.sampled_poll[static_cast<size_t>(ev.function)] != 0) {
      ++s.timed_polls[static_cast<size_t>(ev.function)];
      s.timed_poll_bytes[static_cast<size_t>(ev.function)] += received;
      if (t <= max_sample_ns) {
        ++s.sample_calls[static_cast<size_t>(ev.function)];
        s.sample_ns[static_cast<size_t>(ev.function)] += t;
      }
    }
    if (s.callsites != nullptr)
      count_callsite(s, ev, t, sent + received, wasted_ns(s, ev, t, size));
    return;
  }
  atomic_add(slot.calls, 1);
  atomic_add(slot.time_ns, t);
  atomic_min(slot.min_ns, t);
  atomic_max(slot.max_ns, t);
  atomic_add(slot.count_sum, count);
  atomic_add(slot.bytes_sent, sent);
  atomic_add(slot.bytes_received, received);
  if (p2p || collective)
    atomic_add(slot.size_hist[size_bin(size)], 1);
  if (collective)
    atomic_add(slot.comm_hist[comm_bin(static_cast<uint64_t>(ev.comm_size))], 1);
  atomic_max(s.header->last_mono_ns, ev.t_exit_ns);
  if (s.sampled_poll[static_cast<size_t>(ev.function)] != 0) {
    atomic_add(s.timed_polls[static_cast<size_t>(ev.function)], 1);
    atomic_add(s.timed_poll_bytes[static_cast<size_t>(ev.function)], received);
    if (t <= max_sample_ns) {
      atomic_add(s.sample_calls[static_cast<size_t>(ev.function)], 1);
      atomic_add(s.sample_ns[static_cast<size_t>(ev.function)], t);
    }
  }
  if (s.callsites != nullptr)
    count_callsite(s, ev, t, sent + received, wasted_ns(s, ev, t, size));
}

void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  if (!s->paused.load(std::memory_order_relaxed))
    count_call(*s, *ev);
}

// The mean time of a sampled poll routine's timed calls (0 while it has none), charged to each
// of its untimed polls: from the timed calls alone, never from what was charged before (a
// running mean over charged calls kept a cold first call of 35 us for ever).
uint64_t sample_mean_ns(const profile_state& s, size_t function) {
  const uint64_t calls =
      std::atomic_ref<const uint64_t>(s.sample_calls[function]).load(std::memory_order_relaxed);
  const uint64_t time =
      std::atomic_ref<const uint64_t>(s.sample_ns[function]).load(std::memory_order_relaxed);
  return calls != 0 ? time / calls : 0;
}

// Most untimed polls complete nothing: the core only adds 1 to uncharged[f] for those
// (strata_module_counter_v1). The others reach this callback, decoded, for their bytes.
void count_untimed_poll(strata_event* ev, void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  if (s->paused.load(std::memory_order_relaxed))
    return;
  const auto f = static_cast<size_t>(ev->function);
  routine_slot& slot = s->slots[f];
  const uint64_t received = ev->bytes_received > 0 ? static_cast<uint64_t>(ev->bytes_received) : 0;
  if (!s->threaded) {
    ++s->uncharged[f];
    slot.bytes_received += received;
    return;
  }
  atomic_add(s->uncharged[f], 1);
  atomic_add(slot.bytes_received, received);
}

// While paused, the core's counters go on counting: put back what they held at the pause.
void rewind_paused_counts(profile_state& s) {
  if (!s.paused.load(std::memory_order_relaxed))
    return;
  for (const auto& [counter, at_pause] : s.handed_counters)
    std::atomic_ref<uint64_t>(*counter).store(at_pause, std::memory_order_relaxed);
}

void remember_counts_at_pause(profile_state& s) {
  for (auto& [counter, at_pause] : s.handed_counters)
    at_pause = std::atomic_ref<uint64_t>(*counter).load(std::memory_order_relaxed);
}

// Lean polls: what `pending` untimed polls of routine f received, estimated as the bytes per
// timed poll of the routine so far (0 while none was timed). The timed polls are a random
// sample (time_this_poll), so the estimate is unbiased; it is exact when every poll completes
// the same size or none.
uint64_t estimated_poll_bytes(const profile_state& s, size_t f, uint64_t pending) {
  const uint64_t polls =
      std::atomic_ref<const uint64_t>(s.timed_polls[f]).load(std::memory_order_relaxed);
  const uint64_t bytes =
      std::atomic_ref<const uint64_t>(s.timed_poll_bytes[f]).load(std::memory_order_relaxed);
  if (polls == 0)
    return 0;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(pending) * bytes / polls);
}

// Moves the untimed polls into their routines' slots, each charged the mean of the routine's
// timed calls so far (0 while it has none: such a routine is reported as not timed). Run
// wherever the figures are read: finalize, MPI_Pcontrol 0, 3 and 4.
void charge_untimed_polls(profile_state& s) {
  rewind_paused_counts(s);
  for (size_t f = 0; f < s.names.size(); ++f) {
    std::atomic_ref<uint64_t> pending_ref(s.uncharged[f]);
    if (pending_ref.load(std::memory_order_relaxed) == 0)
      continue;
    const uint64_t pending = pending_ref.exchange(0, std::memory_order_relaxed);
    const uint64_t mean = sample_mean_ns(s, f);
    atomic_add(s.untimed_moved[f], pending);
    atomic_add(s.slots[f].calls, pending);
    atomic_add(s.slots[f].time_ns, pending * mean);
    if (s.lean_poll[f] != 0)
      atomic_add(s.slots[f].bytes_received, estimated_poll_bytes(s, f, pending));
  }
  if (s.paused.load(std::memory_order_relaxed))
    remember_counts_at_pause(s);
}

// Whether the core counts some routine's untimed polls lean (their bytes estimated).
bool any_lean_poll(const profile_state& s) {
  for (const uint8_t lean : s.lean_poll)
    if (lean != 0)
      return true;
  return false;
}

// The calls that reached the module as events, whose cost `calibrate` measures: the profiler's
// own overhead estimate leaves out those the core only counted (a few ns each).
uint64_t calls_with_events(const profile_state& s) {
  uint64_t calls = 0;
  for (size_t f = 0; f < s.names.size(); ++f)
    if (s.counted_only[f] == 0 && s.slots[f].calls >= s.untimed_moved[f])
      calls += s.slots[f].calls - s.untimed_moved[f];
  return calls;
}

// With STRATA_COUNTERS: one read of all counters at each boundary (seed 000, section VIII).
void on_enter_counting(strata_event*, void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  if (t_counting_thread && s->counters.read(s->counter_values.data()))
    s->split.enter_mpi(s->counter_values.data());
}

void on_exit_counting(strata_event* ev, void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  if (t_counting_thread && s->counters.read(s->counter_values.data()))
    s->split.leave_mpi(s->counter_values.data());
  on_exit(ev, raw);
}

void store_counter_totals(profile_state& s) {
  if (s.counters.size() == 0 || !s.counters.read(s.counter_values.data()))
    return;
  s.split.finish(s.counter_values.data());
  for (size_t i = 0; i < s.counters.size() && i < static_cast<size_t>(max_counters); ++i) {
    s.header->counters_in_mpi[i] = s.split.in_mpi(i);
    s.header->counters_outside_mpi[i] = s.split.outside_mpi(i);
  }
}

void open_counters(profile_state& s) {
  const char* wanted = std::getenv("STRATA_COUNTERS");
  if (wanted == nullptr || wanted[0] == '\0')
    return;
  const counters::event_list list = counters::parse_event_list(wanted);
  std::vector<std::string> problems;
  if (!list.ok())
    problems.push_back("STRATA_COUNTERS: " + list.error);
  std::vector<std::string> names = list.names;
  if (names.size() > static_cast<size_t>(max_counters)) {
    problems.push_back("STRATA_COUNTERS: at most " + std::to_string(max_counters) +
                       " counters; the rest are ignored");
    names.resize(max_counters);
  }
  s.counters = counters::counter_set::open(names, problems);
  if (s.rank == 0)
    for (const std::string& p : problems) // said once per job, and profiling goes on
      s.host->log(s.self, p.c_str());
  s.counter_values.assign(s.counters.size(), 0);
  s.split = counters::split_accumulator(s.counters.size());
  s.header->counter_count = static_cast<int32_t>(s.counters.size());
  for (size_t i = 0; i < s.counters.size(); ++i)
    copy_field(s.header->counter_names[i], sizeof(s.header->counter_names[i]), s.counters.name(i));
  if (s.counters.size() > 0 && s.counters.read(s.counter_values.data())) {
    s.split.start(s.counter_values.data());
    t_counting_thread = true;
  }
}

// ---- job facts ------------------------------------------------------------------------------

std::string read_proc(const char* path) {
  std::string out;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

void copy_nul_list(char* field, size_t size, const std::string& nul_separated) {
  const size_t n = nul_separated.size() < size - 1 ? nul_separated.size() : size - 1;
  std::copy_n(nul_separated.data(), n, field);
  std::memset(field + n, 0, size - n);
}

std::string job_id_from_environment() {
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v != nullptr ? v : "";
  };
  if (std::string id = env("SLURM_JOB_ID"); !id.empty())
    return "slurm:" + id + (env("SLURM_STEP_ID").empty() ? "" : "." + env("SLURM_STEP_ID"));
  if (std::string id = env("PBS_JOBID"); !id.empty())
    return "pbs:" + id;
  if (std::string id = env("LSB_JOBID"); !id.empty())
    return "lsf:" + id;
  if (std::string id = env("FLUX_JOB_ID"); !id.empty())
    return "flux:" + id;
  return {};
}

// MPI settings the user or the site chose; not the launcher's own wiring (ranks, ports, session
// directories), which differs in every job and says nothing about how MPI was configured.
bool is_mpi_variable(const char* kv) {
  static const char* const chosen[] = {"OMPI_MCA_", "MPICH_", "I_MPI_", "MPIR_CVAR_",
                                       "UCX_",      "FI_",    "HYDRA_", "STRATA_"};
  static const char* const wiring[] = {"OMPI_MCA_orte_",
                                       "OMPI_MCA_ess",
                                       "OMPI_MCA_pmix",
                                       "OMPI_MCA_initial_wdir",
                                       "OMPI_MCA_shmem_RUNTIME",
                                       "OMPI_MCA_mpi_oversubscribe",
                                       "OMPI_MCA_rmaps_base_oversubscribe"};
  auto starts = [kv](const char* prefix) {
    return std::strncmp(kv, prefix, std::strlen(prefix)) == 0;
  };
  for (const char* w : wiring)
    if (starts(w))
      return false;
  for (const char* c : chosen)
    if (starts(c))
      return true;
  return false;
}

// The program itself defines MPI functions (its own PMPI layer): the first definition of
// MPI_Send in the global scope is in the main executable.
bool application_intercepts_pmpi() {
  void* sym = ::dlsym(RTLD_DEFAULT, "MPI_Send");
  Dl_info info{};
  link_map* owner = nullptr;
  if (sym == nullptr ||
      ::dladdr1(sym, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0)
    return false;
  return owner != nullptr && (owner->l_name == nullptr || owner->l_name[0] == '\0');
}

int fortran_callback(dl_phdr_info* info, size_t, void* found) {
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (std::strstr(name, "libmpi_mpifh") != nullptr ||
      std::strstr(name, "libmpichfort") != nullptr ||
      std::strstr(name, "libmpi_usempif08") != nullptr ||
      std::strstr(name, "libgfortran") != nullptr)
    *static_cast<bool*>(found) = true;
  return 0;
}

void fill_facts(rank_header& h) {
  h.uid = static_cast<uint32_t>(::getuid());
  h.pid = static_cast<uint32_t>(::getpid());
  passwd pw{};
  passwd* result = nullptr;
  char buf[1024];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof(buf), &result) == 0 && result != nullptr)
    copy_field(h.user, sizeof(h.user), pw.pw_name);
  else
    copy_field(h.user, sizeof(h.user), std::to_string(::getuid()));
  char host[64] = {0};
  ::gethostname(host, sizeof(host) - 1);
  copy_field(h.host, sizeof(h.host), host);
  char exe[512] = {0};
  if (::readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0)
    exe[0] = '\0';
  copy_field(h.executable, sizeof(h.executable), exe);
  copy_nul_list(h.argv, sizeof(h.argv), read_proc("/proc/self/cmdline"));
  std::string env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (is_mpi_variable(*e) && env.size() + std::strlen(*e) + 1 < sizeof(h.environment))
      env.append(*e).push_back('\0');
  copy_nul_list(h.environment, sizeof(h.environment), env);
  copy_field(h.mpi_flavor, sizeof(h.mpi_flavor), STRATA_MPI_FLAVOR);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<size_t>(len > 0 ? len : 0));
  while (!v.empty() && (v.back() == '\n' || v.back() == '\0'))
    v.pop_back();
  copy_field(h.mpi_library, sizeof(h.mpi_library), v.substr(0, v.find('\n')));
  bool fortran = false;
  ::dl_iterate_phdr(fortran_callback, &fortran);
  h.fortran = fortran ? 1 : 0;
  h.pmpi_intercepted = application_intercepts_pmpi() ? 1 : 0;
}

// ---- where records go -------------------------------------------------------------------------

// Writes atomically, giving up after `timeout`: a hung file system must never hang the job.
// Returns an error message, empty on success.
std::string write_with_timeout(const std::string& path, const std::string& text,
                               std::chrono::milliseconds timeout) {
  struct shared_result {
    std::mutex lock;
    std::condition_variable done;
    bool finished = false;
    std::string error;
  };
  auto result = std::make_shared<shared_result>();
  std::thread writer([result, path, text] {
    std::string error = common::write_atomically(path, text);
    std::lock_guard<std::mutex> guard(result->lock);
    result->error = std::move(error);
    result->finished = true;
    result->done.notify_all();
  });
  std::unique_lock<std::mutex> guard(result->lock);
  if (!result->done.wait_for(guard, timeout, [&] { return result->finished; })) {
    writer.detach(); // stuck in the kernel; it finishes or dies with the process
    return path + ": no answer from the file system after " + std::to_string(timeout.count()) +
           " ms";
  }
  guard.unlock();
  writer.join();
  return result->error;
}

std::chrono::milliseconds write_timeout() {
  const char* v = std::getenv("STRATA_WRITE_TIMEOUT_MS");
  const long ms = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
  return std::chrono::milliseconds(ms > 0 ? ms : 10000);
}

// ---- abnormal ends ----------------------------------------------------------------------------

constexpr int watched_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGABRT};
struct sigaction previous_actions[sizeof(watched_signals) / sizeof(int)];

void mark_end(job_status status, int detail) {
  profile_state* s = g_state;
  if (s == nullptr || s->header == nullptr)
    return;
  if (s->header->status != static_cast<int32_t>(job_status::running))
    return; // the first end seen is the one that counts
  s->header->status = static_cast<int32_t>(status);
  s->header->status_detail = detail;
  s->header->end_unix_ns = unix_ns(); // clock_gettime is async-signal-safe
  if (s->header->last_mono_ns == 0)
    s->header->last_mono_ns = mono_ns();
}

void on_signal(int signo, siginfo_t* info, void* context) {
  mark_end(job_status::signal, signo);
  for (size_t i = 0; i < sizeof(watched_signals) / sizeof(int); ++i) {
    if (watched_signals[i] != signo)
      continue;
    const struct sigaction& old = previous_actions[i];
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
      old.sa_sigaction(signo, info, context);
      return;
    }
    if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler != nullptr) {
      old.sa_handler(signo);
      return;
    }
    ::sigaction(signo, &old, nullptr);
    ::raise(signo);
    return;
  }
}

void install_signal_handlers() {
  for (size_t i = 0; i < sizeof(watched_signals) / sizeof(int); ++i) {
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(watched_signals[i], &action, &previous_actions[i]);
  }
}

void at_exit() {
  mark_end(job_status::exited, 0);
}

// ---- aggregation at finalize (and MPI_Pcontrol 4) -----------------------------------------

std::string clean_field(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n')
      c = ' ';
  return text;
}

// Call sites: each rank resolves its own return addresses (ASLR differs between ranks) into
// "function file line caller calls time bytes wasted" lines; rank 0 merges equal lines.
std::string callsite_lines(const profile_state& s) {
  std::string lines;
  if (s.callsites == nullptr)
    return lines;
  std::vector<uint64_t> addresses;
  std::vector<const callsite_slot*> used;
  for (uint32_t i = 0; i <= s.callsite_mask; ++i) {
    if (s.callsites[i].key != 0 && s.callsites[i].calls != 0) {
      used.push_back(&s.callsites[i]);
      addresses.push_back(callsite_address(s.callsites[i].key));
    }
  }
  const std::vector<common::source_location> where = common::resolve_return_addresses(addresses);
  for (size_t i = 0; i < used.size(); ++i) {
    const int fid = callsite_function(used[i]->key);
    if (fid < 0 || fid >= static_cast<int>(s.names.size()))
      continue;
    lines += s.names[static_cast<size_t>(fid)] + "\t" + clean_field(where[i].file) + "\t" +
             std::to_string(where[i].line) + "\t" + clean_field(where[i].function) + "\t" +
             std::to_string(used[i]->calls) + "\t" + std::to_string(used[i]->time_ns) + "\t" +
             std::to_string(used[i]->bytes) + "\t" + std::to_string(used[i]->wasted_ns) + "\n";
  }
  return lines;
}

std::vector<callsite_total> merge_callsite_lines(const std::string& all) {
  std::vector<callsite_total> merged;
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t end = all.find('\n', pos);
    const std::string line = all.substr(pos, end - pos);
    pos = end == std::string::npos ? all.size() : end + 1;
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
      f.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    f.push_back(line.substr(start));
    if (f.size() != 8)
      continue;
    callsite_total site{f[0],
                        f[1],
                        std::atoi(f[2].c_str()),
                        f[3],
                        std::stoull(f[4]),
                        std::stoull(f[5]),
                        std::stoull(f[6]),
                        std::stoull(f[7]),
                        1};
    merge_callsite(merged, site);
  }
  std::sort(merged.begin(), merged.end(), [](const callsite_total& a, const callsite_total& b) {
    return a.wasted_ns != b.wasted_ns ? a.wasted_ns > b.wasted_ns : a.time_ns > b.time_ns;
  });
  return merged;
}

// The reduction's MPI_Op: each element is a whole packed buffer (src/profile/packed_totals.hpp).
void combine_packed_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint64_t*>(in);
  auto* b = static_cast<uint64_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const size_t words = packed_words(a[0]); // a[0]: the routine count, as in every buffer
    combine_packed(a, b);
    a += words;
    b += words;
  }
}

// Every rank's text (host name, call-site lines) to rank 0, handed to `take` in rank order.
// One MPI_Gather of blocks as long as the longest text when that wastes little; otherwise the
// lengths, then MPI_Gatherv.
template <typename Take>
void gather_rank_texts(profile_state& s, std::string text, uint32_t longest, uint32_t shortest,
                       Take take) {
  const bool root = s.rank == 0;
  std::string all;
  if (gather_in_fixed_blocks(longest, shortest)) {
    const int block = static_cast<int>(longest);
    text.resize(longest, '\0');
    all.resize(root ? longest * static_cast<size_t>(s.world_size) : 0);
    MPI_Gather(text.data(), block, MPI_CHAR, all.data(), block, MPI_CHAR, 0, s.world);
    if (root)
      for (int r = 0; r < s.world_size; ++r)
        take(std::string_view(all).substr(static_cast<size_t>(r) * longest, longest));
    return;
  }
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(root ? s.world_size : 1));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, s.world);
  std::vector<int> offsets(lengths.size());
  if (root) {
    size_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += static_cast<size_t>(lengths[r]);
    }
    all.resize(total);
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, s.world);
  if (root)
    for (size_t r = 0; r < lengths.size(); ++r)
      take(std::string_view(all).substr(static_cast<size_t>(offsets[r]),
                                        static_cast<size_t>(lengths[r])));
}

// The job's totals on rank 0, a few KB whatever the size, in three collectives (four when one
// rank's call-site lines are over twice as long as another's): which routines any rank called and
// how long the ranks' texts are (MPI_Allreduce), every figure in one MPI_Reduce with a
// user-defined operation, and the host names and call-site lines (MPI_Gather). With
// oversubscribed ranks each collective needs every rank scheduled: their number is the cost.
job_figures reduce_over_ranks(profile_state& s) {
  const size_t n = s.names.size();
  const std::string text =
      rank_text(std::string(s.header->host, ::strnlen(s.header->host, sizeof(s.header->host))),
                callsite_lines(s));
  std::vector<uint32_t> layout(n + 2);
  for (size_t f = 0; f < n; ++f)
    layout[f] = s.slots[f].calls != 0 ? 1u : 0u;
  // The longest text, and (the maximum of its complement) the shortest.
  layout[n] = static_cast<uint32_t>(text.size());
  layout[n + 1] = UINT32_MAX - static_cast<uint32_t>(text.size());
  MPI_Allreduce(MPI_IN_PLACE, layout.data(), static_cast<int>(n + 2), MPI_UINT32_T, MPI_MAX,
                s.world);
  std::vector<int> fids;
  for (size_t f = 0; f < n; ++f)
    if (layout[f] != 0)
      fids.push_back(static_cast<int>(f));

  const packed_totals mine = pack_rank(*s.header, s.rank, s.names, s.slots, fids);
  packed_totals all(s.rank == 0 ? mine.size() : 1);
  MPI_Datatype packed_type = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(mine.size()), MPI_UINT64_T, &packed_type);
  MPI_Type_commit(&packed_type);
  MPI_Op combine = MPI_OP_NULL;
  MPI_Op_create(combine_packed_op, 1, &combine);
  MPI_Reduce(mine.data(), all.data(), 1, packed_type, combine, 0, s.world);
  MPI_Op_free(&combine);
  MPI_Type_free(&packed_type);

  job_figures job;
  std::string lines;
  gather_rank_texts(s, text, layout[n], UINT32_MAX - layout[n + 1],
                    [&](std::string_view rank) { add_rank_text(rank, job, lines); });
  if (s.rank != 0)
    return job;
  const uint64_t clamped = unpack_totals(all, s.names, fids, job);
  job.callsites = merge_callsite_lines(lines);
  if (!s.tables.empty())
    job.model_clamped_calls = static_cast<int64_t>(clamped);
  job.facts = *s.header;
  job.ranks = s.world_size;
  job.ranks_reported = s.world_size;
  job.status = job_status::finalized;
  return job;
}

void print_rank_subtotal(profile_state& s) {
  const double wall = static_cast<double>(mono_ns() - s.header->init_mono_ns) / 1e9;
  std::string text = "strata profile: rank " + std::to_string(s.rank) + " subtotal after " +
                     std::to_string(wall) + " s\n";
  for (size_t f = 0; f < s.names.size(); ++f) {
    const routine_slot& slot = s.slots[f];
    if (slot.calls == 0)
      continue;
    char line[160];
    std::snprintf(line, sizeof(line), "  %-24s %10llu calls %12.6f s %14llu bytes\n",
                  s.names[f].c_str(), static_cast<unsigned long long>(slot.calls),
                  static_cast<double>(slot.time_ns) / 1e9,
                  static_cast<unsigned long long>(slot.bytes_sent) + slot.bytes_received);
    text += line;
  }
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
}

void write_outputs(profile_state& s, const job_figures& job) {
  const record::job_record job_record = to_record(job);
  const std::string json = record::to_json(job_record);
  const auto timeout = write_timeout();
  bool spooled = false;
  if (!s.spool.empty()) {
    const std::string path = s.spool + "/" + s.key + ".json";
    const std::string error = write_with_timeout(path, json, timeout);
    spooled = error.empty();
    if (!spooled)
      s.host->log(s.self, ("cannot write the job record: " + error +
                           "; the per-rank files stay in the spool for strata recover")
                              .c_str());
  }
  if (const char* extra = std::getenv("STRATA_PROFILE_JSON");
      extra != nullptr && extra[0] != '\0') {
    if (const std::string error = write_with_timeout(extra, json, timeout); !error.empty())
      s.host->log(s.self, ("cannot write STRATA_PROFILE_JSON: " + error).c_str());
  }
  if (const char* out = std::getenv("STRATA_PROFILE_OUT"); out != nullptr && out[0] != '\0') {
    const std::string report = render_user_report(job_record);
    if (std::strcmp(out, "-") == 0) {
      [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, report.data(), report.size());
    } else if (const std::string error = write_with_timeout(out, report, timeout); !error.empty()) {
      s.host->log(s.self, ("cannot write STRATA_PROFILE_OUT: " + error).c_str());
    }
  }
  int ok = spooled ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, s.world);
  (void)ok;
}

// ---- module callbacks -------------------------------------------------------------------------

// Nothing the profiler does may take the application down: an exception stops at the module.
template <typename Fn> void guarded(profile_state* s, const char* what, Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    s->host->log(s->self, (std::string(what) + ": " + e.what()).c_str());
  } catch (...) {
    s->host->log(s->self, (std::string(what) + ": unknown error").c_str());
  }
}

#ifdef STRATA_OVERHEAD_MODULE
constexpr bool is_overhead_module = true;
#else
constexpr bool is_overhead_module = false;
#endif

// Which benchmarked operation a function's calls are compared with.
std::string model_operation(const std::string& function) {
  std::string op = function;
  if (op.size() > 2 && op.compare(op.size() - 2, 2, "_c") == 0)
    op.resize(op.size() - 2);
  if (op == "MPI_Recv" || op == "MPI_Ssend" || op == "MPI_Bsend" || op == "MPI_Rsend")
    return "MPI_Send";
  if (op == "MPI_Irecv" || op == "MPI_Wait" || op == "MPI_Waitall")
    return "MPI_Isend";
  return op;
}

// STRATA_MODEL (from `strata bench`): one T_f table per benchmarked operation.
std::string load_machine_model(profile_state& s) {
  const char* path = std::getenv("STRATA_MODEL");
  if (path == nullptr || path[0] == '\0')
    return "needs a machine model: STRATA_MODEL=model.json (made by strata bench)";
  std::string text;
  if (!config::read_file(path, text))
    return std::string("STRATA_MODEL: cannot read ") + path;
  const model::model_read_result read = model::read_model(text);
  if (!read.ok())
    return std::string("STRATA_MODEL: ") + path + ": " + read.error;
  std::map<std::string, int> index;
  for (const auto& [op, points] : read.model->operations) {
    model::table_result table = model::build_table(*read.model, op);
    if (!table.ok())
      return std::string("STRATA_MODEL: ") + path + ": " + table.error;
    index[op] = static_cast<int>(s.tables.size());
    s.tables.push_back(std::move(*table.table));
  }
  s.table_of.assign(s.names.size(), -1);
  for (size_t f = 0; f < s.names.size(); ++f)
    if (auto it = index.find(model_operation(s.names[f])); it != index.end())
      s.table_of[f] = it->second;
  return {};
}

int on_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
            void** state, char* error, size_t error_size) {
  if (nargs > 0) {
    std::snprintf(error, error_size,
                  "takes no arguments (got %s); it is configured by STRATA_SPOOL, "
                  "STRATA_PROFILE_OUT and STRATA_PROFILE_JSON",
                  args[0].key);
    return 1;
  }
  auto* s = new profile_state();
  s->host = host;
  s->self = self;
  const int n = host->function_count();
  for (int f = 0; f < n; ++f) {
    s->names.emplace_back(host->function_name(f));
    s->collective.push_back(is_collective_name(s->names.back()) ? 1 : 0);
  }
  s->early_slots.assign(static_cast<size_t>(n), routine_slot{});
  s->uncharged_in_memory.assign(static_cast<size_t>(n), 0);
  s->uncharged = s->uncharged_in_memory.data();
  s->sampled_poll.assign(static_cast<size_t>(n), 0);
  s->counted_only.assign(static_cast<size_t>(n), 0);
  s->untimed_moved.assign(static_cast<size_t>(n), 0);
  s->sample_calls.assign(static_cast<size_t>(n), 0);
  s->sample_ns.assign(static_cast<size_t>(n), 0);
  s->lean_poll.assign(static_cast<size_t>(n), 0);
  s->timed_polls.assign(static_cast<size_t>(n), 0);
  s->timed_poll_bytes.assign(static_cast<size_t>(n), 0);
  for (routine_slot& slot : s->early_slots)
    slot.min_ns = UINT64_MAX;
  s->slots = s->early_slots.data();
  s->header = &s->early_header;
  s->header->start_unix_ns = unix_ns();
  const char* sites = std::getenv("STRATA_PROFILE_CALLSITES");
  s->want_callsites = sites != nullptr && sites[0] != '\0' && std::strcmp(sites, "0") != 0;
  const char* counters = std::getenv("STRATA_COUNTERS");
  s->counting_allowed = !s->want_callsites && (counters == nullptr || counters[0] == '\0');
  if (const char* polls = std::getenv("STRATA_PROFILE_POLLS");
      polls != nullptr && polls[0] != '\0') {
    if (std::strcmp(polls, "exact") == 0)
      s->lean_polls = false;
    else if (std::strcmp(polls, "lean") != 0)
      s->setting_problems.emplace_back(
          "STRATA_PROFILE_POLLS is neither 'lean' nor 'exact'; counting polls lean");
  }
  if (is_overhead_module) {
    s->want_callsites = true;
    s->counting_allowed = false;
    if (std::string problem = load_machine_model(*s); !problem.empty()) {
      std::snprintf(error, error_size, "%s", problem.c_str());
      delete s;
      return 1;
    }
  }
  host->subscribe(self, "*");
  *state = s;
  g_state = s;
  return 0;
}

// What one call costs the profiler: its callback on a scratch slot, timed in a loop.
uint64_t calibrate(profile_state& s) {
  profile_state scratch_state;
  std::vector<routine_slot> scratch(s.names.size());
  rank_header scratch_header{};
  scratch_state.slots = scratch.data();
  scratch_state.header = &scratch_header;
  scratch_state.collective = s.collective;
  scratch_state.sampled_poll.assign(s.names.size(), 0);
  scratch_state.timed_polls.assign(s.names.size(), 0);
  scratch_state.timed_poll_bytes.assign(s.names.size(), 0);
  std::vector<callsite_slot> scratch_sites;
  if (s.want_callsites) {
    scratch_sites.assign(callsite_capacity, callsite_slot{});
    scratch_state.callsites = scratch_sites.data();
    scratch_state.callsite_mask = callsite_capacity - 1;
  }
  strata_event ev{};
  ev.peer = STRATA_NO_RANK;
  constexpr int rounds = 2000;
  const uint64_t start = mono_ns();
  for (int i = 0; i < rounds; ++i) {
    ev.t_enter_ns = mono_ns();
    ev.t_exit_ns = mono_ns();
    count_call(scratch_state, ev);
  }
  return (mono_ns() - start) / rounds;
}

void start_rank(profile_state* s);

void on_mpi_ready(void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  guarded(s, "profiling this rank without a file", [&] { start_rank(s); });
}

void start_rank(profile_state* s) {
  if (const void* app = s->host->lookup("strata.app_world", "MPI_Comm"))
    s->world = *static_cast<const MPI_Comm*>(app);
  MPI_Comm_rank(s->world, &s->rank);
  MPI_Comm_size(s->world, &s->world_size);
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  s->threaded = level == MPI_THREAD_MULTIPLE;
  // One job id for all ranks: the resource manager's, else rank 0's host, pid and start.
  char id[128] = {0};
  long long start_pid[2] = {s->header->start_unix_ns / 1000000000, ::getpid()};
  if (s->rank == 0) {
    std::string job = job_id_from_environment();
    char host[64] = {0};
    ::gethostname(host, sizeof(host) - 1);
    if (job.empty())
      job = "local:" + std::string(host) + ":" + std::to_string(start_pid[1]) + ":" +
            std::to_string(start_pid[0]);
    copy_field(id, sizeof(id), job);
  }
  MPI_Bcast(id, sizeof(id), MPI_CHAR, 0, s->world);
  MPI_Bcast(start_pid, 2, MPI_LONG_LONG, 0, s->world);
  s->key = job_key(id) + "-" + std::to_string(start_pid[1]);
  const spool_choice spool = choose_spool(std::getenv("STRATA_SPOOL"), STRATA_DEFAULT_SPOOL,
                                          std::getenv("HOME"), ::getuid());
  s->spool = spool.dir;
  if (!spool.message.empty() && s->rank == 0)
    s->host->log(s->self, spool.message.c_str());
  if (s->rank == 0)
    for (const std::string& problem : s->setting_problems)
      s->host->log(s->self, problem.c_str());

  rank_header facts = *s->header;
  fill_facts(facts);
  copy_field(facts.job_id, sizeof(facts.job_id), id);
  facts.rank = s->rank;
  facts.world_size = s->world_size;
  facts.thread_level = level;
  facts.init_mono_ns = mono_ns();
  if (!s->spool.empty()) {
    s->mapping =
        create_rank_file(s->spool + "/" + s->key + ".rank" + std::to_string(s->rank) + ".prof",
                         s->names, s->want_callsites ? callsite_capacity : 0);
    if (!s->mapping.ok() && s->rank == 0)
      s->host->log(s->self, ("cannot keep per-rank counters on disk: " + s->mapping.error +
                             "; an abnormal end will lose them")
                                .c_str());
  }
  if (s->mapping.ok()) {
    // The file's layout fields stay; the facts and the counts so far move in.
    rank_header* h = s->mapping.header;
    const rank_header layout = *h;
    *h = facts;
    std::memcpy(h->magic, layout.magic, sizeof(h->magic));
    h->version = layout.version;
    h->header_size = layout.header_size;
    h->slot_size = layout.slot_size;
    h->function_count = layout.function_count;
    h->callsite_capacity = layout.callsite_capacity;
    std::memcpy(s->mapping.slots, s->early_slots.data(),
                s->early_slots.size() * sizeof(routine_slot));
    std::copy(s->uncharged_in_memory.begin(), s->uncharged_in_memory.end(),
              s->mapping.uncharged_polls);
    s->header = h;
    s->slots = s->mapping.slots;
    s->callsites = s->mapping.callsites;
    s->uncharged = s->mapping.uncharged_polls;
  } else {
    s->early_header = facts;
    if (s->want_callsites) {
      s->callsites_in_memory.assign(callsite_capacity, callsite_slot{});
      s->callsites = s->callsites_in_memory.data();
    }
  }
  s->callsite_mask = callsite_capacity - 1;
  s->per_call_overhead_ns = calibrate(*s);
  open_counters(*s);
  install_signal_handlers();
  std::atexit(at_exit);
}

void pcontrol_level(profile_state* s, int level);

void on_pcontrol(int level, void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  guarded(s, "MPI_Pcontrol", [&] { pcontrol_level(s, level); });
}

void pcontrol_level(profile_state* s, int level) {
  switch (level) {
  case 0:
    if (!s->paused) {
      charge_untimed_polls(*s);
      remember_counts_at_pause(*s);
      s->paused = true;
    }
    break;
  case 1:
    rewind_paused_counts(*s);
    s->paused = false;
    break;
  case 2:
    for (size_t f = 0; f < s->names.size(); ++f) {
      s->slots[f] = routine_slot{};
      s->slots[f].min_ns = UINT64_MAX;
      s->uncharged[f] = 0;
      s->sample_calls[f] = 0;
      s->sample_ns[f] = 0;
      s->timed_polls[f] = 0;
      s->timed_poll_bytes[f] = 0;
      s->untimed_moved[f] = 0;
    }
    if (s->paused)
      remember_counts_at_pause(*s);
    break;
  case 3:
    charge_untimed_polls(*s);
    print_rank_subtotal(*s);
    break;
  case 4: {
    // Collective: every rank calls MPI_Pcontrol(4); rank 0 prints the job's subtotal.
    charge_untimed_polls(*s);
    s->header->final_mono_ns = mono_ns();
    store_counter_totals(*s);
    const job_figures job = reduce_over_ranks(*s);
    s->header->final_mono_ns = 0;
    if (s->rank == 0) {
      const std::string report = render_user_report(to_record(job));
      [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, report.data(), report.size());
    }
    break;
  }
  default:
    break;
  }
}

void finalize_job(profile_state* s);

void on_finalize(void* raw) {
  auto* s = static_cast<profile_state*>(raw);
  guarded(s, "job record not written", [&] { finalize_job(s); });
}

void finalize_job(profile_state* s) {
  const uint64_t start = mono_ns();
  s->header->final_mono_ns = start;
  s->header->end_unix_ns = unix_ns();
  charge_untimed_polls(*s);
  const uint64_t calls = calls_with_events(*s);
  s->header->overhead_ns = calls * s->per_call_overhead_ns;
  s->header->status = static_cast<int32_t>(job_status::finalized);
  store_counter_totals(*s);
  job_figures job = reduce_over_ranks(*s);
  if (s->rank == 0) {
    // Measured before the record is rendered, so the record can hold it; rendering, writing and
    // the broadcast of the outcome come after (they end in overhead_ns below, not in the record).
    job.finalize_s = static_cast<double>(mono_ns() - start) / 1e9;
    job.poll_bytes_estimated = any_lean_poll(*s) ? 1 : 0;
    write_outputs(*s, job);
  } else {
    int ok = 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, s->world);
    if (ok == 0)
      return; // keep this rank's file for strata recover
  }
  // The record is in the spool: the per-rank files are no longer needed.
  if (s->mapping.ok()) {
    ::unlink(s->mapping.path.c_str());
    s->header->overhead_ns += mono_ns() - start;
  }
}

#ifdef STRATA_OVERHEAD_MODULE
constexpr const char* module_name = "overhead";
constexpr const char* module_description =
    "the profile, and per call site the time over the machine model (STRATA_MODEL)";
#else
constexpr const char* module_name = "profile";
constexpr const char* module_description = "always-on per-routine counters; one job record per job";
#endif

const strata_module profile_module = {STRATA_MODULE_ABI_VERSION,
                                      module_name,
                                      STRATA_MPI_FLAVOR,
                                      module_description,
                                      on_load,
                                      on_mpi_ready,
                                      nullptr,
                                      on_exit,
                                      on_pcontrol,
                                      on_finalize,
                                      nullptr};

const strata_module counting_profile_module = {STRATA_MODULE_ABI_VERSION,
                                               module_name,
                                               STRATA_MPI_FLAVOR,
                                               module_description,
                                               on_load,
                                               on_mpi_ready,
                                               on_enter_counting,
                                               on_exit_counting,
                                               on_pcontrol,
                                               on_finalize,
                                               nullptr};

} // namespace
} // namespace strata::profiler

// MPI_Abort is wrapped (not only observed) so the end is recorded before MPI kills the job.
extern "C" STRATA_MODULE_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  strata::profiler::mark_end(strata::profiler::job_status::aborted, errorcode);
  return ZMPI_Abort(comm, errorcode);
}

// Sampled polls: STRATA_PROFILE_POLL_SAMPLE=N (default 64) lets the core time one poll in about
// N; 1 times every poll. Off with call sites (and so in the overhead module) and with counters,
// which charge each call its own time and its own counter readings.
extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_polls_v1(void* state,
                                                                strata_event_fn* untimed) {
  auto* s = static_cast<strata::profiler::profile_state*>(state);
  if (s == nullptr || !s->counting_allowed)
    return 1;
  uint32_t interval = 64;
  if (const char* v = std::getenv("STRATA_PROFILE_POLL_SAMPLE"); v != nullptr && v[0] != '\0') {
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 1000000)
      interval = static_cast<uint32_t>(n);
    else
      s->setting_problems.emplace_back(
          "STRATA_PROFILE_POLL_SAMPLE is not a number from 1 to 1000000; timing one poll in 64");
  }
  *untimed = strata::profiler::count_untimed_poll;
  return interval;
}

// Counting without events (module.h): every call of a routine that cannot wait, and the untimed
// polls that complete nothing. Counted straight into the rank file: a killed rank keeps them.
extern "C" STRATA_MODULE_EXPORT uint64_t* strata_module_counter_v1(void* state, int function,
                                                                   int what) {
  auto* s = static_cast<strata::profiler::profile_state*>(state);
  if (s == nullptr || !s->counting_allowed || function < 0 ||
      function >= static_cast<int>(s->names.size()))
    return nullptr;
  const auto f = static_cast<size_t>(function);
  uint64_t* counter = nullptr;
  if (what == STRATA_COUNT_CALLS && strata::profiler::counted_without_time(s->names[f])) {
    counter = &s->slots[f].calls;
    s->counted_only[f] = 1;
  } else if (what == STRATA_COUNT_UNTIMED_POLLS && s->lean_polls) {
    counter = &s->uncharged[f];
    s->sampled_poll[f] = 1;
    s->lean_poll[f] = 1;
  } else if (what == STRATA_COUNT_EMPTY_POLLS) {
    counter = &s->uncharged[f];
    s->sampled_poll[f] = 1;
  }
  if (counter != nullptr)
    s->handed_counters.emplace_back(counter, *counter);
  return counter;
}

// Counting hardware or software events needs an enter callback too; without STRATA_COUNTERS
// the module has none, so it costs no call at MPI entry.
extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  const char* wanted = std::getenv("STRATA_COUNTERS");
  return wanted != nullptr && wanted[0] != '\0' ? &strata::profiler::counting_profile_module
                                                : &strata::profiler::profile_module;
}
