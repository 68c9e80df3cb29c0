// Which MPI routines the profiler treats apart, decided from their names, in one place. No MPI
// here.
#pragma once

#include <string>

namespace strata::profiler {

// A collective, blocking or not, large-count or not: its calls get a communicator-size
// histogram and a message-size histogram.
bool is_collective_name(const std::string& name);

// Calls that never wait for another process and take a few ns of the library's own bookkeeping
// (queries, datatypes, groups, info objects, the clock): the profile counts them without timing
// them; the record says "timed": false for them. Large-count "_c" twins go with their base
// routine.
bool counted_without_time(std::string name);

// Functions whose time is not "MPI time": they bracket the measured interval.
bool excluded_from_mpi_time(const std::string& routine);

} // namespace strata::profiler
