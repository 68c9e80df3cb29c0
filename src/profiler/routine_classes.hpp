// Which MPI routines the profiler treats apart. What a routine is (a collective, a call that
// cannot wait) comes from the generated routine table (gen/routines.hpp); what only the profiler
// decides is here. No MPI here.
#pragma once

#include <string>

namespace strata::profiler {

// A collective, blocking, nonblocking or persistent, large-count or not, neighbourhood
// collectives included: its calls get a communicator-size histogram.
bool is_collective_name(const std::string& name);

// Calls that never wait for another process and take a few ns of the library's own bookkeeping
// (the table's "cheap" routines: queries, datatypes, groups, info objects, the clock): the
// profile counts them without timing them; the record says "timed": false for them.
bool counted_without_time(const std::string& name);

// Both of the above, and whether the routine names a peer, from one look-up in the routine
// table (the profile asks for every MPI function at start).
struct routine_class {
  bool collective = false;
  bool counted_without_time = false;
  bool with_peer = false; // names a peer (a destination or a source): point to point
};
routine_class classify_routine(const std::string& name);

// Functions whose time is not "MPI time": they bracket the measured interval.
bool excluded_from_mpi_time(const std::string& routine);

} // namespace strata::profiler
