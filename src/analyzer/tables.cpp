#include "analyzer/tables.hpp"

#include <algorithm>
#include <string>

namespace strata::analyze {

void fill_tables(const definitions& defs, const std::vector<const rank_tables*>& ranks,
                 const wait_totals& waits, report& out) {
  const double tick = 1.0 / static_cast<double>(defs.timer_resolution);
  auto where = [&](uint32_t region, uint32_t site) -> std::pair<std::string, uint32_t> {
    if (site != no_call_site && site < defs.call_sites.size())
      return {defs.call_sites[site].file, defs.call_sites[site].line};
    return {defs.regions[region].file, defs.regions[region].line};
  };
  auto cat_name = [&](uint32_t region) {
    return defs.regions[region].cat == category::mpi ? "mpi" : "user";
  };

  std::map<std::pair<std::string, std::string>, operation_total> totals;
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    const rank_tables& counts = *ranks[r];
    for (uint32_t level = 0; level < counts.level_counts.size(); ++level)
      if (counts.level_counts[level])
        out.levels.push_back({r, level, counts.level_counts[level]});
    // In key order, so that sums of floating-point times come out the same whichever process
    // counted the rank (a hash map's order depends on its history).
    std::vector<std::pair<uint64_t, op_stat>> stats(counts.ops.begin(), counts.ops.end());
    std::sort(stats.begin(), stats.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<operation_row> rows;
    for (const auto& [key, stat] : stats) {
      const auto region = static_cast<uint32_t>(key >> 32);
      const auto site = static_cast<uint32_t>(key & 0xffffffffU);
      auto [file, line] = where(region, site);
      rows.push_back({r, cat_name(region), defs.regions[region].name, file, line, stat.count,
                      static_cast<double>(stat.ticks) * tick});
      operation_total& t = totals[{cat_name(region), defs.regions[region].name}];
      t.category = cat_name(region);
      t.operation = defs.regions[region].name;
      t.count += stat.count;
      t.time_s += static_cast<double>(stat.ticks) * tick;
    }
    // Call sites with the same file and line (the same place reached through several sites)
    // are one row.
    std::stable_sort(rows.begin(), rows.end(), [](const operation_row& a, const operation_row& b) {
      return std::tie(a.category, a.operation, a.file, a.line) <
             std::tie(b.category, b.operation, b.file, b.line);
    });
    for (const operation_row& row : rows) {
      if (!out.operations.empty()) {
        operation_row& prev = out.operations.back();
        if (prev.rank == row.rank && prev.category == row.category &&
            prev.operation == row.operation && prev.file == row.file && prev.line == row.line) {
          prev.count += row.count;
          prev.time_s += row.time_s;
          continue;
        }
      }
      out.operations.push_back(row);
    }
    std::vector<std::pair<uint64_t, pair_stat>> pairs(counts.pairs.begin(), counts.pairs.end());
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      return std::make_pair(a.first & 0xffffffffU, a.first >> 32) <
             std::make_pair(b.first & 0xffffffffU, b.first >> 32);
    });
    for (const auto& [key, stat] : pairs)
      out.pairs.push_back({r, static_cast<uint32_t>(key & 0xffffffffU), pair_kind_names[key >> 32],
                           stat.messages, stat.bytes});
    const double total =
        counts.first == UINT64_MAX ? 0.0 : static_cast<double>(counts.last - counts.first) * tick;
    out.processes.push_back({r, static_cast<double>(counts.comm_ticks) * tick, total});
  }
  for (auto& [key, t] : totals)
    out.totals.push_back(t);

  std::map<std::tuple<uint8_t, uint32_t, std::string, std::string, uint32_t>, wait_state_row> rows;
  for (const auto& [key, value] : waits) {
    auto [file, line] = where(key.region, key.site);
    const std::string& function = defs.regions[key.region].name;
    wait_state_row& row = rows[{key.kind, key.rank, function, file, line}];
    row.pattern = pattern_names[key.kind];
    row.function = function;
    row.file = file;
    row.line = line;
    row.rank = key.rank;
    row.time_s += static_cast<double>(value.first) * tick;
    row.count += value.second;
  }
  for (auto& [key, row] : rows)
    out.wait_states.push_back(row);
  std::stable_sort(
      out.wait_states.begin(), out.wait_states.end(),
      [](const wait_state_row& a, const wait_state_row& b) { return a.time_s > b.time_s; });
}

} // namespace strata::analyze
