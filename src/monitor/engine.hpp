// What one overlay node does with the packets it receives, without MPI: the same code runs in
// the tool ranks (the module, module/monitor_module.cpp, moves the bytes) and in the one-process
// simulation.
//
// Rounds are pipelined: a node keeps any number of rounds open. Each child delivers its rounds
// in increasing order (MPI keeps the order of messages between two ranks on one tag), so a round
// is complete when every child has sent it, sent a later one (it skipped this one: its offload
// was dropped) or finished. The final round (offloaded at MPI_Finalize) sorts after all others.
#pragma once

#include "monitor/filter.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace strata::overlay {

enum class packet_kind : uint8_t {
  profile = 1, // application rank -> node: an encoded rank_profile
  up_a = 2,    // node -> parent: phase A part
  up_c = 3,    // node -> parent: phase C part (binned)
  fin = 4,     // child -> parent: no more rounds from this subtree
  bounds = 5,  // parent -> child: phase B
  fini = 6,    // root -> everyone below: the application is done, finalize
  // The hang diagnosis through the tree (src/monitor/module/hang_tree.cpp): `round` is the ask's
  // number at the root, the payload the job's key and spool (down) or a batch of states (up).
  hang_ask = 7,    // parent -> child tool node: read your ranks' states
  hang_states = 8, // child tool node -> parent: its subtree's states (strata.hang-batch/1)
};

struct packet {
  packet_kind kind = packet_kind::fin;
  uint64_t round = 0;
  uint32_t ranks = 0; // application ranks this part covers
  std::string payload;
};

std::string encode_packet(const packet& p);
packet decode_packet(std::string_view bytes); // throws wire_error

// One of the root's results: a reduced round.
struct round_result {
  uint64_t round = 0;
  uint32_t ranks = 0;
  uint64_t root_bytes = 0; // bytes the root received for this round
  std::string json;        // the filter's rendering (a JSON object)
};

struct node_output {
  enum class target { parent, child, front } to = target::parent;
  int child = -1; // index among this node's children
  packet p;
  round_result result; // to == front
};

class node_engine {
public:
  // `children`: how many; `leaf_children`: they are application ranks (send profiles).
  node_engine(const filter& f, int children, bool leaf_children, bool root);

  void on_child(int child, packet p, std::vector<node_output>& out);
  void on_parent(const packet& p, std::vector<node_output>& out);
  // Every child has finished and every round has gone up (a fin was emitted to the parent).
  bool done() const { return done_; }

private:
  struct round_state {
    std::vector<std::string> a_parts;
    std::vector<int> participants;
    std::vector<rank_profile> kept; // three-phase filters, bottom level: until the bounds come
    uint32_t ranks = 0;
    bool a_done = false;
    std::string root_a;
    std::vector<std::string> c_parts;
    size_t c_expected = 0;
    bool bounds_in = false;
    uint64_t bytes = 0;
  };
  void advance(std::vector<node_output>& out);
  void apply_bounds(uint64_t round, round_state& r, const std::string& bounds,
                    std::vector<node_output>& out);
  void finish_c(uint64_t round, round_state& r, std::vector<node_output>& out);
  void emit(uint64_t round, const round_state& r, const std::string* root_c,
            std::vector<node_output>& out);

  const filter& filter_;
  bool leaf_children_;
  bool root_;
  std::vector<uint64_t> passed_; // per child: every round below this one has been seen
  std::vector<bool> finished_;   // per child: its fin has come
  std::map<uint64_t, round_state> rounds_;
  bool done_ = false;
};

} // namespace strata::overlay
