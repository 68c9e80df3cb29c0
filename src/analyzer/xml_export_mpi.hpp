// The XML export (xml_export.hpp) by the processes of an MPI communicator: each writes the files
// of its block of ranks, the same blocks the replay reads; process 0 writes hieraCollector.xml.
// The files are byte for byte those of the serial export, since each rank's file depends on that
// rank's events only.
#pragma once

#include "analyzer/xml_export.hpp"

#include <mpi.h>

#include <string>

namespace strata::analyze {

struct parallel_xml_result {
  bool ok = false;
  std::string error;         // at process 0: the first failing process's one-line reason
  xml_export_result written; // at process 0, when ok: the configuration, ranks and operations
};

// Called by every process of `comm`; returns on every process, also when the archive is damaged
// or a file cannot be written (every process then has ok == false).
parallel_xml_result export_xml_over(const std::string& trace, const std::string& out_dir,
                                    MPI_Comm comm);

} // namespace strata::analyze
