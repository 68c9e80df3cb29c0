// The tracer's view of MPI routines, from the one generated table (gen/routines.hpp): which
// records a call makes (a message, a request, a collective) and which OTF2 region role its region
// gets. No MPI.
#pragma once

#include <otf2/OTF2_Definitions.h>
#include <otf2/OTF2_Events.h>

#include <cstdint>
#include <string>

namespace strata::trace {

// What a function is, for the records it makes and the OTF2 region role it gets.
enum class fn_class : uint8_t {
  other,
  send,     // blocking send: MpiSend
  isend,    // MpiIsend, completed in a Wait/Test
  recv,     // blocking receive: MpiRecv with the status's source and tag
  irecv,    // MpiIrecvRequest, MpiIrecv in the completing Wait/Test
  sendrecv, // MpiSend and MpiRecv
  collective,
  completion, // Wait/Test family (wrapped)
  p2p_other,  // probes, cancel: point-to-point without message records
  send_init,  // a persistent send (MPI_Send_init & co.): each start of it is an MpiIsend
  recv_init,  // a persistent receive (MPI_Recv_init): each start an MpiIrecvRequest
  start,      // MPI_Start: starts a persistent request
  start_all,  // MPI_Startall: starts an array of them
  one_sided,  // an operation on a window's target: RmaPut, RmaGet or RmaAtomic (rma below)
};

// What a one-sided operation moves, as OTF2 writes it.
enum class rma_kind : uint8_t { none, put, get, atomic };

struct fn_info {
  fn_class cls = fn_class::other;
  OTF2_CollectiveOp op = OTF2_COLLECTIVE_OP_BARRIER; // fn_class::collective only
  OTF2_RegionRole role = OTF2_REGION_ROLE_FUNCTION;
  rma_kind rma = rma_kind::none;                               // fn_class::one_sided only
  OTF2_RmaAtomicType atomic = OTF2_RMA_ATOMIC_TYPE_ACCUMULATE; // rma_kind::atomic only
  // A partitioned request's init (MPI_Psend_init, MPI_Precv_init; cls send_init or recv_init):
  // each start is one message of every partition, marked as such in the trace.
  bool partitioned = false;
  // Local and a few ns (MPI_Wtime, MPI_Comm_rank, ...: the table's cheap routines): counted per
  // rank rather than recorded, unless the module's cheap_calls option says record.
  bool cheap = false;
  bool wanted = false;  // selected by the module's function filter (not set by classify)
  bool counted = false; // cheap and only counted, by the module's option (not set by classify)
};

// By name ("MPI_Send", "MPI_Send_c"); a name the table does not know is a plain function.
// Collective records (fn_class::collective) are made for the blocking collectives OTF2 has an
// operation for; nonblocking, persistent and neighbourhood collectives are calls with their
// collective's role.
fn_info classify(const std::string& name);

// The region role Score-P gives such a routine: point to point for the point-to-point and request
// routines, the collective's role (barrier, one to all, all to one, all to all, other), RMA for
// one-sided and file I/O for MPI-IO routines, function for the rest.
OTF2_RegionRole role_of(const fn_info& f);

} // namespace strata::trace
