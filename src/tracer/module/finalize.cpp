// The trace module at finalize: the clock offset measured again, each rank's definitions (MPI
// functions used, region names, call sites, communicators) unified up a binomial tree of the
// ranks and mapped back down it (O(log P) rounds, no loop over the ranks on rank 0), then every
// rank writes its own event file through OTF2's MPI collectives, timestamps on rank 0's clock,
// and rank 0 writes the global definitions. What is not MPI here lives in the tracer's
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
#include <limits>
#include <unistd.h>

namespace strata::trace {
namespace {

constexpr int defs_tag = 11;
constexpr int map_tag = 12;
constexpr int error_tag = 13;

std::string receive_bytes(MPI_Comm comm, int from, int tag) {
  MPI_Status status;
  MPI_Probe(from, tag, comm, &status);
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string bytes(static_cast<size_t>(std::max(length, 0)), '\0');
  MPI_Recv(bytes.data(), length, MPI_CHAR, from, tag, comm, MPI_STATUS_IGNORE);
  return bytes;
}

void send_bytes(MPI_Comm comm, int to, int tag, const std::string& bytes) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, to, tag, comm);
}

std::vector<uint32_t> receive_words(MPI_Comm comm, int from, int tag) {
  MPI_Status status;
  MPI_Probe(from, tag, comm, &status);
  int length = 0;
  MPI_Get_count(&status, MPI_UINT32_T, &length);
  std::vector<uint32_t> words(static_cast<size_t>(std::max(length, 0)));
  MPI_Recv(words.data(), length, MPI_UINT32_T, from, tag, comm, MPI_STATUS_IGNORE);
  return words;
}

// The definitions unified up the binomial tree (tracer/unify.hpp) in ceil(log2 P) rounds, and
// each rank's map to the global ids composed on the way down: this rank's map, and on rank 0
// the job's definitions. A child's unreadable definitions are left out with a message (its
// events then are too).
rank_map unify_over_tree(const trace_state* s, const local_defs& local, global_defs& global) {
  const MPI_Comm comm = s->world;
  const tree_links links = binomial_links(s->rank, s->world_size);
  merged_defs mine = from_local(local);
  std::vector<rank_map> child_maps;
  for (const int child : links.children) {
    merged_defs theirs;
    if (!deserialize(receive_bytes(comm, child, defs_tag), theirs, s->world_size)) {
      s->host->log(s->self, ("the definitions of ranks " + std::to_string(child) +
                             " and up were unreadable; their events are left out")
                                .c_str());
      theirs = merged_defs{};
    }
    child_maps.push_back(merge_into(mine, theirs));
  }
  rank_map ids;
  bool ok = true;
  if (links.parent >= 0) {
    send_bytes(comm, links.parent, defs_tag, serialize(mine));
    ok = unflatten(receive_words(comm, links.parent, map_tag), ids);
  } else {
    global = to_global(mine);
    ids = global_ids(mine);
  }
  for (size_t c = 0; c < links.children.size(); ++c) {
    rank_map theirs;
    ok = compose(child_maps[c], ids, theirs) && ok;
    const std::vector<uint32_t> flat = flatten(theirs);
    MPI_Send(flat.data(), static_cast<int>(flat.size()), MPI_UINT32_T, links.children[c], map_tag,
             comm);
  }
  return ok ? prefix(ids, local) : rank_map{};
}

// The calls each rank counted rather than recorded, on rank 0 (by rank: routine, calls); only
// the routines a rank called travel.
std::vector<std::vector<std::pair<std::string, uint64_t>>>
gather_counted_calls(const trace_state* s) {
  std::vector<uint64_t> mine;
  for (size_t fid = 0; fid < s->counted.size(); ++fid)
    if (const uint64_t calls = __atomic_load_n(&s->counted[fid], __ATOMIC_RELAXED); calls > 0) {
      mine.push_back(fid);
      mine.push_back(calls);
    }
  const int n = static_cast<int>(mine.size());
  const size_t ranks = s->rank == 0 ? static_cast<size_t>(s->world_size) : 0;
  std::vector<int> sizes(ranks);
  std::vector<int> starts(ranks);
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, s->world);
  int total = 0;
  for (size_t r = 0; r < ranks; ++r) {
    starts[r] = total;
    total += sizes[r];
  }
  std::vector<uint64_t> all(static_cast<size_t>(total));
  MPI_Gatherv(mine.data(), n, MPI_UINT64_T, all.data(), sizes.data(), starts.data(), MPI_UINT64_T,
              0, s->world);
  std::vector<std::vector<std::pair<std::string, uint64_t>>> out(ranks);
  for (size_t r = 0; r < ranks; ++r)
    for (auto i = static_cast<size_t>(starts[r]);
         i + 1 < static_cast<size_t>(starts[r]) + static_cast<size_t>(sizes[r]); i += 2)
      out[r].emplace_back(s->host->function_name(static_cast<int>(all[i])), all[i + 1]);
  return out;
}

// Whether every rank's part of the archive was written (a full disk fails them all, as a rule):
// every rank learns it; rank 0 also how many failed and the first failing rank's error.
struct written_parts {
  bool all = true;
  int failed = 0;
  std::string error;
};

written_parts gather_written(const trace_state* s, const std::string& error) {
  const int mine = error.empty() ? std::numeric_limits<int>::max() : s->rank;
  int first = mine;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, s->world);
  written_parts out;
  if (first == std::numeric_limits<int>::max())
    return out;
  out.all = false;
  const int failed = error.empty() ? 0 : 1;
  MPI_Reduce(&failed, &out.failed, 1, MPI_INT, MPI_SUM, 0, s->world);
  if (first != 0 && s->rank == first)
    send_bytes(s->world, 0, error_tag, error);
  if (s->rank == 0)
    out.error = first == 0 ? error : receive_bytes(s->world, first, error_tag);
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

// Where rank 0's finalize went, in ns: the clock offsets, this rank's call sites resolved, the
// definitions unified over the tree (waiting for the subtrees included), the archive written.
struct finalize_times {
  uint64_t clock = 0;
  uint64_t sites = 0;
  uint64_t definitions = 0;
  uint64_t writing = 0;
};

std::string milliseconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string seconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e9);
  return text;
}

void log_figures(const trace_state* s, const rank_figures& mine,
                 const std::vector<rank_figures>& ranks, const finalize_times& took,
                 const written_parts& written) {
  const int rank = s->rank;
  if (!written.all) {
    // One line for the job, never a claim of success: what is on disk is incomplete.
    if (rank == 0)
      s->host->log(s->self, ("no trace written: " + s->dir + "/traces.otf2: " + written.error +
                             " (writing failed on " + std::to_string(written.failed) + " of " +
                             std::to_string(s->world_size) + " ranks)")
                                .c_str());
    return;
  }
  if (s->unbalanced_ends > 0)
    s->host->log(s->self,
                 ("rank " + std::to_string(rank) + ": " + std::to_string(s->unbalanced_ends) +
                  " region ends without a begin were ignored")
                     .c_str());
  if (mine.dropped > 0) {
    // Stop keeps the beginning, ring the end: the time (from MPI_Init) where the trace's events
    // of this rank end or begin.
    const bool ring = s->opt.policy == limit_policy::ring;
    const uint64_t init = s->clock.correct(s->init_mono);
    const uint64_t edge = mine.events == 0 ? init : ring ? mine.first : mine.last;
    const std::string line =
        "rank " + std::to_string(rank) + " dropped " + std::to_string(mine.dropped) +
        " events at limit=" + std::to_string(s->opt.limit_bytes) + " bytes (policy " +
        (ring ? "ring" : "stop") + "): the events " + (ring ? "before " : "after ") +
        seconds(edge > init ? edge - init : 0) + " s are missing";
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
    line += "; finalize " +
            milliseconds(took.clock + took.sites + took.definitions + took.writing) +
            " ms (clock offsets " + milliseconds(took.clock) + ", call sites " +
            milliseconds(took.sites) + ", definitions " + milliseconds(took.definitions) +
            ", writing " + milliseconds(took.writing) + ")";
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
  finalize_times took;
  s->clock.t2 = s->host->now_ns();
  s->clock.o2 = measure_offset(s, s->stddev_final);
  const int64_t measured_init = s->clock.o1;
  const int64_t measured_final = s->clock.o2;
  s->clock.keep_plausible_drift(s->stddev_init, s->stddev_final);
  const int rank = s->rank;
  const int size = s->world_size;
  uint64_t t = s->host->now_ns();
  took.clock = t - s->clock.t2;

  // Definitions: unified up the tree, each rank's map composed on the way down.
  const local_index li = collect_local(*s->buffer, context_of(s));
  took.sites = s->host->now_ns() - t;
  t += took.sites;
  global_defs g;
  const rank_map map = unify_over_tree(s, li.defs, g);
  took.definitions = s->host->now_ns() - t;
  t += took.definitions;
  const bool mapped = map.mpi_region.size() == li.defs.mpi_regions.size() &&
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
  mine.offset_init = measured_init;
  mine.offset_final = measured_final;
  std::vector<rank_figures> ranks(static_cast<size_t>(rank == 0 ? size : 0));
  MPI_Gather(&mine, 6, MPI_UINT64_T, ranks.data(), 6, MPI_UINT64_T, 0, s->world);
  auto counted = gather_counted_calls(s);
  if (rank == 0) {
    archive_definitions d = describe_job(
        g, ranks, {s->clock.correct(s->init_mono), s->init_mono, s->init_real}, s->opt.policy);
    for (size_t r = 0; r < counted.size() && r < d.ranks.size(); ++r)
      d.ranks[r].counted_calls = std::move(counted[r]);
    archive.write_global_definitions(d);
  }
  archive.close();
  took.writing = s->host->now_ns() - t;
  const written_parts written = gather_written(s, archive.error());
  log_figures(s, mine, ranks, took, written);
  if (s->opt.analyze && written.all)
    analyze_at_finalize(s, mine.events);
}

} // namespace strata::trace
