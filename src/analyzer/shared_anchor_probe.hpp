// The anchor probe (anchor_probe.hpp) once for all the analysis processes of a communicator, not
// once per process: process 0 probes the archive's anchor file and sends the file's bytes and its
// verdict to the others, which remember that verdict for those bytes. Each process's reader then
// takes it where its own anchor file has the same bytes (else it probes that file itself), so a
// damaged anchor gives every process the same error, agreed on as any other failure.
#pragma once

#include "analyzer/anchor_probe.hpp"
#include "analyzer/process_agreement.hpp"
#include "analyzer/trace_reader.hpp"

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace strata::analyze {

// Anchor files hold a few hundred bytes; a larger one (damaged) is probed by every process.
inline constexpr uint64_t shared_anchor_most = uint64_t{1} << 20;

// Called by every process of c.comm; returns on every one (two broadcasts, the second only when
// process 0 has a verdict to share).
inline void probe_anchor_once(const comm_info& c, const std::string& path) {
  if (c.size < 2) // the reader probes
    return;
  std::string message; // at process 0: the anchor's bytes, then the verdict
  uint64_t sizes[2] = {0, 0};
  if (c.rank == 0) {
    try {
      anchor_check checked = check_anchor(anchor_path(path));
      if (checked.bytes && checked.bytes->size() + checked.verdict.size() <= shared_anchor_most) {
        sizes[0] = checked.bytes->size();
        sizes[1] = checked.verdict.size();
        message = std::move(*checked.bytes) + checked.verdict;
      }
    } catch (const std::exception&) {
      // No anchor file here (the readers say so), or no memory: each process probes its own.
    }
  }
  MPI_Bcast(sizes, 2, MPI_UINT64_T, 0, c.comm);
  if (sizes[0] == 0)
    return;
  const uint64_t length = sizes[0] + sizes[1];
  if (c.rank != 0)
    message.resize(length);
  MPI_Bcast(message.data(), static_cast<int>(length), MPI_CHAR, 0, c.comm);
  if (c.rank != 0)
    remember_anchor_verdict(message.substr(0, sizes[0]), message.substr(sizes[0]));
}

} // namespace strata::analyze
