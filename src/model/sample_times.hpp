// For the model's tests: benchmark times as a timer would give them, drawn reproducibly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace strata::model::testing {

constexpr double window = 1e-6;
constexpr double base_time = 20e-6;

// t_min plus whole windows.
inline std::vector<double> times_from(const std::vector<std::uint64_t>& classes) {
  std::vector<double> times;
  for (const std::uint64_t k : classes)
    times.push_back(base_time + static_cast<double>(k) * window);
  return times;
}

template <typename Distribution> std::vector<std::uint64_t> draw(Distribution d, size_t n) {
  std::mt19937 engine(42);
  std::vector<std::uint64_t> classes;
  for (size_t i = 0; i < n; ++i)
    classes.push_back(static_cast<std::uint64_t>(d(engine)));
  return classes;
}

} // namespace strata::model::testing
