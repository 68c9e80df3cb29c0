#include "gen/routines.hpp"

#include <gtest/gtest.h>

#include <string>

namespace r = strata::routines;

namespace {
const r::info& get(const char* name) {
  const r::info* info = r::find(name);
  EXPECT_NE(info, nullptr) << name;
  static const r::info none{};
  return info != nullptr ? *info : none;
}
} // namespace

TEST(Routines, BothHeadersFullListsAreThere) {
  // Open MPI 4.1 has no large-count twins or MPI-4 routines; MPICH 4.0 has both.
  EXPECT_GT(r::all().size(), 600u);
  for (const char* name : {"MPI_Send", "MPI_Send_c", "MPI_Neighbor_alltoallw", "MPI_Psend_init",
                           "MPI_Bcast_init", "MPI_Session_init", "MPI_Comm_f2c", "MPI_Pcontrol",
                           "MPI_T_pvar_read", "MPI_File_iread_at_all"})
    EXPECT_NE(r::find(name), nullptr) << name;
  EXPECT_EQ(r::find("MPI_Nope"), nullptr);
  EXPECT_EQ(r::find("MPI_"), nullptr);
  EXPECT_EQ(r::find("MPI_Sendx"), nullptr);
  EXPECT_EQ(r::find("MPI_Sen"), nullptr);
  EXPECT_EQ(r::find(std::string_view("MPI_Send\0_c", 11)), nullptr);
  EXPECT_EQ(r::find(""), nullptr);
  for (const r::info& row : r::all()) // the search's order is the table's
    EXPECT_EQ(r::find(row.name), &row) << row.name;
}

TEST(Routines, EveryRowIsConsistent) {
  std::string previous;
  for (const r::info& row : r::all()) {
    const std::string name = row.name;
    SCOPED_TRACE(name);
    EXPECT_LT(previous, name) << "sorted, no duplicates";
    previous = name;
    EXPECT_TRUE(!row.cheap || row.local);
    EXPECT_EQ(row.is_collective(), row.op != r::collective_op::none && name != "MPI_Reduce_local");
    if (row.group == r::group::none) {
      EXPECT_TRUE(name == "MPI_Init" || name == "MPI_Init_thread" || name == "MPI_Finalize" ||
                  name == "MPI_Comm_size" || name == "MPI_Comm_rank" ||
                  name == "MPI_Session_init" || name == "MPI_Session_finalize");
    }
    // A large-count twin is classified as its base routine.
    if (row.large_count) {
      const r::info* base = r::find(name.substr(0, name.size() - 2));
      ASSERT_NE(base, nullptr);
      EXPECT_EQ(base->group, row.group);
      EXPECT_EQ(base->kind, row.kind);
      EXPECT_EQ(base->op, row.op);
      EXPECT_EQ(base->local, row.local);
      EXPECT_EQ(base->roles, row.roles);
      EXPECT_EQ(base->at.peer, row.at.peer);
      EXPECT_EQ(base->at.comm, row.at.comm);
      EXPECT_EQ(base->at.count, row.at.count);
    }
    // Whatever falls through to "other" is one of these families, nothing new by accident.
    if (row.group == r::group::other) {
      bool known = false;
      for (const char* prefix :
           {"MPI_Abort", "MPI_Op_", "MPI_Grequest_", "MPI_T_", "MPI_Pcontrol", "MPI_Status_",
            "MPI_Request_c2f", "MPI_Request_f2c", "MPI_Message_", "MPI_Info_", "MPI_Close_port",
            "MPI_Open_port", "MPI_Lookup_name", "MPI_Publish_name", "MPI_Unpublish_name",
            "MPI_Aint_", "MPI_Session_"})
        known = known || name.starts_with(prefix);
      EXPECT_TRUE(known) << "falls into 'other'";
    }
  }
}

TEST(Routines, PointToPointKinds) {
  EXPECT_EQ(get("MPI_Send").kind, r::kind::send);
  EXPECT_EQ(get("MPI_Rsend").kind, r::kind::send);
  EXPECT_EQ(get("MPI_Isend").kind, r::kind::isend);
  EXPECT_EQ(get("MPI_Recv").kind, r::kind::recv);
  EXPECT_EQ(get("MPI_Irecv").kind, r::kind::irecv);
  EXPECT_EQ(get("MPI_Sendrecv").kind, r::kind::sendrecv);
  EXPECT_EQ(get("MPI_Waitall").kind, r::kind::completion);
  EXPECT_EQ(get("MPI_Testsome").kind, r::kind::completion);
  EXPECT_EQ(get("MPI_Iprobe").kind, r::kind::p2p_other);
  EXPECT_EQ(get("MPI_Start").kind, r::kind::p2p_other);
  EXPECT_EQ(get("MPI_Send_c").kind, r::kind::send);
  EXPECT_TRUE(get("MPI_Isend").nonblocking);
  EXPECT_FALSE(get("MPI_Send").nonblocking);
  EXPECT_EQ(get("MPI_Send").group, r::group::blocking_p2p);
  EXPECT_EQ(get("MPI_Irecv").group, r::group::nonblocking_p2p);
  EXPECT_TRUE(get("MPI_Send").roles & r::role_peer);
  EXPECT_TRUE(get("MPI_Recv").roles & r::role_status);
  // Probes read the size of the message they find from the status, as receives do.
  for (const char* probe : {"MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe"})
    EXPECT_TRUE(get(probe).roles & r::role_status) << probe;
}

TEST(Routines, PollsAndWaiting) {
  for (const char* poll : {"MPI_Test", "MPI_Testany", "MPI_Iprobe", "MPI_Improbe"})
    EXPECT_TRUE(get(poll).poll) << poll;
  for (const char* no : {"MPI_Wait", "MPI_Testall", "MPI_Send"})
    EXPECT_FALSE(get(no).poll) << no;
  EXPECT_TRUE(get("MPI_Comm_rank").cheap);
  EXPECT_TRUE(get("MPI_Type_size").cheap);
  EXPECT_TRUE(get("MPI_Wtime").cheap);
  EXPECT_FALSE(get("MPI_Pack").cheap); // local, but its cost grows with the buffer
  EXPECT_TRUE(get("MPI_Pack").local);
  EXPECT_TRUE(get("MPI_Barrier").can_wait());
  EXPECT_TRUE(get("MPI_Comm_dup").can_wait());
  EXPECT_FALSE(get("MPI_Reduce_local").can_wait());
  EXPECT_FALSE(get("MPI_Get_accumulate").local);
  EXPECT_FALSE(get("MPI_Lookup_name").local);
}

TEST(Routines, CollectivesInEveryForm) {
  const r::info& bcast = get("MPI_Bcast");
  EXPECT_TRUE(bcast.is_collective());
  EXPECT_EQ(bcast.op, r::collective_op::bcast);
  EXPECT_EQ(bcast.shape(), r::collective_shape::one_to_all);
  const r::info& ibcast = get("MPI_Ibcast");
  EXPECT_EQ(ibcast.op, r::collective_op::bcast);
  EXPECT_TRUE(ibcast.nonblocking);
  const r::info& persistent = get("MPI_Bcast_init");
  EXPECT_EQ(persistent.op, r::collective_op::bcast);
  EXPECT_TRUE(persistent.persistent);
  EXPECT_EQ(persistent.group, r::group::collective);
  EXPECT_EQ(get("MPI_Reduce").shape(), r::collective_shape::all_to_one);
  EXPECT_EQ(get("MPI_Allreduce").shape(), r::collective_shape::all_to_all);
  EXPECT_EQ(get("MPI_Barrier").shape(), r::collective_shape::barrier);
  EXPECT_EQ(get("MPI_Iexscan").shape(), r::collective_shape::prefix);
  EXPECT_EQ(get("MPI_Reduce_scatter_block").op, r::collective_op::reduce_scatter_block);
  EXPECT_EQ(get("MPI_Ireduce_scatter_block").op, r::collective_op::reduce_scatter_block);
  // Neighbourhood collectives are collectives over a topology's neighbours.
  const r::info& neighbor = get("MPI_Ineighbor_alltoallw");
  EXPECT_TRUE(neighbor.is_collective());
  EXPECT_TRUE(neighbor.nonblocking);
  EXPECT_EQ(neighbor.op, r::collective_op::neighbor_alltoallw);
  EXPECT_EQ(neighbor.shape(), r::collective_shape::neighbor);
  EXPECT_EQ(get("MPI_Neighbor_allgather_init").op, r::collective_op::neighbor_allgather);
  // MPI_Reduce_local is in the collective chapter but combines two local buffers.
  const r::info& local = get("MPI_Reduce_local");
  EXPECT_EQ(local.group, r::group::collective);
  EXPECT_FALSE(local.is_collective());
  EXPECT_TRUE(local.local);
  EXPECT_FALSE(get("MPI_Iprobe").is_collective());
}

TEST(Routines, PartitionedAndPersistentPointToPoint) {
  for (const char* name : {"MPI_Psend_init", "MPI_Precv_init", "MPI_Pready", "MPI_Parrived"}) {
    EXPECT_TRUE(get(name).partitioned) << name;
    EXPECT_EQ(get(name).group, r::group::persistent_p2p) << name;
  }
  // A partitioned request's init names what each start moves and to whom (roles.txt), though no
  // request use: a hang diagnosis has no message to name for it.
  EXPECT_TRUE(get("MPI_Psend_init").persistent);
  EXPECT_NE(get("MPI_Psend_init").roles & r::role_send, 0U);
  EXPECT_NE(get("MPI_Precv_init").roles & r::role_recv, 0U);
  EXPECT_EQ(r::request_use_of(get("MPI_Psend_init")), r::request_use::none);
  EXPECT_TRUE(get("MPI_Send_init").persistent);
  EXPECT_EQ(get("MPI_Send_init").kind, r::kind::p2p_other);
  EXPECT_FALSE(get("MPI_Send").persistent);
}

TEST(Routines, HandleConversions) {
  for (const char* name : {"MPI_Comm_f2c", "MPI_Type_f2c", "MPI_Request_c2f", "MPI_Request_f2c",
                           "MPI_Status_c2f", "MPI_Status_f2c"})
    EXPECT_TRUE(get(name).handle_conversion) << name;
  EXPECT_FALSE(get("MPI_Comm_free").handle_conversion);
}

TEST(Routines, GroupsOfTheCounterProfilingPaper) {
  EXPECT_EQ(get("MPI_Init").group, r::group::none);
  EXPECT_EQ(get("MPI_Pack_size").group, r::group::pack_unpack);
  EXPECT_EQ(get("MPI_Type_commit").group, r::group::derived_datatype);
  EXPECT_EQ(get("MPI_Get_count").group, r::group::derived_datatype);
  EXPECT_EQ(get("MPI_Comm_split").group, r::group::group_subcomm);
  EXPECT_EQ(get("MPI_Comm_remote_size").group, r::group::intercomm);
  EXPECT_EQ(get("MPI_Comm_get_name").group, r::group::attribute_inquiry);
  EXPECT_EQ(get("MPI_Get_processor_name").group, r::group::attribute_inquiry);
  EXPECT_EQ(get("MPI_Comm_set_errhandler").group, r::group::error_handler);
  EXPECT_EQ(get("MPI_Cart_create").group, r::group::topology);
  EXPECT_EQ(get("MPI_Wtime").group, r::group::wtime);
  EXPECT_EQ(get("MPI_Win_fence").group, r::group::one_sided);
  EXPECT_EQ(get("MPI_Get").group, r::group::one_sided);
  EXPECT_EQ(get("MPI_Put").one_sided, r::one_sided_op::put);
  EXPECT_EQ(get("MPI_Rput_c").one_sided, r::one_sided_op::put);
  EXPECT_EQ(get("MPI_Get").one_sided, r::one_sided_op::get);
  EXPECT_EQ(get("MPI_Get_accumulate").one_sided, r::one_sided_op::accumulate);
  EXPECT_EQ(get("MPI_Compare_and_swap").one_sided, r::one_sided_op::accumulate);
  EXPECT_EQ(get("MPI_Win_fence").one_sided, r::one_sided_op::none);
  EXPECT_EQ(get("MPI_Send").one_sided, r::one_sided_op::none);
  // A one-sided operation's target is no peer of the hang state's argument positions.
  EXPECT_EQ(get("MPI_Put").at.peer, -1);
  EXPECT_EQ(get("MPI_File_open").group, r::group::io);
  EXPECT_EQ(get("MPI_Neighbor_alltoall").group, r::group::collective);
  EXPECT_EQ(get("MPI_Abort").group, r::group::other);
  EXPECT_EQ(r::name_of(r::group::blocking_p2p), "blocking point to point");
  EXPECT_EQ(r::name_of(r::group::none), "");
  EXPECT_EQ(r::name_of(r::collective_op::allreduce), "allreduce");
}

// Where the hang state reads a call's peer, tag, communicator, root and bytes among its raw
// arguments: from the headers' prototypes, by the roles of roles.txt.
TEST(Routines, ArgumentPositions) {
  const r::argument_positions send = get("MPI_Send").at;
  EXPECT_EQ(send.peer, 3);
  EXPECT_EQ(send.tag, 4);
  EXPECT_EQ(send.comm, 5);
  EXPECT_EQ(send.count, 1);
  EXPECT_EQ(send.type, 2);
  EXPECT_EQ(send.root, -1);
  EXPECT_EQ(send.recv_peer, -1);
  const r::argument_positions sendrecv = get("MPI_Sendrecv").at;
  EXPECT_EQ(sendrecv.peer, 3);
  EXPECT_EQ(sendrecv.tag, 4);
  EXPECT_EQ(sendrecv.recv_peer, 8);
  EXPECT_EQ(sendrecv.recv_tag, 9);
  EXPECT_EQ(sendrecv.comm, 10);
  const r::argument_positions replace = get("MPI_Sendrecv_replace").at;
  EXPECT_EQ(replace.recv_peer, 5);
  EXPECT_EQ(replace.recv_tag, 6);
  EXPECT_EQ(replace.comm, 7);
  const r::argument_positions bcast = get("MPI_Bcast").at;
  EXPECT_EQ(bcast.root, 3);
  EXPECT_EQ(bcast.comm, 4);
  EXPECT_EQ(bcast.peer, -1);
  EXPECT_EQ(get("MPI_Reduce").at.root, 5);
  EXPECT_EQ(get("MPI_Reduce").at.count, 2);
  EXPECT_EQ(get("MPI_Ibarrier").at.comm, 0);
  EXPECT_EQ(get("MPI_Iallreduce").at.comm, 5);
  EXPECT_EQ(get("MPI_Mprobe").at.peer, 0);
  // Without a comm= role: the routine's MPI_Comm argument.
  EXPECT_EQ(get("MPI_Alltoallw").at.comm, 8);
  EXPECT_EQ(get("MPI_Comm_split").at.comm, 0);
  // A count per peer, summed: no one count says the bytes.
  EXPECT_EQ(get("MPI_Alltoallv").at.count, -1);
  EXPECT_EQ(get("MPI_Wait").at.comm, -1);
}

// Where a completion's requests are: the hang state reads those of a blocking wait in progress.
TEST(Routines, WhereACompletionNamesItsRequests) {
  EXPECT_EQ(get("MPI_Wait").at.requests, 0);
  EXPECT_EQ(get("MPI_Wait").at.request_count, -1);
  EXPECT_EQ(get("MPI_Start").at.requests, 0);
  for (const char* name : {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall"}) {
    EXPECT_EQ(get(name).at.requests, 1) << name;
    EXPECT_EQ(get(name).at.request_count, 0) << name;
  }
  EXPECT_EQ(get("MPI_Isend").at.requests, -1); // the request it makes is not one it completes
  EXPECT_EQ(get("MPI_Recv").at.request_count, -1);
  // Every blocking wait on requests says where they are.
  for (const r::info& row : r::all()) {
    const r::blocking_wait w = r::blocking_wait_of(row);
    if (w == r::blocking_wait::all_requests || w == r::blocking_wait::any_request) {
      EXPECT_GE(row.at.requests, 0) << row.name;
    }
  }
}

TEST(Routines, RequestsForTheMessageQueue) {
  EXPECT_EQ(r::request_use_of(get("MPI_Isend")), r::request_use::sends);
  EXPECT_EQ(r::request_use_of(get("MPI_Irecv")), r::request_use::receives);
  EXPECT_EQ(r::request_use_of(get("MPI_Imrecv")), r::request_use::receives_matched);
  for (const char* name : {"MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce", "MPI_Ialltoallw",
                           "MPI_Ineighbor_allgather", "MPI_Iscan"})
    EXPECT_EQ(r::request_use_of(get(name)), r::request_use::collective) << name;
  EXPECT_EQ(r::request_use_of(get("MPI_Barrier")), r::request_use::none);
  EXPECT_EQ(r::request_use_of(get("MPI_Bcast_init")), r::request_use::none);
}

TEST(Routines, WhomABlockingCallWaitsFor) {
  using w = r::blocking_wait;
  const auto of = [](const char* name) { return r::blocking_wait_of(get(name)); };
  for (const char* name : {"MPI_Recv", "MPI_Recv_c", "MPI_Probe", "MPI_Mprobe"})
    EXPECT_EQ(of(name), w::receive) << name;
  for (const char* name : {"MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Send_c"})
    EXPECT_EQ(of(name), w::send) << name;
  EXPECT_EQ(of("MPI_Sendrecv_replace"), w::sendrecv);
  EXPECT_EQ(of("MPI_Wait"), w::all_requests);
  EXPECT_EQ(of("MPI_Waitall"), w::all_requests);
  EXPECT_EQ(of("MPI_Waitany"), w::any_request);
  EXPECT_EQ(of("MPI_Waitsome"), w::any_request);
  for (const char* name :
       {"MPI_Barrier", "MPI_Allreduce_c", "MPI_Neighbor_alltoallw", "MPI_Comm_split",
        "MPI_Comm_dup", "MPI_Win_fence", "MPI_File_open", "MPI_Finalize"})
    EXPECT_EQ(of(name), w::members) << name;
  // Return without waiting for another process, or wait for no one they name.
  for (const char* name : {"MPI_Bsend", "MPI_Isend", "MPI_Ibarrier", "MPI_Barrier_init", "MPI_Test",
                           "MPI_Testall", "MPI_Iprobe", "MPI_Improbe", "MPI_Mrecv", "MPI_Start",
                           "MPI_Reduce_local", "MPI_Comm_rank", "MPI_Send_init", "MPI_Pready"})
    EXPECT_EQ(of(name), w::none) << name;
}
