// The front end's side of the overlay: round lines (JSON), the one-process simulation of a whole
// tree (the same filter and engine code as the tool ranks), and the file transport's reader.
#pragma once

#include "monitor/engine.hpp"
#include "monitor/filter.hpp"
#include "monitor/tree.hpp"

#include <string>
#include <vector>

namespace strata::overlay {

// One JSON line: {"round": N|"final", "ranks", "filter", "root_bytes", "time", ...the filter's}.
std::string round_json_line(const round_result& r, const std::string& filter_name,
                            double elapsed_s);

struct simulation_result {
  std::vector<round_result> rounds;
  double total_s = 0;         // all nodes' work, one after the other
  double critical_path_s = 0; // sum over levels of the slowest node's work: the tree's latency
  uint64_t packets = 0;
  uint64_t bytes_moved = 0; // every packet's payload, all edges
  int tool_nodes = 0;
};

// Runs a tree of `fanout` over the rounds of `profiles` (encoded rank_profile, any number of
// rounds per rank, in increasing round order per rank) in this process.
simulation_result simulate(const filter& f, const std::vector<std::vector<std::string>>& profiles,
                           int fanout);

// The file transport: DIR/rank.<r>.rounds files of length-prefixed profiles. Reduces each round
// with `f` (through a tree of `fanout`, as the tool ranks would) and returns the round lines.
// Malformed files give one message naming the file in `error` (the readable rounds still come).
std::vector<std::string> read_round_files(const std::string& dir, const filter& f, int fanout,
                                          std::string& error);

// Appends one length-prefixed record (u32 length, bytes) to `fd`; false when the write failed.
bool append_record(int fd, const std::string& bytes);

} // namespace strata::overlay
