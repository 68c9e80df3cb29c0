// Export of an OTF2 trace in the XML format of HieraAnalyses (Seraphim, Seraphim and Travieso,
// "HieraAnalyses: a tool for hierarchical analysis of parallel programs"): a configuration file
// (hieraCollector.xml) naming one file per rank (trace<r>.xml), each a <processor> element whose
// children nest as the operations did: <hieraMPI> for MPI calls, <hieraOOPS> for annotated
// regions (class and method split at the last "::").
#pragma once

#include <string>

namespace strata::analyze {

struct xml_export_result {
  std::string config; // path of hieraCollector.xml
  unsigned ranks = 0;
  unsigned long long operations = 0;
};

// Streams the archive twice (the first pass learns when operations with children end, since the
// format puts finish_time on the opening tag); memory holds one time per operation that has
// children, not the trace. Throws trace_error for a bad archive, std::runtime_error when the
// output cannot be written.
xml_export_result export_xml(const std::string& trace, const std::string& out_dir);

// HieraAnalyses' name of an MPI function: "MPI_Bcast" -> "broadcast", "MPI_Recv" -> "receive",
// otherwise lower case without the prefix.
std::string hiera_operation_name(const std::string& mpi_function);

} // namespace strata::analyze
