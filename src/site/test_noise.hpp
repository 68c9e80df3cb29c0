// Normal deviates for the site's statistical tests (regressions, scaling laws): from mt19937_64
// by Box-Muller, so that a seed gives the same noise on every standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace strata::site::store_testing {

class noise_source {
public:
  explicit noise_source(std::uint64_t seed) : rng_(seed) {}
  double normal() {
    const double u1 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

private:
  std::mt19937_64 rng_;
};

} // namespace strata::site::store_testing
