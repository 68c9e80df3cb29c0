// The trace module's settings: module arguments (`trace:functions=MPI_Send*:limit=64M`) over
// STRATA_TRACE_* environment variables over defaults. No MPI.
#pragma once

#include "tracer/buffer.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace strata::trace {

struct options {
  std::string dir;                       // empty: ./strata-trace-<jobid>
  std::string functions = "*";           // MPI functions recorded (comma-separated globs)
  std::vector<std::string> regions;      // user regions recorded (globs); empty: all
  double start_s = 0;                    // record from this many seconds after MPI_Init ...
  double stop_s = -1;                    // ... until this many (negative: to the end)
  uint64_t limit_bytes = 256ull << 20;   // per rank, in memory
  uint64_t prefault_bytes = 16ull << 20; // of it allocated and touched at MPI_Init
  limit_policy policy = limit_policy::stop;
  bool analyze = false;        // analyse the archive at finalize, on the job's own ranks
  double analyze_limit_s = 60; // ... unless the estimated time exceeds this

  bool region_wanted(const char* name) const;
};

using getenv_fn = std::function<const char*(const char*)>;

// Fills `out`; returns an error line naming the bad setting, empty when all is well.
std::string parse_options(const std::vector<std::pair<std::string, std::string>>& args,
                          const getenv_fn& getenv, options& out);

// "64M", "1G", "4096", "512k" -> bytes; false on anything else.
bool parse_size(const std::string& text, uint64_t& bytes);

// The job's id from the resource manager (Slurm, PBS, LSF, Flux), empty when there is none, and
// the directory name made of it: only [A-Za-z0-9._-].
std::string job_id_from_environment(const getenv_fn& getenv);
std::string default_trace_dir(const std::string& job_id);

} // namespace strata::trace
