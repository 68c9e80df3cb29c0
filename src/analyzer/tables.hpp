// The report's tables from what the streaming analysis counted per rank: operations per level
// (the HieraAnalyses paper's Tables 1 and 6), per operation and call site (Tables 2 and 7), per
// operation (Tables 3 and 8), communication time per process (Table 4), and the wait states per
// rank, operation and call site.
#pragma once

#include "analyzer/analysis.hpp"
#include "analyzer/wait_states.hpp"
#include "common/message_kinds.hpp"

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::analyze {

struct op_stat {
  uint64_t count = 0;
  uint64_t ticks = 0; // inclusive
};

struct pair_stat {
  uint64_t messages = 0;
  uint64_t bytes = 0;
};
// The kinds of message_pair (analysis.hpp), as kept in rank_tables::pairs.
using common::pair_kind;
using common::pair_kind_names;
using enum common::pair_kind;

// One rank's counts, kept up to date as its operations close.
struct rank_tables {
  uint64_t first = UINT64_MAX, last = 0; // the rank's first and last event
  uint64_t comm_ticks = 0;               // inside outermost MPI operations
  std::vector<uint64_t> level_counts;
  std::unordered_map<uint64_t, op_stat> ops;     // (region << 32) | site
  std::unordered_map<uint64_t, pair_stat> pairs; // (pair_kind << 32) | receiver, sent by this rank

  void operation(uint32_t level, uint32_t region, uint32_t site, uint64_t ticks) {
    if (level >= level_counts.size())
      level_counts.resize(level + 1);
    ++level_counts[level];
    op_stat& stat = ops[(uint64_t{region} << 32) | site];
    ++stat.count;
    stat.ticks += ticks;
  }
};

struct wait_key {
  uint8_t kind; // a wait_pattern
  uint32_t rank, region, site;
  bool operator<(const wait_key& o) const {
    return std::tie(kind, rank, region, site) < std::tie(o.kind, o.rank, o.region, o.site);
  }
};
// Ticks waited and the operation instances that waited, per pattern, rank, region and call site.
using wait_totals = std::map<wait_key, std::pair<uint64_t, uint64_t>>;

// Fills the levels, operations, totals, processes and wait states of `out`. `ranks[r]` are rank
// r's counts. Call sites with the same file and line are one row.
void fill_tables(const definitions& defs, const std::vector<const rank_tables*>& ranks,
                 const wait_totals& waits, report& out);

} // namespace strata::analyze
