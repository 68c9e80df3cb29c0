// libFuzzer target: the record reader must never crash or throw on any input, an accepted
// record must render in every format, and what it writes must read back as the same record.
// The bulk readers of site ingest (parse_record_fast and parse_record_lean, simdjson) must give
// the same result.
#include "profiler/record/record.hpp"
#include "profiler/record/record_fast.hpp"
#include "profiler/record/render.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::record;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A model is a small JSON document too; the same bytes exercise its reader as reports use it.
  const auto parsed_model = strata::model::read_model(text, strata::model::model_parts::routines);
  if (!parsed_model.ok() && parsed_model.error.empty())
    std::abort();
  const auto parsed = parse_record(text);
  const auto fast = read_record_simdjson(text); // parse_record_fast's own path
  if (fast && (!parsed.ok() || !(*fast == *parsed.record)))
    std::abort();
  // The lean read (site ingest): the same record but for the control variables, which come
  // as views in name order and hold what the map holds.
  std::vector<cvar_view> cvars;
  if (auto lean = read_record_simdjson_lean(text, cvars)) {
    if (!parsed.ok() || lean->mpi_t.has_value() != parsed.record->mpi_t.has_value())
      std::abort();
    if (lean->mpi_t) {
      const auto& map = parsed.record->mpi_t->cvars;
      if (!lean->mpi_t->cvars.empty() || cvars.size() != map.size() ||
          !std::equal(cvars.begin(), cvars.end(), map.begin(),
                      [](const cvar_view& v, const auto& m) {
                        return v.first == m.first && v.second == m.second;
                      }))
        std::abort();
      lean->mpi_t->cvars = map;
    }
    if (!(*lean == *parsed.record))
      std::abort();
  }
  if (!parsed.ok()) {
    if (parsed.error.empty() || parsed.error.find('\n') != std::string::npos)
      std::abort();
    return 0;
  }
  // The model makes the estimate columns run too; its figures are fixed, the record varies.
  strata::model::machine_model model;
  for (const routine& r : parsed.record->routines)
    model.routines[r.name] = {1e-6, 1e9};
  for (const auto format :
       {report_format::text, report_format::json, report_format::csv, report_format::html})
    if (render(*parsed.record, format, &model).empty())
      std::abort();
  const auto again = parse_record(to_json(*parsed.record));
  if (!again.ok() || !(*again.record == *parsed.record))
    std::abort();
  return 0;
}
