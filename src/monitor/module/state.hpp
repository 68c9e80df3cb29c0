// The monitor module's state, shared by its parts: the module's glue and life cycle
// (monitor_module.cpp), the offload of rounds from the application ranks over the three
// transports (offload.cpp), and the loop of the tool ranks that reduce them (tool_rank.cpp).
#pragma once

#include "hang/tree_ask.hpp"
#include "monitor/engine.hpp"
#include "monitor/filter.hpp"
#include "monitor/monitor_options.hpp"
#include "monitor/tree.hpp"

#include <mpi.h>
#include <strata/module.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <vector>

// Everything here is the module's own.
#pragma GCC visibility push(hidden)
namespace strata::monitor {

constexpr int overlay_tag = 0x5173; // every overlay message: one tag keeps each pair in order
// MPI_Comm_create_group's tags for the monitor's communicators (on the world, one each).
constexpr int overlay_comm_tag = 0x5174;
constexpr int app_comm_tag = 0x5175;
constexpr int control_comm_tag = 0x5176;
constexpr int count_comm_tag = 0x5177;
// Application rank 0 -> the root tool rank, once at the start: its pid and host (hang_tree.cpp).
constexpr int hang_facts_tag = 0x5178;

struct send_slot {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

// One round of the inline transport: the sizes gathered first (on `control`), then the bytes
// (on `overlay`). Collectives match by their order on each communicator: every rank posts the
// size gathers in round order, and each round's byte gather once its sizes are in, in round
// order too, so several rounds can be in flight.
struct inline_round {
  std::string bytes; // this rank's encoded profile; empty for the padding rounds of finalize
  int size = 0;
  std::vector<int> sizes; // rank 0
  std::vector<int> displs;
  std::string gathered;
  MPI_Request request = MPI_REQUEST_NULL;
  int stage = 0; // 0: sizes in flight, 1: bytes in flight, 2: done
};

struct monitor_state {
  const strata_host* host = nullptr;
  int self = 0;
  MPI_Comm world = MPI_COMM_NULL; // every process at mpi_ready (strata_host::world)
  options opt;
  std::unique_ptr<overlay::filter> filter;
  std::vector<std::string> names;
  // By function id: calls, time, bytes. Relaxed atomics under MPI_THREAD_MULTIPLE.
  std::vector<uint64_t> calls;
  std::vector<uint64_t> time_ns;
  std::vector<uint64_t> bytes;
  bool threaded = false;
  uint64_t start_ns = 0;
  uint64_t period_ns = 0;
  std::atomic<uint64_t> next_due_ns{UINT64_MAX};
  std::atomic<bool> dumping{false};
  std::atomic<bool> ready{false};
  bool finalized = false;

  int world_rank = 0;
  int world_size = 1;
  int app_rank = 0;
  int app_size = 1;
  MPI_Comm app = MPI_COMM_NULL;     // what the application sees as its world
  MPI_Comm overlay = MPI_COMM_NULL; // the monitor's own traffic (every process of the real world)
  int parent = -1;                  // tree: the world rank this application rank offloads to
  std::vector<send_slot> slots;
  uint64_t next_round = 0;
  uint64_t dropped = 0;
  uint64_t blocked = 0;
  int file_fd = -1;
  // inline transport: rounds gathered to rank 0 with non-blocking collectives on `overlay`
  std::deque<std::unique_ptr<struct inline_round>> inline_rounds;
  uint64_t inline_posted = 0;
  MPI_Comm control = MPI_COMM_NULL; // inline: the gathers of the rounds' sizes
  MPI_Comm count = MPI_COMM_NULL;   // inline: the count of rounds, agreed at finalize
  std::FILE* inline_out = nullptr;  // rank 0
};

extern monitor_state* g_state;

inline uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline void sleep_us(long us) {
  timespec t{us / 1000000, (us % 1000000) * 1000};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

inline double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

inline void log_line(const monitor_state& s, const std::string& message) {
  s.host->log(s.self, message.c_str());
}

// offload.cpp: a round now (from the call path, a dump, Pcontrol or finalize), one packet up the
// tree, and the inline transport's last rounds at finalize.
void dump(monitor_state& s, bool final);
void send_packet(monitor_state& s, const overlay::packet& p, bool final);
void finish_inline(monitor_state& s);

// hang_tree.cpp: the hang diagnosis through the tree. Application rank 0 tells the root its pid
// and host at the start (send_rank0_facts); each tool rank keeps a hang_node, which the root polls
// for asks in the spool and every node feeds the hang packets it receives.
void send_rank0_facts(monitor_state& s, int root_world_rank);

// One ask a tool rank is serving: its children's batches merged as they come.
struct hang_in_flight {
  uint64_t id = 0;
  int parent = -1; // world rank; -1 at the root
  size_t waiting = 0;
  uint64_t started_ns = 0;
  uint64_t bytes_in = 0;
  hang::state_batch merged;
};

class hang_node {
public:
  using send_fn = std::function<void(int world_rank, const overlay::packet&)>;
  hang_node(monitor_state& s, const overlay::tree_layout& tree, int node);
  hang_node(const hang_node&) = delete;
  hang_node& operator=(const hang_node&) = delete;
  // The root: its door in each spool once it exists, and an ask there (every 100 ms).
  void poll(const send_fn& send);
  // A packet of the hang kinds (false for any other kind); `from_parent_rank` is the parent's
  // world rank when the parent sent it (else -1), `child` the child's index when a child did.
  bool on_packet(overlay::packet& p, int from_parent_rank, int child, const send_fn& send,
                 std::string& problem);
  // The job ends: the door goes (the process ends without destructors).
  void close();

private:
  void start(uint64_t id, const std::string& key, const std::string& spool, int parent,
             const send_fn& send);
  void finish(const send_fn& send);

  bool root_ = false;
  bool leaf_children_ = false;
  std::vector<int> children_;
  int leaves_ = 0;
  int tool_ranks_ = 0;
  long long rank0_pid_ = 0;
  std::string rank0_host_;
  std::vector<std::string> spools_;
  std::vector<bool> doors_; // per spool: the root's door is there
  uint64_t next_poll_ns_ = 0;
  uint64_t asks_ = 0;
  hang::tree_ask ask_;
  std::optional<hang_in_flight> pending_;
};

// tool_rank.cpp: a tool rank's node of the tree, until the root says the application finalized.
[[noreturn]] void run_tool_rank(monitor_state& s, const overlay::tree_layout& tree, int node);

} // namespace strata::monitor
#pragma GCC visibility pop
