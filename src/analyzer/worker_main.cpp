// strata-analyze: the analysis as an MPI program, one per MPI flavor (next to that flavor's core).
// `strata analyze` runs it when started by a launcher (mpirun -np N strata analyze TRACE) or with
// --np N; the `strata` command itself links no MPI.
//
//   strata-analyze [--json | --csv] [--stats] [--batch N] TRACE
//   strata-analyze --xml DIR TRACE
//   strata-analyze --perfetto FILE [--from S] [--to S] [--ranks A-B] TRACE
//
// --xml DIR: the HieraAnalyses XML export into DIR instead (`strata trace export --xml`), each
// process writing the files of its block of ranks. --perfetto FILE: the Chrome trace-event JSON
// export into FILE (`strata trace export --perfetto`, which has checked the selection's syntax).
// --stats: each process writes one line of its own figures to stderr (the benchmark's).
// --batch N: records each process reads between exchanges (default 1 Mi; the tests use small
// ones to exercise many rounds).
#include "analyzer/perfetto_export_mpi.hpp"
#include "analyzer/render.hpp"
#include "analyzer/replay.hpp"
#include "analyzer/xml_export_mpi.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {
double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}
// The XML export, finished with MPI_Finalize; process 0 prints what the serial export prints.
int export_xml_files(const std::string& trace, const std::string& dir, int rank) {
  const strata::analyze::parallel_xml_result x =
      strata::analyze::export_xml_over(trace, dir, MPI_COMM_WORLD);
  if (rank == 0) {
    if (x.ok) {
      std::printf("%s: %u ranks, %llu operations\n", x.written.config.c_str(), x.written.ranks,
                  x.written.operations);
      std::fflush(stdout);
      if (!x.written.truncated.empty())
        std::fprintf(stderr, "strata trace export: warning: %s\n", x.written.truncated.c_str());
    } else
      std::fprintf(stderr, "strata trace export: %s\n", x.error.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return x.ok ? 0 : 1;
}
// The Perfetto export, finished with MPI_Finalize; process 0 prints what the serial export prints.
int export_perfetto_file(const std::string& trace, const std::string& file,
                         const strata::analyze::perfetto_selection& selection, int rank) {
  const strata::analyze::parallel_perfetto_result x =
      strata::analyze::export_perfetto_over(trace, file, selection, MPI_COMM_WORLD);
  if (rank == 0) {
    if (x.ok)
      strata::analyze::print_perfetto_result(x.written);
    else
      std::fprintf(stderr, "strata trace export: %s\n", x.error.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return x.ok ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string format = "text";
  std::string trace;
  std::string xml_dir;
  std::string perfetto_file;
  strata::analyze::perfetto_selection selection;
  bool usage = false;
  bool stats = false;
  uint64_t batch = strata::analyze::default_batch;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      format = "json";
    else if (std::strcmp(argv[i], "--csv") == 0)
      format = "csv";
    else if (std::strcmp(argv[i], "--xml") == 0 && i + 1 < argc)
      xml_dir = argv[++i];
    else if (std::strcmp(argv[i], "--perfetto") == 0 && i + 1 < argc)
      perfetto_file = argv[++i];
    else if (std::strcmp(argv[i], "--from") == 0 && i + 1 < argc)
      selection.from_s = std::strtod(argv[++i], nullptr);
    else if (std::strcmp(argv[i], "--to") == 0 && i + 1 < argc)
      selection.to_s = std::strtod(argv[++i], nullptr);
    else if (std::strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
      try {
        strata::analyze::parse_rank_range(argv[++i], selection);
      } catch (const std::invalid_argument&) {
        usage = true;
      }
    } else if (std::strcmp(argv[i], "--stats") == 0)
      stats = true;
    else if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
      batch = std::strtoull(argv[++i], nullptr, 10);
    else if (argv[i][0] != '-' && trace.empty())
      trace = argv[i];
    else
      usage = true;
  }
  if (usage || trace.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "usage: strata-analyze [--json | --csv] [--stats] [--batch N] TRACE\n"
                           "       strata-analyze --xml DIR TRACE\n"
                           "       strata-analyze --perfetto FILE [--from S] [--to S] "
                           "[--ranks A-B] TRACE\n");
    MPI_Finalize();
    return 2;
  }
  if (!xml_dir.empty())
    return export_xml_files(trace, xml_dir, rank);
  if (!perfetto_file.empty())
    return export_perfetto_file(trace, perfetto_file, selection, rank);
  const double start = MPI_Wtime();
  const double cpu_start = cpu_seconds();
  const strata::analyze::replay_result r =
      strata::analyze::replay_trace(trace, MPI_COMM_WORLD, batch);
  if (stats) {
    const double cpu = cpu_seconds() - cpu_start;
    rusage self{};
    ::getrusage(RUSAGE_SELF, &self);
    std::fprintf(stderr,
                 "strata-analyze stats: process %d ranks %u-%u events %llu cpu_s %.4f "
                 "peak_rss_kib %ld wall_s %.4f work_cpu_s %.4f\n",
                 rank, r.first_rank, r.last_rank, static_cast<unsigned long long>(r.events_read),
                 cpu, self.ru_maxrss, MPI_Wtime() - start, r.work_cpu_s);
  }
  if (rank == 0) {
    if (r.ok) {
      strata::analyze::print_report(r.rep, format, "strata analyze");
    } else {
      std::fprintf(stderr, "strata analyze: %s\n", r.error.c_str());
    }
  }
  MPI_Finalize();
  return r.ok ? 0 : 1;
}
