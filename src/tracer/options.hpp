// The trace module's settings. The core finds each value (the module's argument, else
// STRATA_TRACE_<KEY>, else the declared default) and checks its type; parse_options reads the
// values into `options` through one option binder (options.cpp: each option once, with its
// field, default and range) and checks what a type cannot say. No MPI.
#pragma once

#include "tracer/buffer.hpp"

#include <strata/module.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace strata::trace {

// The fields' defaults are the options' (options.cpp); parse_options sets them.
struct options {
  std::string dir;                  // empty: ./strata-trace-<jobid>
  std::string functions;            // MPI functions recorded (comma-separated globs)
  std::vector<std::string> regions; // user regions recorded (globs); empty: all
  double start_s = 0;               // record from this many seconds after MPI_Init ...
  double stop_s = -1;               // ... until this many (negative, not given: to the end)
  uint64_t limit_bytes = 0;         // per rank, in memory
  uint64_t prefault_bytes = 0;      // of it allocated and touched at MPI_Init
  limit_policy policy = limit_policy::stop;
  bool record_cheap_calls = false; // false: cheap calls (fn_info::cheap) are only counted
  bool analyze = false;            // analyse the archive at finalize, on the job's own ranks
  double analyze_limit_s = 0;      // ... unless the estimated time exceeds this

  bool region_wanted(const char* name) const;
};

using getenv_fn = std::function<const char*(const char*)>;

// The options the module declares (strata_module_options_v1), as the core's option mechanism
// takes them: the environment names are STRATA_TRACE_<KEY>, as they always were.
const strata_module_options* declared_options();

// Fills `out` with the defaults, then with the values the core resolved (key, text of the
// declared type); returns one line naming the option and its value, empty when all is well.
std::string parse_options(const std::vector<std::pair<std::string, std::string>>& values,
                          options& out);

// The job's id from the resource manager (Slurm, PBS, LSF, Flux), empty when there is none, and
// the directory name made of it: only [A-Za-z0-9._-].
std::string job_id_from_environment(const getenv_fn& getenv);
std::string default_trace_dir(const std::string& job_id);

} // namespace strata::trace
