#include "profiler/job_figures.hpp"
#include "profiler/slurm_job.hpp"

#include "profiler/packed_totals.hpp"
#include "profiler/routine_classes.hpp"

#include <algorithm>
#include <csignal>
#include <ctime>

namespace strata::profiler {

void spread::add(double value, int rank) {
  if (min_rank < 0 || value < min) {
    min = value;
    min_rank = rank;
  }
  if (max_rank < 0 || value > max) {
    max = value;
    max_rank = rank;
  }
  sum += value;
}

int64_t rank_end_unix_ns(const rank_header& h, const std::vector<std::string>& names,
                         const std::vector<routine_slot>& slots) {
  if (h.end_unix_ns > 0)
    return h.end_unix_ns;
  // A rank killed without a word: the end of its wall time (its latest call's exit), on the
  // wall clock from MPI_Init's entry plus MPI_Init's own time (wall time starts at its return).
  const uint64_t wall_ns = rank_wall_ns(h);
  if (h.start_unix_ns <= 0 || wall_ns == 0)
    return 0;
  for (size_t i = 0; i < slots.size() && i < names.size(); ++i)
    if ((names[i] == "MPI_Init" || names[i] == "MPI_Init_thread") && slots[i].calls == 1)
      return h.start_unix_ns + static_cast<int64_t>(slots[i].time_ns) +
             static_cast<int64_t>(wall_ns);
  return 0;
}

double rank_wall_seconds(const rank_header& h) {
  return static_cast<double>(rank_wall_ns(h)) / 1e9;
}

double rank_mpi_seconds(const std::vector<std::string>& names,
                        const std::vector<routine_slot>& slots) {
  uint64_t ns = 0;
  for (size_t i = 0; i < slots.size() && i < names.size(); ++i)
    if (!excluded_from_mpi_time(names[i]))
      ns += slots[i].time_ns;
  return static_cast<double>(ns) / 1e9;
}

void add_rank(job_figures& job, const rank_data& rank) {
  const rank_header& h = rank.header;
  const int lowest_rank_before = job.ranks_reported == 0 ? -1 : job.facts.rank;
  if (job.ranks_reported == 0 || h.rank < job.facts.rank)
    job.facts = h;
  job.ranks = std::max(job.ranks, h.world_size);
  ++job.ranks_reported;
  if (std::find(job.host_names.begin(), job.host_names.end(), h.host) == job.host_names.end())
    job.host_names.emplace_back(h.host);
  // The job's end is the most telling end of any rank: an abort, then a fault (the launcher's
  // SIGTERM to the other ranks is a consequence), then another signal, then an exit, then a rank
  // killed without a chance to say so (its file still says running: SIGKILL), most often by
  // the launcher after another rank's end (MPICH's does so), so the job's own only when no
  // rank said anything else.
  const auto s = static_cast<job_status>(h.status);
  auto severity = [](job_status x, int detail) {
    switch (x) {
    case job_status::aborted:
      return 6;
    case job_status::signal:
      return detail == SIGTERM || detail == SIGINT || detail == SIGKILL || detail == SIGHUP ? 4 : 5;
    case job_status::exited:
      return 3;
    case job_status::running:
      return 2;
    case job_status::finalized:
      break;
    }
    return 1;
  };
  if (severity(s, h.status_detail) > severity(job.status, job.status_detail)) {
    job.status = s;
    job.status_detail = h.status_detail;
  }
  job.end_unix_ns = std::max(job.end_unix_ns, rank_end_unix_ns(h, rank.names, rank.slots));
  const double wall = rank_wall_seconds(h);
  const double mpi = rank_mpi_seconds(rank.names, rank.slots);
  job.wall_s = std::max(job.wall_s, wall);
  job.mpi_s += mpi;
  job.overhead_s += static_cast<double>(h.overhead_ns) / 1e9;
  job.mpi_percent.add(wall > 0 ? 100.0 * mpi / wall : 0.0, h.rank);
  for (int c = 0; c < h.counter_count; ++c) {
    job.counters_in_mpi[c] += h.counters_in_mpi[c];
    job.counters_outside_mpi[c] += h.counters_outside_mpi[c];
  }
  for (size_t i = 0; i < rank.slots.size(); ++i) {
    const routine_slot& slot = rank.slots[i];
    auto it = job.routines.find(rank.names[i]);
    if (slot.calls == 0 && it == job.routines.end())
      continue;
    routine_total& r = job.routines[rank.names[i]];
    if (it == job.routines.end() && lowest_rank_before >= 0) {
      // The ranks added before never called it: their zero is the minimum per rank (as in the
      // reduction at finalize, where every rank has a row for every routine called somewhere).
      r.calls_per_rank.add(0.0, lowest_rank_before);
      r.time_per_rank.add(0.0, lowest_rank_before);
    }
    add_routine_figures(r, slot);
    r.calls_per_rank.add(static_cast<double>(slot.calls), h.rank);
    r.time_per_rank.add(static_cast<double>(slot.time_ns) / 1e9, h.rank);
  }
}

namespace {

std::string iso_time(int64_t unix_ns) {
  if (unix_ns <= 0)
    return {};
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000);
  tm utc{};
  ::gmtime_r(&secs, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string resource_manager(const std::string& job_id) {
  const size_t colon = job_id.find(':');
  const std::string rm = colon == std::string::npos ? "" : job_id.substr(0, colon);
  return rm == "slurm" || rm == "pbs" || rm == "lsf" || rm == "flux" ? rm : "none";
}

record::job_status record_status(job_status status) {
  switch (status) {
  case job_status::finalized:
    return record::job_status::finalized;
  case job_status::aborted:
    return record::job_status::aborted;
  case job_status::signal:
    return record::job_status::signal;
  case job_status::running:
    return record::job_status::killed;
  case job_status::exited:
    break;
  }
  return record::job_status::exit;
}

record::rank_spread rank_spread_of(const spread& s, int ranks) {
  return {s.min, ranks > 0 ? s.sum / ranks : 0.0, s.max,
          static_cast<std::uint64_t>(std::max(s.max_rank, 0))};
}

} // namespace

record::job_record to_record(const job_figures& job) {
  const rank_header& f = job.facts;
  static const char* const thread_levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                              "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
  const double rank_seconds = job.wall_s * job.ranks_reported;
  record::job_record out;
  record::job_facts& j = out.job;
  j.id = f.job_id;
  j.resource_manager = resource_manager(f.job_id);
  j.ranks = static_cast<std::uint64_t>(job.ranks);
  j.ranks_reported = static_cast<std::uint64_t>(job.ranks_reported);
  j.hosts = job.host_names.size();
  j.host_names = job.host_names;
  j.user = f.user;
  j.uid = f.uid;
  j.executable = f.executable;
  j.argv = split_nul(f.argv, sizeof(f.argv));
  j.mpi_flavor = f.mpi_flavor;
  j.mpi_library = f.mpi_library;
  j.language = f.fortran == 2 ? "Python" : f.fortran != 0 ? "Fortran" : "C/C++";
  j.thread_level =
      f.thread_level >= 0 && f.thread_level < 4 ? thread_levels[f.thread_level] : "unknown";
  j.pmpi_intercepted_by_application = f.pmpi_intercepted != 0;
  for (const std::string& kv : split_nul(f.environment, sizeof(f.environment))) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) // a repeated name: the last one counts
      j.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (f.module[0] != '\0')
    j.module = f.module;
  if (f.strata_version[0] != '\0')
    j.strata_version = f.strata_version;
  j.start = iso_time(f.start_unix_ns);
  j.end = iso_time(job.end_unix_ns > 0 ? job.end_unix_ns : f.end_unix_ns);
  j.status = record_status(job.status);
  if (job.status == job_status::aborted)
    j.abort_code = job.status_detail;
  if (job.status == job_status::signal)
    j.signal = job.status_detail;
  j.partial = job.partial;
  j.wall_time_s = job.wall_s;
  j.mpi_time_s = job.mpi_s;
  j.mpi_percent = rank_seconds > 0 ? 100.0 * job.mpi_s / rank_seconds : 0.0;
  const spread& p = job.mpi_percent;
  j.mpi_percent_by_rank = {p.min, job.ranks_reported > 0 ? p.sum / job.ranks_reported : 0.0, p.max,
                           static_cast<std::uint64_t>(std::max(p.min_rank, 0)),
                           static_cast<std::uint64_t>(std::max(p.max_rank, 0))};
  j.profiler_overhead_s = job.overhead_s;
  if (job.finalize_s >= 0)
    j.profiler_finalize_s = job.finalize_s;
  if (job.poll_bytes_estimated >= 0)
    j.poll_bytes_estimated = job.poll_bytes_estimated != 0;
  j.clock = job.clock;
  j.slurm = slurm_facts_of(j.environment, job.status == job_status::finalized,
                           (job.end_unix_ns > 0 ? job.end_unix_ns : f.end_unix_ns) / 1000000000);
  if (job.model_clamped_calls >= 0)
    j.model_clamped_calls = static_cast<std::uint64_t>(job.model_clamped_calls);
  for (int c = 0; c < f.counter_count; ++c) {
    const std::string name = f.counter_names[c];
    j.counters[name] = {name == "task-clock" || name == "cpu-clock" ? "ns" : "events",
                        job.counters_in_mpi[c], job.counters_outside_mpi[c]};
  }
  for (const callsite_total& c : job.callsites)
    out.callsites.push_back({c.function, c.file, c.caller, static_cast<std::uint64_t>(c.line),
                             c.calls, c.bytes, static_cast<std::uint64_t>(c.ranks),
                             static_cast<double>(c.time_ns) / 1e9,
                             static_cast<double>(c.wasted_ns) / 1e9});
  out.callsites_dropped.value = job.callsites_dropped;
  for (const auto& [name, r] : job.routines) {
    if (r.calls == 0)
      continue;
    record::routine& routine = out.routines.emplace_back();
    routine.name = name;
    routine.calls = r.calls;
    routine.time_s = static_cast<double>(r.time_ns) / 1e9;
    routine.min_s = r.min_ns == UINT64_MAX ? 0.0 : static_cast<double>(r.min_ns) / 1e9;
    routine.max_s = static_cast<double>(r.max_ns) / 1e9;
    routine.count_sum = r.count_sum;
    routine.bytes_sent = r.bytes_sent;
    routine.bytes_received = r.bytes_received;
    for (int b = 0; b < size_bins; ++b)
      if (r.size_hist[b] != 0)
        routine.size_histogram.push_back({size_bin_lower_bound(b), r.size_hist[b]});
    for (int b = 0; b < comm_bins; ++b)
      if (r.comm_hist[b] != 0)
        routine.comm_size_histogram.push_back({uint64_t{1} << b, r.comm_hist[b]});
    routine.per_rank = {rank_spread_of(r.calls_per_rank, job.ranks_reported),
                        rank_spread_of(r.time_per_rank, job.ranks_reported)};
    // No call timed on any rank (the profile counts calls that cannot wait without the clock).
    // Not read from min_ns: MPICH 4.0.2 reduces MPI_UINT64_T with MPI_MIN as if signed, so the
    // UINT64_MAX of a rank that never made the call wins over the others' minima.
    routine.timed.value = !(r.max_ns == 0 && r.time_ns == 0);
  }
  return out;
}

} // namespace strata::profiler
