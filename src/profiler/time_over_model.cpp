#include "profiler/time_over_model.hpp"

#include "config/config.hpp"
#include "model/grid.hpp"
#include "model/model_file.hpp"

#include <map>

namespace strata::profiler {

std::string model_operation(const std::string& function) {
  std::string op = function;
  if (op.size() > 2 && op.compare(op.size() - 2, 2, "_c") == 0)
    op.resize(op.size() - 2);
  if (op == "MPI_Recv" || op == "MPI_Ssend" || op == "MPI_Bsend" || op == "MPI_Rsend")
    return "MPI_Send";
  if (op == "MPI_Irecv" || op == "MPI_Wait" || op == "MPI_Waitall")
    return "MPI_Isend";
  return op;
}

std::string time_over_model::load(const std::string& path, const std::vector<std::string>& names) {
  std::string text;
  if (!config::read_file(path, text))
    return "cannot read " + path;
  const model::model_read_result read = model::read_model(text);
  if (!read.ok())
    return path + ": " + read.error;
  std::map<std::string, int> index;
  for (const auto& [op, points] : read.model->operations) {
    model::table_result table = model::build_table(*read.model, op);
    if (!table.ok())
      return path + ": " + table.error;
    index[op] = static_cast<int>(tables_.size());
    tables_.push_back(std::move(*table.table));
  }
  table_of_.assign(names.size(), -1);
  for (size_t f = 0; f < names.size(); ++f)
    if (auto it = index.find(model_operation(names[f])); it != index.end())
      table_of_[f] = it->second;
  return {};
}

uint64_t time_over_model::over_table(int table, int comm_size, uint64_t time_ns, uint64_t bytes,
                                     uint64_t& clamped) const {
  const stats::interpolation_table::result expected = tables_[static_cast<size_t>(table)].lookup(
      static_cast<double>(comm_size), static_cast<double>(bytes));
  if (expected.clamped) // outside the benchmarked grid: flagged in the record
    std::atomic_ref<uint64_t>(clamped).fetch_add(1, std::memory_order_relaxed);
  const double expected_ns = expected.value * 1e9;
  return static_cast<double>(time_ns) > expected_ns ? time_ns - static_cast<uint64_t>(expected_ns)
                                                    : 0;
}

} // namespace strata::profiler
