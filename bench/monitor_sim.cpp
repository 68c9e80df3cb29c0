// The overlay of issue 7 in one process (the same filter and node code as the tool ranks): for
// N ranks and fanout K, one round of synthetic profiles (E events, times spread across ranks,
// even and odd ranks doing different MPI work) reduced through the tree. Prints, per filter,
// the bytes the root receives for the round, the reduction factor against no reduction (raw),
// every node's work summed, and the slowest node per level summed (the tree's latency).
//
//   monitor_sim [--ranks N,N,...] [--fanout K,K,...] [--events E] [--filters a,b,...]
#include "monitor/filter.hpp"
#include "monitor/frontend.hpp"
#include "monitor/profile_round.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace strata::overlay;

namespace {

// Leaves the root's work at the reduction: rendering 100,000 raw profiles as JSON would
// measure the JSON library, not the overlay.
class unrendered final : public filter {
public:
  explicit unrendered(std::unique_ptr<filter> f) : f_(std::move(f)) {}
  const char* name() const override { return f_->name(); }
  bool three_phase() const override { return f_->three_phase(); }
  std::string leaf(const rank_profile& p) const override { return f_->leaf(p); }
  std::string merge(const std::vector<std::string>& parts) const override {
    return f_->merge(parts);
  }
  std::string bounds(const std::string& a) const override { return f_->bounds(a); }
  std::string bin(const rank_profile& p, const std::string& b) const override {
    return f_->bin(p, b);
  }
  std::string merge_binned(const std::vector<std::string>& parts) const override {
    return f_->merge_binned(parts);
  }
  std::string render(const std::string&, const std::string*) const override { return "{}"; }

private:
  std::unique_ptr<filter> f_;
};

std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    out.push_back(std::atoi(p));
    const char* comma = std::strchr(p, ',');
    p = comma != nullptr ? comma + 1 : p + std::strlen(p);
  }
  return out;
}

std::vector<std::string> word_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::vector<std::string>> synthetic_round(int ranks, int events) {
  std::vector<std::vector<std::string>> leaves(static_cast<size_t>(ranks));
  uint64_t seed = 88172645463325252ull;
  auto next = [&] { // xorshift: reproducible spread without <random>'s weight
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int r = 0; r < ranks; ++r) {
    rank_profile p;
    p.rank = static_cast<uint32_t>(r);
    for (int e = 0; e < events; ++e) {
      const char* role = (r % 2 == 0) ? "MPI_Send" : "MPI_Recv";
      std::string name = e == 0 ? role : "MPI_Event_" + std::to_string(e);
      p.events.push_back({name, 100 + next() % 50, 1000000 + next() % 1000000, next() % 65536});
    }
    leaves[static_cast<size_t>(r)].push_back(encode_profile(p));
  }
  return leaves;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks{64, 256, 1024, 4096, 16384, 65536, 100000};
  std::vector<int> fanouts{8};
  int events = 20;
  std::vector<std::string> filters{"raw", "stats", "histogram", "classes"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--ranks")
      ranks = int_list(argv[i + 1]);
    else if (key == "--fanout")
      fanouts = int_list(argv[i + 1]);
    else if (key == "--events")
      events = std::atoi(argv[i + 1]);
    else if (key == "--filters")
      filters = word_list(argv[i + 1]);
    else {
      std::fprintf(stderr, "monitor_sim: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::printf(
      "| ranks | fanout | tool nodes | filter | root bytes/round | reduction factor | "
      "all nodes' work ms | critical path ms |\n|---:|---:|---:|---|---:|---:|---:|---:|\n");
  for (int n : ranks) {
    const auto leaves = synthetic_round(n, events);
    for (int k : fanouts) {
      uint64_t raw_bytes = 0;
      for (const std::string& name : filters) {
        std::string error;
        auto made = make_filter(name, {{"class-events", "mpi"}}, error);
        if (made == nullptr) {
          std::fprintf(stderr, "monitor_sim: %s\n", error.c_str());
          return 2;
        }
        const unrendered f(std::move(made));
        const simulation_result sim = simulate(f, leaves, k);
        const uint64_t bytes = sim.rounds.empty() ? 0 : sim.rounds[0].root_bytes;
        if (name == "raw")
          raw_bytes = bytes;
        std::printf("| %d | %d | %d | %s | %llu | %s | %.1f | %.2f |\n", n, k, sim.tool_nodes,
                    name.c_str(), static_cast<unsigned long long>(bytes),
                    raw_bytes > 0 && bytes > 0 ? std::to_string(static_cast<double>(raw_bytes) /
                                                                static_cast<double>(bytes))
                                                     .substr(0, 7)
                                                     .c_str()
                                               : "",
                    sim.total_s * 1e3, sim.critical_path_s * 1e3);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
