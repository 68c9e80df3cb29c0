// `strata monitor`: the file transport's front end, and the shape of a monitoring tree.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>
#include <string>
#include <vector>

namespace strata::monitor {

struct monitor_read_options {
  std::string dir;
  std::string filter = "histogram";
  std::vector<std::string> filter_args; // key=value: bins, metric, class-events
  int fanout = 8;
  std::string output; // "" or "-": standard output
};

// Reduces the rounds a job with transport=file left in DIR; one JSON line per round.
int monitor_read_command(const monitor_read_options& o);
// Serves the live view (src/monitor/web, bundled at build time into WEB_DIR) of the JSON lines in
// FILE, re-read at every request, on BIND:PORT (port 0: any free one; the address is printed).
int monitor_serve_command(const std::string& file, const std::string& bind, int port,
                          const std::string& web_dir);
// Where the built view lives: <prefix>/share/strata/web/monitor.
std::string monitor_web_dir();
// How many processes `strata run -np ranks --tools monitor:fanout=K` starts.
int monitor_plan_command(int ranks, int fanout);

// Registers `monitor read`, `monitor serve` and `monitor plan` on `strata`.
std::unique_ptr<cli::wing_commands> add_monitor_commands(CLI::App& strata);

} // namespace strata::monitor
