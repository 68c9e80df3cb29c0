// strata-analyze: the analysis as an MPI program, one per MPI flavor (next to that flavor's core).
// `strata analyze` runs it when started by a launcher (mpirun -np N strata analyze TRACE) or with
// --np N; the `strata` command itself links no MPI.
//
//   strata-analyze [--json | --csv] TRACE
#include "analyzer/render.hpp"
#include "analyzer/replay.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string format = "text";
  std::string trace;
  bool usage = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      format = "json";
    else if (std::strcmp(argv[i], "--csv") == 0)
      format = "csv";
    else if (argv[i][0] != '-' && trace.empty())
      trace = argv[i];
    else
      usage = true;
  }
  if (usage || trace.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "usage: strata-analyze [--json | --csv] TRACE\n");
    MPI_Finalize();
    return 2;
  }
  const strata::analyze::replay_result r = strata::analyze::replay_trace(trace, MPI_COMM_WORLD);
  if (rank == 0) {
    if (r.ok) {
      const std::string text = format == "json"  ? strata::analyze::render_json(r.rep)
                               : format == "csv" ? strata::analyze::render_csv(r.rep)
                                                 : strata::analyze::render_text(r.rep);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } else {
      std::fprintf(stderr, "strata analyze: %s\n", r.error.c_str());
    }
  }
  MPI_Finalize();
  return r.ok ? 0 : 1;
}
