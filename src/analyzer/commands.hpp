// `strata analyze` and `strata trace export --xml`: what the command line does with the library.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>
#include <string>

namespace strata::analyze {

struct analyze_options {
  std::string trace;
  std::string format = "text"; // "text", "json" or "csv"
  int processes = 0;           // --np: start this many analysis processes with mpirun
  std::string mpi;             // --mpi: their MPI flavor (default: the first one installed)
};

// Prints the report on stdout; errors as one line on stderr. Returns the exit status. Started by
// an MPI launcher, or with processes > 0, it runs the flavor's analysis worker (strata-analyze)
// instead, which does the same over several processes.
int analyze_command(const analyze_options& o);

struct export_options {
  std::string trace;
  std::string out_dir; // default: TRACE-xml next to the archive
  int processes = 0;   // --np: as analyze_options
  std::string mpi;     // --mpi: as analyze_options
};

// Writes the HieraAnalyses XML files into out_dir; under a launcher, or with processes > 0,
// through the flavor's worker, each process writing its block of ranks.
int export_xml_command(const export_options& o);

struct perfetto_options {
  std::string trace;
  std::string out_file; // default: TRACE-perfetto.json next to the archive
  std::string from, to; // seconds from the start of the trace, as given
  std::string ranks;    // "A-B" or "A", as given
  int processes = 0;    // --np: as analyze_options
  std::string mpi;      // --mpi: as analyze_options
};

// Writes the trace as Chrome trace-event JSON (analyzer/perfetto_export.hpp); under a launcher,
// or with processes > 0, through the flavor's worker, each process analysing and writing its
// block of ranks.
int export_perfetto_command(const perfetto_options& o);

// Registers `analyze` and `trace export` on `strata`.
std::unique_ptr<cli::wing_commands> add_analyzer_commands(CLI::App& strata);

} // namespace strata::analyze
