// The site counts MPI routines by the groups of Fig. 11 of the automatic counter profiling paper
// (Rabenseifner, "Automatic MPI Counter Profiling"), plus one-sided and I/O, as the table of MPI
// routines (src/gen/routines.hpp) assigns them. MPI_Init, MPI_Finalize, MPI_Comm_size and
// MPI_Comm_rank belong to none.
#pragma once

#include "gen/routines.hpp"

#include <optional>
#include <string_view>

namespace strata::site {

// The day tables store a group by its number: the table's order is append only.
using routine_group = routines::group;
inline constexpr int routine_group_count = routines::group_count;

// nullopt for the routines no group counts (Init, Init_thread, Finalize, Comm_size, Comm_rank);
// `other` for a routine neither MPI's header declares (a newer MPI's).
std::optional<routine_group> group_of(std::string_view mpi_routine);

// Point to point (any kind) or collective: the two halves of Fig. 10.
inline bool is_point_to_point(routine_group g) {
  return g == routine_group::blocking_p2p || g == routine_group::nonblocking_p2p ||
         g == routine_group::persistent_p2p;
}

} // namespace strata::site
