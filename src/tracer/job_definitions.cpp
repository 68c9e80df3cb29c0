#include "tracer/job_definitions.hpp"

#include "tracer/routine_class.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace strata::trace {

archive_definitions describe_job(const global_defs& g, const std::vector<rank_figures>& ranks,
                                 const job_clock& clock, limit_policy policy) {
  archive_definitions d;
  uint64_t first = std::numeric_limits<uint64_t>::max();
  uint64_t last = 0;
  for (const rank_figures& r : ranks)
    if (r.events > 0) {
      first = std::min(first, r.first);
      last = std::max(last, r.last);
    }
  if (first > last)
    first = last = clock.init_corrected;
  d.first_time = first;
  d.length = last - first + 1;
  d.realtime_ns = clock.init_real - (clock.init_mono - first); // rank 0 defines the clock
  d.hosts = g.hosts;
  for (size_t r = 0; r < ranks.size(); ++r) {
    archive_definitions::rank rank;
    rank.host = r < g.rank_host.size() ? g.rank_host[r] : 0;
    rank.events = ranks[r].events;
    rank.dropped = ranks[r].dropped;
    rank.offset_init_ns = ranks[r].offset_init;
    rank.offset_final_ns = ranks[r].offset_final;
    if (rank.dropped > 0)
      (policy == limit_policy::stop ? rank.dropped_after : rank.dropped_before) =
          ranks[r].events > 0 ? (policy == limit_policy::stop ? ranks[r].last : ranks[r].first)
                              : clock.init_corrected;
    d.ranks.push_back(std::move(rank));
  }
  for (const std::string& name : g.mpi_regions)
    d.regions.push_back({name, role_of(classify(name)), OTF2_PARADIGM_MPI});
  for (const std::string& name : g.user_regions)
    d.regions.push_back({name, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER});
  for (const source_site& site : g.sites)
    d.sites.push_back({site.file, site.line});
  for (size_t c = 0; c < g.comms.size(); ++c) {
    bool world = g.comms[c].size() == ranks.size();
    for (size_t r = 0; world && r < g.comms[c].size(); ++r)
      world = g.comms[c][r] == static_cast<int>(r);
    d.comms.push_back({world && c == 0 ? "MPI_COMM_WORLD" : "comm " + std::to_string(c),
                       std::vector<uint64_t>(g.comms[c].begin(), g.comms[c].end())});
  }
  // One-sided operations name their targets as world ranks, on one window of every rank.
  const bool one_sided =
      std::any_of(g.mpi_regions.begin(), g.mpi_regions.end(), [](const std::string& name) {
        return classify(name).cls == fn_class::one_sided;
      });
  if (one_sided) {
    std::vector<uint64_t> world(ranks.size());
    for (size_t r = 0; r < world.size(); ++r)
      world[r] = r;
    d.one_sided_comm = static_cast<int64_t>(d.comms.size());
    d.comms.push_back({"one-sided targets (world ranks)", std::move(world)});
  }
  return d;
}

} // namespace strata::trace
