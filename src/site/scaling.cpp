#include "site/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace strata::site {
namespace {

struct line {
  double c0 = 0, c1 = 0;
};

// Least squares of y over x, each point weighted by 1 / y^2: run times vary by a share of
// themselves, so a point at many ranks is no surer than one at few. The weighted sums are taken
// once, about the weighted means of all points (p^3 at thousands of ranks is 1e10 and more: raw
// sums of squares would lose the intercept); a fit without point k subtracts its terms, so
// that cross-validation costs one pass over the points, not one per point left out.
class weighted_fit {
public:
  weighted_fit(const std::vector<double>& x, const std::vector<double>& y) : x_(x), y_(y) {
    double magnitude = 0;
    for (const double v : y)
      magnitude = std::max(magnitude, std::abs(v));
    const double floor = 1e-6 * magnitude + std::numeric_limits<double>::min();
    w_.reserve(x.size());
    double total = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      w_.push_back(1 / (y[k] * y[k] + floor * floor));
      total += w_[k];
      mx_ += w_[k] * x[k];
      my_ += w_[k] * y[k];
      scale_ = std::max(scale_, std::abs(x[k]));
    }
    mx_ /= total;
    my_ /= total;
    for (size_t k = 0; k < x.size(); ++k) {
      const double dx = x[k] - mx_, dy = y[k] - my_;
      sums_.w += w_[k];
      sums_.x += w_[k] * dx;
      sums_.y += w_[k] * dy;
      sums_.xx += w_[k] * dx * dx;
      sums_.xy += w_[k] * dx * dy;
    }
  }

  // The fit to every point but `skip` (x.size(): all of them). A term that is the same at every
  // point fits as a constant.
  line fit(size_t skip) const {
    sums s = sums_;
    if (skip < x_.size()) {
      const double dx = x_[skip] - mx_, dy = y_[skip] - my_, w = w_[skip];
      s.w -= w;
      s.x -= w * dx;
      s.y -= w * dy;
      s.xx -= w * dx * dx;
      s.xy -= w * dx * dy;
    }
    const double mean_x = s.x / s.w, mean_y = s.y / s.w;
    const double sxx = s.xx - s.x * mean_x, sxy = s.xy - s.x * mean_y;
    line l;
    if (sxx > 1e-24 * scale_ * scale_ * s.w)
      l.c1 = sxy / sxx;
    l.c0 = my_ + mean_y - l.c1 * (mx_ + mean_x);
    return l;
  }

private:
  struct sums {
    double w = 0, x = 0, y = 0, xx = 0, xy = 0;
  };
  const std::vector<double>& x_;
  const std::vector<double>& y_;
  std::vector<double> w_;
  double mx_ = 0, my_ = 0, scale_ = 0;
  sums sums_;
};

// Mean over the points of |prediction - measurement| relative to their mean size, each point
// predicted from a fit to all the others. The floor keeps a point measured as 0 (a log term at
// p = 1) from counting a rounding error as a miss.
double cross_validation_error(const std::vector<double>& x, const std::vector<double>& y) {
  double magnitude = 0;
  for (const double v : y)
    magnitude = std::max(magnitude, std::abs(v));
  const double floor = 1e-9 * magnitude + std::numeric_limits<double>::min();
  const weighted_fit all(x, y);
  double sum = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const line l = all.fit(k);
    const double predicted = l.c0 + l.c1 * x[k];
    sum += std::abs(predicted - y[k]) / ((std::abs(predicted) + std::abs(y[k])) / 2 + floor);
  }
  return sum / static_cast<double>(x.size());
}

std::string number(double v) {
  return fmt::format("{:.4g}", v);
}

} // namespace

double model_term(exponent i, int j, double p) {
  double t = i.numerator == 0 ? 1.0 : std::pow(p, i.value());
  const double lg = std::log2(p);
  for (int k = 0; k < j; ++k)
    t *= lg;
  return t;
}

double scaling_model::at(double ranks) const {
  return c0 + c1 * model_term(i, j, ranks);
}

std::string exponent_text(exponent i) {
  if (i.denominator == 1)
    return std::to_string(i.numerator);
  return std::to_string(i.numerator) + "/" + std::to_string(i.denominator);
}

std::string scaling_model::formula() const {
  if (is_constant())
    return number(c0);
  std::string term;
  if (i.numerator != 0)
    term = i.numerator == 1 && i.denominator == 1
               ? "p"
               : "p^" + (i.denominator == 1 ? exponent_text(i) : "(" + exponent_text(i) + ")");
  if (j > 0)
    term += (term.empty() ? "" : " * ") + std::string("log2(p)") + (j == 2 ? "^2" : "");
  return number(c0) + (c1 < 0 ? " - " : " + ") + number(std::abs(c1)) + " * " + term;
}

double median_noise(const size_sample& s) {
  return s.runs > 0 ? 1.2533 * s.relative_spread / std::sqrt(static_cast<double>(s.runs)) : 0.0;
}

size_sample sample_of(std::int64_t ranks, std::vector<double> values) {
  size_sample s;
  s.ranks = ranks;
  s.runs = static_cast<int>(values.size());
  if (values.empty())
    return s;
  std::sort(values.begin(), values.end());
  const auto median = [](const std::vector<double>& v) {
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  s.median = median(values);
  s.low = values.front();
  s.high = values.back();
  if (values.size() >= 3 && s.median > 0) {
    std::vector<double> deviations;
    deviations.reserve(values.size());
    for (const double v : values)
      deviations.push_back(std::abs(v - s.median));
    std::sort(deviations.begin(), deviations.end());
    s.relative_spread = 1.4826 * median(deviations) / s.median;
  }
  return s;
}

scaling_model fit_scaling_model(const std::vector<size_sample>& sizes) {
  std::vector<double> p, y;
  for (const size_sample& s : sizes) {
    p.push_back(static_cast<double>(s.ranks));
    y.push_back(s.median);
  }
  std::vector<double> noises;
  for (const size_sample& s : sizes)
    if (s.runs >= 3)
      noises.push_back(median_noise(s));
  double noise = 0;
  if (!noises.empty()) {
    std::sort(noises.begin(), noises.end());
    noise = noises[noises.size() / 2];
  }

  scaling_model best;
  best.noise = noise;
  const std::vector<double> ones(p.size(), 1.0);
  const double constant_error = cross_validation_error(ones, y);
  best.error = constant_error;
  // The simplest hypothesis first; a later one must be better by more than rounding.
  double best_term_error = std::numeric_limits<double>::infinity();
  exponent best_i;
  int best_j = 0;
  for (const exponent i : model_exponents_i)
    for (const int j : model_exponents_j) {
      if (i.numerator == 0 && j == 0)
        continue;
      std::vector<double> x;
      x.reserve(p.size());
      for (const double v : p)
        x.push_back(model_term(i, j, v));
      const double e = cross_validation_error(x, y);
      if (e < best_term_error * (1 - 1e-9) - 1e-15) {
        best_term_error = e;
        best_i = i;
        best_j = j;
      }
    }
  const double margin = std::max({2 * noise, 0.1 * constant_error, 1e-9});
  if (constant_error - best_term_error > margin) {
    std::vector<double> x;
    x.reserve(p.size());
    for (const double v : p)
      x.push_back(model_term(best_i, best_j, v));
    const line l = weighted_fit(x, y).fit(x.size());
    best.i = best_i;
    best.j = best_j;
    best.c0 = l.c0;
    best.c1 = l.c1;
    best.error = best_term_error;
  } else {
    const line l = weighted_fit(ones, y).fit(y.size());
    best.c0 = l.c0;
  }
  return best;
}

} // namespace strata::site
