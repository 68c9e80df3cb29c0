#include "site/regressions.hpp"

#include "profiler/record/record.hpp"
#include "site/programs.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <tuple>

namespace strata::site {
double median_in_place(std::span<double> v) {
  const size_t n = v.size();
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), middle, v.end());
  if (n % 2 == 1)
    return *middle;
  return 0.5 * (*std::max_element(v.begin(), middle) + *middle);
}

namespace {

double median_of(std::vector<double> v) {
  return median_in_place(v);
}

// Student's t quantile 1 - alpha with `dof` degrees of freedom. The few (alpha, dof) pairs a
// scorer meets are computed once each: Boost.Math inverts the incomplete beta function for
// every quantile, which took most of the time of scoring a job.
// In double, not promoted to long double (Boost.Math's default): its long double tables are
// set up when the program starts, and under valgrind, which computes long double in double
// precision, that setup overflowed and threw, ending every `strata` command before main.
double t_quantile(double alpha, double dof) {
  using in_double = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
  thread_local std::map<std::pair<double, double>, double> known;
  const auto [it, added] = known.try_emplace({alpha, dof}, 0.0);
  if (added)
    it->second = boost::math::quantile(boost::math::students_t_distribution<double, in_double>(dof),
                                       1 - alpha);
  return it->second;
}

} // namespace

noise_test test_against_history(double value, std::span<const double> history, double alpha,
                                const regression_options& o, std::vector<double>& work) {
  noise_test t;
  if (static_cast<int>(history.size()) < o.min_history)
    return t;
  work.assign(history.begin(), history.end());
  const double median = median_in_place(work);
  for (size_t k = 0; k < history.size(); ++k)
    work[k] = std::abs(history[k] - median);
  const double floor = o.noise_floor * std::abs(median) + 1e-12;
  const double robust_sd = std::max(1.4826 * median_in_place(work), floor);
  // The runs within 3.5 robust standard deviations, or all when fewer than min_history are;
  // summed in the history's order.
  const auto kept = [&, limit = 3.5 * robust_sd](double v) {
    return std::abs(v - median) <= limit;
  };
  const auto kept_count = std::count_if(history.begin(), history.end(), kept);
  const bool all = kept_count < o.min_history;
  const double n =
      static_cast<double>(all ? static_cast<std::ptrdiff_t>(history.size()) : kept_count);
  double sum = 0;
  for (const double v : history)
    if (all || kept(v))
      sum += v;
  const double mean = sum / n;
  double squares = 0;
  for (const double v : history)
    if (all || kept(v))
      squares += (v - mean) * (v - mean);
  t.tested = true;
  t.runs = static_cast<int>(n);
  t.centre = mean;
  t.noise = std::max(std::sqrt(squares / (n - 1)), o.noise_floor * std::abs(mean) + 1e-12);
  t.threshold = mean + t_quantile(alpha, n - 1) * t.noise * std::sqrt(1 + 1 / n);
  t.flagged = value > t.threshold;
  t.score = (value - mean) / t.noise;
  return t;
}

noise_test test_against_history(double value, const std::vector<double>& history, double alpha,
                                const regression_options& o) {
  std::vector<double> work;
  return test_against_history(value, std::span<const double>(history), alpha, o, work);
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
