// The profile module's state on one rank, and the module's parts (one file each): settings,
// the start of a rank (start_rank.cpp), hardware counters, abnormal ends, the job's figures at
// MPI_Finalize and MPI_Pcontrol (finalize.cpp), the user's report. Internal to the module.
#pragma once

// mpi.h before anything that includes strata/module.h, which tells the MPI flavor from it.
#include <mpi.h>

#include "mpi_t.hpp"
#include "profiler/collectives.hpp"
#include "profiler/communication.hpp"
#include "profiler/counters/counters.hpp"
#include "profiler/counting.hpp"
#include "profiler/job_figures.hpp"
#include "profiler/poll_charging.hpp"
#include "profiler/rank_file.hpp"
#include "profiler/time_over_model.hpp"

#include <strata/module.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strata::profiler {

// One source, two modules (CMakeLists.txt): each leaves its own rank files and record, named
// after it, so that both can run in one job. Only profile_module.cpp and options.cpp are compiled
// for each (STRATA_OVERHEAD_MODULE), and profile_module.cpp says which one this is: the other
// files are compiled once for both.
extern const bool is_overhead_module;
extern const char* const module_name;

struct module_state {
  const strata_host* host = nullptr;
  int self = 0;
  std::vector<std::string> names;  // by function id
  std::vector<uint8_t> traits;     // by function id: routine_trait bits
  std::vector<bool> cheap;         // by function id: counted without time (routine_classes.hpp)
  std::vector<poll_figures> polls; // by function id
  // Where calls are counted (the call path's view): the rank file once it exists; before it
  // (MPI_Init itself) or without one, the memory below.
  call_counting counting;
  sole_counter sole; // plain adds for the one thread calling MPI under MPI_THREAD_MULTIPLE
  // Under MPI_THREAD_MULTIPLE, routine slots of their own for this many threads that call MPI
  // beside another (counting.hpp); in the rank file, or in memory without one.
  static constexpr uint32_t thread_arrays = 8;
  std::atomic<uint32_t> thread_arrays_claimed{0};
  std::vector<routine_slot> thread_slots_in_memory;
  uint64_t* uncharged = nullptr; // by function id: untimed polls not yet in the routine's slot
  std::vector<routine_slot> early_slots;
  rank_header early_header{};
  std::vector<uint64_t> uncharged_in_memory;
  std::vector<callsite_slot> callsites_in_memory;
  rank_mapping mapping;
  std::atomic<bool> paused{false}; // MPI_Pcontrol(0)
  counters_lent_to_core lent_counters;
  time_over_model model; // the overhead module
  // Settings (options.hpp) and what was made of them.
  bool want_callsites = false;
  bool lean_polls = true;
  // Sampling and counting without events are off with call sites and with STRATA_COUNTERS,
  // which charge each call its own time and its own counter readings.
  bool counting_allowed = false;
  // Settings the module could not use, read before MPI_Init (and in the launcher, which loads
  // the module too): said once per job, by rank 0, when it knows it is rank 0 (start_rank).
  std::vector<std::string> setting_problems;
  // The job.
  int rank = 0;
  int world_size = 1;
  // The application's processes for the module's own traffic (strata_host::world), shared with
  // the other modules: the finalize reduction's messages carry a tag no other module uses
  // (finalize.cpp), instead of going over a duplicate, whose creation cost every job one more
  // communicator creation (two synchronizing rounds at start).
  MPI_Comm world = MPI_COMM_WORLD;
  // Where the job's files may go (spool.hpp), and the one this rank's file went to; the record
  // goes to rank 0's, else to a later one that takes it. Empty when none is a directory.
  std::vector<std::string> spools;
  std::string spool;
  size_t spool_index = 0;
  std::string key;
  call_costs per_call; // calibrated in start_rank (the sum's only if the profile lends slots)
  // What the rank counted: the shared routine slots, with the threads' own arrays added when
  // there are any (`storage` then holds the sum).
  const routine_slot* counted_slots(std::vector<routine_slot>& storage) const {
    if (counting.thread_arrays.count == 0)
      return counting.slots;
    storage = merged_slots(counting.slots, names.size(), counting.thread_arrays);
    return storage.data();
  }
  // STRATA_COUNTERS: counted for the thread that called MPI_Init, split in and out of MPI.
  counters::counter_set counters;
  counters::split_accumulator split;
  std::vector<uint64_t> counter_values;
  // The MPI library's own variables (mpi_t.hpp).
  mpi_t_state mpi_t;
  // Who sends to whom (communication.hpp): by function id, the kind of message it sends to its
  // peer (-1: none), and once the world's size is known its row of sums by destination.
  bool communication = false; // counted at all (the profile's option `communication`)
  std::vector<int8_t> pair_kinds;
  std::vector<strata_pair_sum*> pair_rows;
  sent_pairs pairs;
  // By function id, what it does with persistent requests, and the persistent sends and
  // collectives made, whose every start sends a message or calls the collective (locked under
  // MPI_THREAD_MULTIPLE).
  std::vector<request_role> request_roles;
  persistent_requests persistent;
  std::mutex persistent_lock;
  // Collectives by communicator (collectives.hpp), the core's and the callback's.
  communicator_sums communicators;
  // By function id, what the callback counts of a call that sends no counted message: its
  // persistent requests, or its communicator's collectives (one byte read, as for every call).
  static constexpr uint8_t counts_requests = 1, counts_collective = 2;
  std::vector<uint8_t> beside_pairs;

  rank_header& header() { return *counting.header; }
};

// One message (or call) and its bytes added to a pair's (or communicator's) sums.
inline void add_to_sums(const module_state& s, uint64_t& messages, uint64_t& sum_bytes,
                        uint64_t bytes) {
  if (s.counting.threaded) {
    std::atomic_ref<uint64_t>(messages).fetch_add(1, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(sum_bytes).fetch_add(bytes, std::memory_order_relaxed);
  } else {
    ++messages;
    sum_bytes += bytes;
  }
}
inline void add_to_pair(const module_state& s, strata_pair_sum& pair, uint64_t bytes) {
  add_to_sums(s, pair.messages, pair.bytes, bytes);
}

// The persistent requests' part (profile_module.cpp): a send or collective made, or what a start
// sends.
void count_persistent(module_state& s, const strata_event& ev, request_role role);

// A communicator's sums (of the core's id; ids past the table go to its last element, as the
// core's do), the group it runs on written beside them; null when there are none.
inline strata_comm_sum* communicator_sum(module_state& s, uint32_t comm_id, const int* world_ranks,
                                         int32_t size, uint32_t flags) {
  strata_comm_sum* sums = s.communicators.sums();
  if (sums == nullptr)
    return nullptr;
  constexpr uint32_t last = communicator_sums::capacity - 1;
  strata_comm_sum& sum = sums[comm_id < last ? comm_id : last];
  if (!s.counting.threaded) {
    sum.world_ranks = world_ranks;
    sum.size = size;
    sum.flags = flags;
    return &sum;
  }
  // Threads write the same group of the same id: relaxed stores keep it free of data races.
  std::atomic_ref<const int*>(sum.world_ranks).store(world_ranks, std::memory_order_relaxed);
  std::atomic_ref<int32_t>(sum.size).store(size, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(sum.flags).store(flags, std::memory_order_relaxed);
  return &sum;
}

// A collective call and its bytes to its communicator's sums, with the group it ran on.
inline void add_to_communicator(module_state& s, uint32_t comm_id, const int* world_ranks,
                                int32_t size, uint32_t flags, uint64_t bytes) {
  if (strata_comm_sum* sum = communicator_sum(s, comm_id, world_ranks, size, flags))
    add_to_sums(s, sum->calls, sum->bytes, bytes);
}

// A collective call to its communicator's sums, as the core adds those of the calls it sums
// (module.h, strata_timed_counts::comms).
inline void count_collective(module_state& s, const strata_event& ev) {
  add_to_communicator(s, ev.comm_id, ev.comm_world_ranks, ev.comm_size, ev.flags,
                      ev.bytes_sent > 0 ? static_cast<uint64_t>(ev.bytes_sent) : 0);
}

// A send's message to its destination's row, a one-sided operation to its target's (the core adds
// those of the calls it sums itself). Counted while the profile is paused too, as the core's sums
// are. A routine without a row may make or start persistent requests, which the core never sums.
inline void count_pair(module_state& s, const strata_event& ev) {
  strata_pair_sum* row = s.pair_rows[static_cast<size_t>(ev.function)];
  if (row == nullptr) {
    const uint8_t beside = s.beside_pairs[static_cast<size_t>(ev.function)];
    if (__builtin_expect(beside == module_state::counts_collective, 0))
      count_collective(s, ev);
    else if (__builtin_expect(beside == module_state::counts_requests, 0))
      count_persistent(s, ev, s.request_roles[static_cast<size_t>(ev.function)]);
    return;
  }
  if (static_cast<uint32_t>(ev.peer) >= s.pairs.ranks())
    return;
  // A get's bytes are those it brings back.
  const int64_t bytes = s.pair_kinds[static_cast<size_t>(ev.function)] == pair_kind_get
                            ? ev.bytes_expected
                            : ev.bytes_sent;
  add_to_pair(s, row[static_cast<uint32_t>(ev.peer)], bytes > 0 ? static_cast<uint64_t>(bytes) : 0);
}

// Whether the profile lends the core its routines' slots to sum timed calls into
// (strata_module_timed_counts_v1): not with call sites, counters, a model, core_sums=0 or
// MPI_THREAD_MULTIPLE (known from mpi_ready on).
bool lends_slots_to_core(const module_state& s);

// Moves the untimed polls into their routines' slots wherever the figures are read; while the
// profile is paused, first puts back what the core counted since the pause.
void charge_untimed_polls(module_state& s);

// start_rank.cpp: in mpi_ready, once MPI works: the job id, the rank file, the facts.
void start_rank(module_state& s);
// At load: the spools this job's files may go to, as the service profile.spools (text/v1: one
// directory a line), for the monitor's tool ranks.
void publish_spools(const strata_host* host, int self);

// The exit callback of every call (profile_module.cpp).
void on_exit(strata_event* ev, void* raw);

// hardware_counters.cpp: STRATA_COUNTERS, and the callbacks that read them around each call.
void open_counters(module_state& s);
void store_counter_totals(module_state& s);
void on_enter_counting(strata_event* ev, void* raw);
void on_exit_counting(strata_event* ev, void* raw);

// abnormal_end.cpp: the state whose end the handlers mark (from load on), the signal and atexit
// handlers (once the rank file exists), and the mark itself (MPI_Abort's wrapper calls it too).
void keep_for_abnormal_ends(module_state* s);
void watch_abnormal_ends();
void mark_end(job_status status, int detail);

// finalize.cpp
void finalize_job(module_state& s);
void pcontrol_level(module_state& s, int level);

} // namespace strata::profiler
