#include "site/groups.hpp"

namespace strata::site {

std::optional<routine_group> group_of(std::string_view mpi_routine) {
  const routines::info* info = routines::find(mpi_routine);
  if (info == nullptr)
    return routine_group::other; // neither MPI declares it (a newer MPI's routine)
  if (info->group == routines::group::none)
    return std::nullopt;
  return info->group;
}

} // namespace strata::site
