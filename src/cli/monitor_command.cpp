#include "cli/monitor_command.hpp"

#include "overlay/filter.hpp"
#include "overlay/frontend.hpp"
#include "overlay/tree.hpp"

#include <cstdio>

namespace strata::cli {

int monitor_read_command(const monitor_read_options& o) {
  overlay::filter_options options;
  for (const std::string& kv : o.filter_args) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "strata: error: --filter-arg '%s' is not key=value\n", kv.c_str());
      return 2;
    }
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::string error;
  auto f = overlay::make_filter(o.filter, options, error);
  if (f == nullptr) {
    std::fprintf(stderr, "strata: error: %s\n", error.c_str());
    return 2;
  }
  const std::vector<std::string> lines = overlay::read_round_files(o.dir, *f, o.fanout, error);
  if (!error.empty())
    std::fprintf(stderr, "strata: %s%s\n", lines.empty() ? "error: " : "", error.c_str());
  std::FILE* out = stdout;
  if (!o.output.empty() && o.output != "-") {
    out = std::fopen(o.output.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "strata: error: %s: cannot write\n", o.output.c_str());
      return 2;
    }
  }
  for (const std::string& l : lines)
    std::fprintf(out, "%s\n", l.c_str());
  if (out != stdout)
    std::fclose(out);
  return lines.empty() ? 1 : 0;
}

int monitor_plan_command(int ranks, int fanout) {
  const int tools = overlay::tool_ranks_for(ranks, fanout);
  std::printf("%d application ranks, fanout %d: %d tool ranks, %d processes\n", ranks, fanout,
              tools, ranks + tools);
  return 0;
}

} // namespace strata::cli
