// The tracer's classification of MPI routines: which records a call makes (a message, a request,
// a collective) and which OTF2 region role its region gets. The only place the tracer knows MPI
// routines by name. No MPI.
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
  p2p_other,  // probes, persistent requests, cancel: point-to-point without message records
};

struct fn_info {
  fn_class cls = fn_class::other;
  OTF2_CollectiveOp op = OTF2_COLLECTIVE_OP_BARRIER;
  bool wanted = false; // selected by the module's function filter (not set by classify)
};

// By name; large-count twins (`_c`) are classified as the routine they extend.
fn_info classify(const std::string& full_name);

// The region role Score-P gives such a routine.
OTF2_RegionRole role_of(const fn_info& f);

} // namespace strata::trace
