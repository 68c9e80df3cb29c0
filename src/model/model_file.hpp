// The machine model file, schema "strata.model/1": what `strata bench` measured on one machine.
// One writer (write_model, for the benchmark) and one reader (read_model) for every user: the
// overhead module's T_f(p, b) tables (grid.hpp), the benchmark's own checkpoints, and the
// latency/transfer/synchronisation estimate of `strata report` and the site report, which reads
// only "routines" (latency and bandwidth per MPI routine; a hand-written model may hold only
// that). "operations" holds the fitted t_max at every base point (p, b). No MPI here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::model {

inline constexpr std::string_view model_file_schema = "strata.model/1";

struct machine_info {
  std::string host;
  std::string mpi;                  // library and version as the benchmark found them
  std::uint64_t ranks = 1;          // processes the benchmark ran with, 1 or more
  std::string created;              // ISO 8601, e.g. 2024-05-01T12:00:00Z
  double timer_resolution_s = 1e-9; // positive
  bool operator==(const machine_info&) const = default;
};

// What one call of a routine costs on this machine: latency plus bytes over bandwidth, where
// the bytes are what the job record calls a routine's bytes (sent plus received).
struct routine_cost {
  double latency_s = 0;   // non-negative: a call that moves no data
  double bytes_per_s = 0; // positive
  bool operator==(const routine_cost&) const = default;
};

// One fitted sample (grid.hpp makes it from a fit). `model` is "poisson", "exponential" or
// "none" for a sample no model could be fitted to, whose t_max_s is then min_s.
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

struct machine_model {
  machine_info machine;
  std::map<std::string, routine_cost> routines;
  std::map<std::string, std::vector<base_point>> operations; // "MPI_Send" -> its points
  double quantile = 0.95;                                    // in (0, 1)
  bool partial = false; // the benchmark stopped before it measured every base point
  bool operator==(const machine_model&) const = default;
};

// What a reader needs of the file: the estimate of reports needs "routines" alone (the rest of
// the file is then not read at all); everything else needs the whole model.
enum class model_parts { routines, everything };

struct model_read_result {
  std::optional<machine_model> model;
  std::string error; // one line, "JSON.PATH: what is wrong"; empty when `model` is set
  bool ok() const { return model.has_value(); }
};

// Never throws. Types and ranges are checked, as are the order min <= median <= max, mean
// within [min, max], t_max_s >= min_s and one point per (p, b); unknown keys are ignored so
// that newer writers stay readable.
model_read_result read_model(std::string_view json_text,
                             model_parts needed = model_parts::everything);

// Pretty-printed JSON that read_model reads back to an equal model.
std::string write_model(const machine_model& model);

} // namespace strata::model
