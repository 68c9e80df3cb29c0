#include "analyzer/xml_export_mpi.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/process_agreement.hpp"
#include "analyzer/shared_anchor_probe.hpp"

#include <memory>

namespace strata::analyze {

parallel_xml_result export_xml_over(const std::string& trace, const std::string& out_dir,
                                    MPI_Comm comm) {
  parallel_xml_result result;
  const comm_info c = comm_info_of(comm);
  std::unique_ptr<definitions> defs;
  probe_anchor_once(c, trace); // each process opens three readers of it, one probe in all
  // The directory exists before any process writes into it.
  if (!step(c, result.error, [&] {
        defs = std::make_unique<definitions>(trace_reader(trace).defs());
        if (static_cast<size_t>(c.size) > defs->ranks())
          throw trace_error(defs->archive + ": " + std::to_string(c.size) +
                            " export processes for a trace of " + std::to_string(defs->ranks()) +
                            " locations; use at most " + std::to_string(defs->ranks()));
        if (c.rank == 0)
          create_xml_dir(out_dir);
      }))
    return result;
  const partition part{static_cast<uint32_t>(c.size), static_cast<uint32_t>(c.rank),
                       static_cast<uint32_t>(defs->ranks())};
  unsigned long long operations = 0;
  if (!step(c, result.error, [&] {
        operations =
            export_xml_ranks(trace, out_dir, part.first(part.self), part.first(part.self + 1));
      }))
    return result;
  unsigned long long total = 0;
  MPI_Reduce(&operations, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm);
  if (!step(c, result.error, [&] {
        if (c.rank != 0)
          return;
        result.written.config = write_xml_config(*defs, out_dir);
        result.written.ranks = static_cast<unsigned>(defs->ranks());
        result.written.operations = total;
        result.written.truncated =
            truncation_line(defs->notes, defs->global_offset, defs->timer_resolution);
      }))
    return result;
  result.ok = true;
  return result;
}

} // namespace strata::analyze
