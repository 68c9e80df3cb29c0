// Statistics behind the bottleneck analysis of Kluge, Knuepfer and Nagel (ICCS 2005): the
// times of one benchmarked MPI call are t = t_min + error; the error, counted in windows of
// width w, is fitted with a Poisson and a discretised exponential model, each judged by a
// chi-square test; the better one gives t_max = t_min + w * quantile, the longest time a call
// may take before the excess counts as waste. A table of t_max over base points (processes p,
// bytes b) interpolated bilinearly gives T_f(p, b) for calls that were never benchmarked.
// Nothing here throws or needs MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::stats {

struct summary {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0;
  double stddev = 0; // sample standard deviation (n - 1), 0 for a single value
  double median = 0;
  bool operator==(const summary&) const = default;
};

// nullopt when `values` is empty or holds a NaN or infinity.
std::optional<summary> summarize(const std::vector<double>& values);

// Error classes beyond this are refused: doubles stay exact integers and the fits finite.
inline constexpr std::uint64_t max_class = std::uint64_t{1} << 50;

// Errors in whole windows, P(k) = lambda^k e^-lambda / k! (paper eq. 3).
struct poisson {
  double lambda = 0; // the mean error in windows
  double pmf(std::uint64_t k) const;
  double cdf(std::uint64_t k) const;
  double survival(std::uint64_t k) const; // P(X > k), accurate where cdf rounds to 1
  std::uint64_t quantile(double q) const; // smallest k with cdf(k) >= q
};

// Maximum likelihood: lambda is the mean class. `classes` must not be empty.
poisson fit_poisson(const std::vector<std::uint64_t>& classes);

// An exponential error cut into windows of width w: P(k) = e^(-lambda k w) (1 - e^(-lambda w))
// (paper eq. 6), a geometric distribution with ratio r = e^(-lambda w).
struct discrete_exponential {
  double ratio = 0; // r in [0, 1)
  double window_s = 0;
  double rate_per_s() const; // lambda, infinite when r == 0
  double pmf(std::uint64_t k) const;
  double cdf(std::uint64_t k) const;
  double survival(std::uint64_t k) const;
  std::uint64_t quantile(double q) const;
};

// Maximum likelihood: r = mean / (1 + mean) of the classes. `classes` must not be empty.
discrete_exponential fit_exponential(const std::vector<std::uint64_t>& classes, double window_s);

// ---- Chi-square goodness of fit ----

inline constexpr double default_significance = 0.05;
// Below this expected count per bin the statistic is no longer chi-square distributed.
inline constexpr double min_expected_count = 5;

// Classes first..last merged into one bin; last == UINT64_MAX for the open upper tail.
struct gof_bin {
  std::uint64_t first = 0, last = 0;
  double observed = 0, expected = 0;
};

struct gof_result {
  double chi2 = 0;
  int dof = 0; // bins - 1 - one fitted parameter; the test means nothing below 1
  double p_value = 0;
  double critical = 0; // the statistic's limit at the significance
  bool accepted = false;
  std::vector<gof_bin> bins; // adjacent, from class 0 to the open tail
  bool testable() const { return dof >= 1; }
};

// Bins are runs of adjacent classes, each closed as soon as its expected count reaches
// min_expected_count; a remaining tail that cannot reach it joins the last bin. `classes`
// must not be empty.
gof_result chi_square_test(const poisson& model, const std::vector<std::uint64_t>& classes,
                           double significance = default_significance);
gof_result chi_square_test(const discrete_exponential& model,
                           const std::vector<std::uint64_t>& classes,
                           double significance = default_significance);

// Boost.Math; NaN for dof <= 0, a negative statistic or a significance outside (0, 1).
double chi2_p_value(double statistic, double dof);
double chi2_critical(double dof, double significance);
// Wilson-Hilferty, the paper's eq. 9: dof (1 - 2/(9 dof) + z sqrt(2/(9 dof)))^3 with z the
// upper normal quantile; within about 1 % from 5 degrees of freedom on, 3 % at 1.
double chi2_critical_wilson_hilferty(double dof, double significance);

// ---- One benchmark sample ----

enum class fit_status {
  ok,
  invalid_input,   // window, quantile, significance or a time is unusable
  too_few_samples, // fewer than min_sample_size times
  no_spread,       // every time lies in the first window: t_max = t_min, no model
  too_few_classes, // merging left no model a degree of freedom; t_max is given, untested
};

inline constexpr std::size_t min_sample_size = 10;

struct fit_result {
  fit_status status = fit_status::invalid_input;
  std::string message;  // one line saying why, empty when status is ok
  std::string model;    // "poisson" or "exponential"; empty when none was fitted
  double parameter = 0; // poisson: lambda in windows; exponential: lambda per second
  double chi2 = 0;
  int dof = 0;
  double p_value = 0;
  bool accepted = false;
  double window_s = 0;
  double t_min = 0, t_max = 0; // t_max = t_min + window_s * the model's quantile
  summary sample;              // set when the times were usable: ok, no_spread, too_few_classes
  bool ok() const { return status == fit_status::ok; }
};

// Fits both models to the errors t - min(times) in windows of `window_s` (no smaller than the
// timer resolution) and keeps the one with the lower statistic among those testable.
// `quantile` is in (0, 1); the paper finds 0.8 to 1 reasonable. Boost's incomplete gamma slows
// down for huge lambda (2000 times with a mean error of 1e9 windows take seconds), so a window
// that keeps the mean error below about 1e6 windows keeps a fit within milliseconds.
fit_result fit_sample(const std::vector<double>& times_s, double window_s, double quantile,
                      double significance = default_significance);

// Wasted time of one call, t_oh = max(0, t - T_f(p, b)).
inline double overhead_s(double time_s, double t_max_s) {
  return time_s > t_max_s ? time_s - t_max_s : 0.0;
}

// ---- Latency and bandwidth ----

// Bandwidths outside this range are measurement noise, not hardware.
inline constexpr double min_bytes_per_s = 1e3;
inline constexpr double max_bytes_per_s = 1e13;

struct line_fit {
  double latency_s = 0;   // in [0, inf)
  double bytes_per_s = 0; // in [min_bytes_per_s, max_bytes_per_s]
  bool clamped = false;   // the least-squares line left those ranges, or had no slope
  std::string error;      // set, with the other fields 0, when the points are unusable
  bool ok() const { return error.empty(); }
};

// Least squares time = latency + bytes / bandwidth over (bytes, seconds) points, which must be
// finite and non-negative. With a single message size the slope is unknown and the whole time
// is latency at the top bandwidth.
line_fit fit_latency_bandwidth(const std::vector<std::pair<double, double>>& bytes_time);

// ---- T_f(p, b) ----

class interpolation_table {
public:
  struct result {
    double value = 0;
    bool clamped = false; // (p, b) lay outside the grid and was moved onto its border
  };

  // Axes strictly increasing and finite, values finite and row-major: values[i * b.size() + j]
  // at (p[i], b[j]). nullopt otherwise.
  static std::optional<interpolation_table> create(std::vector<double> p, std::vector<double> b,
                                                   std::vector<double> values);

  // Exact at base points, bilinear between them. NaN coordinates give NaN, clamped.
  result lookup(double p, double b) const;

  const std::vector<double>& process_counts() const { return p_; }
  const std::vector<double>& message_sizes() const { return b_; }

private:
  interpolation_table() = default;
  std::vector<double> p_, b_, values_;
};

// 2, 3, 4, 6, 8, 12, ... (2^n and 1.5 * 2^n) up to max_p, and max_p itself so that the grid
// covers every job size the benchmark ran; {1} for max_p == 1, empty below.
std::vector<std::uint64_t> base_process_counts(std::uint64_t max_p);

inline constexpr std::uint64_t default_max_bytes = std::uint64_t{4} << 20;

// 1, 10, 20, ..., 100, 200, ..., 1000, 2000, ... up to max_bytes, and max_bytes itself;
// empty for 0.
std::vector<std::uint64_t> base_message_sizes(std::uint64_t max_bytes = default_max_bytes);

} // namespace strata::stats
