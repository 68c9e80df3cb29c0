#include "monitor/frontend.hpp"

#include "monitor/wire.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <unistd.h>

namespace strata::overlay {

std::string round_json_line(const round_result& r, const std::string& filter_name,
                            double elapsed_s) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object(); // round first, for readers
  if (r.round == final_round)
    line["round"] = "final";
  else
    line["round"] = r.round;
  line["ranks"] = r.ranks;
  line["filter"] = filter_name;
  line["root_bytes"] = r.root_bytes;
  line["time"] = elapsed_s;
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(r.json, nullptr, false);
  if (body.is_object())
    for (auto& [k, v] : body.items())
      line[k] = v;
  return line.dump();
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

simulation_result simulate(const filter& f, const std::vector<std::vector<std::string>>& profiles,
                           int fanout) {
  simulation_result sim;
  const int leaves = static_cast<int>(profiles.size());
  if (leaves == 0)
    return sim;
  const tree_layout tree = make_tree(leaves, fanout);
  const int nodes = tree.tool_count();
  sim.tool_nodes = nodes;
  std::vector<node_engine> engines;
  engines.reserve(static_cast<size_t>(nodes));
  for (int n = 0; n < nodes; ++n)
    engines.emplace_back(f, static_cast<int>(tree.children(n).size()), tree.children_are_leaves(n),
                         n == 0);
  std::vector<double> busy(static_cast<size_t>(nodes), 0);
  auto index_in_parent = [&](int node) {
    const int level = tree.level_of(node);
    return (node - tree.level_start[static_cast<size_t>(level)]) % tree.fanout;
  };
  auto first_child = [&](int node) { return tree.children(node).front(); };

  struct delivery {
    int node;
    int child; // -1: from the parent
    packet p;
  };
  std::deque<delivery> queue;
  for (int leaf = 0; leaf < leaves; ++leaf) {
    for (const std::string& bytes : profiles[static_cast<size_t>(leaf)]) {
      packet p{packet_kind::profile, decode_profile(bytes).round, 1, bytes};
      queue.push_back({tree.parent_of_leaf(leaf), leaf % tree.fanout, std::move(p)});
    }
    queue.push_back({tree.parent_of_leaf(leaf), leaf % tree.fanout, packet{}});
  }
  std::vector<node_output> out;
  while (!queue.empty()) {
    delivery d = std::move(queue.front());
    queue.pop_front();
    ++sim.packets;
    sim.bytes_moved += d.p.payload.size();
    out.clear();
    const auto t0 = std::chrono::steady_clock::now();
    if (d.child >= 0)
      engines[static_cast<size_t>(d.node)].on_child(d.child, std::move(d.p), out);
    else
      engines[static_cast<size_t>(d.node)].on_parent(d.p, out);
    busy[static_cast<size_t>(d.node)] += seconds_since(t0);
    for (node_output& o : out) {
      switch (o.to) {
      case node_output::target::parent:
        queue.push_back({tree.parent_of_node(d.node), index_in_parent(d.node), std::move(o.p)});
        break;
      case node_output::target::child:
        queue.push_back({first_child(d.node) + o.child, -1, std::move(o.p)});
        break;
      case node_output::target::front:
        sim.rounds.push_back(std::move(o.result));
        break;
      }
    }
  }
  for (int level = 0; level < tree.depth(); ++level) {
    double slowest = 0;
    for (int i = 0; i < tree.level_sizes[static_cast<size_t>(level)]; ++i)
      slowest =
          std::max(slowest, busy[static_cast<size_t>(tree.level_start[static_cast<size_t>(level)]) +
                                 static_cast<size_t>(i)]);
    sim.critical_path_s += slowest;
  }
  for (double b : busy)
    sim.total_s += b;
  return sim;
}

bool append_record(int fd, const std::string& bytes) {
  wire_writer w;
  w.u32(static_cast<uint32_t>(bytes.size()));
  w.buffer() += bytes;
  const std::string& all = w.buffer();
  size_t done = 0;
  while (done < all.size()) {
    const ssize_t n = ::write(fd, all.data() + done, all.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::vector<std::string> read_round_files(const std::string& dir, const filter& f, int fanout,
                                          std::string& error) {
  std::map<uint32_t, std::vector<std::string>> by_rank;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    error = dir + ": cannot open the monitor directory";
    return {};
  }
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.starts_with("rank.") && name.ends_with(".rounds"))
      files.push_back(name);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  if (files.empty())
    error = dir + ": no rank.<r>.rounds files (was the job run with transport=file?)";
  for (const std::string& name : files) {
    const std::string path = dir + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = path + ": cannot open";
      continue;
    }
    std::string text;
    char buf[65536];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0)
      text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    wire_reader r(text);
    try {
      while (!r.done()) {
        std::string record = r.str();
        const rank_profile p = decode_profile(record);
        by_rank[p.rank].push_back(std::move(record));
      }
    } catch (const wire_error& e) {
      // A job killed mid-write leaves a torn last record: keep what came before it.
      error = path + ": " + e.what() + " (the records before it are used)";
    }
  }
  std::vector<std::vector<std::string>> leaves;
  leaves.reserve(by_rank.size());
  for (auto& [rank, records] : by_rank)
    leaves.push_back(std::move(records));
  // The leaf index is the position among the ranks that wrote files; rounds must increase.
  for (auto& records : leaves)
    std::stable_sort(records.begin(), records.end(),
                     [](const std::string& a, const std::string& b) {
                       return decode_profile(a).round < decode_profile(b).round;
                     });
  const simulation_result sim = simulate(f, leaves, fanout);
  std::vector<std::string> lines;
  for (const round_result& r : sim.rounds)
    lines.push_back(round_json_line(r, f.name(), 0));
  return lines;
}

} // namespace strata::overlay
