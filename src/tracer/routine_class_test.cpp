#include "tracer/routine_class.hpp"

#include <gtest/gtest.h>

namespace strata::trace {
namespace {

TEST(RoutineClass, PointToPointCallsByTheRecordsTheyMake) {
  EXPECT_EQ(classify("MPI_Send").cls, fn_class::send);
  EXPECT_EQ(classify("MPI_Ssend").cls, fn_class::send);
  EXPECT_EQ(classify("MPI_Issend").cls, fn_class::isend);
  EXPECT_EQ(classify("MPI_Recv").cls, fn_class::recv);
  EXPECT_EQ(classify("MPI_Irecv").cls, fn_class::irecv);
  EXPECT_EQ(classify("MPI_Sendrecv_replace").cls, fn_class::sendrecv);
  EXPECT_EQ(classify("MPI_Testsome").cls, fn_class::completion);
  EXPECT_EQ(classify("MPI_Cancel").cls, fn_class::p2p_other);
  EXPECT_EQ(role_of(classify("MPI_Iprobe")), OTF2_REGION_ROLE_POINT2POINT);
  EXPECT_EQ(role_of(classify("MPI_Wait")), OTF2_REGION_ROLE_POINT2POINT);
}

TEST(RoutineClass, PersistentRequestsAreMessagesWhenStarted) {
  EXPECT_EQ(classify("MPI_Send_init").cls, fn_class::send_init);
  EXPECT_EQ(classify("MPI_Ssend_init").cls, fn_class::send_init);
  EXPECT_EQ(classify("MPI_Bsend_init").cls, fn_class::send_init);
  EXPECT_EQ(role_of(classify("MPI_Bsend_init")), OTF2_REGION_ROLE_POINT2POINT);
  EXPECT_EQ(classify("MPI_Recv_init").cls, fn_class::recv_init);
  EXPECT_EQ(classify("MPI_Start").cls, fn_class::start);
  EXPECT_EQ(classify("MPI_Startall").cls, fn_class::start_all);
  EXPECT_FALSE(classify("MPI_Send_init").partitioned);
  // A partitioned request's start is one message of all its partitions, marked partitioned.
  EXPECT_EQ(classify("MPI_Psend_init").cls, fn_class::send_init);
  EXPECT_TRUE(classify("MPI_Psend_init").partitioned);
  EXPECT_EQ(classify("MPI_Precv_init").cls, fn_class::recv_init);
  EXPECT_TRUE(classify("MPI_Precv_init").partitioned);
  EXPECT_EQ(classify("MPI_Pready").cls, fn_class::p2p_other);
  // A persistent collective's start is no message.
  EXPECT_NE(classify("MPI_Bcast_init").cls, fn_class::send_init);
}

TEST(RoutineClass, LargeCountTwinsAreTheRoutineTheyExtend) {
  EXPECT_EQ(classify("MPI_Isend_c").cls, fn_class::isend);
  const fn_info bcast = classify("MPI_Bcast_c");
  EXPECT_EQ(bcast.cls, fn_class::collective);
  EXPECT_EQ(bcast.op, OTF2_COLLECTIVE_OP_BCAST);
}

TEST(RoutineClass, CollectivesGetScorePsRoles) {
  EXPECT_EQ(role_of(classify("MPI_Barrier")), OTF2_REGION_ROLE_BARRIER);
  EXPECT_EQ(role_of(classify("MPI_Scatterv")), OTF2_REGION_ROLE_COLL_ONE2ALL);
  EXPECT_EQ(role_of(classify("MPI_Reduce")), OTF2_REGION_ROLE_COLL_ALL2ONE);
  EXPECT_EQ(role_of(classify("MPI_Exscan")), OTF2_REGION_ROLE_COLL_OTHER);
  EXPECT_EQ(role_of(classify("MPI_Allreduce")), OTF2_REGION_ROLE_COLL_ALL2ALL);
  EXPECT_EQ(classify("MPI_Reduce_scatter_block").op, OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK);
}

TEST(RoutineClass, OtherCollectivesAreCallsWithTheirCollectivesRole) {
  // OTF2 has no operation for neighbourhood collectives; nonblocking and persistent collectives
  // are not one call with both ends in it.
  for (const char* name : {"MPI_Neighbor_alltoallv", "MPI_Ineighbor_allgather"}) {
    EXPECT_EQ(classify(name).cls, fn_class::other) << name;
    EXPECT_EQ(role_of(classify(name)), OTF2_REGION_ROLE_COLL_OTHER) << name;
  }
  EXPECT_EQ(classify("MPI_Ibarrier").cls, fn_class::other);
  EXPECT_EQ(role_of(classify("MPI_Ibarrier")), OTF2_REGION_ROLE_BARRIER);
  EXPECT_EQ(classify("MPI_Bcast_init").cls, fn_class::other);
  EXPECT_EQ(role_of(classify("MPI_Bcast_init")), OTF2_REGION_ROLE_COLL_ONE2ALL);
  EXPECT_EQ(role_of(classify("MPI_Iallreduce")), OTF2_REGION_ROLE_COLL_ALL2ALL);
}

TEST(RoutineClass, OneSidedAndIoHaveTheirRoles) {
  EXPECT_EQ(role_of(classify("MPI_Put")), OTF2_REGION_ROLE_RMA);
  EXPECT_EQ(role_of(classify("MPI_Win_fence")), OTF2_REGION_ROLE_RMA);
  EXPECT_EQ(role_of(classify("MPI_File_write_all")), OTF2_REGION_ROLE_FILE_IO);
  // The operations on a window's target are RMA events; the window's calls are calls only.
  EXPECT_EQ(classify("MPI_Win_fence").cls, fn_class::other);
  EXPECT_EQ(classify("MPI_Put").cls, fn_class::one_sided);
  EXPECT_EQ(classify("MPI_Rput").rma, rma_kind::put);
  EXPECT_EQ(classify("MPI_Get_c").rma, rma_kind::get);
  EXPECT_EQ(classify("MPI_Accumulate").atomic, OTF2_RMA_ATOMIC_TYPE_ACCUMULATE);
  EXPECT_EQ(classify("MPI_Raccumulate").atomic, OTF2_RMA_ATOMIC_TYPE_ACCUMULATE);
  EXPECT_EQ(classify("MPI_Get_accumulate").atomic, OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ACCUMULATE);
  EXPECT_EQ(classify("MPI_Fetch_and_op").atomic, OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ACCUMULATE);
  EXPECT_EQ(classify("MPI_Compare_and_swap").rma, rma_kind::atomic);
  EXPECT_EQ(classify("MPI_Compare_and_swap").atomic, OTF2_RMA_ATOMIC_TYPE_COMPARE_AND_SWAP);
}

TEST(RoutineClass, MoreRequestRoutinesArePointToPoint) {
  for (const char* name : {"MPI_Improbe", "MPI_Mrecv", "MPI_Test_cancelled"}) {
    EXPECT_EQ(classify(name).cls, fn_class::p2p_other) << name;
    EXPECT_EQ(role_of(classify(name)), OTF2_REGION_ROLE_POINT2POINT) << name;
  }
}

TEST(RoutineClass, EverythingElseIsAPlainFunction) {
  for (const char* name :
       {"MPI_Comm_rank", "MPI_Init", "MPI_Wtime", "MPI_Reduce_local", "not MPI"}) {
    EXPECT_EQ(classify(name).cls, fn_class::other) << name;
    EXPECT_EQ(role_of(classify(name)), OTF2_REGION_ROLE_FUNCTION) << name;
  }
  EXPECT_FALSE(classify("MPI_Send").wanted);
}

} // namespace
} // namespace strata::trace
