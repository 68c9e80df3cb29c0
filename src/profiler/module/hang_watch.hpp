// The rank's hang state file, kept by a thread of the module from what the call path notes
// (strata/where.h), and with the option hang_after rank 0's watch over the job (hang_watch.cpp).
#pragma once

#include "state.hpp"

namespace strata::profiler {

// In mpi_ready, once the spool and the job's key are known: the file and its thread.
void start_hang_watch(module_state& s);
// At MPI_Finalize (the file then says so) or when the module ends otherwise.
void stop_hang_watch(bool finalized);
// Once the job's record is in the spool: the state file is no longer needed.
void remove_hang_state();

} // namespace strata::profiler
