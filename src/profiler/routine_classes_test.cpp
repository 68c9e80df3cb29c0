#include "profiler/routine_classes.hpp"

#include <gtest/gtest.h>

using namespace strata::profiler;

TEST(RoutineClasses, Collectives) {
  for (const char* name :
       {"MPI_Barrier", "MPI_Allreduce", "MPI_Bcast_c", "MPI_Reduce_scatter_block", "MPI_Exscan"})
    EXPECT_TRUE(is_collective_name(name)) << name;
  // From the routine table: neighbourhood and persistent collectives are collectives too.
  for (const char* name : {"MPI_Neighbor_alltoall", "MPI_Ineighbor_allgather", "MPI_Bcast_init"})
    EXPECT_TRUE(is_collective_name(name)) << name;
  // MPI_Reduce_local combines two local buffers: no communicator, no other process.
  for (const char* name : {"MPI_Init", "MPI_Send", "MPI_Isend", "MPI_Wait", "MPI_Comm_split",
                           "MPI_Reduce_local", "MPI_No_such_routine"})
    EXPECT_FALSE(is_collective_name(name)) << name;
}

TEST(RoutineClasses, CallsCountedWithoutTime) {
  for (const char* name : {"MPI_Comm_rank", "MPI_Wtime", "MPI_Type_size", "MPI_Type_size_c",
                           "MPI_Group_incl", "MPI_Info_get", "MPI_Get_count_c"})
    EXPECT_TRUE(counted_without_time(name)) << name;
  for (const char* name : {"MPI_Send", "MPI_Test", "MPI_Comm_split", "MPI_Barrier"})
    EXPECT_FALSE(counted_without_time(name)) << name;
  // The profile's start asks both in one look-up.
  EXPECT_TRUE(classify_routine("MPI_Comm_rank").counted_without_time);
  EXPECT_FALSE(classify_routine("MPI_Comm_rank").collective);
  EXPECT_TRUE(classify_routine("MPI_Allreduce").collective);
  EXPECT_FALSE(classify_routine("MPI_Allreduce").counted_without_time);
}

TEST(RoutineClasses, InitAndFinalizeAreNotMpiTime) {
  EXPECT_TRUE(excluded_from_mpi_time("MPI_Init"));
  EXPECT_TRUE(excluded_from_mpi_time("MPI_Init_thread"));
  EXPECT_TRUE(excluded_from_mpi_time("MPI_Finalize"));
  EXPECT_FALSE(excluded_from_mpi_time("MPI_Barrier"));
}
