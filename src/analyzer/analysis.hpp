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

// Receives the graph as it is discovered. Operations arrive when they end (children before their
// parent); a partner edge when a send and its receive are both complete; a collective edge set
// when every member of one collective instance has left it.
class graph_observer {
public:
  virtual ~graph_observer() = default;
  virtual void on_operation(const operation& op) = 0;
  virtual void on_partner(uint64_t send_op, uint64_t receive_op) = 0;
  virtual void on_collective(const std::vector<uint64_t>& ops) = 0;
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
  uint64_t messages = 0;                   // matched send/receive pairs
  uint64_t unmatched_sends = 0;
  uint64_t unmatched_receives = 0;
  uint64_t collectives = 0; // complete collective instances
  uint64_t incomplete_collectives = 0;
  std::vector<std::string> warnings; // inconsistencies the analysis worked around
};

class analyzer final : public event_handler {
public:
  explicit analyzer(const definitions& defs, graph_observer* observer = nullptr);
  ~analyzer() override;
  analyzer(const analyzer&) = delete;
  analyzer& operator=(const analyzer&) = delete;

  void enter(uint32_t rank, uint64_t time, uint32_t region, uint32_t site) override;
  void leave(uint32_t rank, uint64_t time, uint32_t region) override;
  void send(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
            uint64_t bytes) override;
  void isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override;
  void isend_complete(uint32_t rank, uint64_t time, uint64_t request) override;
  void irecv_request(uint32_t rank, uint64_t time, uint64_t request) override;
  void recv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
            uint64_t bytes) override;
  void irecv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override;
  void request_cancelled(uint32_t rank, uint64_t time, uint64_t request) override;
  void collective_end(uint32_t rank, uint64_t time, uint32_t op, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override;
  void program_event(uint32_t rank, uint64_t time) override;

  // Ends the stream: closes what is still open, flushes pending matches, builds the tables.
  report finish(uint64_t events);

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

// Reads and analyses a whole archive. Throws trace_error.
report analyze_trace(const std::string& path, graph_observer* observer = nullptr);

} // namespace strata::analyze
