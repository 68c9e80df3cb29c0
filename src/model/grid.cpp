#include "model/grid.hpp"

#include "common/json_document.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace strata::model {

using common::printable;

base_point make_point(std::uint64_t p, std::uint64_t b, const stats::fit_result& fit) {
  const stats::summary& s = fit.sample;
  return {p,
          b,
          s.n,
          s.min,
          s.mean,
          s.median,
          s.max,
          fit.model.empty() ? "none" : fit.model,
          fit.parameter,
          fit.window_s,
          fit.chi2,
          static_cast<std::uint64_t>(std::max(fit.dof, 0)),
          fit.p_value,
          fit.accepted,
          fit.t_max};
}

table_result build_table(const machine_model& model, const std::string& operation) {
  table_result out;
  const std::string at = "operations." + printable(operation);
  const auto found = model.operations.find(operation);
  if (found == model.operations.end()) {
    out.error = "operations: no " + printable(operation);
    return out;
  }
  const std::vector<base_point>& points = found->second;
  std::set<std::uint64_t> p_set, b_set;
  for (const base_point& point : points) {
    p_set.insert(point.p);
    b_set.insert(point.b);
  }
  // Checked before allocating: hostile input could name a huge sparse grid.
  if (points.empty() || p_set.size() * b_set.size() != points.size()) {
    out.error = at + ".points: expected one point per (p, b) of a full grid, got " +
                std::to_string(points.size()) + " points over " + std::to_string(p_set.size()) +
                " p and " + std::to_string(b_set.size()) + " b values";
    return out;
  }
  const std::vector<std::uint64_t> ps(p_set.begin(), p_set.end()), bs(b_set.begin(), b_set.end());
  std::vector<double> values(points.size(), std::numeric_limits<double>::quiet_NaN());
  for (const base_point& point : points) {
    const auto i = std::lower_bound(ps.begin(), ps.end(), point.p) - ps.begin();
    const auto j = std::lower_bound(bs.begin(), bs.end(), point.b) - bs.begin();
    values[static_cast<size_t>(i) * bs.size() + static_cast<size_t>(j)] = point.t_max_s;
  }
  out.table = stats::interpolation_table::create(std::vector<double>(ps.begin(), ps.end()),
                                                 std::vector<double>(bs.begin(), bs.end()),
                                                 std::move(values));
  if (!out.table)
    out.error = at + ".points: expected one point per (p, b) and finite t_max_s values";
  return out;
}

} // namespace strata::model
