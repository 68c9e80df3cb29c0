#include "profiler/job_figures.hpp"

#include "profiler/packed_totals.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <set>

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

bool excluded_from_mpi_time(const std::string& routine) {
  return routine == "MPI_Init" || routine == "MPI_Init_thread" || routine == "MPI_Finalize";
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
  // SIGTERM to the other ranks is a consequence), then another signal, then an exit.
  const auto s = static_cast<job_status>(h.status);
  auto severity = [](job_status x, int detail) {
    switch (x) {
    case job_status::aborted:
      return 5;
    case job_status::signal:
      return detail == SIGTERM || detail == SIGINT || detail == SIGKILL || detail == SIGHUP ? 3 : 4;
    case job_status::running:
    case job_status::exited:
      return 2;
    case job_status::finalized:
      break;
    }
    return 1;
  };
  if (severity(s, h.status_detail) > severity(job.status, job.status_detail)) {
    job.status = s == job_status::running ? job_status::exited : s;
    job.status_detail = h.status_detail;
  }
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

nlohmann::json spread_json(const spread& s, int ranks, bool with_min_rank) {
  nlohmann::json j = {{"min", s.min},
                      {"mean", ranks > 0 ? s.sum / ranks : 0.0},
                      {"max", s.max},
                      {"max_rank", std::max(s.max_rank, 0)}};
  if (with_min_rank)
    j["min_rank"] = std::max(s.min_rank, 0);
  return j;
}

std::string resource_manager(const std::string& job_id) {
  const size_t colon = job_id.find(':');
  const std::string rm = colon == std::string::npos ? "" : job_id.substr(0, colon);
  return rm == "slurm" || rm == "pbs" || rm == "lsf" || rm == "flux" ? rm : "none";
}

} // namespace

std::string record_json(const job_figures& job) {
  const rank_header& f = job.facts;
  nlohmann::json env = nlohmann::json::object();
  for (const std::string& kv : split_nul(f.environment, sizeof(f.environment))) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  static const char* const thread_levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                              "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
  const double rank_seconds = job.wall_s * job.ranks_reported;
  nlohmann::json j;
  j["schema"] = "strata.job/1";
  nlohmann::json& jj = j["job"];
  jj["id"] = f.job_id;
  jj["resource_manager"] = resource_manager(f.job_id);
  jj["ranks"] = job.ranks;
  jj["ranks_reported"] = job.ranks_reported;
  jj["hosts"] = job.host_names.size();
  jj["host_names"] = job.host_names;
  jj["user"] = f.user;
  jj["uid"] = f.uid;
  jj["executable"] = f.executable;
  jj["argv"] = split_nul(f.argv, sizeof(f.argv));
  jj["mpi_flavor"] = f.mpi_flavor;
  jj["mpi_library"] = f.mpi_library;
  jj["language"] = f.fortran != 0 ? "Fortran" : "C/C++";
  jj["thread_level"] =
      f.thread_level >= 0 && f.thread_level < 4 ? thread_levels[f.thread_level] : "unknown";
  jj["pmpi_intercepted_by_application"] = f.pmpi_intercepted != 0;
  jj["environment"] = env;
  jj["start"] = iso_time(f.start_unix_ns);
  jj["end"] = iso_time(f.end_unix_ns);
  jj["status"] = status_name(job.status);
  jj["abort_code"] = job.status == job_status::aborted ? nlohmann::json(job.status_detail)
                                                       : nlohmann::json(nullptr);
  jj["signal"] = job.status == job_status::signal ? nlohmann::json(job.status_detail)
                                                  : nlohmann::json(nullptr);
  jj["partial"] = job.partial;
  jj["wall_time_s"] = job.wall_s;
  jj["mpi_time_s"] = job.mpi_s;
  jj["mpi_percent"] = rank_seconds > 0 ? 100.0 * job.mpi_s / rank_seconds : 0.0;
  jj["mpi_percent_by_rank"] = spread_json(job.mpi_percent, job.ranks_reported, true);
  jj["profiler_overhead_s"] = job.overhead_s;
  if (job.finalize_s >= 0)
    jj["profiler_finalize_s"] = job.finalize_s;
  if (job.poll_bytes_estimated >= 0)
    jj["poll_bytes_estimated"] = job.poll_bytes_estimated != 0;
  if (job.model_clamped_calls >= 0)
    jj["model_clamped_calls"] = job.model_clamped_calls;
  if (f.counter_count > 0) {
    nlohmann::json& counters = jj["counters"];
    for (int c = 0; c < f.counter_count; ++c) {
      const std::string name = f.counter_names[c];
      counters[name] = {{"unit", name == "task-clock" || name == "cpu-clock" ? "ns" : "events"},
                        {"in_mpi", job.counters_in_mpi[c]},
                        {"outside_mpi", job.counters_outside_mpi[c]}};
    }
  }
  if (!job.callsites.empty() || job.callsites_dropped != 0) {
    nlohmann::json sites = nlohmann::json::array();
    for (const callsite_total& c : job.callsites)
      sites.push_back({{"function", c.function},
                       {"file", c.file},
                       {"line", c.line},
                       {"caller", c.caller},
                       {"calls", c.calls},
                       {"time_s", static_cast<double>(c.time_ns) / 1e9},
                       {"bytes", c.bytes},
                       {"wasted_s", static_cast<double>(c.wasted_ns) / 1e9},
                       {"ranks", c.ranks}});
    j["callsites"] = sites;
    j["callsites_dropped"] = job.callsites_dropped;
  }
  nlohmann::json& routines = j["routines"];
  routines = nlohmann::json::object();
  for (const auto& [name, r] : job.routines) {
    if (r.calls == 0)
      continue;
    nlohmann::json sizes = nlohmann::json::array();
    for (int b = 0; b < size_bins; ++b)
      if (r.size_hist[b] != 0)
        sizes.push_back({size_bin_lower_bound(b), r.size_hist[b]});
    nlohmann::json comms = nlohmann::json::array();
    for (int b = 0; b < comm_bins; ++b)
      if (r.comm_hist[b] != 0)
        comms.push_back({uint64_t{1} << b, r.comm_hist[b]});
    routines[name] = {{"calls", r.calls},
                      {"time_s", static_cast<double>(r.time_ns) / 1e9},
                      {"min_s", r.min_ns == UINT64_MAX ? 0.0 : static_cast<double>(r.min_ns) / 1e9},
                      {"max_s", static_cast<double>(r.max_ns) / 1e9},
                      {"count_sum", r.count_sum},
                      {"bytes_sent", r.bytes_sent},
                      {"bytes_received", r.bytes_received},
                      {"size_histogram", sizes},
                      {"comm_size_histogram", comms},
                      {"per_rank",
                       {{"calls", spread_json(r.calls_per_rank, job.ranks_reported, false)},
                        {"time_s", spread_json(r.time_per_rank, job.ranks_reported, false)}}}};
    // No call timed on any rank (the profile counts calls that cannot wait without the clock).
    // Not read from min_ns: MPICH 4.0.2 reduces MPI_UINT64_T with MPI_MIN as if signed, so the
    // UINT64_MAX of a rank that never made the call wins over the others' minima.
    if (r.max_ns == 0 && r.time_ns == 0)
      routines[name]["timed"] = false;
  }
  // argv and the environment may hold any bytes: invalid UTF-8 becomes U+FFFD, never a throw.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void merge_callsite(std::vector<callsite_total>& list, const callsite_total& site) {
  for (callsite_total& c : list) {
    if (c.function == site.function && c.file == site.file && c.line == site.line) {
      c.calls += site.calls;
      c.time_ns += site.time_ns;
      c.bytes += site.bytes;
      c.wasted_ns += site.wasted_ns;
      c.ranks += site.ranks;
      return;
    }
  }
  list.push_back(site);
}

std::string job_key(const std::string& job_id) {
  std::string key;
  for (char c : job_id)
    key.push_back(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ? c
                                                                                           : '_');
  return key.empty() ? std::string("job") : key;
}

} // namespace strata::profiler
