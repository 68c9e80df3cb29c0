#include "site/web/waste.hpp"

#include "profiler/record/record_fast.hpp"
#include "profiler/routine_classes.hpp"
#include "site/programs.hpp"
#include "site/store.hpp"
#include "site/web/views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace strata::web {

using nlohmann::json;

namespace {

std::string percent_of(double part, double whole) {
  return fmt::format("{:.0f}%", whole > 0 ? 100 * part / whole : 0.0);
}

// The rank that sent `to` the most bytes, from the record's matrix.
std::optional<std::uint64_t> heaviest_sender_to(const record::job_record& r, std::uint64_t to) {
  if (!r.communication)
    return std::nullopt;
  const record::message_pair* best = nullptr;
  for (const record::message_pair& p : r.communication->pairs)
    if (p.to == to && p.from != to && (best == nullptr || p.bytes > best->bytes))
      best = &p;
  if (best == nullptr)
    return std::nullopt;
  return best->from;
}

job_waste over_model(const record::job_record& r, double mpi_s) {
  job_waste w{0, mpi_s, "model", ""};
  const record::callsite* worst = nullptr;
  for (const record::callsite& c : r.callsites) {
    w.wasted_s += c.wasted_s;
    if (worst == nullptr || c.wasted_s > worst->wasted_s)
      worst = &c;
  }
  const std::string file = worst->file.substr(worst->file.rfind('/') + 1);
  w.why = fmt::format("{} of MPI time is over what the machine model says the calls cost, most "
                      "in {} at {}:{} ({:.3g} s over it).",
                      percent_of(w.wasted_s, mpi_s), worst->function, file, worst->line,
                      worst->wasted_s);
  return w;
}

job_waste waiting(const record::job_record& r, double mpi_s) {
  job_waste w{0, mpi_s, "imbalance", ""};
  const double ranks = static_cast<double>(r.job.ranks_reported);
  const record::routine* worst = nullptr;
  double worst_s = 0;
  for (const record::routine& x : r.routines) {
    // A routine some rank never called (a master's sends) is not waiting on the others.
    if (!x.timed.value || profiler::excluded_from_mpi_time(x.name) || x.per_rank.calls.min <= 0)
      continue;
    const double waited = std::max(0.0, x.time_s - x.per_rank.time_s.min * ranks);
    w.wasted_s += waited;
    if (waited > worst_s) {
      worst_s = waited;
      worst = &x;
    }
  }
  if (worst == nullptr) {
    w.basis = "none";
    w.why = r.job.ranks_reported < 2
                ? "One rank: no rank waited for another."
                : "No rank spent more time than another in any routine every rank called.";
    return w;
  }
  const auto slow = worst->per_rank.time_s.max_rank;
  w.why = fmt::format("{} of MPI time is ranks waiting in {}: rank {} spent {:.3g} s in it, the "
                      "least busy rank {:.3g} s",
                      percent_of(worst_s, mpi_s), worst->name, slow, worst->per_rank.time_s.max,
                      worst->per_rank.time_s.min);
  if (const auto from = heaviest_sender_to(r, slow))
    w.why += fmt::format("; rank {} receives most from rank {}", slow, *from);
  w.why += ".";
  return w;
}

} // namespace

job_waste waste_of(const record::job_record& r) {
  double mpi_s = 0;
  for (const record::routine& x : r.routines)
    if (!profiler::excluded_from_mpi_time(x.name))
      mpi_s += x.time_s;
  const bool modelled = std::any_of(r.callsites.begin(), r.callsites.end(),
                                    [](const record::callsite& c) { return c.wasted_s > 0; });
  return modelled ? over_model(r, mpi_s) : waiting(r, mpi_s);
}

bool waste_cache::find(std::int64_t job_id, entry& out) {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(job_id);
  if (it == entries_.end())
    return false;
  out = it->second;
  return true;
}

void waste_cache::put(std::int64_t job_id, entry e) {
  const std::lock_guard lock(mutex_);
  if (entries_.size() >= 500000)
    entries_.clear(); // a bound on the server's memory; recomputed on demand
  entries_[job_id] = std::move(e);
}

json waste_ranking(site::store& db, site::job_filter filter, waste_cache& cache, std::int64_t top,
                   std::int64_t max_looked_at) {
  struct looked_at {
    site::job_row job;
    waste_cache::entry e;
  };
  std::vector<looked_at> seen;
  std::vector<double> best; // the largest wastes so far, a min-heap of at most `top`
  // One query: a sort by MPI time reads and sorts every match, whatever the page.
  filter.order = site::job_order::mpi_time_desc;
  filter.limit = max_looked_at;
  filter.offset = 0;
  const std::vector<site::job_row> candidates = site::jobs(db, filter);
  bool complete = static_cast<std::int64_t>(candidates.size()) < max_looked_at;
  for (const site::job_row& j : candidates) {
    // No job from here on wastes more than its MPI time: below the top's least, stop.
    if (static_cast<std::int64_t>(best.size()) >= top && j.mpi_time_s <= best.front()) {
      complete = true;
      break;
    }
    waste_cache::entry e;
    if (!cache.find(j.job_id, e)) {
      const std::optional<site::stored_job> sj = db.job(j.job_id);
      if (!sj)
        continue;
      const record::parse_result parsed = record::parse_record_fast(sj->record_json);
      if (parsed.ok())
        e.waste = waste_of(*parsed.record);
      else
        e.waste = {0, j.mpi_time_s, "none", "The stored record does not parse."};
      if (const auto prog = site::program_of(db, *sj)) {
        e.program_id = prog->id;
        e.executable = prog->executable;
        e.program = prog->executable + (prog->arguments.empty() ? "" : " " + prog->arguments);
      }
      cache.put(j.job_id, e);
    }
    best.push_back(e.waste.wasted_s);
    std::push_heap(best.begin(), best.end(), std::greater<>());
    if (static_cast<std::int64_t>(best.size()) > top) {
      std::pop_heap(best.begin(), best.end(), std::greater<>());
      best.pop_back();
    }
    seen.push_back({j, std::move(e)});
  }
  std::sort(seen.begin(), seen.end(), [](const looked_at& a, const looked_at& b) {
    return a.e.waste.wasted_s > b.e.waste.wasted_s;
  });
  json jobs = json::array();
  struct sum {
    double wasted_s = 0, mpi_s = 0;
    std::int64_t jobs = 0;
    std::string owner, program, executable;
  };
  std::map<std::string, sum> users;
  std::map<std::int64_t, sum> programs;
  for (const looked_at& s : seen) {
    if (static_cast<std::int64_t>(jobs.size()) < top) {
      json j = job_json(s.job);
      j["wasted_s"] = s.e.waste.wasted_s;
      j["waste_basis"] = s.e.waste.basis;
      j["why"] = s.e.waste.why;
      j["program_id"] = s.e.program_id;
      jobs.push_back(std::move(j));
    }
    for (sum* g : {&users[s.job.owner], &programs[s.e.program_id]}) {
      g->wasted_s += s.e.waste.wasted_s;
      g->mpi_s += s.job.mpi_time_s;
      ++g->jobs;
      g->owner = s.job.owner;
      g->program = s.e.program;
      g->executable = s.e.executable;
    }
  }
  auto ranked = [](auto& groups, auto key) {
    std::vector<std::pair<typename std::decay_t<decltype(groups)>::key_type, sum>> v(groups.begin(),
                                                                                     groups.end());
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.second.wasted_s > b.second.wasted_s; });
    json out = json::array();
    for (const auto& [k, g] : v) {
      json x = {
          {"wasted_s", g.wasted_s}, {"mpi_time_s", g.mpi_s}, {"jobs", g.jobs}, {"owner", g.owner}};
      key(x, k, g);
      out.push_back(std::move(x));
      if (out.size() >= 100)
        break;
    }
    return out;
  };
  return {{"jobs", jobs},
          {"users", ranked(users, [](json&, const std::string&, const sum&) {})},
          {"programs", ranked(programs,
                              [](json& x, std::int64_t id, const sum& g) {
                                x["program_id"] = id;
                                x["program"] = g.program;
                                x["executable"] = g.executable;
                              })},
          {"looked_at", seen.size()},
          {"complete", complete}};
}

} // namespace strata::web
