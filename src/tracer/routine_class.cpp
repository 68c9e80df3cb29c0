#include "tracer/routine_class.hpp"

#include "gen/routines.hpp"

#include <string_view>

namespace strata::trace {
namespace {

using routines::collective_op;

// OTF2's operation for a collective of the table; false for the neighbourhood collectives, which
// OTF2 has none for.
bool otf2_operation(collective_op op, OTF2_CollectiveOp& out) {
  switch (op) {
  case collective_op::barrier:
    out = OTF2_COLLECTIVE_OP_BARRIER;
    return true;
  case collective_op::bcast:
    out = OTF2_COLLECTIVE_OP_BCAST;
    return true;
  case collective_op::gather:
    out = OTF2_COLLECTIVE_OP_GATHER;
    return true;
  case collective_op::gatherv:
    out = OTF2_COLLECTIVE_OP_GATHERV;
    return true;
  case collective_op::scatter:
    out = OTF2_COLLECTIVE_OP_SCATTER;
    return true;
  case collective_op::scatterv:
    out = OTF2_COLLECTIVE_OP_SCATTERV;
    return true;
  case collective_op::allgather:
    out = OTF2_COLLECTIVE_OP_ALLGATHER;
    return true;
  case collective_op::allgatherv:
    out = OTF2_COLLECTIVE_OP_ALLGATHERV;
    return true;
  case collective_op::alltoall:
    out = OTF2_COLLECTIVE_OP_ALLTOALL;
    return true;
  case collective_op::alltoallv:
    out = OTF2_COLLECTIVE_OP_ALLTOALLV;
    return true;
  case collective_op::alltoallw:
    out = OTF2_COLLECTIVE_OP_ALLTOALLW;
    return true;
  case collective_op::reduce:
    out = OTF2_COLLECTIVE_OP_REDUCE;
    return true;
  case collective_op::allreduce:
    out = OTF2_COLLECTIVE_OP_ALLREDUCE;
    return true;
  case collective_op::reduce_scatter:
    out = OTF2_COLLECTIVE_OP_REDUCE_SCATTER;
    return true;
  case collective_op::reduce_scatter_block:
    out = OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK;
    return true;
  case collective_op::scan:
    out = OTF2_COLLECTIVE_OP_SCAN;
    return true;
  case collective_op::exscan:
    out = OTF2_COLLECTIVE_OP_EXSCAN;
    return true;
  default:
    return false;
  }
}

// The role Score-P gives a collective: by who waits for whom.
OTF2_RegionRole collective_role(const routines::info& r) {
  switch (r.shape()) {
  case routines::collective_shape::barrier:
    return OTF2_REGION_ROLE_BARRIER;
  case routines::collective_shape::one_to_all:
    return OTF2_REGION_ROLE_COLL_ONE2ALL;
  case routines::collective_shape::all_to_one:
    return OTF2_REGION_ROLE_COLL_ALL2ONE;
  case routines::collective_shape::all_to_all:
    return OTF2_REGION_ROLE_COLL_ALL2ALL;
  default: // prefix (scan, exscan) and neighbourhood collectives
    return OTF2_REGION_ROLE_COLL_OTHER;
  }
}

// An operation on a window's target: what it moves, as an OTF2 RMA event.
void classify_one_sided(const routines::info& r, fn_info& info) {
  const std::string_view name = r.name;
  switch (r.one_sided) {
  case routines::one_sided_op::put:
    info.rma = rma_kind::put;
    break;
  case routines::one_sided_op::get:
    info.rma = rma_kind::get;
    break;
  case routines::one_sided_op::accumulate:
    info.rma = rma_kind::atomic;
    info.atomic = name.starts_with("MPI_Compare_and_swap") ? OTF2_RMA_ATOMIC_TYPE_COMPARE_AND_SWAP
                  : name.starts_with("MPI_Accumulate") || name.starts_with("MPI_Raccumulate")
                      ? OTF2_RMA_ATOMIC_TYPE_ACCUMULATE
                      : OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ACCUMULATE; // they bring the old value back
    break;
  case routines::one_sided_op::none:
    return;
  }
  info.cls = fn_class::one_sided;
}

} // namespace

fn_info classify(const std::string& name) {
  fn_info info;
  const routines::info* r = routines::find(name);
  if (r == nullptr)
    return info;
  info.cheap = r->cheap;
  switch (r->kind) {
  case routines::kind::send:
    info.cls = fn_class::send;
    break;
  case routines::kind::isend:
    info.cls = fn_class::isend;
    break;
  case routines::kind::recv:
    info.cls = fn_class::recv;
    break;
  case routines::kind::irecv:
    info.cls = fn_class::irecv;
    break;
  case routines::kind::sendrecv:
    info.cls = fn_class::sendrecv;
    break;
  case routines::kind::completion:
    info.cls = fn_class::completion;
    break;
  case routines::kind::p2p_other:
    // Partitioned requests are started as persistent ones; the table's request uses leave them
    // out (a hang diagnosis has no message to name for them).
    if (r->partitioned && r->persistent) {
      info.cls = (r->roles & routines::role_send) != 0 ? fn_class::send_init : fn_class::recv_init;
      info.partitioned = true;
      break;
    }
    switch (routines::request_use_of(*r)) {
    case routines::request_use::makes_send:
      info.cls = fn_class::send_init;
      break;
    case routines::request_use::makes_receive:
      info.cls = fn_class::recv_init;
      break;
    case routines::request_use::starts_one:
      info.cls = fn_class::start;
      break;
    case routines::request_use::starts_many:
      info.cls = fn_class::start_all;
      break;
    default:
      info.cls = fn_class::p2p_other;
    }
    break;
  case routines::kind::collective:
    info.role = collective_role(*r);
    // Only a blocking collective is one call with both ends in it; the others (nonblocking,
    // persistent) and the neighbourhood collectives are recorded as calls.
    if (!r->nonblocking && !r->persistent && otf2_operation(r->op, info.op))
      info.cls = fn_class::collective;
    return info;
  case routines::kind::one_sided:
    info.role = OTF2_REGION_ROLE_RMA;
    classify_one_sided(*r, info);
    return info;
  case routines::kind::io:
    info.role = OTF2_REGION_ROLE_FILE_IO;
    return info;
  default:
    return info;
  }
  info.role = OTF2_REGION_ROLE_POINT2POINT;
  return info;
}

OTF2_RegionRole role_of(const fn_info& f) {
  return f.role;
}

} // namespace strata::trace
