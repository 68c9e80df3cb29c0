// The trace module at finalize: the clock offset measured again, each rank's definitions (MPI
// functions used, region names, call sites, communicators) unified on rank 0 and mapped back,
// then every rank writes its own event file through OTF2's MPI collectives, timestamps on rank
// 0's clock, and rank 0 writes the global definitions. What is not MPI here lives in the tracer's
// library (tracer/rank_records.hpp, tracer/unify.hpp, tracer/job_definitions.hpp) and its one OTF2
// writer (tracer/otf2_writer.hpp).
#include "tracer/module/state.hpp"

#include <otf2/OTF2_MPI_Collectives.h>

#include "common/symbols.hpp"
#include "tracer/job_definitions.hpp"
#include "tracer/otf2_writer.hpp"
#include "tracer/rank_records.hpp"
#include "tracer/unify.hpp"

#include <cstdio>
#include <unistd.h>

namespace strata::trace {
namespace {

// Bytes moved between ranks with MPI, as a vector of strings (rank 0 gets all, others none).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine, int rank,
                                        int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  size_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
  }
  std::string all(rank == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, 0,
              comm);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return out;
}

std::vector<uint32_t> scatter_maps(MPI_Comm comm, const std::vector<std::vector<uint32_t>>& flat,
                                   int rank, int size) {
  std::vector<int> lengths(static_cast<size_t>(size), 0);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  std::vector<uint32_t> all;
  if (rank == 0)
    for (int r = 0; r < size; ++r) {
      lengths[static_cast<size_t>(r)] = static_cast<int>(flat[static_cast<size_t>(r)].size());
      displs[static_cast<size_t>(r)] = static_cast<int>(all.size());
      all.insert(all.end(), flat[static_cast<size_t>(r)].begin(),
                 flat[static_cast<size_t>(r)].end());
    }
  int mine = 0;
  MPI_Scatter(lengths.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, comm);
  std::vector<uint32_t> out(static_cast<size_t>(mine));
  MPI_Scatterv(all.data(), lengths.data(), displs.data(), MPI_UINT32_T, out.data(), mine,
               MPI_UINT32_T, 0, comm);
  return out;
}

// What this rank knows besides its records: its host, the names, and the call sites resolved
// with libdw (the program's own line, not the annotation header's).
rank_context context_of(const trace_state* s) {
  rank_context c;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  c.host = host;
  c.function_names.reserve(s->functions.size());
  for (size_t fid = 0; fid < s->functions.size(); ++fid)
    c.function_names.emplace_back(s->host->function_name(static_cast<int>(fid)));
  c.region_names = s->region_names;
  c.comm_members = s->comm_members;
  c.resolve = [](const std::vector<uint64_t>& addresses) {
    std::vector<source_site> sites;
    for (const common::source_location& place :
         common::resolve_return_addresses(addresses, "strata/annotate.h"))
      sites.push_back({place.file, place.line > 0 ? static_cast<uint32_t>(place.line) : 0});
    return sites;
  };
  return c;
}

void log_figures(const trace_state* s, const rank_figures& mine,
                 const std::vector<rank_figures>& ranks) {
  const int rank = s->rank;
  if (s->unbalanced_ends > 0)
    s->host->log(s->self,
                 ("rank " + std::to_string(rank) + ": " + std::to_string(s->unbalanced_ends) +
                  " region ends without a begin were ignored")
                     .c_str());
  if (mine.dropped > 0) {
    const std::string line =
        "rank " + std::to_string(rank) + " dropped " + std::to_string(mine.dropped) +
        " events at limit=" + std::to_string(s->opt.limit_bytes) + " bytes (policy " +
        (s->opt.policy == limit_policy::ring ? "ring" : "stop") + ")";
    s->host->log(s->self, line.c_str());
  }
  if (rank == 0) {
    uint64_t events = 0;
    uint64_t dropped = 0;
    for (const rank_figures& r : ranks) {
      events += r.events;
      dropped += r.dropped;
    }
    std::string line = std::to_string(events) + " events of " + std::to_string(s->world_size) +
                       " ranks in " + s->dir + "/traces.otf2";
    if (dropped > 0)
      line += " (" + std::to_string(dropped) + " dropped at the size limit)";
    s->host->log(s->self, line.c_str());
  }
}

// The event clock checked against CLOCK_MONOTONIC (module.h): the offsets measured against
// rank 0 align the ranks, not a rate error they share, so a failed check is said on this rank.
void say_if_the_clock_failed(const trace_state* s) {
  strata_clock_check c{};
  c.size = sizeof c;
  if (s->host->check_clock == nullptr || s->host->check_clock(&c) != 0 || c.trusted != 0)
    return;
  char line[256];
  std::snprintf(line, sizeof line,
                "rank %d: the time-stamp counter was %.1f ppm (%lld ns) away from "
                "CLOCK_MONOTONIC at finalize; the trace's times are off by as much",
                s->rank, c.drift_ppm, static_cast<long long>(c.offset_ns));
  s->host->log(s->self, line);
}

} // namespace

void trace_finalize(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  s->traced_thread = 0;
  say_if_the_clock_failed(s);
  s->clock.t2 = s->host->now_ns();
  s->clock.o2 = measure_offset(s, s->stddev_final);
  MPI_Comm_free(&s->clock_comm);
  const int rank = s->rank;
  const int size = s->world_size;

  // Definitions: local -> rank 0 -> unified -> each rank's map back.
  const local_index li = collect_local(*s->buffer, context_of(s));
  const std::vector<std::string> all = gather_strings(s->world, serialize(li.defs), rank, size);
  global_defs g;
  std::vector<std::vector<uint32_t>> flat;
  if (rank == 0) {
    std::vector<local_defs> defs(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      if (!deserialize(all[static_cast<size_t>(r)], defs[static_cast<size_t>(r)]))
        s->host->log(s->self, ("rank " + std::to_string(r) +
                               " sent unreadable definitions; its events are left out")
                                  .c_str());
    std::vector<rank_map> maps;
    unify(defs, g, maps);
    for (const rank_map& m : maps)
      flat.push_back(flatten(m));
  }
  rank_map map;
  const bool mapped = unflatten(scatter_maps(s->world, flat, rank, size), map) &&
                      map.mpi_region.size() == li.defs.mpi_regions.size() &&
                      map.user_region.size() == li.defs.user_regions.size() &&
                      map.site.size() == li.defs.sites.size() &&
                      map.comm.size() == li.defs.comms.size();

  // The directory, checked on rank 0 before OTF2 (which refuses to overwrite and would leave the
  // ranks disagreeing mid-collective).
  int usable = 1;
  if (rank == 0) {
    const std::string why = prepare_archive_directory(s->dir);
    if (!why.empty()) {
      s->host->log(s->self, ("no trace written: " + why).c_str());
      usable = 0;
    }
  }
  MPI_Bcast(&usable, 1, MPI_INT, 0, s->world);
  if (usable == 0)
    return;

  // Events: each rank its own location, through OTF2's MPI collectives.
  archive_writer archive(s->dir);
  if (!archive.ok()) {
    if (rank == 0)
      s->host->log(s->self, ("cannot create the trace in " + s->dir).c_str());
    return;
  }
  OTF2_MPI_Archive_SetCollectiveCallbacks(archive.handle(), s->world, MPI_COMM_NULL);
  archive.open_event_files();
  location_writer& events = archive.location(static_cast<uint64_t>(rank));
  rank_figures mine;
  record_writer writer(events, s->functions, s->comm_members, s->clock, li, map);
  if (mapped)
    writer.write_all(*s->buffer, s->window_begin, mine);
  writer.finish();
  mine.events = events.events();
  mine.last = writer.last_time();
  archive.close_event_files();
  // Timestamps are already on rank 0's clock: what is left of the offset is 0, within the
  // measurement's uncertainty (half the best round trip).
  archive.write_local_definitions({{static_cast<uint64_t>(rank),
                                    {{s->clock.correct(s->clock.t1), 0, s->stddev_init},
                                     {s->clock.correct(s->clock.t2), 0, s->stddev_final}}}});

  mine.dropped = s->buffer->dropped();
  mine.offset_init = s->clock.o1;
  mine.offset_final = s->clock.o2;
  std::vector<rank_figures> ranks(static_cast<size_t>(rank == 0 ? size : 0));
  MPI_Gather(&mine, 6, MPI_UINT64_T, ranks.data(), 6, MPI_UINT64_T, 0, s->world);
  if (rank == 0)
    archive.write_global_definitions(
        describe_job(g, ranks, {s->clock.correct(s->init_mono), s->init_mono, s->init_real}));
  archive.close();
  log_figures(s, mine, ranks);
  if (s->opt.analyze)
    analyze_at_finalize(s, mine.events);
}

} // namespace strata::trace
