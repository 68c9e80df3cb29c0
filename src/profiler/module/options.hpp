// The profile module's settings, each read from the environment where the module needs it
// (docs/profile.md and docs/overhead.md list them).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::profiler::options {

bool callsites();            // STRATA_PROFILE_CALLSITES: set, not empty, not "0"
const char* counters();      // STRATA_COUNTERS; null when unset or empty
const char* spool();         // STRATA_SPOOL; null when unset
const char* record_copy();   // STRATA_PROFILE_JSON: where a copy of the record goes; null if none
const char* report();        // STRATA_PROFILE_OUT: the user's report, "-" stdout; null if none
const char* machine_model(); // STRATA_MODEL; null when unset or empty

// STRATA_PROFILE_POLLS: "lean" (the default) or "exact"; anything else is a problem, and lean.
bool lean_polls(std::vector<std::string>& problems);

// STRATA_PROFILE_POLL_SAMPLE=N (1 to 1000000, default 64): the core times one poll in about N.
uint32_t poll_sample_interval(std::vector<std::string>& problems);

// STRATA_WRITE_TIMEOUT_MS (default 10000): how long a record's write may take.
std::chrono::milliseconds write_timeout();

} // namespace strata::profiler::options
