// Scaling models of one measured quantity over the number of ranks p: Extra-P's one-term
// performance model normal form f(p) = c0 + c1 * p^i * log2(p)^j (Calotoiu, Hoefler, Poke and
// Wolf, "Using Automated Performance Modeling to Find Scalability Bugs in Complex Codes", SC'13),
// with i from model_exponents_i and j from {0, 1, 2}, chosen by leave-one-out cross-validation
// over the sizes measured; the constant model (i = 0, j = 0) when no term beats it by more than
// the noise. Pure arithmetic: no store, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::site {

// The exponents of p in the normal form, as numerator / denominator (exact in the formula).
struct exponent {
  int numerator = 0, denominator = 1;
  double value() const { return static_cast<double>(numerator) / denominator; }
};
inline constexpr std::array<exponent, 19> model_exponents_i = {{{0, 1},
                                                                {1, 4},
                                                                {1, 3},
                                                                {1, 2},
                                                                {2, 3},
                                                                {3, 4},
                                                                {1, 1},
                                                                {5, 4},
                                                                {4, 3},
                                                                {3, 2},
                                                                {5, 3},
                                                                {7, 4},
                                                                {2, 1},
                                                                {9, 4},
                                                                {7, 3},
                                                                {5, 2},
                                                                {8, 3},
                                                                {11, 4},
                                                                {3, 1}}};
inline constexpr std::array<int, 3> model_exponents_j = {0, 1, 2};

// One measured size: the median over the runs at p ranks and their spread.
struct size_sample {
  std::int64_t ranks = 0;
  double median = 0;
  double low = 0, high = 0; // smallest and largest run
  int runs = 0;
  double relative_spread = 0; // 1.4826 * MAD / median over the runs (0 with fewer than 3)
};

struct scaling_model {
  exponent i;
  int j = 0;
  double c0 = 0, c1 = 0;
  double error = 0; // leave-one-out cross-validation error: mean |predicted - measured| / mean
  double noise = 0; // the medians' relative noise the choice allowed for
  bool is_constant() const { return i.numerator == 0 && j == 0; }
  double at(double ranks) const;
  // "0.004 + 0.0021 * p * log2(p)", "3.1" for a constant (4 significant digits).
  std::string formula() const;
};

// The term p^i * log2(p)^j at p (1 for i = 0, j = 0).
double model_term(exponent i, int j, double p);

// The model of the medians over the sizes (at least 3, distinct ranks, each p >= 1), chosen as
// above. A term replaces the constant when its cross-validation error is lower than the
// constant's by more than twice the medians' noise (from each size's spread and runs) and by
// more than a tenth of the constant's error.
scaling_model fit_scaling_model(const std::vector<size_sample>& sizes);

// The relative noise of a size's median: 1.2533 * relative spread / sqrt(runs).
double median_noise(const size_sample& s);

// A size's median, spread and runs from its runs' values (any order).
size_sample sample_of(std::int64_t ranks, std::vector<double> values);

// Exponent i as a person reads it: "0", "1/2", "2".
std::string exponent_text(exponent i);

} // namespace strata::site
