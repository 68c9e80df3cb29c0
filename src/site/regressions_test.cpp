#include "site/regressions.hpp"

#include "common/address_sanitizer.hpp"
#include "site/store_test_fixture.hpp"
#include "site/test_noise.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace strata::site {
namespace {

using store_testing::noise_source;
using store_testing::StoreBackend;

// A run of a program whose time per rank is 10 s of wall, 3 s of MPI in four routines, each
// figure off by a relative normal error of `noise`; `slower` multiplies the whole job, and
// `allreduce_slower` the one routine that takes a fifth of the wall time.
scored_run run_of(std::int64_t t, double noise, noise_source& rng, double slower = 1,
                  double allreduce_slower = 1) {
  scored_run r;
  r.end_time = t;
  const auto x = [&](double v) { return v * slower * (1 + noise * rng.normal()); };
  r.routines["MPI_Allreduce"] = x(2.0) * allreduce_slower;
  r.routines["MPI_Waitall"] = x(0.8);
  r.routines["MPI_Isend"] = x(0.15);
  r.routines["MPI_Wtime"] = x(0.05);
  r.mpi = 0;
  for (const auto& [name, v] : r.routines)
    r.mpi += v;
  r.wall = x(7.0) + r.mpi;
  return r;
}

std::vector<scored_run> history_of_runs(int n, double noise, noise_source& rng) {
  std::vector<scored_run> h;
  for (int k = 0; k < n; ++k)
    h.push_back(run_of(k, noise, rng));
  return h;
}

TEST(Regressions, PredictionIntervalFromRobustEstimates) {
  const regression_options o;
  EXPECT_FALSE(test_against_history(100, {1, 1, 1, 1}, 0.01, o).tested) << "4 runs are too few";
  // An outlier in the history neither moves the centre nor widens the interval.
  const noise_test t = test_against_history(1.2, {1.0, 1.01, 0.99, 1.02, 0.98, 9.0}, 0.01, o);
  ASSERT_TRUE(t.tested);
  EXPECT_EQ(t.runs, 5);
  EXPECT_NEAR(t.centre, 1.0, 1e-12);
  EXPECT_TRUE(t.flagged);
  EXPECT_FALSE(test_against_history(1.03, {1.0, 1.01, 0.99, 1.02, 0.98}, 0.01, o).flagged);
  // Identical times: the floor (0.5 % of the mean) keeps a rounding from being a regression.
  EXPECT_FALSE(test_against_history(1.001, {1, 1, 1, 1, 1}, 0.01, o).flagged);
  EXPECT_TRUE(test_against_history(1.1, {1, 1, 1, 1, 1}, 0.01, o).flagged);
  // Faster is never a regression.
  EXPECT_FALSE(test_against_history(0.5, {1.0, 1.01, 0.99, 1.02, 0.98}, 0.01, o).flagged);
}

TEST(Regressions, FlagNamesTheMetricAndTheRoutinesThatMovedMost) {
  noise_source rng(3);
  const std::vector<scored_run> h = history_of_runs(10, 0.01, rng);
  const scored_run slow = run_of(100, 0.0, rng, 1, 2.0); // MPI_Allreduce twice as long
  const std::optional<regression_flag> f = score_run(slow, h);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->history_runs, 10);
  ASSERT_FALSE(f->moved.empty());
  EXPECT_EQ(f->moved[0].routine, "MPI_Allreduce");
  EXPECT_NEAR(f->moved[0].value_s, 4.0, 1e-9);
  EXPECT_NEAR(f->moved[0].baseline_s, 2.0, 0.1);
  EXPECT_FALSE(score_run(run_of(101, 0.01, rng), h)) << "a run like the others";
  EXPECT_FALSE(score_run(slow, history_of_runs(4, 0.01, rng))) << "too short a history";
}

// False alarms on noise-only histories and detection of a job 20 % slower, and of one routine
// taking a fifth of the wall time 50 % longer, at noise levels around those of real runs here
// (docs/site-models.md, "Regressions": short runs on this shared machine vary by 30 % and more),
// with 5 and 20 earlier runs. The tables are printed;
// the goals (false alarms under 5 %, detection of +20 % over 95 %) are asserted where the
// noise allows them, over 2,000 jobs a row. Under ASan, where the same scoring takes 30 times as
// long, 400 jobs a row check its memory and arithmetic, not the rates (over 400, a row whose
// false alarms are 3.4 % of 2,000 read 4.8 %).
TEST(Regressions, FalseAlarmAndDetectionRates) {
  constexpr int jobs = common::built_with_address_sanitizer ? 400 : 2000;
  const double noises[] = {0.01, 0.02, 0.05, 0.10, 0.30};
  const int histories[] = {5, 20};
  std::printf("%d jobs each: noise, history runs: false alarms %%, +20 %% job detected %%, "
              "+50 %% MPI_Allreduce detected %%\n",
              jobs);
  for (const double noise : noises)
    for (const int n : histories) {
      noise_source rng(static_cast<std::uint64_t>(noise * 1000) * 100 + static_cast<unsigned>(n));
      int false_alarms = 0, detected = 0, routine_detected = 0;
      for (int k = 0; k < jobs; ++k) {
        const std::vector<scored_run> h = history_of_runs(n, noise, rng);
        false_alarms += score_run(run_of(1000, noise, rng), h).has_value();
        detected += score_run(run_of(1000, noise, rng, 1.2), h).has_value();
        routine_detected += score_run(run_of(1000, noise, rng, 1, 1.5), h).has_value();
      }
      const double fa = 100.0 * false_alarms / jobs, det = 100.0 * detected / jobs,
                   rdet = 100.0 * routine_detected / jobs;
      std::printf("noise %4.0f %%, %2d runs: %5.1f %5.1f %5.1f\n", noise * 100, n, fa, det, rdet);
      if (common::built_with_address_sanitizer)
        continue;
      EXPECT_LT(fa, 5.0) << "noise " << noise << ", " << n << " runs";
      if ((noise <= 0.05 && n >= 20) || noise <= 0.02) {
        EXPECT_GT(det, 95.0) << "noise " << noise << ", " << n << " runs";
      }
    }
}

// The ingest's scorer flags exactly the jobs score_run flags against all the earlier runs of
// their program and size, with the same metric, figures and moved routines: 400 jobs of four
// programs at two sizes (50 runs each, more than the scorer keeps), the first 160 stored
// before (the scorer reads them back), the rest scored in batches of 60 shuffled within the
// batch and then stored, as the ingest does; 5 % noise, every 23rd job 20 % slower, every 31st
// with one routine 50 % longer, every 17th partial (neither scored nor history). Two cases of
// the scorer's reading only what it has not seen: a stored program's size that the scored
// jobs reach only in a late batch (its runs are read then, and its slowed jobs flagged), and a
// program that the scored jobs create (its runs are all the scorer's own).
TEST_F(StoreBackend, ScorerFlagsWhatTheReferenceFlags) {
  synth_options so;
  so.seed = 5;
  so.users = 1;
  so.from = 1'700'000'000;
  so.to = so.from + 86400;
  noise_source rng(17);
  std::vector<stored_job> jobs;
  std::vector<routine_row> routines; // the first job's, in every job
  for (int i = 0; i < 400; ++i) {
    const record::job_record r = synth_record(so, i);
    stored_job j =
        make_stored_job(r, record::to_json(r), static_cast<std::int64_t>(r.job.uid), r.job.user);
    j.job.executable = "/apps/solver" + std::to_string(i % 4);
    j.arguments = "--n=1";
    j.job.ranks = (i / 4) % 2 == 0 ? 8 : 16;
    const bool late_size = i % 12 == 2 && (i < 160 || i >= 280);
    if (late_size)
      j.job.ranks = 32;
    if (i >= 160 && i % 10 == 9) {
      j.job.executable = "/apps/new";
      j.job.ranks = i < 300 ? 8 : 16;
    }
    j.job.ranks_reported = j.job.ranks;
    j.job.status = "finalized";
    j.job.partial = i % 17 == 5;
    j.job.end_time = so.from + 100 * i;
    const double slower = i % 23 == 0 || (late_size && i >= 280 && i % 24 == 2) ? 1.2 : 1.0;
    j.job.wall_time_s = 10.0 * slower * (1 + 0.05 * rng.normal());
    j.job.mpi_time_s = 4.0 * static_cast<double>(j.job.ranks) * slower * (1 + 0.05 * rng.normal());
    if (i == 0)
      routines = j.routines;
    j.routines = routines;
    for (size_t k = 0; k < j.routines.size(); ++k)
      j.routines[k].time_s *=
          slower * (1 + 0.05 * rng.normal()) * (i % 31 == 0 && k == 0 ? 1.5 : 1);
    jobs.push_back(std::move(j));
  }
  const auto db = store::open(url_);
  db->insert({jobs.begin(), jobs.begin() + 160});
  regression_scorer scorer(store::open(url_));
  std::mt19937_64 shuffle(3);
  for (size_t from = 160; from < jobs.size(); from += 60) {
    std::vector<stored_job*> batch;
    for (size_t k = from; k < std::min(jobs.size(), from + 60); ++k)
      batch.push_back(&jobs[k]);
    std::shuffle(batch.begin(), batch.end(), shuffle);
    scorer.score(batch);
    db->insert({jobs.begin() + static_cast<std::ptrdiff_t>(from),
                jobs.begin() + static_cast<std::ptrdiff_t>(std::min(jobs.size(), from + 60))});
  }
  int flagged = 0, scored = 0, late_flagged = 0;
  for (size_t k = 160; k < jobs.size(); ++k) {
    const stored_job& job = jobs[k];
    if (!complete_run(job.job)) {
      EXPECT_FALSE(job.regression) << "partial job " << k;
      continue;
    }
    std::vector<scored_run> history;
    for (size_t e = 0; e < k; ++e)
      if (complete_run(jobs[e].job) && jobs[e].job.executable == job.job.executable &&
          jobs[e].job.ranks == job.job.ranks)
        history.push_back(scored_run_of(jobs[e]));
    const std::optional<regression_flag> expected = score_run(scored_run_of(job), history);
    ++scored;
    flagged += expected ? 1 : 0;
    late_flagged += expected && job.job.ranks == 32 && k % 24 == 2 ? 1 : 0;
    ASSERT_EQ(job.regression.has_value(), expected.has_value()) << "job " << k;
    if (!expected)
      continue;
    EXPECT_EQ(job.regression->metric, expected->metric) << "job " << k;
    EXPECT_DOUBLE_EQ(job.regression->value_s, expected->value_s) << "job " << k;
    EXPECT_DOUBLE_EQ(job.regression->baseline_s, expected->baseline_s) << "job " << k;
    EXPECT_DOUBLE_EQ(job.regression->noise_s, expected->noise_s) << "job " << k;
    EXPECT_EQ(job.regression->history_runs, expected->history_runs) << "job " << k;
    ASSERT_EQ(job.regression->moved.size(), expected->moved.size()) << "job " << k;
    for (size_t m = 0; m < expected->moved.size(); ++m)
      EXPECT_EQ(job.regression->moved[m].routine, expected->moved[m].routine) << "job " << k;
  }
  EXPECT_EQ(scorer.flagged(), flagged);
  EXPECT_GE(flagged, 8) << "the slower jobs are flagged";
  EXPECT_GE(late_flagged, 4) << "of 5 slowed jobs at the size reached late";
  EXPECT_LT(flagged, scored / 4) << "and not everything";
}

} // namespace
} // namespace strata::site
