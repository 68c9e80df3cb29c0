#include "gen/routines.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace strata::routines {

extern const info table[];
extern const std::size_t table_size;

std::span<const info> all() {
  return {table, table_size};
}

namespace {
// Orders a row's name against NAME without measuring the row's name first: a strlen at each
// step of the search made a module's start (about 2,000 look-ups) cost a million instructions.
int compare(const char* row, std::string_view name) {
  const int c = std::strncmp(row, name.data(), name.size());
  if (c != 0)
    return c;
  return row[name.size()] == '\0' ? 0 : 1; // longer than NAME, so after it
}
} // namespace

const info* find(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) // no routine's name has one; compare needs none
    return nullptr;
  const auto rows = all();
  const auto it = std::partition_point(
      rows.begin(), rows.end(), [name](const info& row) { return compare(row.name, name) < 0; });
  return it != rows.end() && compare(it->name, name) == 0 ? &*it : nullptr;
}

request_use request_use_of(const info& r) {
  if (r.kind == kind::collective && r.nonblocking && !r.persistent)
    return request_use::collective;
  if (r.kind == kind::isend)
    return request_use::sends;
  if (r.kind == kind::irecv)
    return request_use::receives;
  if (r.kind != kind::p2p_other || r.partitioned)
    return request_use::none;
  if (r.persistent && (r.roles & role_send) != 0)
    return request_use::makes_send;
  if (r.persistent && (r.roles & role_recv) != 0)
    return request_use::makes_receive;
  const std::string_view name = r.name;
  if (name == "MPI_Start")
    return request_use::starts_one;
  if (name == "MPI_Startall")
    return request_use::starts_many;
  if (name == "MPI_Imrecv" || name == "MPI_Imrecv_c")
    return request_use::receives_matched;
  return request_use::none;
}

blocking_wait blocking_wait_of(const info& r) {
  if (r.local || r.nonblocking || r.persistent || r.partitioned || r.poll)
    return blocking_wait::none;
  if (r.kind == kind::collective || r.collective_setup)
    return blocking_wait::members;
  switch (r.kind) {
  case kind::send:
    return blocking_wait::send;
  case kind::recv:
    return blocking_wait::receive;
  case kind::sendrecv:
    return blocking_wait::sendrecv;
  case kind::completion:
    if ((r.roles & role_done) != 0) // MPI_Testall: returns whether or not they completed
      return blocking_wait::none;
    return (r.roles & (role_index | role_outcount)) != 0 ? blocking_wait::any_request
                                                         : blocking_wait::all_requests;
  case kind::p2p_other: // the blocking probes name a source; MPI_Mrecv, MPI_Start name none
    return (r.roles & role_peer) != 0 && (r.roles & (role_send | role_recv)) == 0
               ? blocking_wait::receive
               : blocking_wait::none;
  default:
    return blocking_wait::none;
  }
}

collective_shape info::shape() const {
  using op_t = collective_op;
  switch (op) {
  case op_t::none:
    return collective_shape::none;
  case op_t::barrier:
    return collective_shape::barrier;
  case op_t::bcast:
  case op_t::scatter:
  case op_t::scatterv:
    return collective_shape::one_to_all;
  case op_t::gather:
  case op_t::gatherv:
  case op_t::reduce:
    return collective_shape::all_to_one;
  case op_t::scan:
  case op_t::exscan:
    return collective_shape::prefix;
  case op_t::neighbor_allgather:
  case op_t::neighbor_allgatherv:
  case op_t::neighbor_alltoall:
  case op_t::neighbor_alltoallv:
  case op_t::neighbor_alltoallw:
    return collective_shape::neighbor;
  default:
    return collective_shape::all_to_all;
  }
}

std::string_view name_of(group g) {
  const auto i = static_cast<std::size_t>(g);
  return i < group_titles.size() ? group_titles[i] : std::string_view();
}

std::string_view name_of(collective_op op) {
  static constexpr std::array<std::string_view, 23> names = {"",
                                                             "barrier",
                                                             "bcast",
                                                             "gather",
                                                             "gatherv",
                                                             "scatter",
                                                             "scatterv",
                                                             "allgather",
                                                             "allgatherv",
                                                             "alltoall",
                                                             "alltoallv",
                                                             "alltoallw",
                                                             "reduce",
                                                             "allreduce",
                                                             "reduce_scatter",
                                                             "reduce_scatter_block",
                                                             "scan",
                                                             "exscan",
                                                             "neighbor_allgather",
                                                             "neighbor_allgatherv",
                                                             "neighbor_alltoall",
                                                             "neighbor_alltoallv",
                                                             "neighbor_alltoallw"};
  const auto i = static_cast<std::size_t>(op);
  return i < names.size() ? names[i] : std::string_view();
}

} // namespace strata::routines
