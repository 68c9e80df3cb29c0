// The ingest's regression scorer (site/regressions.hpp): score_run's test on histories kept
// flat. Per job it used to build a map of routine names, a key string twice, a sorted copy of
// its history and a vector per median; now routine names are interned to small ids once,
// each program's and size's runs stay in end time order (the window is their tail), and the
// medians and tests run on buffers reused from job to job.
#include "site/regressions.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace strata::site {
namespace {

// Runs kept per program and size: the window and room for jobs that arrive out of order.
constexpr size_t kept_runs = 40;
// Programs and sizes kept at once; past this the scorer starts again from the store.
constexpr size_t kept_histories = 50000;

struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// One run as the scorer keeps it: time per rank, whole job and per routine (routine id and
// time, by id).
struct kept_run {
  std::int64_t end_time = 0;
  double wall = 0, mpi = 0;
  std::vector<std::pair<std::uint32_t, double>> routines;
};

// Orders a run's routines by id, keeping the last time of a routine given twice (as a map by
// name would). Insertion sort: a run has a few dozen routines at most.
void settle(std::vector<std::pair<std::uint32_t, double>>& routines) {
  for (size_t k = 1; k < routines.size(); ++k) {
    const auto entry = routines[k];
    size_t at = k;
    for (; at > 0 && routines[at - 1].first > entry.first; --at)
      routines[at] = routines[at - 1];
    routines[at] = entry;
  }
  size_t out = 0;
  for (size_t k = 0; k < routines.size(); ++k)
    if (k + 1 == routines.size() || routines[k + 1].first != routines[k].first)
      routines[out++] = routines[k];
  routines.resize(out);
}

bool earlier_end(const kept_run& a, const kept_run& b) {
  return a.end_time < b.end_time;
}

} // namespace

struct regression_scorer::state {
  std::unique_ptr<store> reader;
  regression_options options;
  // By program and size (owner, executable, arguments and ranks, NUL-separated): the newest
  // runs, oldest first.
  std::unordered_map<std::string, std::vector<kept_run>, string_hash, std::equal_to<>> histories;
  std::int64_t flagged = 0;
  // The programs looked up so far: their id where the store held them before the scorer's
  // first look (the largest id then is `programs_before`, -1 until read), else nothing.
  using program_key = std::tuple<std::string, std::string, std::string>;
  std::map<program_key, std::optional<std::int64_t>> programs;
  std::int64_t programs_before = -1;

  // Routine names interned: id by name, name by id, and each id's place in name order (the
  // order score_run tests routines in, which decides between equal scores).
  std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> ids;
  std::vector<std::string> names;
  std::vector<std::uint32_t> name_rank;

  // Buffers kept from job to job.
  std::vector<std::string> keys; // of the batch's jobs
  std::vector<const kept_run*> newest;
  std::vector<double> values, work, table, mine, baselines;
  std::vector<std::int32_t> row_of; // by routine id: its row in `table`, -1 when none
  std::vector<std::uint32_t> rows;  // the routine id of each row, in name order

  std::uint32_t id_of(std::string_view name) {
    if (const auto it = ids.find(name); it != ids.end())
      return it->second;
    const auto id = static_cast<std::uint32_t>(names.size());
    ids.emplace(std::string(name), id);
    names.emplace_back(name);
    row_of.push_back(-1);
    std::vector<std::uint32_t> order(names.size());
    for (std::uint32_t k = 0; k < order.size(); ++k)
      order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return names[a] < names[b]; });
    name_rank.resize(names.size());
    for (std::uint32_t k = 0; k < order.size(); ++k)
      name_rank[order[k]] = k;
    return id;
  }

  static void key_of(const stored_job& job, std::string& key) {
    const job_row& j = job.job;
    key.assign(j.owner);
    key += '\0';
    key += j.executable;
    key += '\0';
    key += job.arguments;
    key += '\0';
    char digits[24];
    const auto end = std::to_chars(std::begin(digits), std::end(digits), j.ranks).ptr;
    key.append(digits, end);
  }

  // As scored_run_of.
  kept_run run_of(const stored_job& job) {
    const double ranks = static_cast<double>(std::max<std::int64_t>(job.job.ranks, 1));
    kept_run r{job.job.end_time, job.job.wall_time_s, job.job.mpi_time_s / ranks, {}};
    r.routines.reserve(job.routines.size());
    for (const routine_row& x : job.routines)
      r.routines.emplace_back(id_of(x.routine), x.time_s / ranks);
    settle(r.routines);
    return r;
  }

  void load(const std::vector<stored_job*>& jobs);
  std::optional<regression_flag> score_against(const kept_run& run);
};

// The histories of the batch's programs and sizes not kept yet, read in a few statements.
// Only programs the store held when the scorer first looked can have stored runs it has not
// seen: every run of a program created since is one of the jobs it scored (kept already), so
// those sizes start empty without a statement (on a fresh store, no statement at all).
void regression_scorer::state::load(const std::vector<stored_job*>& jobs) {
  std::map<std::string_view, const stored_job*> missing; // by key (views of `keys`)
  const auto find_missing = [&] {
    for (size_t k = 0; k < jobs.size(); ++k)
      if (complete_run(jobs[k]->job) && !histories.contains(keys[k]))
        missing.emplace(keys[k], jobs[k]);
  };
  find_missing();
  if (missing.empty())
    return;
  if (histories.size() + missing.size() > kept_histories) {
    histories.clear();
    // This ingest's runs went with them: from now on every program's runs come from the store
    // (those committed by then).
    programs.clear();
    programs_before = std::numeric_limits<std::int64_t>::max();
    find_missing();
  }
  if (programs_before < 0)
    reader->query("SELECT COALESCE(MAX(program_id), 0) FROM programs", {},
                  [&](const store::row& r) { programs_before = r.i64(0); });
  std::set<program_key> unknown;
  for (const auto& [key, job] : missing)
    if (program_key p{job->job.owner, job->job.executable, job->arguments}; !programs.contains(p))
      unknown.insert(std::move(p));
  if (!unknown.empty()) {
    const auto found = program_ids_of(*reader, {unknown.begin(), unknown.end()});
    for (const program_key& p : unknown) {
      const auto id = found.find(p);
      programs.emplace(p, id != found.end() && id->second <= programs_before
                              ? std::optional<std::int64_t>(id->second)
                              : std::nullopt);
    }
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  std::vector<std::pair<std::vector<kept_run>*, std::pair<std::int64_t, std::int64_t>>> to_fill;
  for (const auto& [key, job] : missing) {
    // Known from now on, empty unless the store has runs.
    std::vector<kept_run>& h = histories.emplace(key, std::vector<kept_run>{}).first->second;
    const std::optional<std::int64_t>& id =
        programs.find({job->job.owner, job->job.executable, job->arguments})->second;
    if (id) {
      sizes.emplace_back(*id, job->job.ranks);
      to_fill.emplace_back(&h, sizes.back());
    }
  }
  if (sizes.empty())
    return;
  const auto runs = newest_runs(*reader, sizes, static_cast<int>(kept_runs));
  std::vector<std::int64_t> job_ids;
  for (const auto& [size, list] : runs)
    for (const program_run& r : list)
      job_ids.push_back(r.job_id);
  const auto routines = routine_times(*reader, job_ids);
  for (const auto& [history, size] : to_fill) {
    const auto list = runs.find(size);
    if (list == runs.end())
      continue;
    std::vector<kept_run>& h = *history;
    for (const program_run& r : list->second) {
      kept_run s{r.end_time, r.wall_s, r.mpi_s, {}};
      const double ranks = static_cast<double>(std::max<std::int64_t>(r.ranks, 1));
      if (const auto it = routines.find(r.job_id); it != routines.end())
        for (const auto& [name, t] : it->second)
          s.routines.emplace_back(id_of(name), t / ranks);
      settle(s.routines);
      h.push_back(std::move(s));
    }
    std::stable_sort(h.begin(), h.end(), earlier_end);
  }
}

// score_run's test of `run` against the runs in `newest` (newest first, at most the window).
std::optional<regression_flag> regression_scorer::state::score_against(const kept_run& run) {
  const regression_options& o = options;
  const size_t runs = newest.size();
  if (static_cast<int>(runs) < o.min_history)
    return std::nullopt;
  // The flagged test with the highest score: wall (-2), MPI (-1) or a routine's row; the
  // first of equal scores, in score_run's order.
  int worst = 0;
  double worst_value = 0;
  noise_test worst_test;
  const auto consider = [&](int which, double value, const noise_test& t) {
    if (t.flagged && (!worst_test.flagged || t.score > worst_test.score)) {
      worst = which;
      worst_value = value;
      worst_test = t;
    }
  };
  values.resize(runs);
  for (size_t k = 0; k < runs; ++k)
    values[k] = newest[k]->wall;
  work.assign(values.begin(), values.end());
  const double wall_median = median_in_place(work);
  consider(-2, run.wall, test_against_history(run.wall, values, o.alpha, o, work));
  for (size_t k = 0; k < runs; ++k)
    values[k] = newest[k]->mpi;
  consider(-1, run.mpi, test_against_history(run.mpi, values, o.alpha, o, work));

  // The routines of the job and of its history in a table of routine x run, rows in name
  // order; a routine a run did not call took 0 there.
  rows.clear();
  const auto add_rows = [&](const kept_run& r) {
    for (const auto& [id, t] : r.routines)
      if (row_of[id] < 0) {
        row_of[id] = 0;
        rows.push_back(id);
      }
  };
  add_rows(run);
  for (const kept_run* h : newest)
    add_rows(*h);
  std::sort(rows.begin(), rows.end(),
            [&](std::uint32_t a, std::uint32_t b) { return name_rank[a] < name_rank[b]; });
  for (size_t r = 0; r < rows.size(); ++r)
    row_of[rows[r]] = static_cast<std::int32_t>(r);
  table.assign(rows.size() * runs, 0.0);
  mine.assign(rows.size(), 0.0);
  for (size_t k = 0; k < runs; ++k)
    for (const auto& [id, t] : newest[k]->routines)
      table[static_cast<size_t>(row_of[id]) * runs + k] = t;
  for (const auto& [id, t] : run.routines)
    mine[static_cast<size_t>(row_of[id])] = t;
  for (const std::uint32_t id : rows)
    row_of[id] = -1;
  const auto row = [&](size_t r) { return std::span<const double>(table).subspan(r * runs, runs); };

  baselines.resize(rows.size());
  size_t material = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto history = row(r);
    work.assign(history.begin(), history.end());
    baselines[r] = median_in_place(work);
    material += baselines[r] >= o.routine_share * wall_median ? 1 : 0;
  }
  for (size_t r = 0; r < rows.size(); ++r)
    if (baselines[r] >= o.routine_share * wall_median)
      consider(
          static_cast<int>(r), mine[r],
          test_against_history(mine[r], row(r), o.alpha / static_cast<double>(material), o, work));
  if (!worst_test.flagged)
    return std::nullopt;

  regression_flag flag;
  flag.metric = worst == -2   ? "wall"
                : worst == -1 ? "MPI"
                              : names[rows[static_cast<size_t>(worst)]];
  flag.value_s = worst_value;
  flag.baseline_s = worst_test.centre;
  flag.noise_s = worst_test.noise;
  flag.history_runs = static_cast<int>(runs);
  for (size_t r = 0; r < rows.size(); ++r)
    if (mine[r] > baselines[r])
      flag.moved.push_back({names[rows[r]], mine[r], baselines[r]});
  std::sort(flag.moved.begin(), flag.moved.end(),
            [](const moved_routine& a, const moved_routine& b) {
              return a.value_s - a.baseline_s > b.value_s - b.baseline_s;
            });
  if (flag.moved.size() > 5)
    flag.moved.resize(5);
  return flag;
}

regression_scorer::regression_scorer(std::unique_ptr<store> reader, regression_options o)
    : state_(std::make_unique<state>()) {
  state_->reader = std::move(reader);
  state_->options = o;
}

regression_scorer::~regression_scorer() = default;

std::int64_t regression_scorer::flagged() const {
  return state_->flagged;
}

void regression_scorer::score(std::vector<stored_job*>& jobs) {
  state& s = *state_;
  std::stable_sort(jobs.begin(), jobs.end(), [](const stored_job* a, const stored_job* b) {
    return a->job.end_time < b->job.end_time;
  });
  s.keys.resize(jobs.size());
  for (size_t k = 0; k < jobs.size(); ++k)
    if (complete_run(jobs[k]->job))
      state::key_of(*jobs[k], s.keys[k]);
  s.load(jobs);
  for (size_t k = 0; k < jobs.size(); ++k) {
    stored_job& job = *jobs[k];
    if (!complete_run(job.job))
      continue;
    std::vector<kept_run>& h = s.histories.find(s.keys[k])->second;
    kept_run run = s.run_of(job);
    // The same run again (a record spooled twice, or already stored): not new, no history.
    if (std::any_of(h.begin(), h.end(), [&](const kept_run& e) {
          return e.end_time == run.end_time && e.wall == run.wall && e.mpi == run.mpi;
        }))
      continue;
    // The earlier runs are those before the first that ended at the same time or later; the
    // window is their newest, newest first.
    const auto later = std::lower_bound(h.begin(), h.end(), run, earlier_end);
    const auto earlier = static_cast<size_t>(later - h.begin());
    s.newest.clear();
    for (size_t e = earlier; e > 0 && s.newest.size() < static_cast<size_t>(s.options.window); --e)
      s.newest.push_back(&h[e - 1]);
    job.regression = s.score_against(run);
    s.flagged += job.regression.has_value() ? 1 : 0;
    h.insert(std::upper_bound(h.begin(), h.end(), run, earlier_end), std::move(run));
    // The newest runs only: drop the oldest beyond what the window and late arrivals need.
    if (h.size() > kept_runs)
      h.erase(h.begin());
  }
}

} // namespace strata::site
