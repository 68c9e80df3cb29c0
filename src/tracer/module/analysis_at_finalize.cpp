// analyze=1: the archive just closed is analysed by the job's own ranks, over the tools' world,
// with the analyzer's MPI replay (analyzer/replay.hpp): each rank reads its own location back
// (from the page cache, as a rule), and rank 0 writes analysis.json and analysis.txt into the
// archive directory, the report `strata analyze` would print. The archive is complete before the
// analysis starts, so a job that dies during it keeps its trace. The time it adds to
// MPI_Finalize is bounded: estimated from the busiest rank's events beforehand, the analysis is
// skipped when the estimate exceeds analyze_limit; the time taken is logged.
#include "analyzer/render.hpp"
#include "analyzer/replay.hpp"
#include "tracer/module/state.hpp"

#include <cstdio>
#include <fstream>
#include <string>

namespace strata::trace {
namespace {

// A conservative rate for the estimate: the analyzer reads 4-13 M events per CPU second
// (docs/PERFORMANCE.md, Analyzer); a busy node gives it less.
constexpr double estimate_events_per_s = 2e6;

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  return static_cast<bool>(out);
}

} // namespace

void analyze_at_finalize(trace_state* s, uint64_t events) {
  const uint64_t start = s->host->now_ns();
  uint64_t busiest = 0;
  MPI_Allreduce(&events, &busiest, 1, MPI_UINT64_T, MPI_MAX, s->world);
  const double estimate_s = static_cast<double>(busiest) / estimate_events_per_s;
  if (estimate_s > s->opt.analyze_limit_s) {
    if (s->rank == 0) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "analysis skipped: about %.0f s estimated for %llu events on the busiest rank, "
                    "over analyze_limit=%g s; run strata analyze on the archive",
                    estimate_s, static_cast<unsigned long long>(busiest), s->opt.analyze_limit_s);
      s->host->log(s->self, line);
    }
    return;
  }
  const analyze::replay_result r = analyze::replay_trace(s->dir, s->world);
  if (s->rank != 0)
    return;
  const double took_s = static_cast<double>(s->host->now_ns() - start) / 1e9;
  if (!r.ok) {
    s->host->log(s->self, ("analysis failed (the trace is kept): " + r.error).c_str());
    return;
  }
  const std::string json = s->dir + "/analysis.json";
  if (!write_file(json, analyze::render_json(r.rep)) ||
      !write_file(s->dir + "/analysis.txt", analyze::render_text(r.rep))) {
    s->host->log(s->self, ("cannot write the analysis into " + s->dir).c_str());
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "analysis in %s (and analysis.txt): %zu wait-state rows; %.3f s added to "
                "MPI_Finalize",
                json.c_str(), r.rep.wait_states.size(), took_s);
  s->host->log(s->self, line);
}

} // namespace strata::trace
