#include "model/stats.hpp"

#include "model/sample_times.hpp"

#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace strata::stats {
namespace {

using json = nlohmann::json;
using namespace strata::model::testing;

double mean_of(const std::vector<std::uint64_t>& classes) {
  double sum = 0;
  for (const std::uint64_t k : classes)
    sum += static_cast<double>(k);
  return sum / static_cast<double>(classes.size());
}

TEST(Summary, KnownSample) {
  const auto s = summarize({3, 1, 4, 1, 5, 9, 2, 6});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n, 8u);
  EXPECT_EQ(s->min, 1);
  EXPECT_EQ(s->max, 9);
  EXPECT_DOUBLE_EQ(s->mean, 3.875);
  EXPECT_DOUBLE_EQ(s->median, 3.5);
  EXPECT_NEAR(s->stddev, 2.748376143938713, 1e-12);
  EXPECT_DOUBLE_EQ(summarize({7, 1, 4})->median, 4);
  EXPECT_EQ(summarize({2.5})->stddev, 0);
  EXPECT_FALSE(summarize({}));
  EXPECT_FALSE(summarize({1, std::nan(""), 2}));
  EXPECT_FALSE(summarize({1, std::numeric_limits<double>::infinity()}));
}

TEST(Poisson, MaximumLikelihoodIsTheSampleMean) {
  EXPECT_DOUBLE_EQ(fit_poisson({0, 1, 1, 2, 3, 5}).lambda, 2.0);
  const poisson two{2};
  EXPECT_NEAR(two.pmf(2), 0.2706705664732254, 1e-15); // 2^2 e^-2 / 2!
  EXPECT_NEAR(two.cdf(1), 0.4060058497098381, 1e-15); // 3 e^-2
  EXPECT_NEAR(two.cdf(4) + two.survival(4), 1.0, 1e-15);
  // Poisson(3): cdf(5) = 0.9161, cdf(6) = 0.9665.
  EXPECT_EQ(poisson{3}.quantile(0.95), 6u);
  EXPECT_EQ(poisson{3}.quantile(0.9161), 6u);
  EXPECT_EQ(poisson{3}.quantile(0.916), 5u);
  EXPECT_EQ(poisson{0}.quantile(0.95), 0u);
  EXPECT_EQ(poisson{0}.pmf(0), 1.0);
}

TEST(DiscreteExponential, MaximumLikelihoodClosedForm) {
  // Mean class 2: r = 2 / 3, lambda = ln(1 + 1 / 2) / w.
  const discrete_exponential fit = fit_exponential({0, 1, 1, 2, 3, 5}, window);
  EXPECT_DOUBLE_EQ(fit.ratio, 2.0 / 3.0);
  EXPECT_NEAR(fit.rate_per_s(), 405465.1081081644, 1e-6);
  EXPECT_DOUBLE_EQ(fit.pmf(0), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(fit.pmf(2), 4.0 / 27.0);
  EXPECT_DOUBLE_EQ(fit.cdf(1), 5.0 / 9.0);
  // r = 0.7: 0.7^(k+1) <= 0.05 first at k + 1 = 9 (ln 0.05 / ln 0.7 = 8.4).
  EXPECT_EQ((discrete_exponential{0.7, window}.quantile(0.95)), 8u);
  EXPECT_EQ((discrete_exponential{0.0, window}.quantile(0.95)), 0u);
  EXPECT_EQ((discrete_exponential{0.0, window}.pmf(0)), 1.0);
}

TEST(ChiSquare, CriticalValuesMatchThePublishedTable) {
  const std::vector<std::pair<double, double>> table = {
      {1, 3.841}, {2, 5.991}, {5, 11.070}, {10, 18.307}, {30, 43.773}};
  for (const auto& [dof, value] : table) {
    EXPECT_NEAR(chi2_critical(dof, 0.05), value, 5e-4) << dof;
    const double approximation = chi2_critical_wilson_hilferty(dof, 0.05);
    EXPECT_NEAR(approximation, value, value * (dof >= 5 ? 0.01 : 0.03)) << dof;
    EXPECT_NE(approximation, chi2_critical(dof, 0.05)) << "must be its own formula";
  }
  EXPECT_NEAR(chi2_critical(1, 0.01), 6.635, 5e-4);
  EXPECT_NEAR(chi2_p_value(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(chi2_p_value(18.307, 10), 0.05, 1e-4);
  EXPECT_TRUE(std::isnan(chi2_critical(0, 0.05)));
  EXPECT_TRUE(std::isnan(chi2_critical(3, 1.0)));
  EXPECT_TRUE(std::isnan(chi2_critical_wilson_hilferty(-1, 0.05)));
  EXPECT_TRUE(std::isnan(chi2_p_value(-1, 3)));
}

TEST(ChiSquare, HandComputedStatistic) {
  // Mean class 1, n = 20. Expected 7.358, 7.358 for classes 0 and 1; classes from 2 on hold
  // 5.285 together and so merge into one open tail bin.
  std::vector<std::uint64_t> classes(8, 0);
  classes.insert(classes.end(), {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3});
  const gof_result test = chi_square_test(fit_poisson(classes), classes);
  ASSERT_EQ(test.bins.size(), 3u);
  EXPECT_EQ(test.bins[2].first, 2u);
  EXPECT_EQ(test.bins[2].last, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(test.bins[0].observed, 8);
  EXPECT_EQ(test.bins[2].observed, 6);
  EXPECT_NEAR(test.bins[2].expected, 5.284822353142307, 1e-9);
  EXPECT_NEAR(test.chi2, 0.4033694305336245, 1e-9);
  EXPECT_EQ(test.dof, 1);
  EXPECT_NEAR(test.p_value, chi2_p_value(test.chi2, 1), 1e-15);
  EXPECT_TRUE(test.accepted);
}

TEST(ChiSquare, BinsCoverEveryClassWithEnoughExpected) {
  const auto classes = draw(std::poisson_distribution<int>(40.0), 500);
  for (const gof_result& test : {chi_square_test(fit_poisson(classes), classes),
                                 chi_square_test(fit_exponential(classes, window), classes)}) {
    double observed = 0, expected = 0;
    std::uint64_t next = 0;
    for (const gof_bin& bin : test.bins) {
      EXPECT_EQ(bin.first, next);
      EXPECT_GE(bin.expected, min_expected_count - 1e-9);
      observed += bin.observed;
      expected += bin.expected;
      next = bin.last + 1;
    }
    EXPECT_EQ(next, 0u) << "the last bin must be the open tail";
    EXPECT_EQ(observed, 500);
    EXPECT_NEAR(expected, 500, 1e-6);
    EXPECT_EQ(test.dof, static_cast<int>(test.bins.size()) - 2);
  }
}

TEST(FitSample, PoissonSampleIsAcceptedAndWins) {
  const auto classes = draw(std::poisson_distribution<int>(3.0), 1000);
  const fit_result fit = fit_sample(times_from(classes), window, 0.95);
  ASSERT_TRUE(fit.ok()) << fit.message;
  EXPECT_EQ(fit.model, "poisson");
  EXPECT_TRUE(fit.accepted) << fit.chi2 << " on " << fit.dof;
  EXPECT_GE(fit.p_value, 0.05);
  EXPECT_GE(fit.dof, 3);
  // The timer-like times must give back exactly the drawn classes.
  EXPECT_NEAR(fit.parameter, mean_of(classes), 1e-9);
  EXPECT_NEAR(fit.parameter, 3.0, 0.2);
  EXPECT_DOUBLE_EQ(fit.t_min, base_time);
  // Poisson(3.0 +- 0.2) reaches 0.95 at 6 windows.
  EXPECT_DOUBLE_EQ(fit.t_max, base_time + 6 * window);
  EXPECT_EQ(fit.sample.n, 1000u);
  EXPECT_LT(fit_sample(times_from(classes), window, 0.5).t_max, fit.t_max);
}

TEST(FitSample, GeometricSampleIsAcceptedAndExponentialWins) {
  const auto classes = draw(std::geometric_distribution<int>(0.3), 1000); // r = 0.7
  const fit_result fit = fit_sample(times_from(classes), window, 0.95);
  ASSERT_TRUE(fit.ok()) << fit.message;
  EXPECT_EQ(fit.model, "exponential");
  EXPECT_TRUE(fit.accepted) << fit.chi2 << " on " << fit.dof;
  const double mean = mean_of(classes);
  EXPECT_NEAR(fit.parameter, std::log1p(1 / mean) / window, 1e-3);
  EXPECT_NEAR(fit.parameter, -std::log(0.7) / window, 0.1 * -std::log(0.7) / window);
  const discrete_exponential kept{mean / (1 + mean), window};
  EXPECT_DOUBLE_EQ(fit.t_max, fit.t_min + window * static_cast<double>(kept.quantile(0.95)));
  EXPECT_GE(fit.t_max, fit.t_min + 7 * window);
  EXPECT_LE(fit.t_max, fit.t_min + 9 * window);
}

TEST(FitSample, BimodalSampleIsRejected) {
  auto classes = draw(std::poisson_distribution<int>(2.0), 500);
  for (const std::uint64_t k : draw(std::poisson_distribution<int>(2.0), 500))
    classes.push_back(40 + k);
  const fit_result fit = fit_sample(times_from(classes), window, 0.95);
  ASSERT_TRUE(fit.ok()) << fit.message;
  EXPECT_FALSE(fit.accepted);
  EXPECT_LT(fit.p_value, 1e-6);
}

TEST(FitSample, DegenerateSamples) {
  const auto status_of = [](const std::vector<double>& times, double w = window, double q = 0.95) {
    return fit_sample(times, w, q).status;
  };
  const std::vector<double> good = times_from(draw(std::poisson_distribution<int>(3.0), 50));
  EXPECT_EQ(status_of({}), fit_status::too_few_samples);
  EXPECT_EQ(fit_sample(std::vector<double>(9, 1e-6), window, 0.95).message,
            "9 times; a fit needs at least 10");

  const fit_result equal = fit_sample(std::vector<double>(20, 5e-6), window, 0.95);
  EXPECT_EQ(equal.status, fit_status::no_spread);
  EXPECT_EQ(equal.message, "all 20 times are equal");
  EXPECT_EQ(equal.t_max, 5e-6);
  EXPECT_TRUE(equal.model.empty());
  std::vector<double> close(20, 5e-6);
  close[3] += 0.5 * window;
  EXPECT_EQ(fit_sample(close, window, 0.95).message,
            "all 20 times lie within one window (1e-06 s) of the minimum");

  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1e-6}) {
    std::vector<double> times = good;
    times[3] = bad;
    const fit_result fit = fit_sample(times, window, 0.95);
    EXPECT_EQ(fit.status, fit_status::invalid_input);
    EXPECT_EQ(fit.message.rfind("time 3: expected a finite non-negative", 0), 0u) << fit.message;
  }
  for (const double bad : {0.0, -1e-6, std::nan(""), std::numeric_limits<double>::infinity()})
    EXPECT_EQ(status_of(good, bad), fit_status::invalid_input) << bad;
  for (const double bad : {0.0, 1.0, -0.5, std::nan("")})
    EXPECT_EQ(status_of(good, window, bad), fit_status::invalid_input) << bad;
  EXPECT_EQ(fit_sample(good, window, 0.95, 1.5).status, fit_status::invalid_input);
  EXPECT_EQ(fit_sample(good, window, 0.95).message, "");
  EXPECT_EQ(fit_sample({0, 0, 0, 0, 0, 0, 0, 0, 0, 1e3}, 1e-300, 0.95).message,
            "window: 1e-300 s is too small for a spread of 1000 s");

  // Ten times cannot fill three bins of five expected: the fit is given, untested.
  const fit_result few = fit_sample(times_from({0, 1, 1, 2, 0, 3, 1, 0, 2, 1}), window, 0.95);
  EXPECT_EQ(few.status, fit_status::too_few_classes);
  EXPECT_FALSE(few.accepted);
  EXPECT_FALSE(few.model.empty());
  EXPECT_GT(few.t_max, few.t_min);
}

TEST(LatencyBandwidth, ExactLine) {
  std::vector<std::pair<double, double>> points;
  for (const double bytes : {0.0, 1e3, 1e4, 1e5, 1e6})
    points.emplace_back(bytes, 2e-6 + bytes / 1e9);
  const line_fit fit = fit_latency_bandwidth(points);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit.latency_s, 2e-6, 1e-15);
  EXPECT_NEAR(fit.bytes_per_s, 1e9, 1e-3);
  EXPECT_FALSE(fit.clamped);
}

TEST(LatencyBandwidth, ClampedToSensibleRanges) {
  // A negative intercept: no latency, the slope through the origin.
  const line_fit through_origin = fit_latency_bandwidth({{1e3, 0.0}, {1e6, 1e-3}, {2e6, 2.5e-3}});
  EXPECT_EQ(through_origin.latency_s, 0);
  EXPECT_TRUE(through_origin.clamped);
  // sum(b t) / sum(b^2) = (1e6 * 1e-3 + 2e6 * 2.5e-3) / (1e6 + 1e12 + 4e12)
  EXPECT_DOUBLE_EQ(through_origin.bytes_per_s, 5.000001e12 / 6e3);

  const line_fit one_size = fit_latency_bandwidth({{100, 3e-6}, {100, 5e-6}});
  EXPECT_TRUE(one_size.clamped);
  EXPECT_EQ(one_size.bytes_per_s, max_bytes_per_s);
  EXPECT_DOUBLE_EQ(one_size.latency_s, 4e-6 - 100 / max_bytes_per_s);

  const line_fit shrinking = fit_latency_bandwidth({{0, 5e-6}, {1e6, 4e-6}});
  EXPECT_TRUE(shrinking.clamped);
  EXPECT_EQ(shrinking.bytes_per_s, max_bytes_per_s);

  const line_fit crawling = fit_latency_bandwidth({{0, 0}, {10, 1.0}});
  EXPECT_EQ(crawling.bytes_per_s, min_bytes_per_s);

  EXPECT_EQ(fit_latency_bandwidth({}).error, "no (bytes, time) points");
  EXPECT_EQ(fit_latency_bandwidth({{1, 1e-6}, {-1, 1e-6}}).error,
            "point 1: expected finite non-negative bytes and seconds, got (-1, 1e-06)");
}

interpolation_table two_by_two() {
  // p = 2, 4 and b = 10, 20 holding 1, 2 / 3, 5.
  return *interpolation_table::create({2, 4}, {10, 20}, {1, 2, 3, 5});
}

TEST(Interpolation, ExactAtBasePointsAndBilinearBetween) {
  const interpolation_table table = two_by_two();
  const std::vector<std::tuple<double, double, double>> base = {
      {2, 10, 1}, {2, 20, 2}, {4, 10, 3}, {4, 20, 5}};
  for (const auto& [p, b, value] : base) {
    EXPECT_EQ(table.lookup(p, b).value, value);
    EXPECT_FALSE(table.lookup(p, b).clamped);
  }
  // At p = 3 the b = 10 and 20 values are 2 and 3.5; b = 15 lies halfway: 2.75.
  EXPECT_DOUBLE_EQ(table.lookup(3, 15).value, 2.75);
  // p = 2.5 is a quarter of the way: 1.5 + 0.25 * (4 - 1.5) at b = 15.
  EXPECT_DOUBLE_EQ(table.lookup(2.5, 15).value, 2.125);
  EXPECT_FALSE(table.lookup(3, 15).clamped);
  // t_oh = max(0, t - T_f(p, b))
  EXPECT_DOUBLE_EQ(overhead_s(5, table.lookup(3, 15).value), 2.25);
  EXPECT_EQ(overhead_s(2, table.lookup(3, 15).value), 0);
}

TEST(Interpolation, ClampedAndFlaggedOutside) {
  const interpolation_table table = two_by_two();
  EXPECT_DOUBLE_EQ(table.lookup(1, 15).value, 1.5);
  EXPECT_TRUE(table.lookup(1, 15).clamped);
  EXPECT_EQ(table.lookup(64, 1e9).value, 5);
  EXPECT_TRUE(table.lookup(64, 1e9).clamped);
  EXPECT_EQ(table.lookup(3, 0).value, 2);
  EXPECT_TRUE(table.lookup(3, 0).clamped);
  EXPECT_TRUE(std::isnan(table.lookup(std::nan(""), 10).value));

  const auto row = interpolation_table::create({8}, {1, 100}, {1, 3});
  ASSERT_TRUE(row);
  EXPECT_DOUBLE_EQ(row->lookup(8, 50.5).value, 2);
  EXPECT_FALSE(row->lookup(8, 50.5).clamped);
  EXPECT_TRUE(row->lookup(16, 50.5).clamped);

  EXPECT_FALSE(interpolation_table::create({2, 2}, {1}, {1, 1}));
  EXPECT_FALSE(interpolation_table::create({4, 2}, {1}, {1, 1}));
  EXPECT_FALSE(interpolation_table::create({2, 4}, {1}, {1}));
  EXPECT_FALSE(interpolation_table::create({}, {}, {}));
  EXPECT_FALSE(interpolation_table::create({2}, {1}, {std::numeric_limits<double>::infinity()}));
}

TEST(BasePoints, ProcessCounts) {
  using counts = std::vector<std::uint64_t>;
  EXPECT_EQ(base_process_counts(64), (counts{2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}));
  EXPECT_EQ(base_process_counts(100), (counts{2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 100}));
  EXPECT_EQ(base_process_counts(3), (counts{2, 3}));
  EXPECT_EQ(base_process_counts(2), (counts{2}));
  EXPECT_EQ(base_process_counts(1), (counts{1}));
  EXPECT_EQ(base_process_counts(0), (counts{}));
  const counts huge = base_process_counts(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(std::adjacent_find(huge.begin(), huge.end(), std::greater_equal<>()), huge.end());
  EXPECT_EQ(huge.back(), std::numeric_limits<std::uint64_t>::max());
}

TEST(BasePoints, MessageSizes) {
  using sizes = std::vector<std::uint64_t>;
  EXPECT_EQ(base_message_sizes(100), (sizes{1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(base_message_sizes(250), (sizes{1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 250}));
  EXPECT_EQ(base_message_sizes(1), (sizes{1}));
  EXPECT_EQ(base_message_sizes(0), (sizes{}));
  const sizes fallback = base_message_sizes();
  ASSERT_EQ(fallback.size(), 51u); // 1, 9 per decade for five decades, 1e6..4e6, 4 MiB
  EXPECT_EQ(fallback[11], 200u);
  EXPECT_EQ(fallback[fallback.size() - 2], 4000000u);
  EXPECT_EQ(fallback.back(), 4194304u);
  const sizes huge = base_message_sizes(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(std::adjacent_find(huge.begin(), huge.end(), std::greater_equal<>()), huge.end());
  EXPECT_EQ(huge.back(), std::numeric_limits<std::uint64_t>::max());
}

} // namespace
} // namespace strata::stats
