// `strata bench`: checks the options, then runs the flavor's strata-bench under its launcher.
// No MPI here; the benchmark itself is strata_bench.cpp.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>
#include <string>

namespace strata::bench {

struct bench_options {
  int ranks = 2;
  std::string output = "model.json";
  std::string mpi;   // "openmpi" or "mpich"; empty: Open MPI if built, else MPICH
  std::string study; // an operation: t_max against sample size instead of a model
  std::string ops;   // comma-separated operations; empty: all twelve
  int samples = 200;
  long long max_bytes = 4 << 20;
  double quantile = 0.95;
  double window_s = 0; // fit window in seconds; 0: the timer's resolution
  std::string prefix;  // the installation; empty: found from the running executable
};

// The operations strata-bench knows, as --ops and --study name them.
bool known_operation(const std::string& name);

// An error line (without "strata: error: ") for options that must not start a run; "" if fine.
std::string check_options(const bench_options& o);

// Runs the launcher and returns its status: 2 for bad options (nothing started), 127 when the
// launcher cannot be started, non-zero (130 when the launcher said 0) for an interrupted run.
int bench_command(const bench_options& o);

// Registers `bench` on `strata`.
std::unique_ptr<cli::wing_commands> add_model_commands(CLI::App& strata);

} // namespace strata::bench
