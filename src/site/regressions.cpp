#include "site/regressions.hpp"

#include "profiler/record/record.hpp"
#include "site/programs.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

namespace strata::site {
namespace {

double median_of(std::vector<double> v) {
  const size_t n = v.size();
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), middle, v.end());
  if (n % 2 == 1)
    return *middle;
  return 0.5 * (*std::max_element(v.begin(), middle) + *middle);
}

// Student's t quantile 1 - alpha with `dof` degrees of freedom. The few (alpha, dof) pairs a
// scorer meets are computed once each: Boost.Math inverts the incomplete beta function for
// every quantile, which took most of the time of scoring a job.
double t_quantile(double alpha, double dof) {
  thread_local std::map<std::pair<double, double>, double> known;
  const auto [it, added] = known.try_emplace({alpha, dof}, 0.0);
  if (added)
    it->second = boost::math::quantile(boost::math::students_t(dof), 1 - alpha);
  return it->second;
}

// Runs kept per program and size: the window and room for jobs that arrive out of order.
constexpr size_t kept_runs = 40;
// Programs and sizes kept at once; past this the scorer starts again from the store.
constexpr size_t kept_histories = 50000;

} // namespace

noise_test test_against_history(double value, const std::vector<double>& history, double alpha,
                                const regression_options& o) {
  noise_test t;
  if (static_cast<int>(history.size()) < o.min_history)
    return t;
  const double median = median_of(history);
  std::vector<double> deviations;
  deviations.reserve(history.size());
  for (const double v : history)
    deviations.push_back(std::abs(v - median));
  const double floor = o.noise_floor * std::abs(median) + 1e-12;
  const double robust_sd = std::max(1.4826 * median_of(deviations), floor);
  std::vector<double> kept;
  for (const double v : history)
    if (std::abs(v - median) <= 3.5 * robust_sd)
      kept.push_back(v);
  if (static_cast<int>(kept.size()) < o.min_history)
    kept = history;
  const double n = static_cast<double>(kept.size());
  const double mean = std::accumulate(kept.begin(), kept.end(), 0.0) / n;
  double squares = 0;
  for (const double v : kept)
    squares += (v - mean) * (v - mean);
  t.tested = true;
  t.runs = static_cast<int>(kept.size());
  t.centre = mean;
  t.noise = std::max(std::sqrt(squares / (n - 1)), o.noise_floor * std::abs(mean) + 1e-12);
  t.threshold = mean + t_quantile(alpha, n - 1) * t.noise * std::sqrt(1 + 1 / n);
  t.flagged = value > t.threshold;
  t.score = (value - mean) / t.noise;
  return t;
}

namespace {

std::optional<regression_flag> score_against(const scored_run& run,
                                             std::vector<const scored_run*> newest,
                                             const regression_options& o) {
  if (static_cast<int>(newest.size()) < o.min_history)
    return std::nullopt;
  std::sort(newest.begin(), newest.end(),
            [](const scored_run* a, const scored_run* b) { return a->end_time > b->end_time; });
  if (static_cast<int>(newest.size()) > o.window)
    newest.resize(static_cast<size_t>(o.window));
  const auto values = [&](const auto& of) {
    std::vector<double> v;
    v.reserve(newest.size());
    for (const scored_run* h : newest)
      v.push_back(of(*h));
    return v;
  };
  const std::vector<double> walls = values([](const scored_run& h) { return h.wall; });
  const double wall_median = median_of(walls);
  struct tested {
    std::string metric;
    double value;
    noise_test test;
  };
  std::vector<tested> tests;
  tests.push_back({"wall", run.wall, test_against_history(run.wall, walls, o.alpha, o)});
  tests.push_back({"MPI", run.mpi,
                   test_against_history(run.mpi, values([](const scored_run& h) { return h.mpi; }),
                                        o.alpha, o)});
  // The routines of the job and of its history, by name (each run's map is in name order, so
  // one pass fills a table of routine x run); a routine a run did not call took 0 there.
  std::vector<const std::string*> names;
  const auto add_names = [&](const std::map<std::string, double>& routines) {
    for (const auto& entry : routines) {
      const auto at =
          std::lower_bound(names.begin(), names.end(), &entry.first,
                           [](const std::string* a, const std::string* b) { return *a < *b; });
      if (at == names.end() || **at != entry.first)
        names.insert(at, &entry.first);
    }
  };
  add_names(run.routines);
  for (const scored_run* h : newest)
    add_names(h->routines);
  const size_t runs = newest.size();
  const auto row_of = [&](const std::map<std::string, double>& routines, double* row,
                          size_t stride) {
    size_t r = 0;
    for (const auto& [name, t] : routines) {
      while (*names[r] != name)
        ++r;
      row[r * stride] = t;
    }
  };
  std::vector<double> table(names.size() * runs, 0.0), mine(names.size(), 0.0);
  for (size_t k = 0; k < runs; ++k)
    row_of(newest[k]->routines, table.data() + k, runs);
  row_of(run.routines, mine.data(), 1);
  std::vector<double> baselines(names.size());
  size_t material = 0;
  for (size_t r = 0; r < names.size(); ++r) {
    baselines[r] = median_of({table.begin() + static_cast<std::ptrdiff_t>(r * runs),
                              table.begin() + static_cast<std::ptrdiff_t>((r + 1) * runs)});
    material += baselines[r] >= o.routine_share * wall_median ? 1 : 0;
  }
  std::vector<moved_routine> moved;
  for (size_t r = 0; r < names.size(); ++r) {
    if (mine[r] > baselines[r])
      moved.push_back({*names[r], mine[r], baselines[r]});
    if (baselines[r] >= o.routine_share * wall_median)
      tests.push_back(
          {*names[r], mine[r],
           test_against_history(mine[r],
                                {table.begin() + static_cast<std::ptrdiff_t>(r * runs),
                                 table.begin() + static_cast<std::ptrdiff_t>((r + 1) * runs)},
                                o.alpha / static_cast<double>(material), o)});
  }
  const tested* worst = nullptr;
  for (const tested& t : tests)
    if (t.test.flagged && (worst == nullptr || t.test.score > worst->test.score))
      worst = &t;
  if (worst == nullptr)
    return std::nullopt;
  regression_flag flag;
  flag.metric = worst->metric;
  flag.value_s = worst->value;
  flag.baseline_s = worst->test.centre;
  flag.noise_s = worst->test.noise;
  flag.history_runs = static_cast<int>(newest.size());
  std::sort(moved.begin(), moved.end(), [](const moved_routine& a, const moved_routine& b) {
    return a.value_s - a.baseline_s > b.value_s - b.baseline_s;
  });
  if (moved.size() > 5)
    moved.resize(5);
  flag.moved = std::move(moved);
  return flag;
}

} // namespace

std::optional<regression_flag> score_run(const scored_run& run,
                                         const std::vector<scored_run>& history,
                                         const regression_options& o) {
  std::vector<const scored_run*> all;
  all.reserve(history.size());
  for (const scored_run& h : history)
    all.push_back(&h);
  return score_against(run, std::move(all), o);
}

scored_run scored_run_of(const stored_job& job) {
  scored_run r;
  const double ranks = static_cast<double>(std::max<std::int64_t>(job.job.ranks, 1));
  r.end_time = job.job.end_time;
  r.wall = job.job.wall_time_s;
  r.mpi = job.job.mpi_time_s / ranks;
  for (const routine_row& x : job.routines)
    r.routines[x.routine] = x.time_s / ranks;
  return r;
}

regression_scorer::regression_scorer(std::unique_ptr<store> reader, regression_options o)
    : reader_(std::move(reader)), options_(o) {}

regression_scorer::~regression_scorer() = default;

std::string regression_scorer::key_of(const stored_job& job) {
  const job_row& j = job.job;
  std::string key = j.owner;
  for (const std::string* part : {&j.executable, &job.arguments}) {
    key += '\0';
    key += *part;
  }
  return key + '\0' + std::to_string(j.ranks);
}

void regression_scorer::load(const std::vector<stored_job*>& jobs) {
  using program_key = std::tuple<std::string, std::string, std::string>;
  std::map<std::string, const stored_job*> missing;
  for (const stored_job* job : jobs)
    if (complete_run(job->job) && histories_.count(key_of(*job)) == 0)
      missing.emplace(key_of(*job), job);
  if (missing.empty())
    return;
  if (histories_.size() + missing.size() > kept_histories)
    histories_.clear();
  std::set<program_key> programs;
  for (const auto& [key, job] : missing)
    programs.insert({job->job.owner, job->job.executable, job->arguments});
  const auto ids = program_ids_of(*reader_, {programs.begin(), programs.end()});
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (const auto& [key, job] : missing) {
    histories_[key]; // known now, empty unless the store has runs
    const auto id = ids.find({job->job.owner, job->job.executable, job->arguments});
    if (id != ids.end())
      sizes.emplace_back(id->second, job->job.ranks);
  }
  if (sizes.empty())
    return;
  const auto runs = newest_runs(*reader_, sizes, static_cast<int>(kept_runs));
  std::vector<std::int64_t> job_ids;
  for (const auto& [size, list] : runs)
    for (const program_run& r : list)
      job_ids.push_back(r.job_id);
  const auto routines = routine_times(*reader_, job_ids);
  for (const auto& [key, job] : missing) {
    const auto id = ids.find({job->job.owner, job->job.executable, job->arguments});
    if (id == ids.end())
      continue;
    const auto list = runs.find({id->second, job->job.ranks});
    if (list == runs.end())
      continue;
    std::vector<scored_run>& h = histories_[key];
    for (const program_run& r : list->second) {
      scored_run s{r.end_time, r.wall_s, r.mpi_s, {}};
      if (const auto it = routines.find(r.job_id); it != routines.end())
        for (const auto& [name, t] : it->second)
          s.routines[name] = t / static_cast<double>(std::max<std::int64_t>(r.ranks, 1));
      h.push_back(std::move(s));
    }
  }
}

void regression_scorer::score(std::vector<stored_job*>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const stored_job* a, const stored_job* b) {
    return a->job.end_time < b->job.end_time;
  });
  load(jobs);
  for (stored_job* job : jobs) {
    if (!complete_run(job->job))
      continue;
    std::vector<scored_run>& h = histories_[key_of(*job)];
    scored_run run = scored_run_of(*job);
    // The same run again (a record spooled twice, or already stored): not new, no history.
    if (std::any_of(h.begin(), h.end(), [&](const scored_run& e) {
          return e.end_time == run.end_time && e.wall == run.wall && e.mpi == run.mpi;
        }))
      continue;
    std::vector<const scored_run*> earlier;
    for (const scored_run& e : h)
      if (e.end_time < run.end_time)
        earlier.push_back(&e);
    job->regression = score_against(run, std::move(earlier), options_);
    flagged_ += job->regression.has_value() ? 1 : 0;
    h.push_back(std::move(run));
    // The newest runs only: drop the oldest beyond what the window and late arrivals need.
    if (h.size() > kept_runs) {
      const auto oldest =
          std::min_element(h.begin(), h.end(), [](const scored_run& a, const scored_run& b) {
            return a.end_time < b.end_time;
          });
      h.erase(oldest);
    }
  }
}

} // namespace strata::site

namespace strata::site {

std::vector<moved_site> moved_call_sites(store& db, const regression_row& g, int history) {
  using site_key = std::tuple<std::string, std::string, std::uint64_t>;
  // Each call site's time per rank in a stored job, or nothing when it recorded none.
  const auto sites_of = [&](std::int64_t job_id) {
    std::map<site_key, double> out;
    const std::optional<stored_job> j = db.job(job_id);
    if (!j)
      return out;
    const record::parse_result parsed = record::parse_record(j->record_json);
    if (!parsed.ok())
      return out;
    const double ranks = static_cast<double>(std::max<std::int64_t>(j->job.ranks, 1));
    for (const record::callsite& c : parsed.record->callsites)
      out[{c.function, c.file, c.line}] += c.time_s / ranks;
    return out;
  };
  const std::map<site_key, double> mine = sites_of(g.job_id);
  if (mine.empty())
    return {};
  std::map<site_key, std::vector<double>> earlier;
  int with_sites = 0;
  for (const program_run& r : history_of(db, g.prog.id, g.ranks, g.end_time, 4 * history)) {
    if (with_sites == history)
      break;
    const std::map<site_key, double> theirs = sites_of(r.job_id);
    if (theirs.empty())
      continue;
    ++with_sites;
    for (const auto& [key, t] : mine)
      earlier[key].push_back(theirs.count(key) != 0 ? theirs.at(key) : 0.0);
  }
  std::vector<moved_site> out;
  for (const auto& [key, t] : mine) {
    const double baseline = earlier.count(key) != 0 ? median_of(earlier.at(key)) : 0.0;
    if (with_sites > 0 && t > baseline)
      out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), t, baseline});
  }
  std::sort(out.begin(), out.end(), [](const moved_site& a, const moved_site& b) {
    return a.value_s - a.baseline_s > b.value_s - b.baseline_s;
  });
  if (out.size() > 5)
    out.resize(5);
  return out;
}

} // namespace strata::site
