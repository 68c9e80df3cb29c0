// The start of a rank, in mpi_ready once MPI works: the tools' world, one job id for all
// ranks, the spool, the rank file (with what MPI_Init itself counted moved in), the facts, the
// cost of one call, the counters, the handlers of abnormal ends.
#include "state.hpp"

#include "options.hpp"
#include "profiler/clock.hpp"
#include "profiler/job_facts.hpp"
#include "profiler/spool.hpp"

#include <strata/version.h>

#include <unistd.h>

namespace strata::profiler {

namespace {

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(version, &len);
  return std::string(version, static_cast<size_t>(len > 0 ? len : 0));
}

} // namespace

void publish_spools(const strata_host* host, int self) {
  // Where this job's files may go, for the monitor's tool ranks (which never run the profile past
  // MPI_Init): its tree reads the ranks' hang states there when asked (src/hang/tree_ask.hpp).
  static std::string spools;
  for (const std::string& dir : spool_candidates(
           options::current().spool.c_str(), STRATA_DEFAULT_SPOOL, std::getenv("HOME"), ::getuid()))
    spools += dir + "\n";
  host->publish(self, "profile.spools", "text/v1", spools.data());
}

void start_rank(module_state& s) {
  // The application's processes, private to the tools (without the monitor's tool ranks; from
  // the core's own session in a Sessions program).
  if (const void* world = s.host->world())
    s.world = *static_cast<const MPI_Comm*>(world);
  MPI_Comm_rank(s.world, &s.rank);
  MPI_Comm_size(s.world, &s.world_size);
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  s.counting.threaded = level == MPI_THREAD_MULTIPLE;
  if (s.counting.threaded && s.sole.start())
    s.counting.sole = &s.sole;
  // One job id for all ranks: the resource manager's, else rank 0's host, pid and start; in one
  // broadcast with rank 0's start and pid (each collective costs a scheduling round when the
  // ranks outnumber the cores), and the spool rank 0's file went to, where the others' go too:
  // a spool that cannot be used is found, and said, once.
  struct {
    long long start_pid[2];
    long long spool_index;
    char id[128];
  } job{{s.header().start_unix_ns / 1000000000, ::getpid()}, 0, {0}};
  s.spools = spool_candidates(options::current().spool.c_str(), STRATA_DEFAULT_SPOOL,
                              std::getenv("HOME"), ::getuid());
  placed_rank_file placed;
  const auto place = [&](size_t first) {
    // Each module its own files (spool.hpp).
    s.key = job_key(job.id) + "-" + std::to_string(job.start_pid[1]) +
            (is_overhead_module ? std::string(overhead_key_suffix) : std::string());
    placed = place_rank_file(s.spools, first, s.key + ".rank" + std::to_string(s.rank) + ".prof",
                             s.names, s.want_callsites ? callsite_table::capacity : 0,
                             s.counting.threaded ? module_state::thread_arrays : 0);
  };
  if (s.rank == 0) {
    std::string job_id = job_id_from_environment();
    char host[64] = {0};
    ::gethostname(host, sizeof(host) - 1);
    if (job_id.empty())
      job_id = local_job_id(host, job.start_pid[1], job.start_pid[0]);
    copy_field(job.id, sizeof(job.id), job_id);
    place(0);
    job.spool_index = static_cast<long long>(placed.spool);
  }
  MPI_Bcast(&job, sizeof(job), MPI_BYTE, 0, s.world);
  const auto rank0_spool = static_cast<size_t>(job.spool_index);
  if (s.rank != 0)
    place(rank0_spool); // nowhere when rank 0 found no room: counted in memory
  s.mapping = std::move(placed.mapping);
  if (s.mapping.ok()) {
    s.spool_index = placed.spool;
  } else {
    // Counted in memory; the record is still written at the end, where there is room then.
    s.spool_index = s.spools.size();
    for (size_t i = 0; i < s.spools.size() && s.spool_index == s.spools.size(); ++i)
      if (spool_unusable(s.spools[i]).empty())
        s.spool_index = i;
  }
  if (s.spool_index < s.spools.size())
    s.spool = s.spools[s.spool_index];
  // Sends counted by destination from here on (the core asks for the rows after this), beside
  // the rank file when there is one; collectives by communicator likewise (in memory: their
  // groups are the core's tables). Neither in the overhead module, nor with communication=0.
  if (s.communication && !s.communicators.open())
    s.host->log(s.self, "no memory for the collectives by communicator; they are not counted");
  if (s.communication &&
      s.pairs.open(static_cast<uint32_t>(s.world_size),
                   s.mapping.ok() ? pairs_file_of(s.mapping.path) : std::string(), s.rank))
    for (size_t f = 0; f < s.pair_kinds.size(); ++f)
      if (s.pair_kinds[f] >= 0)
        s.pair_rows[f] = s.pairs.row(s.pair_kinds[f]);
  if (s.rank == 0 && !placed.why_not_first.empty()) {
    std::string line = placed.why_not_first;
    if (s.mapping.ok()) {
      line += "; records go to " + s.spool;
    } else {
      line += "; neither can ";
      for (size_t i = 1; i < s.spools.size(); ++i)
        line += (i > 1 ? " nor " : "") + s.spools[i];
      line += s.spool.empty() ? " hold this job's files; no record is kept"
                              : " hold this job's files; the counters stay in memory (an abnormal "
                                "end loses them) and the record goes to " +
                                    s.spool + " at MPI_Finalize if there is room then";
    }
    s.host->log(s.self, line.c_str());
  } else if (s.rank != 0 && rank0_spool < s.spools.size() && placed.spool != rank0_spool) {
    s.host->log(s.self,
                (placed.why_not_first + (s.mapping.ok() ? "; this rank's file goes to " + s.spool
                                                        : "; this rank's counters stay in memory "
                                                          "(an abnormal end loses them)"))
                    .c_str());
  }
  if (s.rank == 0)
    for (const std::string& problem : s.setting_problems)
      s.host->log(s.self, problem.c_str());

  rank_header facts = s.header();
  fill_process_facts(facts, STRATA_MPI_FLAVOR, mpi_library_version(),
                     s.host->get_value("strata.init_language"));
  copy_field(facts.job_id, sizeof(facts.job_id), job.id);
  copy_field(facts.module, sizeof(facts.module), module_name);
  copy_field(facts.strata_version, sizeof(facts.strata_version), STRATA_VERSION);
  facts.rank = s.rank;
  facts.world_size = s.world_size;
  facts.thread_level = level;
  facts.init_mono_ns = mono_ns();
  if (s.mapping.ok()) {
    move_into_rank_file(s.mapping, facts, s.early_slots, s.uncharged_in_memory);
    s.counting.header = s.mapping.header;
    s.counting.slots = s.mapping.slots;
    s.counting.callsites.slots = s.mapping.callsites;
    s.uncharged = s.mapping.uncharged_polls;
    s.counting.thread_arrays.slots = s.mapping.thread_slots;
  } else {
    s.early_header = facts;
    if (s.want_callsites) {
      s.callsites_in_memory.assign(callsite_table::capacity, callsite_slot{});
      s.counting.callsites.slots = s.callsites_in_memory.data();
    }
    if (s.counting.threaded) {
      s.thread_slots_in_memory.assign(size_t{module_state::thread_arrays} * s.names.size(),
                                      routine_slot{});
      s.counting.thread_arrays.slots = s.thread_slots_in_memory.data();
    }
  }
  if (s.counting.threaded && s.counting.thread_arrays.slots != nullptr) {
    s.counting.thread_arrays.functions = static_cast<uint32_t>(s.names.size());
    s.counting.thread_arrays.claimed = &s.thread_arrays_claimed;
    s.counting.thread_arrays.count = module_state::thread_arrays;
  }
  s.per_call.event_ns = calibrate_call_cost(s.traits, s.want_callsites);
  if (lends_slots_to_core(s))
    s.per_call.core_sum_ns = calibrate_core_sum_cost(s.traits);
  open_counters(s);
  watch_abnormal_ends();
}

} // namespace strata::profiler
