// The report's tables of the record's "communication" section: the heaviest pairs, and per rank
// the traffic it sent and received and its neighbours (the ranks it exchanged messages with).
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

} // namespace strata::record
