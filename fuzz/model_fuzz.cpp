// libFuzzer target: the machine model reader must never crash or throw on any input and must
// explain every refusal in one line; an accepted model must write and read back as itself, and
// each operation's table, when it builds, must be exact at its base points.
#include "model/grid.hpp"
#include "model/model_file.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::model;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const model_read_result parsed = read_model(text);
  if (!parsed.ok()) {
    if (parsed.error.empty() || parsed.error.find('\n') != std::string::npos)
      std::abort();
    return 0;
  }
  const model_read_result again = read_model(write_model(*parsed.model));
  if (!again.ok() || !(*again.model == *parsed.model))
    std::abort();
  for (const auto& [name, points] : parsed.model->operations) {
    const table_result built = build_table(*parsed.model, name);
    if (!built.ok()) {
      if (built.error.empty())
        std::abort();
      continue;
    }
    for (const base_point& point : points) {
      const auto found =
          built.table->lookup(static_cast<double>(point.p), static_cast<double>(point.b));
      if (found.clamped || found.value != point.t_max_s)
        std::abort();
      // Off the grid the value must stay finite.
      const auto beyond = built.table->lookup(static_cast<double>(point.p) * 1.5 + 1,
                                              static_cast<double>(point.b) * 0.5);
      if (!std::isfinite(beyond.value))
        std::abort();
    }
  }
  return 0;
}
