// The streaming analysis of a trace: operations (Enter..Leave pairs) become vertices of an event
// graph with nesting, partner (send -> receive) and collective edges; the tables of the
// HieraAnalyses paper (Seraphim, Seraphim and Travieso, "HieraAnalyses: a tool for hierarchical
// analysis of parallel programs") and Scalasca's wait states are aggregated while the events
// stream past (analyzer/tables.hpp, analyzer/wait_states.hpp). Only open operations, unmatched
// messages and incomplete collectives are held, so memory does not grow with the trace.
#pragma once

#include "analyzer/trace_reader.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::analyze {

// One vertex of the event graph, handed to an observer when the operation ends.
struct operation {
  uint64_t id = 0;     // unique in the trace: (rank << 40) | sequence number in enter order
  uint64_t parent = 0; // id of the enclosing operation, or no_parent (the nesting edge)
  uint32_t rank = 0;
  uint32_t level = 0; // 0: called by the application; k+1: inside a level-k operation
  uint32_t region = 0;
  uint32_t site = no_call_site;
  uint64_t enter = 0;
  uint64_t leave = 0;
};
inline constexpr uint64_t no_parent = UINT64_MAX;

inline uint32_t rank_of(uint64_t op_id) {
  return static_cast<uint32_t>(op_id >> 40);
}

// A message matched from its send to its receive: the operations at both ends with their times
// (the receive's is the operation that completed it, a Wait for an Irecv).
struct partner_edge {
  uint64_t send_op = 0, send_enter = 0, send_leave = 0;
  uint64_t receive_op = 0, receive_enter = 0, receive_leave = 0;
};

// Time one operation lost in a wait state, from its enter on (wait_states.hpp's patterns).
struct operation_wait {
  uint64_t op = 0;
  uint64_t enter = 0, leave = 0; // the operation's
  uint64_t ticks = 0;
  uint8_t pattern = 0; // a wait_pattern
};

// Receives the graph as it is discovered. Operations arrive when they end (children before their
// parent), and before any edge or wait that involves them; a partner edge when a send and its
// receive are both complete; a collective edge set when every member of one collective instance
// has left it; an operation's wait once it is known (for a receive completing several messages,
// once all are matched). With several analysis processes, each process's observer hears of the
// operations of its ranks, of the partner edges whose receive it reads, of the collectives whose
// communicator's first member it reads and of the waits it computes, which may be other ranks'.
class graph_observer {
public:
  virtual ~graph_observer() = default;
  virtual void on_operation(const operation& op) = 0;
  virtual void on_partner(const partner_edge& edge) = 0;
  virtual void on_collective(const std::vector<uint64_t>& ops) = 0;
  virtual void on_wait(const operation_wait& /*wait*/) {}
};

struct level_row {
  uint32_t rank = 0;
  uint32_t level = 0;
  uint64_t count = 0;
};

struct operation_row {
  uint32_t rank = 0;
  std::string category; // "mpi" or "user"
  std::string operation;
  std::string file;
  uint32_t line = 0;
  uint64_t count = 0;
  double time_s = 0; // inclusive
};

struct operation_total {
  std::string category;
  std::string operation;
  uint64_t count = 0;
  double time_s = 0;
};

struct process_row {
  uint32_t rank = 0;
  double communication_s = 0; // time inside outermost MPI operations
  double total_s = 0;         // first to last event of the rank
};

struct wait_state_row {
  std::string pattern; // late_sender, late_receiver, wait_at_barrier, wait_at_nxn,
                       // late_broadcast, early_reduce
  std::string function;
  std::string file;
  uint32_t line = 0;
  uint32_t rank = 0;
  double time_s = 0;
  uint64_t count = 0; // operation instances that waited
};

// A rank that dropped events at the tracer's size limit: its events after (the stop policy) or
// before (ring) a time are missing; negative when the archive does not say.
// Point-to-point messages from one rank to another (world ranks), counted at the sender: every
// send the trace records. `kind` is "point_to_point" (Send, Isend and their kin), "sendrecv"
// (MPI_Sendrecv, MPI_Sendrecv_replace), "persistent" (started by MPI_Start, MPI_Startall) or
// "partitioned" (a partitioned request's start: every partition, one message).
struct message_pair {
  uint32_t from = 0, to = 0;
  std::string kind;
  uint64_t messages = 0, bytes = 0;
};

struct truncation_row {
  uint32_t rank = 0;
  uint64_t dropped_events = 0;
  double missing_after_s = -1;
  double missing_before_s = -1;
};

struct report {
  std::string archive;
  std::string creator; // what wrote the archive; empty when it does not say
  uint32_t ranks = 0;
  uint64_t events = 0;
  std::vector<level_row> levels;           // Tables 1 and 6
  std::vector<operation_row> operations;   // Tables 2 and 7
  std::vector<operation_total> totals;     // Tables 3 and 8
  std::vector<process_row> processes;      // Table 4
  std::vector<wait_state_row> wait_states; // by time, largest first
  std::vector<message_pair> pairs;         // by sender, receiver and kind
  uint64_t messages = 0;                   // matched send/receive pairs
  uint64_t unmatched_sends = 0;
  uint64_t unmatched_receives = 0;
  uint64_t collectives = 0; // complete collective instances
  uint64_t incomplete_collectives = 0;
  std::vector<std::string> warnings; // inconsistencies the analysis worked around
  // What the tracer dropped at its size limit (the first warning says so in one line) ...
  uint64_t dropped_events = 0;
  std::vector<truncation_row> truncation;
  std::string truncated; // that line; empty for a complete trace
  // ... and the calls it counted rather than recorded (MPI_Wtime, MPI_Comm_rank, ...).
  std::vector<counted_calls> counted;
};

// Several analysis processes share a trace: process `self` of `processes` reads the ranks
// [first(self), first(self + 1)), blocks of nearly equal size, any count from 1 to `ranks`.
struct partition {
  uint32_t processes = 1;
  uint32_t self = 0;
  uint32_t ranks = 0;
  [[nodiscard]] uint32_t first(uint32_t process) const {
    return static_cast<uint32_t>(uint64_t{ranks} * process / processes);
  }
  [[nodiscard]] uint32_t owner(uint32_t rank) const {
    return ranks == 0 ? 0 : static_cast<uint32_t>(((uint64_t{rank} + 1) * processes - 1) / ranks);
  }
};

// What one analysis process hands another (analyzer/replay.hpp moves them over MPI; nothing here
// uses MPI). A send whose receiver another process reads travels to that process, in the order
// of its channel (communicator, source, destination, tag), which is the order MPI matches in.
struct remote_send {
  uint32_t comm, source, dest, tag;
  uint64_t enter, leave, op;
  uint32_t slot;    // the sender's late-receiver slot, or UINT32_MAX
  uint32_t process; // the sender's analysis process
};
// The late-receiver time of one message, back to the process of its blocking send.
struct remote_wait {
  uint32_t slot;
  uint32_t unused;
  uint64_t ticks;
};
// One member's part of a collective instance, to the process reading the communicator's first
// member, which completes the instance.
struct remote_member {
  uint32_t comm, local;
  uint64_t instance;
  uint64_t enter, leave, op;
  uint32_t region, site, coll_op, root;
};

struct partial_result; // analyzer/partial.hpp

class analyzer final : public event_handler {
public:
  explicit analyzer(const definitions& defs, graph_observer* observer = nullptr);
  // One process's part of an analysis shared by several.
  analyzer(const definitions& defs, const partition& part, graph_observer* observer = nullptr);
  ~analyzer() override;
  analyzer(const analyzer&) = delete;
  analyzer& operator=(const analyzer&) = delete;

  void enter(uint32_t rank, uint64_t time, uint32_t region, uint32_t site) override;
  void leave(uint32_t rank, uint64_t time, uint32_t region) override;
  void send(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
            uint64_t bytes) override;
  void isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override;
  void partitioned_isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm,
                         uint32_t tag, uint64_t bytes, uint64_t request) override;
  void isend_complete(uint32_t rank, uint64_t time, uint64_t request) override;
  void irecv_request(uint32_t rank, uint64_t time, uint64_t request) override;
  void recv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
            uint64_t bytes) override;
  void irecv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override;
  void request_cancelled(uint32_t rank, uint64_t time, uint64_t request) override;
  void collective_end(uint32_t rank, uint64_t time, uint32_t op, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override;
  void one_sided(uint32_t rank, uint64_t time, uint8_t kind, uint32_t target,
                 uint64_t bytes) override;
  void program_event(uint32_t rank, uint64_t time) override;

  // Ends the stream: closes what is still open, flushes pending matches, builds the tables.
  report finish(uint64_t events);

  // The steps of finish() for one process of several, with the exchanges between them:
  // close_ranks(); take_sends() and take_members() to their processes, which receive_sends() and
  // receive_members() (every source's records in its own order); then take_waits() back to the
  // senders' processes, receive_waits(); then take_partial(); analyzer/partial.hpp assembles the
  // report from every process's partial result.
  void close_ranks();
  std::vector<std::vector<remote_send>> take_sends();
  std::vector<std::vector<remote_member>> take_members();
  void receive_sends(const remote_send* sends, size_t count);
  void receive_members(const remote_member* members, size_t count);
  std::vector<std::vector<remote_wait>> take_waits();
  void receive_waits(const remote_wait* waits, size_t count);
  partial_result take_partial(uint64_t events);

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

// Reads and analyses a whole archive. Throws trace_error.
report analyze_trace(const std::string& path, graph_observer* observer = nullptr);

} // namespace strata::analyze
