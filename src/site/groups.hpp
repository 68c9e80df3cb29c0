// MPI routine groups as Fig. 11 of the automatic counter profiling paper (Rabenseifner,
// "Automatic MPI Counter Profiling") counts them (plus one-sided and I/O, which MPI-1
// did not have). MPI_Init, MPI_Finalize, MPI_Comm_size and MPI_Comm_rank belong to none.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace strata::site {

enum class routine_group : int {
  blocking_p2p,
  nonblocking_p2p,
  persistent_p2p,
  pack_unpack,
  collective,
  derived_datatype,
  group_subcomm,
  intercomm,
  attribute_inquiry,
  error_handler,
  topology,
  wtime,
  one_sided,
  io,
  other,
};
inline constexpr int routine_group_count = 15;

inline constexpr std::array<std::string_view, routine_group_count> routine_group_names = {
    "blocking point to point",
    "nonblocking pt-to-pt",
    "persistent pt-to-pt",
    "pack and unpack",
    "collective communication",
    "derived datatype",
    "group and sub-communicator",
    "inter-communicator",
    "attribute caching / inquiry",
    "error handler handling",
    "topology creation",
    "wtime measurement",
    "one-sided communication",
    "MPI I/O",
    "other"};

// nullopt for the routines no group counts (Init, Init_thread, Finalize, Comm_size, Comm_rank).
std::optional<routine_group> group_of(std::string_view mpi_routine);

// Point to point (any kind) or collective: the two halves of Fig. 10.
inline bool is_point_to_point(routine_group g) {
  return g == routine_group::blocking_p2p || g == routine_group::nonblocking_p2p ||
         g == routine_group::persistent_p2p;
}

} // namespace strata::site
