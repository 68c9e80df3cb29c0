// The monitor module's settings: each option declared once with its field, default and range
// (monitor_options.cpp, through the option binder); the core resolves the values (module
// arguments over STRATA_MONITOR_<KEY> over the defaults) and checks their types, parse_options
// reads them and checks what a type cannot say (the filter), with one message per problem.
#pragma once

#include "monitor/filter.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// include/strata/module.h's types, declared only: that header takes the module's MPI flavor from
// the <mpi.h> included before it, and the module includes this header first.
struct strata_module_arg;
struct strata_module_options;

namespace strata::monitor {

// The fields' defaults are the options' (monitor_options.cpp); parse_options sets them.
struct options {
  std::string transport; // tree | file | inline (no extra ranks)
  int fanout = 0;
  int ranks = 0;       // application ranks; 0: derived from the world size and the fanout
  double period_s = 0; // periodic offload (0: only at dumps, Pcontrol and finalize)
  std::string filter;
  overlay::filter_options filter_options; // bins, metric, class-events, as given
  std::string policy;                     // drop | block, when the overlay falls behind
  int buffers = 0;                        // offloads in flight per rank
  int pcontrol_level = 0;
  std::string dir; // file transport
  std::string out;
  double timeout_s = 0;    // how long finalize waits for offloads still in flight
  double node_delay_s = 0; // tool nodes pause this long per packet: a slow overlay on purpose
};

// What strata_module_options_v1 returns.
const strata_module_options* declared_options();

// Fills `o` with the defaults, then with the values given (key, text); returns one line naming
// the option and its value, empty when the options are valid. `check_filter`: also make the
// filter, to refuse an unknown one or its bad arguments; `made`, when given, keeps that filter
// (load makes it once: a plug-in's making may cost, or count).
std::string parse_options(const std::vector<std::pair<std::string, std::string>>& values,
                          options& o, bool check_filter = true,
                          std::unique_ptr<overlay::filter>* made = nullptr);
std::string parse_options(const strata_module_arg* args, int nargs, options& o,
                          bool check_filter = true,
                          std::unique_ptr<overlay::filter>* made = nullptr);

} // namespace strata::monitor
