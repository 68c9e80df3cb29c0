// The trace module's finalize at scale, in one process: the definitions of P ranks unified up the
// binomial tree (the same merge, serialisation and map code as the module, tracer/unify.hpp)
// against the earlier flat scheme (every rank's definitions gathered on rank 0 and unified
// there), and the clock offsets measured down the tree against rank 0 ping-ponging with every
// rank in turn.
//
// Each rank of the synthetic job uses 30 MPI routines, 20 user regions and 50 call sites that
// every rank shares plus one of its own, MPI_COMM_WORLD, a duplicate of it, and a row and a
// column communicator of a sqrt(P) x sqrt(P) grid; 64 ranks per host. On the tree's critical path
// (rank 0's last child, whose subtree is half the job, and so on down) every step is run for real:
// serialising the subtree's set, reading it back, merging it into a set of the same size,
// composing and flattening the map sent back down. Network time is modelled as
// latency + bytes / bandwidth per message. The flat scheme's rank 0 is costed from one rank's
// definitions read and merged, times P, plus every byte of the gather.
//
//   trace_finalize_sim [--ranks N,N,...] [--latency-us L] [--bandwidth-gbs B] [--rtt-us R]
//
// One line per P: bench finsim ranks=P rounds=K tree_s=.. tree_root_bytes=.. flat_s=..
// flat_root_bytes=.. clock_tree_s=.. clock_flat_s=.. root_set_bytes=..
#include "tracer/unify.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace strata::trace;

namespace {

struct job {
  int ranks;
  int side; // the grid's rows and columns: ceil(sqrt(ranks))
};

std::vector<int> range(int first, int last) { // [first, last)
  std::vector<int> out;
  for (int r = first; r < last; ++r)
    out.push_back(r);
  return out;
}

std::vector<int> column(const job& j, int c) {
  std::vector<int> out;
  for (int r = c; r < j.ranks; r += j.side)
    out.push_back(r);
  return out;
}

// What ranks [first, last) unified hold, built directly (the tree would give the same set).
merged_defs subtree_set(const job& j, int first, int last) {
  merged_defs d;
  for (int h = first / 64; h <= (last - 1) / 64; ++h)
    d.hosts.push_back("node" + std::to_string(h));
  for (int r = first; r < last; ++r)
    d.rank_host.push_back(static_cast<uint32_t>(r / 64 - first / 64));
  for (int i = 0; i < 30; ++i)
    d.mpi_regions.push_back("MPI_Routine" + std::to_string(i));
  for (int i = 0; i < 20; ++i)
    d.user_regions.push_back("solver::phase" + std::to_string(i));
  for (int i = 0; i < 50; ++i)
    d.sites.push_back({"src/solver/kernel.cpp", static_cast<uint32_t>(100 + i)});
  for (int r = first; r < last; ++r)
    d.sites.push_back({"src/solver/rank_specific.cpp", static_cast<uint32_t>(r)});
  d.comms.emplace_back(range(0, j.ranks), 0);
  d.comms.emplace_back(range(0, j.ranks), 1);
  for (int row = first / j.side; row <= (last - 1) / j.side; ++row)
    d.comms.emplace_back(range(row * j.side, std::min(j.ranks, (row + 1) * j.side)), 0);
  for (int c = 0; c < j.side && c < j.ranks; ++c) {
    bool touches = last - first >= j.side;
    for (int r = first; !touches && r < last; ++r)
      touches = r % j.side == c;
    if (touches)
      d.comms.emplace_back(column(j, c), 0);
  }
  return d;
}

local_defs rank_defs(const job& j, int r) {
  local_defs d;
  d.host = "node" + std::to_string(r / 64);
  for (int i = 0; i < 30; ++i)
    d.mpi_regions.push_back("MPI_Routine" + std::to_string(i));
  for (int i = 0; i < 20; ++i)
    d.user_regions.push_back("solver::phase" + std::to_string(i));
  for (int i = 0; i < 50; ++i)
    d.sites.push_back({"src/solver/kernel.cpp", static_cast<uint32_t>(100 + i)});
  d.sites.push_back({"src/solver/rank_specific.cpp", static_cast<uint32_t>(r)});
  d.comms = {range(0, j.ranks), range(0, j.ranks),
             range(r / j.side * j.side, std::min(j.ranks, (r / j.side + 1) * j.side)),
             column(j, r % j.side)};
  return d;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    out.push_back(std::atoi(p));
    const char* comma = std::strchr(p, ',');
    p = comma != nullptr ? comma + 1 : p + std::strlen(p);
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {2, 4, 8, 16, 32, 64, 1024, 16384, 100000};
  double latency_s = 2e-6;
  double bandwidth = 10e9; // bytes per second
  double rtt_s = 4e-6;     // one clock ping-pong
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0)
      sizes = int_list(argv[i + 1]);
    else if (std::strcmp(argv[i], "--latency-us") == 0)
      latency_s = std::atof(argv[i + 1]) * 1e-6;
    else if (std::strcmp(argv[i], "--bandwidth-gbs") == 0)
      bandwidth = std::atof(argv[i + 1]) * 1e9;
    else if (std::strcmp(argv[i], "--rtt-us") == 0)
      rtt_s = std::atof(argv[i + 1]) * 1e-6;
  }
  for (const int p : sizes) {
    const job j{p, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(p))))};
    int rounds = 0;
    while ((1 << rounds) < p)
      ++rounds;
    // The tree: level k merges a subtree of 2^k ranks into a set of 2^k ranks, up, then the map
    // of that subtree's set goes back down.
    double tree_s = 0;
    uint64_t root_bytes = 0;
    merged_defs root;
    for (int k = 0; k < rounds; ++k) {
      const int half = 1 << k;
      const int last = std::min(p, 2 * half);
      merged_defs mine = subtree_set(j, 0, half);
      const merged_defs theirs = subtree_set(j, half, last);
      const auto t0 = std::chrono::steady_clock::now();
      const std::string bytes = serialize(theirs);
      merged_defs back;
      if (!deserialize(bytes, back, p)) {
        std::fprintf(stderr, "trace_finalize_sim: the set did not read back\n");
        return 1;
      }
      const rank_map up = merge_into(mine, back);
      rank_map down;
      compose(up, global_ids(mine), down);
      const std::vector<uint32_t> flat = flatten(down);
      rank_map received;
      unflatten(flat, received);
      const double cpu = seconds_since(t0);
      const double wire = 2 * latency_s + static_cast<double>(bytes.size()) / bandwidth +
                          static_cast<double>(flat.size() * 4) / bandwidth;
      tree_s += cpu + wire;
      root_bytes += bytes.size() + flat.size() * 4;
      if (k == rounds - 1)
        root = std::move(mine);
    }
    if (p == 1)
      root = subtree_set(j, 0, 1);
    // The flat scheme: rank 0 reads and unifies every rank's definitions (two ranks', timed,
    // halved, times P: a lower bound, the real index grows with the job) and receives all of them.
    const std::string one = serialize(rank_defs(j, p - 1));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<local_defs> two(2);
    deserialize(one, two[0]);
    deserialize(serialize(rank_defs(j, 0)), two[1]);
    global_defs global;
    std::vector<rank_map> maps;
    unify(two, global, maps);
    const double per_rank = seconds_since(t0) / 2;
    const double flat_bytes = static_cast<double>(one.size()) * p;
    const double flat_s = per_rank * p + flat_bytes / bandwidth + 2 * latency_s * rounds;
    const double clock_tree = rounds * (8 * rtt_s + latency_s);
    const double clock_flat = (p - 1) * 8 * rtt_s;
    std::printf("bench finsim ranks=%d rounds=%d tree_s=%.6f tree_root_bytes=%llu flat_s=%.6f "
                "flat_root_bytes=%.0f clock_tree_s=%.6f clock_flat_s=%.6f root_set_bytes=%zu\n",
                p, rounds, tree_s, static_cast<unsigned long long>(root_bytes), flat_s, flat_bytes,
                clock_tree, clock_flat, serialize(root).size());
    std::fflush(stdout);
  }
  return 0;
}
