#include "profiler/routine_classes.hpp"

namespace strata::profiler {

bool is_collective_name(const std::string& name) {
  static const char* const stems[] = {
      "Barrier",  "Bcast",     "Reduce",    "Allreduce",      "Gather",
      "Gatherv",  "Scatter",   "Scatterv",  "Allgather",      "Allgatherv",
      "Alltoall", "Alltoallv", "Alltoallw", "Reduce_scatter", "Reduce_scatter_block",
      "Scan",     "Exscan"};
  std::string stem = name.substr(4); // after "MPI_"
  if (stem.size() > 2 && stem.compare(stem.size() - 2, 2, "_c") == 0)
    stem.resize(stem.size() - 2);
  if (!stem.empty() && stem[0] == 'I' && stem != "Init")
    stem.erase(0, 1);
  for (const char* s : stems)
    if (stem == s)
      return true;
  return false;
}

// docs/PERFORMANCE.md, "Untimed polls and cheap calls", has the figures behind this list.
bool counted_without_time(std::string name) {
  static const char* const routines[] = {"MPI_Comm_rank",
                                         "MPI_Comm_size",
                                         "MPI_Comm_remote_size",
                                         "MPI_Comm_test_inter",
                                         "MPI_Comm_compare",
                                         "MPI_Comm_group",
                                         "MPI_Comm_remote_group",
                                         "MPI_Comm_get_name",
                                         "MPI_Comm_get_attr",
                                         "MPI_Attr_get",
                                         "MPI_Get_count",
                                         "MPI_Get_elements",
                                         "MPI_Get_elements_x",
                                         "MPI_Get_address",
                                         "MPI_Aint_add",
                                         "MPI_Aint_diff",
                                         "MPI_Wtime",
                                         "MPI_Wtick",
                                         "MPI_Initialized",
                                         "MPI_Finalized",
                                         "MPI_Query_thread",
                                         "MPI_Is_thread_main",
                                         "MPI_Get_version",
                                         "MPI_Get_library_version",
                                         "MPI_Get_processor_name",
                                         "MPI_Error_class",
                                         "MPI_Error_string",
                                         "MPI_Test_cancelled",
                                         "MPI_Topo_test",
                                         "MPI_Cart_rank",
                                         "MPI_Cart_coords",
                                         "MPI_Cart_get",
                                         "MPI_Cartdim_get",
                                         "MPI_Cart_shift",
                                         "MPI_Dims_create",
                                         "MPI_Status_set_elements",
                                         "MPI_Status_set_elements_x",
                                         "MPI_Status_set_cancelled"};
  static const char* const families[] = {"MPI_Type_", "MPI_Group_", "MPI_Info_"};
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_c") == 0)
    name.resize(name.size() - 2);
  for (const char* r : routines)
    if (name == r)
      return true;
  for (const char* prefix : families)
    if (name.rfind(prefix, 0) == 0)
      return true;
  return false;
}

bool excluded_from_mpi_time(const std::string& routine) {
  return routine == "MPI_Init" || routine == "MPI_Init_thread" || routine == "MPI_Finalize";
}

} // namespace strata::profiler
