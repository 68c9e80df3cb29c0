// Call sites over ranks (STRATA_PROFILE_CALLSITES=1): each rank resolves its own return
// addresses (address-space randomisation differs between ranks) into source lines; at finalize
// the ranks' texts are merged per source line on the way up a reduction tree
// (site_reduction.hpp), so that rank 0 receives the job's distinct call sites, not every rank's.
// This file holds the text a set of ranks sends (its one writer and its one reader) and the
// merge, the same wherever ranks meet. No MPI here.
#pragma once

#include "profiler/rank_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
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

// This rank's call sites in table order, each return address resolved in this process (libdw),
// one rank each; slots with no calls, or whose function id is not one of `names`, are left out.
std::vector<callsite_total> resolve_callsites(const callsite_slot* slots, size_t capacity,
                                              const std::vector<std::string>& names);

// What a set of ranks knows at finalize besides the packed figures: their host names and their
// call sites, each merged in the order first seen. Merged in rank order, a set of consecutive
// ranks lists both as one rank after the other would have, wherever the ranks were split.
class ranks_summary {
public:
  // Adds a host name unless it is already listed.
  void add_host(std::string_view host);
  // Adds a call site, summed into the entry of the same function, file and line if there is one
  // (the first entry's caller stays).
  void add_callsite(const callsite_total& site);
  // Reads a text that `summary_text` wrote (of one rank or of a set of ranks) and adds its host
  // names and call sites. A text may be followed by NUL padding. Call-site lines that are not
  // nine fields with numbers where numbers belong are skipped.
  void add_text(std::string_view text);

  const std::vector<std::string>& hosts() const { return hosts_; }
  const std::vector<callsite_total>& callsites() const { return sites_; }
  // The call sites sorted by wasted time, then time, longest first (the record's order).
  std::vector<callsite_total> ordered_callsites() const;

private:
  std::vector<std::string> hosts_;
  std::vector<callsite_total> sites_;
  std::unordered_map<std::string, size_t> index_; // function, file and line -> sites_
};

// The text a set of ranks sends: its host names on the first line, tab separated; then one line
// per call site, "function file line caller calls time_ns bytes wasted_ns ranks", tab separated.
// Tabs and newlines inside the strings are made spaces.
std::string summary_text(const std::vector<std::string>& hosts,
                         const std::vector<callsite_total>& sites);
std::string summary_text(const ranks_summary& summary);

} // namespace strata::profiler
