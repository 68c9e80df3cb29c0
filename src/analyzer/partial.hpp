// One analysis process's share of a report: the counts of its ranks, the wait states it computed
// and the counters of what it could not match; and the report assembled from every process's
// share. The serial analysis is the case of one process, so both print the same report.
#pragma once

#include "analyzer/analysis.hpp"
#include "analyzer/tables.hpp"

#include <cstdint>
#include <vector>

namespace strata::analyze {

// Receives completed within this many later receives of their rank, or given up.
inline constexpr size_t max_reorder = size_t{1} << 16;

struct partial_result {
  uint64_t events = 0;
  uint64_t open_at_end = 0;
  uint64_t unbalanced = 0;
  uint64_t abandoned_receives = 0;
  uint64_t foreign_collectives = 0;
  uint64_t unmatched_sends = 0;
  uint64_t unmatched_receives = 0;
  uint64_t messages = 0;
  uint64_t collectives = 0;
  uint64_t incomplete_collectives = 0;
  std::vector<uint32_t> ranks; // whose tables follow, in the same order
  std::vector<rank_tables> tables;
  wait_totals waits;
};

// A flat form for sending between processes, and back. decode_partial throws trace_error on
// words that are not an encoded partial result.
std::vector<uint64_t> encode_partial(const partial_result& part);
partial_result decode_partial(const uint64_t* words, size_t count);

// The report from the shares of every process: counts summed, tables in rank order, wait states
// merged. Throws trace_error when the shares do not cover every rank of `defs` exactly once.
report assemble_report(const definitions& defs, std::vector<partial_result>& parts);

} // namespace strata::analyze
