// `strata monitor serve`'s /metrics: the latest complete round of a rounds file (docs/monitor.md,
// "Output") in the Prometheus text exposition format (site/prometheus.hpp), labelled by job:
// per-routine counts and rates since the round before, the MPI share of that interval, the
// per-rank statistics, the histogram filter's bins as Prometheus histograms, and the classes
// filter's classes.
#pragma once

#include <string>

namespace strata::monitor {

// The metrics of the rounds in `text` (JSON lines; an unfinished last line is left out) for
// job `job`. Lines that do not parse are skipped; no round gives the round count alone.
std::string monitor_metrics(const std::string& text, const std::string& job);

// The job label of a rounds file: its name without directory and extension.
std::string job_of_rounds_file(const std::string& path);

} // namespace strata::monitor
