// The analysis of one trace by the processes of an MPI communicator (the analysis worker under
// mpirun, or the application's own ranks at finalize): each process reads its block of ranks
// with OTF2 readers of those locations only, and what a receive or a collective needs of partners
// another process reads travels over MPI, in each channel's order. Process 0 assembles the same
// report the serial analysis gives.
#pragma once

#include "analyzer/analysis.hpp"

#include <mpi.h>

#include <string>

namespace strata::analyze {

struct replay_result {
  bool ok = false;
  std::string error; // at process 0: the first failing process's one-line reason
  report rep;        // at process 0, when ok
  uint32_t first_rank = 0, last_rank = 0; // this process's share of the trace's ranks
  uint64_t events_read = 0;               // by this process
};

// Called by every process of `comm`; returns on every process, also when the archive is damaged
// (every process then has ok == false). Needs at most as many processes as the trace has
// locations.
replay_result replay_trace(const std::string& path, MPI_Comm comm);

} // namespace strata::analyze
