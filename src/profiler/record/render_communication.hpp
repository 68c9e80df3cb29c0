// The report's tables of the record's "communication" section: the heaviest point-to-point pairs,
// per rank the traffic it sent and received and its neighbours (the ranks it exchanged messages
// with), each kind's totals, the heaviest one-sided pairs (origin to target) each kind apart, and
// the collectives by communicator (the heaviest, and each member of the small ones).
// Plain rows; render.cpp escapes and lays them out per format.
#pragma once

#include "profiler/record/record.hpp"

#include <string>
#include <vector>

namespace strata::record {

struct communication_table {
  std::string title;
  bool headed = false; // a first row of column headings
  std::vector<std::vector<std::string>> rows;
  std::string note;
};

std::vector<communication_table> communication_tables(const communication_section& section,
                                                      std::uint64_t ranks);

// The HTML report's heat map of the pairs: an inline SVG (no script), rank by rank up to 256
// ranks, beyond in square groups of ranks (256 cells a side at most); each cell's figures in its
// title. Empty when no pair is listed.
std::string communication_heat_map_svg(const communication_section& section, std::uint64_t ranks);

} // namespace strata::record
