#include "site/groups.hpp"

#include "gen/routines.hpp"

namespace strata::site {

// The site's groups are the routine table's, in the same order (the day tables store them).
static_assert(routine_group_count == routines::group_count);
static_assert(static_cast<int>(routine_group::other) == static_cast<int>(routines::group::other));
static_assert(static_cast<int>(routine_group::io) == static_cast<int>(routines::group::io));

std::optional<routine_group> group_of(std::string_view mpi_routine) {
  const routines::info* info = routines::find(mpi_routine);
  if (info == nullptr)
    return routine_group::other; // neither MPI declares it (a newer MPI's routine)
  if (info->group == routines::group::none)
    return std::nullopt;
  return static_cast<routine_group>(info->group);
}

} // namespace strata::site
