// Call sites over ranks (STRATA_PROFILE_CALLSITES=1): each rank resolves its own return
// addresses (address-space randomisation differs between ranks) into source lines, and sends
// them to rank 0 as tab-separated lines, which rank 0 merges per source line. This file holds
// the one writer and the one reader of those lines. No MPI here.
#pragma once

#include "profiler/rank_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// One source line calling one MPI function, on one rank or summed over ranks.
struct callsite_total {
  std::string function; // the MPI function
  std::string file;
  int line = 0;
  std::string caller; // the function containing the call
  uint64_t calls = 0;
  uint64_t time_ns = 0;
  uint64_t bytes = 0;
  uint64_t wasted_ns = 0; // over the machine model's t_max (the overhead module)
  int ranks = 0;          // ranks that made this call
};

// Adds `site` to the list, merging with an entry for the same function, file and line.
void merge_callsite(std::vector<callsite_total>& list, const callsite_total& site);

// This rank's call sites in table order, each return address resolved in this process (libdw),
// one rank each; slots with no calls, or whose function id is not one of `names`, are left out.
std::vector<callsite_total> resolve_callsites(const callsite_slot* slots, size_t capacity,
                                              const std::vector<std::string>& names);

// The lines a rank sends: "function file line caller calls time_ns bytes wasted_ns", tab
// separated, one per call site, tabs and newlines inside the strings made spaces.
std::string callsite_lines(const std::vector<callsite_total>& sites);

// Every rank's lines, merged per (function, file, line) and sorted by wasted time, then time,
// longest first. Lines that are not eight fields with numbers where numbers belong are skipped.
std::vector<callsite_total> merge_callsite_lines(std::string_view lines);

} // namespace strata::profiler
