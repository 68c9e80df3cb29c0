#include "model/stats.hpp"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>

namespace strata::stats {
namespace {

// Boost.Math throws on bad arguments by default; this library promises never to throw.
using quiet = boost::math::policies::policy<
    boost::math::policies::domain_error<boost::math::policies::errno_on_error>,
    boost::math::policies::pole_error<boost::math::policies::errno_on_error>,
    boost::math::policies::overflow_error<boost::math::policies::errno_on_error>,
    boost::math::policies::evaluation_error<boost::math::policies::errno_on_error>,
    boost::math::policies::promote_double<false>>;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr std::uint64_t open_tail = std::numeric_limits<std::uint64_t>::max();

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Smallest k >= from with cdf(k) >= q, or max_class where q rounds to 1 in the far tail.
// Galloping from `from`: the chi-square binning asks for the next class boundary each time.
template <typename Model>
std::uint64_t first_class_reaching(const Model& model, double q, std::uint64_t from = 0) {
  if (!(q > 0) || model.cdf(from) >= q)
    return from;
  std::uint64_t below = from, reach = from;
  for (std::uint64_t step = 1;; step *= 2) {
    reach = std::min(below + step, max_class);
    if (model.cdf(reach) >= q)
      break;
    if (reach == max_class)
      return max_class;
    below = reach;
  }
  while (reach - below > 1) {
    const std::uint64_t middle = below + (reach - below) / 2;
    (model.cdf(middle) < q ? below : reach) = middle;
  }
  return reach;
}

double mean_class(const std::vector<std::uint64_t>& classes) {
  double sum = 0;
  for (const std::uint64_t k : classes)
    sum += static_cast<double>(k);
  return classes.empty() ? 0.0 : sum / static_cast<double>(classes.size());
}

template <typename Model>
gof_result test_fit(const Model& model, const std::vector<std::uint64_t>& classes,
                    double significance) {
  std::vector<std::uint64_t> sorted = classes;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  // P(X >= first); survival keeps the upper bins precise where cdf rounds to 1.
  const auto at_or_above = [&model](std::uint64_t first) {
    return first == 0 ? 1.0 : model.survival(first - 1);
  };
  gof_result out;
  auto next_observation = sorted.begin();
  for (std::uint64_t first = 0; first != open_tail;) {
    const double mass_from_first = at_or_above(first);
    const double target = 1 - mass_from_first + min_expected_count / n;
    std::uint64_t last = target < 1 ? first_class_reaching(model, target, first) : open_tail;
    if (last != open_tail && n * model.survival(last) < min_expected_count)
      last = open_tail; // the rest could not fill a bin of its own
    const double mass = mass_from_first - (last == open_tail ? 0.0 : model.survival(last));
    const auto end = std::upper_bound(next_observation, sorted.end(), last);
    out.bins.push_back(
        {first, last, static_cast<double>(end - next_observation), std::max(0.0, n * mass)});
    next_observation = end;
    first = last == open_tail ? open_tail : last + 1;
  }
  for (const gof_bin& bin : out.bins) {
    const double gap = bin.observed - bin.expected;
    // Rounding could empty a bin's expectation; observations there then refute the model.
    out.chi2 += bin.expected > 0 ? gap * gap / bin.expected
                                 : (bin.observed > 0 ? std::numeric_limits<double>::infinity() : 0);
  }
  out.dof = static_cast<int>(out.bins.size()) - 2; // the total and one fitted parameter
  if (out.testable()) {
    out.p_value = chi2_p_value(out.chi2, out.dof);
    out.critical = chi2_critical(out.dof, significance);
    out.accepted = out.chi2 <= out.critical;
  }
  return out;
}

// Times read from a timer are multiples of its resolution; rounding in t - t_min must not push
// one whole window into the class below.
constexpr double class_slack = 1e-6;

std::vector<std::uint64_t> error_classes(const std::vector<double>& times_s, double t_min,
                                         double window_s) {
  std::vector<std::uint64_t> classes;
  classes.reserve(times_s.size());
  for (const double t : times_s)
    classes.push_back(static_cast<std::uint64_t>(std::floor((t - t_min) / window_s + class_slack)));
  return classes;
}

} // namespace

std::optional<summary> summarize(const std::vector<double>& values) {
  if (values.empty() ||
      !std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }))
    return std::nullopt;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  summary s;
  s.n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  const double n = static_cast<double>(s.n);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  // Rounding can put the mean of equal values one ulp outside them.
  s.mean = std::clamp(s.mean, s.min, s.max);
  double squares = 0;
  for (const double v : sorted)
    squares += (v - s.mean) * (v - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  const size_t middle = s.n / 2;
  s.median =
      s.n % 2 ? sorted[middle] : sorted[middle - 1] + (sorted[middle] - sorted[middle - 1]) / 2;
  return s;
}

// ---- Models ----

double poisson::pmf(std::uint64_t k) const {
  if (lambda <= 0)
    return k == 0 ? 1.0 : 0.0;
  // d/dx P(k + 1, x) = x^k e^-x / k!, computed without overflowing k!.
  return boost::math::gamma_p_derivative(static_cast<double>(k) + 1, lambda, quiet());
}

double poisson::cdf(std::uint64_t k) const {
  return lambda <= 0 ? 1.0 : boost::math::gamma_q(static_cast<double>(k) + 1, lambda, quiet());
}

double poisson::survival(std::uint64_t k) const {
  return lambda <= 0 ? 0.0 : boost::math::gamma_p(static_cast<double>(k) + 1, lambda, quiet());
}

std::uint64_t poisson::quantile(double q) const {
  return first_class_reaching(*this, q);
}

poisson fit_poisson(const std::vector<std::uint64_t>& classes) {
  return {mean_class(classes)};
}

double discrete_exponential::rate_per_s() const {
  return -std::log(ratio) / window_s;
}

double discrete_exponential::pmf(std::uint64_t k) const {
  // k == 0 apart: 0 * log(0) would be NaN for r == 0.
  return k == 0 ? 1 - ratio : (1 - ratio) * std::exp(static_cast<double>(k) * std::log(ratio));
}

double discrete_exponential::cdf(std::uint64_t k) const {
  return -std::expm1(static_cast<double>(k + 1) * std::log(ratio));
}

double discrete_exponential::survival(std::uint64_t k) const {
  return std::exp(static_cast<double>(k + 1) * std::log(ratio));
}

std::uint64_t discrete_exponential::quantile(double q) const {
  return first_class_reaching(*this, q);
}

discrete_exponential fit_exponential(const std::vector<std::uint64_t>& classes, double window_s) {
  // log L = sum(k) log r + n log(1 - r) peaks at r = mean / (1 + mean).
  const double mean = mean_class(classes);
  return {mean / (1 + mean), window_s};
}

// ---- Chi-square ----

gof_result chi_square_test(const poisson& model, const std::vector<std::uint64_t>& classes,
                           double significance) {
  return test_fit(model, classes, significance);
}

gof_result chi_square_test(const discrete_exponential& model,
                           const std::vector<std::uint64_t>& classes, double significance) {
  return test_fit(model, classes, significance);
}

double chi2_p_value(double statistic, double dof) {
  if (!(dof > 0) || !(statistic >= 0) || std::isinf(dof))
    return nan;
  if (std::isinf(statistic))
    return 0;
  const boost::math::chi_squared_distribution<double, quiet> chi2(dof);
  return boost::math::cdf(boost::math::complement(chi2, statistic));
}

double chi2_critical(double dof, double significance) {
  if (!(dof > 0) || std::isinf(dof) || !(significance > 0 && significance < 1))
    return nan;
  const boost::math::chi_squared_distribution<double, quiet> chi2(dof);
  return boost::math::quantile(boost::math::complement(chi2, significance));
}

double chi2_critical_wilson_hilferty(double dof, double significance) {
  if (!(dof > 0) || std::isinf(dof) || !(significance > 0 && significance < 1))
    return nan;
  const boost::math::normal_distribution<double, quiet> standard;
  const double z = boost::math::quantile(boost::math::complement(standard, significance));
  const double spread = 2 / (9 * dof);
  const double root = 1 - spread + z * std::sqrt(spread);
  return dof * root * root * root;
}

// ---- One benchmark sample ----

fit_result fit_sample(const std::vector<double>& times_s, double window_s, double quantile,
                      double significance) {
  fit_result out;
  out.window_s = window_s;
  const auto stop = [&out](fit_status status, std::string message) {
    out.status = status;
    out.message = std::move(message);
    return out;
  };
  if (!(window_s > 0) || std::isinf(window_s))
    return stop(fit_status::invalid_input,
                "window: expected a positive finite number of seconds, got " + number(window_s));
  if (!(quantile > 0 && quantile < 1))
    return stop(fit_status::invalid_input,
                "quantile: expected a number between 0 and 1, got " + number(quantile));
  if (!(significance > 0 && significance < 1))
    return stop(fit_status::invalid_input,
                "significance: expected a number between 0 and 1, got " + number(significance));
  for (size_t i = 0; i < times_s.size(); ++i)
    if (!std::isfinite(times_s[i]) || times_s[i] < 0)
      return stop(fit_status::invalid_input, "time " + std::to_string(i) + ": expected a " +
                                                 "finite non-negative number of seconds, got " +
                                                 number(times_s[i]));
  if (times_s.size() < min_sample_size)
    return stop(fit_status::too_few_samples, std::to_string(times_s.size()) +
                                                 " times; a fit needs at least " +
                                                 std::to_string(min_sample_size));
  out.sample = *summarize(times_s);
  out.t_min = out.t_max = out.sample.min;
  if ((out.sample.max - out.sample.min) / window_s >= static_cast<double>(max_class))
    return stop(fit_status::invalid_input, "window: " + number(window_s) +
                                               " s is too small for a spread of " +
                                               number(out.sample.max - out.sample.min) + " s");
  const std::vector<std::uint64_t> classes = error_classes(times_s, out.t_min, window_s);
  if (std::all_of(classes.begin(), classes.end(), [](std::uint64_t k) { return k == 0; }))
    return stop(fit_status::no_spread,
                out.sample.max == out.sample.min
                    ? "all " + std::to_string(times_s.size()) + " times are equal"
                    : "all " + std::to_string(times_s.size()) + " times lie within one window (" +
                          number(window_s) + " s) of the minimum");

  const poisson by_poisson = fit_poisson(classes);
  const discrete_exponential by_exponential = fit_exponential(classes, window_s);
  const gof_result poisson_test = chi_square_test(by_poisson, classes, significance);
  const gof_result exponential_test = chi_square_test(by_exponential, classes, significance);
  // The paper keeps the lower statistic; one without degrees of freedom was not tested at all.
  const bool poisson_wins = poisson_test.testable() != exponential_test.testable()
                                ? poisson_test.testable()
                                : poisson_test.chi2 <= exponential_test.chi2;
  const gof_result& kept = poisson_wins ? poisson_test : exponential_test;
  out.model = poisson_wins ? "poisson" : "exponential";
  out.parameter = poisson_wins ? by_poisson.lambda : by_exponential.rate_per_s();
  out.chi2 = kept.chi2;
  out.dof = kept.dof;
  out.p_value = kept.p_value;
  out.accepted = kept.accepted;
  const std::uint64_t error_classes_accepted =
      poisson_wins ? by_poisson.quantile(quantile) : by_exponential.quantile(quantile);
  out.t_max = out.t_min + window_s * static_cast<double>(error_classes_accepted);
  if (!kept.testable())
    return stop(fit_status::too_few_classes,
                "after merging classes to expected counts of at least " +
                    number(min_expected_count) + " no model has a degree of freedom left; " +
                    "take more than " + std::to_string(times_s.size()) + " times");
  out.status = fit_status::ok;
  return out;
}

// ---- Latency and bandwidth ----

line_fit fit_latency_bandwidth(const std::vector<std::pair<double, double>>& bytes_time) {
  line_fit out;
  if (bytes_time.empty()) {
    out.error = "no (bytes, time) points";
    return out;
  }
  double mean_bytes = 0, mean_time = 0;
  for (size_t i = 0; i < bytes_time.size(); ++i) {
    const auto [bytes, time] = bytes_time[i];
    if (!std::isfinite(bytes) || !std::isfinite(time) || bytes < 0 || time < 0) {
      out.error = "point " + std::to_string(i) + ": expected finite non-negative bytes and " +
                  "seconds, got (" + number(bytes) + ", " + number(time) + ")";
      return out;
    }
    mean_bytes += bytes;
    mean_time += time;
  }
  const double n = static_cast<double>(bytes_time.size());
  mean_bytes /= n;
  mean_time /= n;
  double sxx = 0, sxy = 0, sbb = 0, sbt = 0;
  for (const auto& [bytes, time] : bytes_time) {
    sxx += (bytes - mean_bytes) * (bytes - mean_bytes);
    sxy += (bytes - mean_bytes) * (time - mean_time);
    sbb += bytes * bytes;
    sbt += bytes * time;
  }
  const double min_slope = 1 / max_bytes_per_s, max_slope = 1 / min_bytes_per_s;
  double slope = sxx > 0 ? sxy / sxx : min_slope;
  out.clamped = !(sxx > 0) || slope < min_slope || slope > max_slope;
  slope = std::clamp(slope, min_slope, max_slope);
  double latency = mean_time - slope * mean_bytes;
  if (latency < 0) {
    // A line through the origin is the best fit with no latency; sbb > 0 as latency < 0.
    out.clamped = true;
    latency = 0;
    slope = std::clamp(sbt / sbb, min_slope, max_slope);
  }
  out.latency_s = latency;
  out.bytes_per_s = 1 / slope;
  return out;
}

// ---- T_f(p, b) ----

std::optional<interpolation_table> interpolation_table::create(std::vector<double> p,
                                                               std::vector<double> b,
                                                               std::vector<double> values) {
  const auto usable_axis = [](const std::vector<double>& axis) {
    return !axis.empty() &&
           std::all_of(axis.begin(), axis.end(), [](double v) { return std::isfinite(v); }) &&
           std::adjacent_find(axis.begin(), axis.end(), std::greater_equal<>()) == axis.end();
  };
  if (!usable_axis(p) || !usable_axis(b) || values.size() != p.size() * b.size() ||
      !std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }))
    return std::nullopt;
  interpolation_table table;
  table.p_ = std::move(p);
  table.b_ = std::move(b);
  table.values_ = std::move(values);
  return table;
}

interpolation_table::result interpolation_table::lookup(double p, double b) const {
  if (std::isnan(p) || std::isnan(b))
    return {nan, true};
  result out;
  // The segment [axis[i], axis[i + 1]] holding x after clamping, and x's weight towards i + 1.
  const auto locate = [&out](const std::vector<double>& axis, double x) {
    if (x < axis.front() || x > axis.back())
      out.clamped = true;
    x = std::clamp(x, axis.front(), axis.back());
    if (axis.size() == 1)
      return std::pair<size_t, double>{0, 0.0};
    const size_t i = std::min<size_t>(
        std::upper_bound(axis.begin(), axis.end(), x) - axis.begin() - 1, axis.size() - 2);
    return std::pair<size_t, double>{i, (x - axis[i]) / (axis[i + 1] - axis[i])};
  };
  const auto [i, wp] = locate(p_, p);
  const auto [j, wb] = locate(b_, b);
  const size_t columns = b_.size();
  const auto at = [&](size_t row, size_t column) {
    // A zero weight may pair with an index one past a single-point axis; never read it.
    return values_[std::min(row, p_.size() - 1) * columns + std::min(column, columns - 1)];
  };
  // std::lerp is exact at weights 0 and 1, so base points give back their values.
  out.value = std::lerp(std::lerp(at(i, j), at(i, j + 1), wb),
                        std::lerp(at(i + 1, j), at(i + 1, j + 1), wb), wp);
  return out;
}

std::vector<std::uint64_t> base_process_counts(std::uint64_t max_p) {
  std::vector<std::uint64_t> counts;
  for (std::uint64_t power = 2; power <= max_p; power *= 2) {
    counts.push_back(power);
    if (power + power / 2 <= max_p)
      counts.push_back(power + power / 2);
    if (power > max_p / 2)
      break; // doubling again would pass max_p, or wrap
  }
  if (max_p >= 1 && (counts.empty() || counts.back() != max_p))
    counts.push_back(max_p);
  return counts;
}

std::vector<std::uint64_t> base_message_sizes(std::uint64_t max_bytes) {
  std::vector<std::uint64_t> sizes;
  if (max_bytes >= 1)
    sizes.push_back(1);
  for (std::uint64_t decade = 10; decade <= max_bytes; decade *= 10) {
    for (std::uint64_t digit = 1; digit <= 9 && digit <= max_bytes / decade; ++digit)
      sizes.push_back(digit * decade);
    if (decade > max_bytes / 10)
      break;
  }
  if (max_bytes >= 1 && sizes.back() != max_bytes)
    sizes.push_back(max_bytes);
  return sizes;
}

} // namespace strata::stats
