// The profile module's settings, declared to the core (strata_module_options_v1) so that the
// stack can give them (--tools profile:callsites=1) and `strata modules profile` lists them; the
// core resolves each from the stack's argument, STRATA_PROFILE_<KEY> (STRATA_OVERHEAD_<KEY> for
// the overhead module) or an older variable name, or the default, and checks its type; `load`
// hands them to take() once. docs/profile.md and docs/overhead.md list them.
#pragma once

#include <strata/module.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace strata::profiler::options {

// The declarations of this module (profile or overhead).
const strata_module_options* declared();

// Keeps the resolved values; "" or one line naming the option whose value cannot be used.
std::string take(const strata_module_arg* args, int nargs);

bool callsites();                          // callsites: keep call sites
const char* counters();                    // counters: the events to count; null when none
const char* spool();                       // spool: null when not set (the install's default then)
const char* record_copy();                 // json: where a copy of the record goes; null if none
const char* report();                      // out: the user's report, "-" stdout; null if none
const char* machine_model();               // model: the machine model file; null when not set
bool lean_polls();                         // polls: lean (the default) or exact
uint32_t poll_sample_interval();           // poll_sample: the core times one poll in about N
std::chrono::milliseconds write_timeout(); // write_timeout_ms: how long a record's write may take
// mpi_t: read the library's MPI_T variables never, always, or where the job is long enough.
enum class mpi_t_reading { off, always, automatic };
mpi_t_reading mpi_t();
bool core_sums();        // core_sums: timed calls summed by the core
uint64_t hang_after_s(); // hang_after: seconds of waiting with no progress before a report; 0 off

} // namespace strata::profiler::options
