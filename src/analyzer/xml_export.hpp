// Export of an OTF2 trace in the XML format of HieraAnalyses (Seraphim, Seraphim and Travieso,
// "HieraAnalyses: a tool for hierarchical analysis of parallel programs"): a configuration file
// (hieraCollector.xml) naming one file per rank (trace<r>.xml), each a <processor> element whose
// children nest as the operations did: <hieraMPI> for MPI calls, <hieraOOPS> for annotated
// regions (class and method split at the last "::").
#pragma once

#include "analyzer/trace_reader.hpp"

#include <cstdint>
#include <string>

namespace strata::analyze {

struct xml_export_result {
  std::string config; // path of hieraCollector.xml
  unsigned ranks = 0;
  unsigned long long operations = 0;
  std::string truncated; // the trace is truncated (analyzer/recording_notes.hpp); empty if not
};

// Streams the archive twice (the first pass learns when operations with children end, since the
// format puts finish_time on the opening tag); memory holds one time per operation that has
// children, not the trace. Throws trace_error for a bad archive, std::runtime_error when the
// output cannot be written.
xml_export_result export_xml(const std::string& trace, const std::string& out_dir);

// The parts of export_xml, for several processes that share the ranks (xml_export_mpi.hpp):
// the output directory; the files of ranks [first, last) only (OTF2 opens just their event
// files), returning the operations written; and hieraCollector.xml, returning its path.
void create_xml_dir(const std::string& out_dir);
unsigned long long export_xml_ranks(const std::string& trace, const std::string& out_dir,
                                    uint32_t first, uint32_t last);
std::string write_xml_config(const definitions& defs, const std::string& out_dir);

// HieraAnalyses' name of an MPI function: "MPI_Bcast" -> "broadcast", "MPI_Recv" -> "receive",
// otherwise lower case without the prefix.
std::string hiera_operation_name(const std::string& mpi_function);

} // namespace strata::analyze
