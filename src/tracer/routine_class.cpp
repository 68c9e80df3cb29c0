#include "tracer/routine_class.hpp"

#include <map>

namespace strata::trace {

fn_info classify(const std::string& full_name) {
  std::string name = full_name;
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_c") == 0)
    name.resize(name.size() - 2); // large-count twins
  static const std::map<std::string, fn_class> p2p = {
      {"MPI_Send", fn_class::send},           {"MPI_Bsend", fn_class::send},
      {"MPI_Ssend", fn_class::send},          {"MPI_Rsend", fn_class::send},
      {"MPI_Isend", fn_class::isend},         {"MPI_Ibsend", fn_class::isend},
      {"MPI_Issend", fn_class::isend},        {"MPI_Irsend", fn_class::isend},
      {"MPI_Recv", fn_class::recv},           {"MPI_Irecv", fn_class::irecv},
      {"MPI_Sendrecv", fn_class::sendrecv},   {"MPI_Sendrecv_replace", fn_class::sendrecv},
      {"MPI_Wait", fn_class::completion},     {"MPI_Waitall", fn_class::completion},
      {"MPI_Waitany", fn_class::completion},  {"MPI_Waitsome", fn_class::completion},
      {"MPI_Test", fn_class::completion},     {"MPI_Testall", fn_class::completion},
      {"MPI_Testany", fn_class::completion},  {"MPI_Testsome", fn_class::completion},
      {"MPI_Probe", fn_class::p2p_other},     {"MPI_Iprobe", fn_class::p2p_other},
      {"MPI_Start", fn_class::p2p_other},     {"MPI_Startall", fn_class::p2p_other},
      {"MPI_Send_init", fn_class::p2p_other}, {"MPI_Recv_init", fn_class::p2p_other},
      {"MPI_Cancel", fn_class::p2p_other},    {"MPI_Request_free", fn_class::p2p_other}};
  static const std::map<std::string, OTF2_CollectiveOp> collectives = {
      {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},
      {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
      {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},
      {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
      {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},
      {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
      {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER},
      {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
      {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},
      {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
      {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW},
      {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
      {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
      {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
      {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
      {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
      {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN}};
  fn_info info;
  if (auto it = p2p.find(name); it != p2p.end())
    info.cls = it->second;
  else if (auto c = collectives.find(name); c != collectives.end()) {
    info.cls = fn_class::collective;
    info.op = c->second;
  }
  return info;
}

OTF2_RegionRole role_of(const fn_info& f) {
  switch (f.cls) {
  case fn_class::collective: // as Score-P classifies them
    switch (f.op) {
    case OTF2_COLLECTIVE_OP_BARRIER:
      return OTF2_REGION_ROLE_BARRIER;
    case OTF2_COLLECTIVE_OP_BCAST:
    case OTF2_COLLECTIVE_OP_SCATTER:
    case OTF2_COLLECTIVE_OP_SCATTERV:
      return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case OTF2_COLLECTIVE_OP_GATHER:
    case OTF2_COLLECTIVE_OP_GATHERV:
    case OTF2_COLLECTIVE_OP_REDUCE:
      return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case OTF2_COLLECTIVE_OP_SCAN:
    case OTF2_COLLECTIVE_OP_EXSCAN:
      return OTF2_REGION_ROLE_COLL_OTHER;
    default:
      return OTF2_REGION_ROLE_COLL_ALL2ALL;
    }
  case fn_class::other:
    return OTF2_REGION_ROLE_FUNCTION;
  default:
    return OTF2_REGION_ROLE_POINT2POINT;
  }
}

} // namespace strata::trace
