#include "analyzer/perfetto_export_mpi.hpp"

#include "analyzer/process_agreement.hpp"
#include "analyzer/replay.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace strata::analyze {

namespace {
struct file_descriptor {
  int fd = -1;
  ~file_descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};
} // namespace

parallel_perfetto_result export_perfetto_over(const std::string& trace, const std::string& out,
                                              const perfetto_selection& selection, MPI_Comm comm) {
  parallel_perfetto_result result;
  const comm_info c = comm_info_of(comm);
  const std::string partial = out + ".partial";
  std::unique_ptr<definitions> defs;
  std::optional<perfetto_stream> slices, links;
  // Process 0 writes the beginning of the file and its own slices straight into it; the others
  // into scratch files beside it.
  if (!step(c, result.error, [&] {
        defs = std::make_unique<definitions>(trace_reader(trace).defs());
        check_selection(*defs, selection);
        if (static_cast<size_t>(c.size) > defs->ranks())
          throw trace_error(defs->archive + ": " + std::to_string(c.size) +
                            " export processes for a trace of " + std::to_string(defs->ranks()) +
                            " locations; use at most " + std::to_string(defs->ranks()));
        slices.emplace(c.rank == 0 ? partial : std::string(), out);
        links.emplace(std::string(), out);
        if (c.rank == 0)
          slices->append(perfetto_header(*defs, selection));
      })) {
    if (c.rank == 0 && slices)
      ::unlink(partial.c_str());
    return result;
  }
  const partition part{static_cast<uint32_t>(c.size), static_cast<uint32_t>(c.rank),
                       static_cast<uint32_t>(defs->ranks())};
  perfetto_writer writer(*defs, selection, part.first(part.self), part.first(part.self + 1),
                         *slices, *links, static_cast<uint64_t>(c.rank),
                         static_cast<uint64_t>(c.size));
  const replay_result replay =
      replay_trace(trace, comm, default_batch, {&writer.events(), &writer.observer()});
  bool ok = replay.ok;
  if (!ok)
    result.error = replay.error;
  uint64_t counted[3] = {0, 0, 0}; // operations, flows and wait states written here
  if (ok)
    ok = step(c, result.error, [&] {
      const perfetto_counts counts = writer.finish();
      counted[0] = counts.slices;
      counted[1] = counts.flows;
      counted[2] = counts.waits;
    });
  // Where each process's two parts go: every process's slices in process order, then every
  // process's flows and wait states, then the end.
  if (ok) {
    const uint64_t mine[2] = {slices->size(), links->size()};
    std::vector<uint64_t> sizes(2 * static_cast<size_t>(c.size));
    MPI_Allgather(mine, 2, MPI_UINT64_T, sizes.data(), 2, MPI_UINT64_T, comm);
    uint64_t slices_at = 0, links_at = 0, end = 0;
    for (int p = 0; p < c.size; ++p) {
      if (p < c.rank)
        slices_at += sizes[2 * static_cast<size_t>(p)];
      end += sizes[2 * static_cast<size_t>(p)];
    }
    links_at = end;
    for (int p = 0; p < c.size; ++p) {
      if (p < c.rank)
        links_at += sizes[2 * static_cast<size_t>(p) + 1];
      end += sizes[2 * static_cast<size_t>(p) + 1];
    }
    ok = step(c, result.error, [&] {
      // Process 0 writes into its own stream's file; the others open it.
      file_descriptor opened;
      if (c.rank != 0 && (opened.fd = ::open(partial.c_str(), O_WRONLY | O_CLOEXEC)) < 0)
        throw std::runtime_error(partial + ": cannot write (" + std::strerror(errno) + ")");
      const int file = c.rank == 0 ? slices->fd() : opened.fd;
      if (c.rank != 0)
        slices->copy_into(file, slices_at, partial);
      links->copy_into(file, links_at, partial);
      if (c.rank == 0) {
        const std::string footer = perfetto_footer(*defs, selection);
        if (::pwrite(file, footer.data(), footer.size(), static_cast<off_t>(end)) !=
            static_cast<ssize_t>(footer.size()))
          throw std::runtime_error(partial + ": write failed (" + std::strerror(errno) + ")");
      }
    });
  }
  uint64_t totals[3] = {0, 0, 0};
  if (ok) {
    MPI_Reduce(counted, totals, 3, MPI_UINT64_T, MPI_SUM, 0, comm);
    ok = step(c, result.error, [&] {
      if (c.rank == 0 && ::rename(partial.c_str(), out.c_str()) != 0)
        throw std::runtime_error(out + ": cannot rename the finished file into place (" +
                                 std::strerror(errno) + ")");
    });
  }
  if (!ok) {
    if (c.rank == 0)
      ::unlink(partial.c_str());
    return result;
  }
  if (c.rank == 0) {
    result.written.file = out;
    const uint32_t last =
        std::min<uint32_t>(selection.last_rank, static_cast<uint32_t>(defs->ranks() - 1));
    result.written.ranks = last - selection.first_rank + 1;
    result.written.counts = {totals[0], totals[1], totals[2]};
    result.written.truncated =
        truncation_line(defs->notes, defs->global_offset, defs->timer_resolution);
  }
  result.ok = true;
  return result;
}

} // namespace strata::analyze
