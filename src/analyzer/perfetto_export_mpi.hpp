// The Perfetto export (perfetto_export.hpp) by the processes of an MPI communicator: the analysis
// runs as `strata analyze` does on several processes (replay.hpp), each process writing the slices
// of its block of ranks and the flows and wait states it learns into files of its own, which are
// then copied, each by its process, to their places in the one output file.
#pragma once

#include "analyzer/perfetto_export.hpp"

#include <mpi.h>

#include <string>

namespace strata::analyze {

struct parallel_perfetto_result {
  bool ok = false;
  std::string error;       // at process 0: the first failing process's one-line reason
  perfetto_result written; // at process 0, when ok
};

// Called by every process of `comm`; returns on every process, also when the archive is damaged
// or the file cannot be written (every process then has ok == false, and no file is left).
parallel_perfetto_result export_perfetto_over(const std::string& trace, const std::string& out,
                                              const perfetto_selection& selection, MPI_Comm comm);

} // namespace strata::analyze
