#include "monitor/monitor_options.hpp"

#include "config/option_binder.hpp"

#include <strata/module.h>

#include <utility>

namespace strata::monitor {

namespace {

// Every option once: key, field, default, range, help.
config::option_binder bound_to(options& o) {
  config::option_binder b;
  b.add_enum("transport", o.transport, "tree",
             "tree: tool ranks beside the application reduce the rounds; file: rounds to files; "
             "inline: rounds reduced on rank 0 (no extra ranks)",
             {"tree", "file", "inline"})
      .add_uint("fanout", o.fanout, "2", "children per node of the tree", 2, 65536)
      .add_uint("ranks", o.ranks, "0", "application ranks (0: from the world size and the fanout)",
                0, 1 << 24)
      .add_duration("period", o.period_s, "0",
                    "offload a round this often (0: only at dumps, Pcontrol, end)", 1e6)
      .add_string("filter", o.filter, "histogram",
                  "raw, stats, histogram, classes or a plug-in .so")
      .add_passed_on("bins", "uint", o.filter_options, "histogram bins")
      .add_passed_on("metric", "enum:calls|time|bytes", o.filter_options, "what the histogram bins")
      .add_passed_on("class-events", "string", o.filter_options,
                     "classes filter: mpi or a glob of events")
      .add_enum("policy", o.policy, "drop", "when every buffer is in flight", {"drop", "block"})
      .add_uint("buffers", o.buffers, "4", "offloads in flight per rank", 1, 1024)
      .add_int("pcontrol", o.pcontrol_level, "5", "the MPI_Pcontrol level that offloads a round",
               -1000000, 1000000)
      .add_string("dir", o.dir, "strata-monitor", "the file transport's directory")
      .add_string("out", o.out, "strata-monitor.jsonl", "the front end's JSON lines")
      .add_duration("timeout", o.timeout_s, "60",
                    "how long MPI_Finalize waits for offloads in flight", 1e6)
      .add_duration("node-delay", o.node_delay_s, "0",
                    "tool nodes pause this long per packet (tests, benchmarks)", 60);
  return b;
}

} // namespace

const strata_module_options* declared_options() {
  static options unused;
  static config::option_binder declared = bound_to(unused);
  return declared.declared();
}

std::string parse_options(const std::vector<std::pair<std::string, std::string>>& values,
                          options& o, bool check_filter, std::unique_ptr<overlay::filter>* made) {
  o = options{};
  if (std::string problem = bound_to(o).take(values); !problem.empty())
    return problem;
  if (!check_filter)
    return {};
  std::string error;
  if (std::unique_ptr<overlay::filter> f = overlay::make_filter(o.filter, o.filter_options, error);
      f != nullptr) {
    if (made != nullptr)
      *made = std::move(f);
    return {};
  }
  // A built-in filter's complaint about one of its options starts with that option's key.
  for (const auto& [key, value] : o.filter_options)
    if (error.starts_with(key + ": "))
      return "option '" + key + "'" + error.substr(key.size());
  return "option 'filter': " + error;
}

std::string parse_options(const strata_module_arg* args, int nargs, options& o, bool check_filter,
                          std::unique_ptr<overlay::filter>* made) {
  return parse_options(config::argument_list(args, nargs), o, check_filter, made);
}

} // namespace strata::monitor
