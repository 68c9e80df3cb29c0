#include "profiler/routine_classes.hpp"

#include "gen/routines.hpp"

namespace strata::profiler {

routine_class classify_routine(const std::string& name) {
  const routines::info* info = routines::find(name);
  if (info == nullptr)
    return {};
  return {info->is_collective(), info->cheap, (info->roles & routines::role_peer) != 0};
}

bool is_collective_name(const std::string& name) {
  return classify_routine(name).collective;
}

// docs/PERFORMANCE.md, "Calls the profile does not time", has the figures behind the table's list.
bool counted_without_time(const std::string& name) {
  return classify_routine(name).counted_without_time;
}

bool excluded_from_mpi_time(const std::string& routine) {
  return routine == "MPI_Init" || routine == "MPI_Init_thread" || routine == "MPI_Finalize";
}

} // namespace strata::profiler
