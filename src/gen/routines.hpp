// What every MPI routine is: one generated table (src/gen/routines.txt and roles.txt over both
// MPIs' headers) that the profiler, the tracer, the analyzer and the site's reports all read.
// No MPI needed: routines are found by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "routine_groups.hpp"

namespace strata::routines {

// The routine groups (enum class group, group_count, group_titles) are generated from
// routines.txt's [groups]: those of the automatic counter profiling paper (Fig. 11), plus
// one-sided and I/O. The order is stored by the site (day tables): append only.

// What a call does to messages, as a trace records it.
enum class kind : uint8_t {
  other,      // no message: local or set-up routines
  send,       // blocking send (MPI_Send, Bsend, Ssend, Rsend)
  isend,      // nonblocking send
  recv,       // blocking receive (MPI_Recv)
  irecv,      // nonblocking receive
  sendrecv,   // MPI_Sendrecv(_replace)
  completion, // MPI_Wait/Test and their all/any/some forms
  p2p_other,  // other point to point: probes, persistent requests, start, cancel, free
  collective, // a collective operation (blocking, nonblocking or persistent)
  one_sided,
  io,
};

enum class collective_op : uint8_t {
  none,
  barrier,
  bcast,
  gather,
  gatherv,
  scatter,
  scatterv,
  allgather,
  allgatherv,
  alltoall,
  alltoallv,
  alltoallw,
  reduce,
  allreduce,
  reduce_scatter,
  reduce_scatter_block,
  scan,
  exscan,
  neighbor_allgather,
  neighbor_allgatherv,
  neighbor_alltoall,
  neighbor_alltoallv,
  neighbor_alltoallw,
};

// What a one-sided operation moves (routines.txt, [one_sided]).
enum class one_sided_op : uint8_t {
  none,
  put,        // MPI_Put, MPI_Rput: the origin's data to the target
  get,        // MPI_Get, MPI_Rget: the target's data to the origin
  accumulate, // MPI_Accumulate and its kin, MPI_Fetch_and_op, MPI_Compare_and_swap
};

// Who waits for whom in a collective: what wait-state analysis needs to know.
enum class collective_shape : uint8_t {
  none,
  barrier,    // everyone for everyone, no data
  one_to_all, // the others wait for the root (bcast, scatter)
  all_to_one, // the root waits for the others (gather, reduce)
  all_to_all, // everyone for everyone, with data (allreduce, allgather, alltoall, ...)
  prefix,     // rank i waits for ranks below it (scan, exscan)
  neighbor,   // each rank for its topology neighbours
};

// The argument roles of src/gen/roles.txt, as bits.
enum role : uint16_t {
  role_send = 1u << 0,
  role_recv = 1u << 1,
  role_peer = 1u << 2,
  role_tag = 1u << 3,
  role_comm = 1u << 4,
  role_root = 1u << 5,
  role_request = 1u << 6,
  role_wait = 1u << 7,
  role_requests = 1u << 8,
  role_status = 1u << 9,
  role_flag = 1u << 10,
  role_index = 1u << 11,    // which one request completed (MPI_Waitany, MPI_Testany)
  role_outcount = 1u << 12, // how many did (MPI_Waitsome, MPI_Testsome)
  role_done = 1u << 13,     // whether all did (MPI_Testall)
};

// Where a routine's roles are among its arguments, by position in the C prototype (0 first; -1:
// none; the same in both MPIs' headers, and in a routine's large-count twin), for whoever reads
// a call's raw arguments (the hang state). count and type are those of the bytes sent, else
// received, when one count says them; comm is a routine's MPI_Comm argument even without a
// comm= role (MPI_Comm_split).
struct argument_positions {
  int8_t peer = -1, tag = -1, comm = -1, root = -1, count = -1, type = -1;
  int8_t recv_peer = -1, recv_tag = -1; // the receive side of a Sendrecv
  // The requests a completion names (roles.txt's wait= and requests=): its MPI_Request*
  // (MPI_Wait, MPI_Test, MPI_Start), or its array of them, request_count their count
  // (MPI_Waitall, MPI_Waitany, MPI_Waitsome, the Test forms, MPI_Startall).
  int8_t requests = -1, request_count = -1;
};

struct info {
  const char* name; // "MPI_Send"
  routines::group group;
  routines::kind kind;
  collective_op op;
  routines::one_sided_op one_sided; // none but for the operations on a window's target
  bool nonblocking;       // returns before the operation completes (with a request, mostly)
  bool persistent;        // creates a persistent request (MPI_Send_init, MPI_Bcast_init)
  bool partitioned;       // MPI-4 partitioned communication
  bool large_count;       // the "_c" twin of a routine
  bool local;             // never waits for another process
  bool cheap;             // local and a few ns: the profiler counts it without timing it
  bool poll;              // has a completion flag (MPI_Test, MPI_Testany, MPI_Iprobe)
  bool handle_conversion; // C/Fortran handle or status conversion (MPI_Comm_f2c, ...)
  bool collective_setup;  // collective over a communicator without moving data (MPI_Comm_split)
  uint16_t roles;         // role bits
  argument_positions at;  // where the roles' arguments are

  bool can_wait() const { return !local; }
  bool is_collective() const { return kind == kind::collective; }
  collective_shape shape() const;
};

// What a point-to-point routine does with a request of its own, from the table: one answer
// for the trace's records, the profile's matrix and the hang state's message queue.
enum class request_use : uint8_t {
  none,
  sends,         // MPI_Isend and its kin: one message, completed through the request
  receives,      // MPI_Irecv
  makes_send,    // MPI_Send_init and its kin: a message each time the request is started
  makes_receive, // MPI_Recv_init
  starts_one,    // MPI_Start
  starts_many,   // MPI_Startall
  // Beside the point-to-point ones, for the hang state's message queue:
  receives_matched, // MPI_Imrecv: the receive of a message a probe already matched
  collective,       // a nonblocking collective (MPI_Ibarrier, ...): done once every member entered
};
request_use request_use_of(const info& r);

// For whom a blocking routine keeps its caller waiting, from the table: the edges of the hang
// diagnosis's wait-for graph.
enum class blocking_wait : uint8_t {
  none,         // local, nonblocking, a poll, or no one it names (MPI_Mrecv: its message matched)
  receive,      // a message from its source: MPI_Recv, MPI_Probe, MPI_Mprobe
  send,         // its receiver: MPI_Send, MPI_Ssend, MPI_Rsend (MPI_Bsend is local)
  sendrecv,     // both: MPI_Sendrecv, MPI_Sendrecv_replace
  all_requests, // every request it names: MPI_Wait, MPI_Waitall
  any_request,  // any one of them: MPI_Waitany, MPI_Waitsome
  members,      // the other members of its communicator: the blocking collectives and the
                // collective set-up (routines.txt's [collective_setup]: MPI_Comm_split, ...)
};
blocking_wait blocking_wait_of(const info& r);

// The routine of that name ("MPI_Send", "MPI_Send_c"), or null if neither MPI declares it.
const info* find(std::string_view name);
// Every routine, sorted by name.
std::span<const info> all();

std::string_view name_of(group g);       // "blocking point to point", ..., "other"; "" for none
std::string_view name_of(collective_op); // "bcast"; "" for none

} // namespace strata::routines
