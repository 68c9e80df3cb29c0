// Writes OTF2 archives with known content, for the tests, the fuzz target and the analyzer
// benchmark, through the trace module's own writer (tracer/otf2_writer.hpp), so that they follow
// its conventions: one location per rank, MPI regions with MpiSend/MpiRecv/... records inside,
// collectives bracketed by MpiCollectiveBegin/End, call sites as the `strata:call_site` attribute
// of an Enter.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata::analyze {

class trace_builder {
public:
  static constexpr uint32_t world = 0; // MPI_COMM_WORLD, always defined
  static constexpr uint32_t none = UINT32_MAX;

  // Creates DIR/traces.otf2 (DIR must not hold an archive already).
  trace_builder(const std::string& dir, uint32_t ranks);
  ~trace_builder();
  trace_builder(const trace_builder&) = delete;
  trace_builder& operator=(const trace_builder&) = delete;

  uint32_t region(const std::string& name, bool mpi);
  uint32_t mpi(const std::string& name) { return region(name, true); }
  uint32_t site(const std::string& file, uint32_t line);
  uint32_t comm(const std::string& name, const std::vector<uint32_t>& world_ranks);

  // Raw records. Peers and roots are ranks within `comm`. Times in ns, non-decreasing per rank.
  void enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site = none);
  void leave(uint32_t rank, uint64_t t, uint32_t region);
  void send(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag, uint64_t bytes);
  void isend(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t request);
  void isend_complete(uint32_t rank, uint64_t t, uint64_t request);
  void irecv_request(uint32_t rank, uint64_t t, uint64_t request);
  void recv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
            uint64_t bytes);
  void irecv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request);
  void collective_begin(uint32_t rank, uint64_t t);
  // A record the analysis has no use for (Score-P writes it for each unsuccessful MPI_Test).
  void request_test(uint32_t rank, uint64_t t, uint64_t request);
  void collective_end(uint32_t rank, uint64_t t, uint32_t op, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received);

  // Whole MPI calls on MPI_COMM_WORLD, as the tracer records them.
  void mpi_send(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t dest, uint32_t tag,
                uint64_t bytes, uint32_t at = none);
  void mpi_recv(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t source, uint32_t tag,
                uint64_t bytes, uint32_t at = none);
  void mpi_isend(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t dest, uint32_t tag,
                 uint64_t bytes, uint64_t request, uint32_t at = none);
  void mpi_irecv(uint32_t rank, uint64_t t0, uint64_t t1, uint64_t request, uint32_t at = none);
  struct completion {
    bool receive;
    uint64_t request;
    uint32_t source = 0, tag = 0; // receives only: the matched message
    uint64_t bytes = 0;
  };
  // MPI_Wait (one completion) or MPI_Waitall.
  void mpi_wait(uint32_t rank, uint64_t t0, uint64_t t1, const std::vector<completion>& done,
                uint32_t at = none);
  // A collective: `name` such as "MPI_Barrier", `op` an OTF2_CollectiveOp, root a world rank or
  // none.
  void mpi_collective(uint32_t rank, const std::string& name, uint32_t op, uint64_t t0, uint64_t t1,
                      uint32_t root = none, uint32_t comm = world, uint32_t at = none);

  // Writes the definitions and closes the archive; called by the destructor if not before.
  void close();

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace strata::analyze
