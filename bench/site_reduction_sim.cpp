// The profile's finalize reduction of host names and call sites in one process (the same merge
// and tree code as the profile module, profiler/site_reduction.hpp), for job sizes up to
// 100,000 ranks: every rank's text as a rank of an SPMD program writes it (S call sites every
// rank makes, with figures that differ by rank, U of its own, 32 ranks per host), then
//   - the gather: every text to rank 0, merged there in rank order (the profile before the tree);
//   - the tree: merged on the way up, each rank receiving its children's summaries.
// Prints per job size the bytes rank 0 receives, the largest any rank receives, the rounds, the
// merge CPU time at rank 0 (gather) and along the tree's slowest path (each rank's own work plus
// its slowest child's), and a projection of the finalize time with a network of L seconds per
// message and B bytes per second: the tree's rounds in sequence, each message carrying the packed
// figures of R routines too; before, an MPI_Reduce of those figures (log2(P) rounds) and then the
// gather (log2(P) rounds, all its bytes through rank 0's link).
//
//   site_reduction_sim [--ranks N,N,...] [--sites S] [--own U] [--fan-in K] [--routines R]
//                      [--latency-us L] [--bandwidth-gbs B]
#include "profiler/site_reduction.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

using namespace strata::profiler;

namespace {

std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    out.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != '\0')
      break;
  }
  return out;
}

std::string rank_text(int rank, int sites, int own) {
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank + 1);
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % 10'000'000;
  };
  std::vector<callsite_total> list;
  for (int i = 0; i < sites; ++i)
    list.push_back({i % 3 == 0   ? "MPI_Isend"
                    : i % 3 == 1 ? "MPI_Irecv"
                                 : "MPI_Allreduce",
                    "/home/user/app/src/solver_step.c", 100 + i, "solver_step", next() % 1000,
                    next(), next(), 0, 1});
  for (int i = 0; i < own; ++i)
    list.push_back({"MPI_Send", "/home/user/app/src/io.c", 1000 + rank * own + i, "write_part", 1,
                    next(), next(), 0, 1});
  return summary_text({"node" + std::to_string(rank / 32) + ".cluster.example.org"}, list);
}

double cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {2, 8, 64, 1024, 16384, 100000};
  int sites = 30;
  int own = 0;
  int fan_in = site_tree_fan_in;
  int routines = 20;
  double latency = 2e-6;
  double bandwidth = 5e9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0)
      sizes = int_list(argv[i + 1]);
    else if (std::strcmp(argv[i], "--sites") == 0)
      sites = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--own") == 0)
      own = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--fan-in") == 0)
      fan_in = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--routines") == 0)
      routines = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--latency-us") == 0)
      latency = std::atof(argv[i + 1]) * 1e-6;
    else if (std::strcmp(argv[i], "--bandwidth-gbs") == 0)
      bandwidth = std::atof(argv[i + 1]) * 1e9;
    else {
      std::fprintf(stderr, "usage: site_reduction_sim [--ranks N,N,...] [--sites S] [--own U] "
                           "[--fan-in K] [--routines R] [--latency-us L] [--bandwidth-gbs B]\n");
      return 2;
    }
  }
  const double figures = static_cast<double>(
      packed_words(static_cast<uint64_t>(std::max(routines, 0))) * sizeof(uint64_t));
  for (const int size : sizes) {
    const auto text_of = [&](int rank) { return rank_text(rank, sites, own); };
    // The gather: every text at rank 0, merged there.
    // Writing the texts is each rank's own work, not rank 0's: its time is taken off the merge.
    uint64_t gathered = 0;
    double t = cpu_seconds();
    for (int r = 0; r < size; ++r)
      gathered += r == 0 ? 0 : text_of(r).size();
    const double writing_s = cpu_seconds() - t;
    t = cpu_seconds();
    const ranks_summary flat = merge_texts_in_rank_order(size, text_of);
    const double flat_merge_s = std::max(0.0, cpu_seconds() - t - writing_s);
    // The tree.
    site_tree_costs costs;
    const ranks_summary tree = reduce_texts_over_tree(size, text_of, fan_in, &costs);
    if (summary_text(tree) != summary_text(flat)) {
      std::fprintf(stderr, "the tree and the gather disagree at %d ranks\n", size);
      return 1;
    }
    uint64_t most = 0;
    // The slowest path below each rank: merge work only, and with the network's costs.
    std::vector<double> work(static_cast<size_t>(size));
    std::vector<double> path(static_cast<size_t>(size));
    for (int r = size - 1; r >= 0; --r) {
      const auto at = static_cast<size_t>(r);
      double slowest_work = 0;
      double slowest_path = 0;
      for (const int c : site_tree_place_of(r, size, fan_in).children) {
        slowest_work = std::max(slowest_work, work[static_cast<size_t>(c)]);
        slowest_path =
            std::max(slowest_path, path[static_cast<size_t>(c)] + latency + figures / bandwidth);
      }
      const double own_work = static_cast<double>(costs.work_ns[at]) / 1e9;
      work[at] = slowest_work + own_work;
      path[at] =
          slowest_path + own_work + static_cast<double>(costs.received_bytes[at]) / bandwidth;
      most = std::max(most, costs.received_bytes[at]);
    }
    int rounds = 0;
    while ((1 << rounds) < size)
      ++rounds;
    const double gather_s = (latency + figures / bandwidth) * rounds + latency * rounds +
                            static_cast<double>(gathered) / bandwidth + flat_merge_s;
    std::printf("bench sitesim ranks=%d sites=%d own=%d fan_in=%d distinct_sites=%zu "
                "gather_root_bytes=%llu tree_root_bytes=%llu tree_max_rank_bytes=%llu "
                "tree_rounds=%d gather_merge_ms=%.3f tree_path_ms=%.3f gather_projected_ms=%.3f "
                "tree_projected_ms=%.3f\n",
                size, sites, own, fan_in, flat.callsites().size(),
                static_cast<unsigned long long>(gathered),
                static_cast<unsigned long long>(costs.received_bytes[0]),
                static_cast<unsigned long long>(most), site_tree_place_of(0, size, fan_in).height,
                flat_merge_s * 1e3, work[0] * 1e3, gather_s * 1e3, path[0] * 1e3);
    std::fflush(stdout);
  }
  return 0;
}
