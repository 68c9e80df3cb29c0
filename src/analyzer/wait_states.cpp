#include "analyzer/wait_states.hpp"

#include <otf2/OTF2_Events.h>

namespace strata::analyze {

bool collective_pattern(uint32_t op, wait_pattern& kind) {
  switch (op) {
  case OTF2_COLLECTIVE_OP_BARRIER:
    kind = wait_at_barrier;
    return true;
  case OTF2_COLLECTIVE_OP_BCAST:
  case OTF2_COLLECTIVE_OP_SCATTER:
  case OTF2_COLLECTIVE_OP_SCATTERV:
    kind = late_broadcast;
    return true;
  case OTF2_COLLECTIVE_OP_GATHER:
  case OTF2_COLLECTIVE_OP_GATHERV:
  case OTF2_COLLECTIVE_OP_REDUCE:
    kind = early_reduce;
    return true;
  case OTF2_COLLECTIVE_OP_ALLGATHER:
  case OTF2_COLLECTIVE_OP_ALLGATHERV:
  case OTF2_COLLECTIVE_OP_ALLTOALL:
  case OTF2_COLLECTIVE_OP_ALLTOALLV:
  case OTF2_COLLECTIVE_OP_ALLTOALLW:
  case OTF2_COLLECTIVE_OP_ALLREDUCE:
  case OTF2_COLLECTIVE_OP_REDUCE_SCATTER:
  case OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK:
    kind = wait_at_nxn;
    return true;
  default:
    return false;
  }
}

} // namespace strata::analyze
