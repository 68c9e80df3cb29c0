// The model's grid of base points (p processes, b bytes) and what it is for: points from the
// benchmark's fits, and T_f(p, b) tables of t_max interpolated between them, which the
// overhead module compares each call with. No MPI here.
#pragma once

#include "model/model_file.hpp"
#include "model/stats.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace strata::model {

// The point for a fit of the sample at (p, b); "none" when no model was fitted. Only fits that
// reached the data (ok, no_spread, too_few_classes) make points that read back.
base_point make_point(std::uint64_t p, std::uint64_t b, const stats::fit_result& fit);

struct table_result {
  std::optional<stats::interpolation_table> table;
  std::string error;
  bool ok() const { return table.has_value(); }
};

// T_f(p, b) of one operation: t_max_s over its points, which must fill the grid of their
// distinct p and b values.
table_result build_table(const machine_model& model, const std::string& operation);

} // namespace strata::model
