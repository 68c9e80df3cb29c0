#include "site/web/why.hpp"

#include "profiler/routine_classes.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace strata::web {

namespace {

constexpr const char* trace_how = "strata run --tools trace -- PROGRAM, then strata analyze "
                                  "strata-trace-JOB (its wait states)";
constexpr const char* overhead_how = "strata bench -o model.json (once per machine), then strata "
                                     "run --tools overhead:model=model.json -- PROGRAM";
constexpr double small_message = 1024; // bytes: below this, latency is the cost of a message

std::string percent_of(double part, double whole) {
  return fmt::format("{:.0f} %", whole > 0 ? 100 * part / whole : 0.0);
}

std::string file_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

bool counts(const record::routine& x) {
  return x.timed.value && !profiler::excluded_from_mpi_time(x.name);
}

} // namespace

std::vector<finding> findings_of(const record::job_record& r) {
  std::vector<finding> out;
  double mpi_s = 0;
  const record::routine* top = nullptr;
  for (const record::routine& x : r.routines)
    if (counts(x)) {
      mpi_s += x.time_s;
      if (top == nullptr || x.time_s > top->time_s)
        top = &x;
    }
  if (top == nullptr || mpi_s <= 0)
    return out;
  const double ranks = static_cast<double>(std::max<std::uint64_t>(r.job.ranks_reported, 1));

  // Where: the routine and the call site that take most.
  const record::callsite* site = nullptr;
  for (const record::callsite& c : r.callsites)
    if (site == nullptr || c.time_s > site->time_s)
      site = &c;
  std::string where = fmt::format("{} takes {} of the MPI time ({:.3g} s per rank)", top->name,
                                  percent_of(top->time_s, mpi_s), top->time_s / ranks);
  if (site != nullptr && site->time_s > 0)
    where += fmt::format("; the call site that takes most is {} at {}:{}{} ({} of the MPI time)",
                         site->function, file_of(site->file), site->line,
                         site->caller.empty() ? "" : " in " + site->caller,
                         percent_of(site->time_s, mpi_s));
  out.push_back({"where", where + ".",
                 "Look at that call first: what it waits for, how often it runs, how much it "
                 "carries. A trace shows each rank's calls there in time.",
                 "trace", trace_how});

  // Ranks waiting for each other in routines every rank called.
  const record::routine* waited_in = nullptr;
  double waited_s = 0, worst_s = 0;
  for (const record::routine& x : r.routines) {
    if (!counts(x) || x.per_rank.calls.min <= 0 || r.job.ranks_reported < 2)
      continue;
    const double w = std::max(0.0, x.time_s - x.per_rank.time_s.min * ranks);
    waited_s += w;
    if (w > worst_s) {
      worst_s = w;
      waited_in = &x;
    }
  }
  if (waited_in != nullptr && waited_s >= 0.1 * mpi_s)
    out.push_back(
        {"imbalance",
         fmt::format("Ranks wait for each other: {} of the MPI time is time beyond the least busy "
                     "rank's, most in {} (rank {} spent {:.3g} s in it, the least busy rank "
                     "{:.3g} s).",
                     percent_of(waited_s, mpi_s), waited_in->name,
                     waited_in->per_rank.time_s.max_rank, waited_in->per_rank.time_s.max,
                     waited_in->per_rank.time_s.min),
         "Balance the work between ranks (the decomposition of the data, or what the slowest "
         "rank does before the call). The trace's analyzer names the late ranks and the calls "
         "they are late to.",
         "trace", trace_how});

  // Time over the machine model (the overhead module's call sites), or how to know it.
  double over_s = 0;
  const record::callsite* over_at = nullptr;
  for (const record::callsite& c : r.callsites) {
    over_s += c.wasted_s;
    if (c.wasted_s > 0 && (over_at == nullptr || c.wasted_s > over_at->wasted_s))
      over_at = &c;
  }
  if (over_at != nullptr)
    out.push_back(
        {"model",
         fmt::format("{} of the MPI time is over what the machine model says the calls should "
                     "cost, most at {}:{} in {} ({:.3g} s over it).",
                     percent_of(over_s, mpi_s), file_of(over_at->file), over_at->line,
                     over_at->function, over_at->wasted_s),
         "The calls cost more than this machine's network should take for them: check where the "
         "ranks run (placement, shared nodes) and the MPI library's settings, and whether the "
         "calls wait for a late partner.",
         "overhead", overhead_how});
  else
    out.push_back({"model",
                   "The record has no time over the machine model: the overhead module did not "
                   "run, so what the calls should cost on this machine is not known.",
                   "Run the job once with the overhead module to see, call site by call site, "
                   "the time over what the network takes.",
                   "overhead", overhead_how});

  // Small or many messages (point to point and collectives with data).
  std::uint64_t messages = 0, small = 0;
  for (const record::routine& x : r.routines)
    for (const record::histogram_bin& b : x.size_histogram) {
      messages += b.calls;
      if (static_cast<double>(b.key) < small_message)
        small += b.calls;
    }
  if (messages > 0 && static_cast<double>(small) >= 0.5 * static_cast<double>(messages)) {
    const double per_rank_s =
        r.job.wall_time_s > 0 ? static_cast<double>(messages) / ranks / r.job.wall_time_s : 0;
    out.push_back(
        {"messages",
         fmt::format("{} of the {} messages carry less than 1 KiB ({:.3g} messages a second per "
                     "rank): each costs the network's latency, whatever its size.",
                     percent_of(static_cast<double>(small), static_cast<double>(messages)),
                     messages, per_rank_s),
         "Send fewer, larger messages: gather the small ones into one buffer, or use a "
         "collective (or a neighbourhood collective) where every rank sends at once.",
         "trace", trace_how});
  }

  // Waiting at collectives: their time spread across ranks.
  double collective_s = 0, collective_wait_s = 0;
  std::string names;
  for (const record::routine& x : r.routines) {
    if (!counts(x) || !profiler::is_collective_name(x.name))
      continue;
    collective_s += x.time_s;
    collective_wait_s += std::max(0.0, x.time_s - x.per_rank.time_s.min * ranks);
    if (x.time_s >= 0.1 * mpi_s)
      names += (names.empty() ? "" : ", ") + x.name;
  }
  if (collective_s >= 0.3 * mpi_s && collective_wait_s >= 0.3 * collective_s)
    out.push_back(
        {"collectives",
         fmt::format("Collectives take {} of the MPI time{}, and {} of their time is ranks "
                     "arriving later than the first: waiting, not the collective's own cost.",
                     percent_of(collective_s, mpi_s), names.empty() ? "" : " (" + names + ")",
                     percent_of(collective_wait_s, collective_s)),
         "Make the ranks arrive together (balance the work before the collective), and drop "
         "barriers that order nothing; a nonblocking collective can overlap the wait with work.",
         "trace", trace_how});
  return out;
}

} // namespace strata::web
