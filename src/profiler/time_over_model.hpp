// The overhead module's comparison (the profile built as overhead.so, after Kluge, Knuepfer and
// Nagel, "Statistical Methods for Automatic Performance Bottleneck Detection in MPI Based
// Programs"): each call's time over the T_f(p, b) that the machine model from `strata bench`
// gives its routine, for p the communicator's size and b the call's bytes. No MPI here.
#pragma once

#include "model/stats.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::profiler {

// Which benchmarked operation a function's calls are compared with.
std::string model_operation(const std::string& function);

class time_over_model {
public:
  // The T_f table of every benchmarked operation in the model file at `path`, and for each of
  // `names` (by function id) the one its calls are compared with. Returns "" or one line, e.g.
  // "cannot read PATH" or "PATH: routines is missing".
  std::string load(const std::string& path, const std::vector<std::string>& names);

  bool loaded() const { return !tables_.empty(); }

  // max(0, t - T_f(p, b)) for a call of `function`, 0 for a routine the model does not know.
  // A lookup outside the benchmarked grid (clamped to its edge) adds one to `clamped`.
  uint64_t wasted_ns(int function, int comm_size, uint64_t time_ns, uint64_t bytes,
                     uint64_t& clamped) const {
    const int table = table_of_.empty() ? -1 : table_of_[static_cast<size_t>(function)];
    return table < 0 ? 0 : over_table(table, comm_size, time_ns, bytes, clamped);
  }

private:
  uint64_t over_table(int table, int comm_size, uint64_t time_ns, uint64_t bytes,
                      uint64_t& clamped) const;
  std::vector<stats::interpolation_table> tables_;
  std::vector<int> table_of_; // by function id: index into tables_, or -1
};

} // namespace strata::profiler
