// The machine model file, schema "strata.model/1": what the benchmark measured on one machine.
// "routines" (latency and bandwidth per MPI routine) is also read by record::parse_model and
// must keep its layout; "operations" holds the fitted t_max at every base point (p, b).
#pragma once

#include "stats/stats.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::stats {

inline constexpr std::string_view model_file_schema = "strata.model/1";

struct machine_info {
  std::string host;
  std::string mpi;                  // library and version as the benchmark found them
  std::uint64_t ranks = 1;          // processes the benchmark ran with, 1 or more
  std::string created;              // ISO 8601, e.g. 2024-05-01T12:00:00Z
  double timer_resolution_s = 1e-9; // positive
  bool operator==(const machine_info&) const = default;
};

struct routine_estimate {
  double latency_s = 0;   // non-negative
  double bytes_per_s = 0; // positive
  bool operator==(const routine_estimate&) const = default;
};

// One fitted sample; the fields mirror fit_result. `model` is "poisson", "exponential" or
// "none" for a sample no model could be fitted to (fit_status::no_spread), whose t_max_s is
// then min_s.
struct base_point {
  std::uint64_t p = 0, b = 0, n = 0; // p and n 1 or more
  double min_s = 0, mean_s = 0, median_s = 0, max_s = 0;
  std::string model;
  double parameter = 0, window_s = 0, chi2 = 0;
  std::uint64_t dof = 0;
  double p_value = 0;
  bool accepted = false;
  double t_max_s = 0; // min_s or more
  bool operator==(const base_point&) const = default;
};

// The point for a fit of the sample at (p, b); "none" when no model was fitted. Only fits that
// reached the data (ok, no_spread, too_few_classes) make points that read back.
base_point make_point(std::uint64_t p, std::uint64_t b, const fit_result& fit);

struct benchmark_model {
  machine_info machine;
  std::map<std::string, routine_estimate> routines;
  std::map<std::string, std::vector<base_point>> operations; // "MPI_Send" -> its points
  double quantile = 0.95;                                    // in (0, 1)
  bool partial = false; // the benchmark stopped before it measured every base point
  bool operator==(const benchmark_model&) const = default;
};

struct model_read_result {
  std::optional<benchmark_model> model;
  std::string error; // one line, "JSON.PATH: what is wrong"; empty when `model` is set
  bool ok() const { return model.has_value(); }
};

// Never throws. Types and ranges are checked, as are the order min <= median <= max, mean
// within [min, max], t_max_s >= min_s and one point per (p, b); unknown keys are ignored so
// that newer writers stay readable.
model_read_result read_model(std::string_view json_text);

// Pretty-printed JSON that read_model reads back to an equal model.
std::string write_model(const benchmark_model& model);

struct table_result {
  std::optional<interpolation_table> table;
  std::string error;
  bool ok() const { return table.has_value(); }
};

// T_f(p, b) of one operation: t_max_s over its points, which must fill the grid of their
// distinct p and b values.
table_result build_table(const benchmark_model& model, const std::string& operation);

} // namespace strata::stats
