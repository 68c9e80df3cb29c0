// The monitor module's settings: module arguments (monitor:key=value) over environment
// variables (STRATA_MONITOR_<KEY>), checked once in `load` with one message per problem.
#pragma once

#include "monitor/filter.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace strata::monitor {

struct options {
  std::string transport = "tree"; // tree | file | inline (no extra ranks)
  int fanout = 2;
  int ranks = 0;       // application ranks; 0: derived from the world size and the fanout
  double period_s = 0; // periodic offload (0: only at dumps, Pcontrol and finalize)
  std::string filter = "histogram";
  overlay::filter_options filter_options; // bins, metric, class-events
  std::string policy = "drop";            // drop | block, when the overlay falls behind
  int buffers = 4;                        // offloads in flight per rank
  int pcontrol_level = 5;
  std::string dir = "strata-monitor"; // file transport
  std::string out = "strata-monitor.jsonl";
  double timeout_s = 60;   // how long finalize waits for offloads still in flight
  double node_delay_s = 0; // tool nodes pause this long per packet: a slow overlay on purpose
};

// `lookup(key)` returns the argument or environment value for a key, or null.
// Returns an error message, empty when the options are valid.
std::string parse_options(const std::function<const char*(const char*)>& lookup, options& o);

} // namespace strata::monitor
