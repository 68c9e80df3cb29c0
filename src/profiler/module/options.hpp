// The profile module's settings, declared to the core (strata_module_options_v1) so that the
// stack can give them (--tools profile:callsites=1) and `strata modules profile` lists them; the
// core resolves each from the stack's argument, STRATA_PROFILE_<KEY> (STRATA_OVERHEAD_<KEY> for
// the overhead module) or an older variable name, or the default, and checks its type; `load`
// hands them to take() once. Each option is one line of options.cpp (key, field, default, range,
// help); docs/profile.md and docs/overhead.md list them for people.
#pragma once

#include <strata/module.h>

#include <cstdint>
#include <string>

namespace strata::profiler::options {

// mpi_t: read the library's MPI_T variables never, always, or where the job is long enough.
enum class mpi_t_reading { off, always, automatic };

// The values, each field set by its option (options.cpp says which); text left empty is unset.
struct settings {
  bool callsites = false;     // keep call sites (always in the overhead module)
  std::string counters;       // the events to count
  std::string spool;          // empty: the install's spool
  std::string json;           // where a copy of the record goes
  std::string out;            // the user's report, "-" standard output
  std::string model;          // the machine model file
  bool lean_polls = true;     // polls: lean or exact
  uint32_t poll_sample = 0;   // the core times one poll in about N
  double write_timeout_s = 0; // how long a record's write may take
  bool core_sums = true;      // timed calls summed by the core
  bool communication = true;  // the record's communication section (never the overhead module's)
  mpi_t_reading mpi_t = mpi_t_reading::automatic;
  double hang_after_s = 0; // seconds of waiting with no progress before a report; 0 off
};

// The declarations of this module (profile or overhead).
const strata_module_options* declared();

// Keeps the resolved values; "" or one line naming the option whose value cannot be used.
std::string take(const strata_module_arg* args, int nargs);

// The values taken at load.
const settings& current();

} // namespace strata::profiler::options
