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
  double work_cpu_s = 0; // this process's CPU time in its own work, not waiting in MPI
};

// Called by every process of `comm`; returns on every process, also when the archive is damaged
// (every process then has ok == false). Needs at most as many processes as the trace has
// locations.
//
// Each process reads its share in rounds of about `batch` records (the same number of rounds on
// every process, so that all move through the trace's time together) and exchanges what crosses
// to other processes after each, so what waits for a partner stays about one round's worth.
//
// `taps`, when given, also hears every event this process reads (before the analysis does) and
// observes the graph this process discovers (analysis.hpp's graph_observer): the exports that
// need the matched messages and the wait states.
inline constexpr uint64_t default_batch = uint64_t{1} << 20;
struct replay_taps {
  event_handler* events = nullptr;
  graph_observer* observer = nullptr;
};
replay_result replay_trace(const std::string& path, MPI_Comm comm, uint64_t batch = default_batch,
                           const replay_taps& taps = {});

} // namespace strata::analyze
