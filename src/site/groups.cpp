#include "site/groups.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace strata::site {

namespace {
bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
} // namespace

std::optional<routine_group> group_of(std::string_view mpi_routine) {
  std::string_view n = mpi_routine;
  if (n.starts_with("MPI_") || n.starts_with("mpi_"))
    n.remove_prefix(4);
  std::string lower(n);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string_view s = lower;
  using g = routine_group;
  if (one_of(s, {"init", "init_thread", "finalize", "comm_size", "comm_rank"}))
    return std::nullopt;
  if (one_of(s, {"send", "recv", "bsend", "ssend", "rsend", "sendrecv", "sendrecv_replace", "probe",
                 "mprobe", "mrecv", "buffer_attach", "buffer_detach"}))
    return g::blocking_p2p;
  if (s.ends_with("_init") &&
      one_of(s, {"send_init", "bsend_init", "ssend_init", "rsend_init", "recv_init"}))
    return g::persistent_p2p;
  if (one_of(s, {"start", "startall"}))
    return g::persistent_p2p;
  if (one_of(s, {"isend",    "irecv",        "ibsend", "issend",         "irsend",
                 "iprobe",   "improbe",      "imrecv", "wait",           "waitall",
                 "waitany",  "waitsome",     "test",   "testall",        "testany",
                 "testsome", "request_free", "cancel", "test_cancelled", "request_get_status"}))
    return g::nonblocking_p2p;
  if (s.starts_with("pack") || s.starts_with("unpack"))
    return g::pack_unpack;
  static constexpr std::string_view collectives[] = {
      "barrier",   "bcast",     "gather",      "gatherv",        "scatter",
      "scatterv",  "allgather", "allgatherv",  "alltoall",       "alltoallv",
      "alltoallw", "reduce",    "allreduce",   "reduce_scatter", "reduce_scatter_block",
      "scan",      "exscan",    "reduce_local"};
  std::string_view base = s;
  if (base.starts_with("i") && base != "init")
    base.remove_prefix(1); // nonblocking collectives: ibcast, iallreduce, ibarrier, ...
  for (std::string_view c : collectives)
    if (s == c || base == c)
      return g::collective;
  if (s.starts_with("neighbor_") || s.starts_with("ineighbor_"))
    return g::collective;
  if (s.starts_with("win_") ||
      one_of(s, {"put", "get", "accumulate", "get_accumulate", "fetch_and_op", "compare_and_swap",
                 "rput", "rget", "raccumulate", "rget_accumulate", "alloc_mem", "free_mem"}))
    return g::one_sided;
  if (s.starts_with("type_") ||
      one_of(s, {"get_elements", "get_elements_x", "get_address", "address", "get_count"}))
    return g::derived_datatype;
  if (s.starts_with("intercomm_") || s.starts_with("comm_remote_") || s == "comm_test_inter")
    return g::intercomm;
  if (s.starts_with("errhandler_") || s.ends_with("_errhandler") || s.starts_with("error_") ||
      s.starts_with("add_error"))
    return g::error_handler;
  if (s.starts_with("attr_") || s.ends_with("_attr") || s.ends_with("keyval") ||
      s.starts_with("keyval_") || s.starts_with("get_") || s.ends_with("_name") ||
      one_of(s, {"initialized", "finalized", "query_thread", "is_thread_main"}))
    return g::attribute_inquiry;
  if (s.starts_with("group_") || s.starts_with("comm_"))
    return g::group_subcomm;
  if (s.starts_with("cart") || s.starts_with("graph") || s.starts_with("dist_graph") ||
      one_of(s, {"dims_create", "topo_test"}))
    return g::topology;
  if (one_of(s, {"wtime", "wtick"}))
    return g::wtime;
  if (s.starts_with("file_") || s.starts_with("register_datarep"))
    return g::io;
  return g::other;
}

} // namespace strata::site
