// Filters: what inner nodes of the overlay do to the data on its way up (the TAU over MRNet paper,
// section 4).
//
// A filter turns one rank's profile into a partial result (a byte string of its own encoding),
// merges the partial results of a node's children into one, and renders the root's result as a
// JSON object. A three-phase filter (histograms) also derives bounds from the root's phase-A
// result; the bounds travel back down the tree (phase B), and the nodes above the ranks bin the
// profiles they kept, merging the binned parts on the way up (phase C).
//
// Plug-ins: a shared object exporting `strata_overlay_filter_v1` (see filter_factory_v1) is
// loaded by path; built-in filters are found by name (raw, stats, histogram, classes).
#pragma once

#include "monitor/profile_round.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata::overlay {

using filter_options = std::map<std::string, std::string>;

class filter {
public:
  virtual ~filter() = default;
  virtual const char* name() const = 0;
  virtual bool three_phase() const { return false; }
  // Phase A.
  virtual std::string leaf(const rank_profile& p) const = 0;
  virtual std::string merge(const std::vector<std::string>& parts) const = 0;
  // Phase B, at the root: what goes down to the nodes above the ranks.
  virtual std::string bounds(const std::string& /*root_a*/) const { return {}; }
  // Phase C.
  virtual std::string bin(const rank_profile& /*p*/, const std::string& /*bounds*/) const {
    return {};
  }
  virtual std::string merge_binned(const std::vector<std::string>& /*parts*/) const { return {}; }
  // The root's result as one JSON object (text); `root_c` is null for one-phase filters.
  virtual std::string render(const std::string& root_a, const std::string* root_c) const = 0;
};

// The C entry point of a plug-in: returns a new filter (owned by the caller) or null, writing
// a one-line reason into `error`.
using filter_factory_v1 = filter* (*)(const filter_options* options, std::string* error);
#define STRATA_OVERLAY_FILTER_SYMBOL "strata_overlay_filter_v1"

using filter_factory = std::unique_ptr<filter> (*)(const filter_options& options,
                                                   std::string& error);

// Registers a filter under a name (later registrations of a name replace earlier ones).
void register_filter(const std::string& name, filter_factory factory);
// The names known, built-ins first.
std::vector<std::string> filter_names();
// A filter by registered name, or by path of a plug-in (a name containing '/' or ending in
// ".so"). Null with `error` set when unknown or refused.
std::unique_ptr<filter> make_filter(const std::string& name, const filter_options& options,
                                    std::string& error);

} // namespace strata::overlay
