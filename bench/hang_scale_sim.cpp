// The hang diagnosis at scale, in one process: N ranks' states of a known hang written as real
// per-rank state files (the profile's writer, one slot a rank as a single-threaded rank has),
// read back as `strata hang SPOOL` reads them, diagnosed, and the diagnosis checked: a wrong
// answer exits 1. Then the classes merged pairwise over a binary tree (STAT's way), the bytes
// each level would carry and its time, and the root's classes checked against the diagnosis's.
// Then the states themselves through a K-ary tree as the monitor's tool ranks carry them
// (src/monitor/module/hang_tree.cpp): each leaf reads its K ranks' files, each node merges its
// children's batches (strata.hang-batch/1); the bytes arriving at the root, each level's slowest
// node summed (the tree's path), and the root's diagnosis checked to be the files' own.
//
//   hang_scale_sim --ranks N --pattern ring|barrier_late|barrier_half|wrong_tag|wildcard
//                  [--dir DIR] [--fanout K]
//
// Prints one line "bench hangsim key=value ..." (bench/run_hang_scale.sh makes the table).
#include "hang/batch.hpp"
#include "hang/commands.hpp"
#include "hang/diagnose.hpp"
#include "hang/tree_ask.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace strata::hang;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

constexpr uint64_t second = 1'000'000'000ULL;
constexpr uint64_t world_id = 0x44000000;

thread_state in_call(const std::string& routine, uint32_t line, int32_t world, int32_t peer,
                     int32_t tag, uint64_t since) {
  thread_state t;
  t.phase = thread_phase::in_mpi;
  t.lang = language::c;
  t.routine = routine;
  t.file = "/home/user/solver/exchange.c";
  t.function = "exchange_halo";
  t.line = line;
  t.comm = {world_id, static_cast<uint32_t>(world), 0, 1};
  t.peer = peer;
  t.tag = tag;
  t.bytes = 8192;
  t.since_ns = since;
  t.calls_completed = 1000;
  return t;
}

// Rank r's state in the pattern: every rank in MPI since `since`, but the late rank.
thread_state thread_of(const std::string& pattern, int32_t r, int32_t n, uint64_t since) {
  if (pattern == "ring") // each receives from its left neighbour first: one cycle of n
    return in_call("MPI_Recv", 40, n, (r + n - 1) % n, 7, since);
  if (pattern == "wildcard") // each receives from any rank, nobody sends
    return in_call("MPI_Recv", 63, n, any_source, 9, since);
  if (pattern == "barrier_late") { // all in a barrier but the last rank, computing
    if (r == n - 1) {
      thread_state t = in_call("MPI_Allreduce", 88, n, no_peer, 0, since - 5 * second);
      t.phase = thread_phase::outside_mpi;
      t.function = "compute_step";
      return t;
    }
    return in_call("MPI_Barrier", 95, n, no_peer, 0, since);
  }
  if (pattern == "barrier_half") { // the lower half in a barrier; the upper half a ring of receives
    const int32_t half = n / 2, upper = n - half;
    if (r < half)
      return in_call("MPI_Barrier", 95, n, no_peer, 0, since);
    return in_call("MPI_Recv", 40, n, half + (r - half + upper - 1) % upper, 7, since);
  }
  // wrong_tag: rank 0 receives tag 1 from rank 1, which sends tag 2 (too large for eager
  // delivery, so it blocks); the others wait in a barrier for both.
  if (r == 0)
    return in_call("MPI_Recv", 51, n, 1, 1, since);
  if (r == 1)
    return in_call("MPI_Send", 57, n, 0, 2, since);
  return in_call("MPI_Barrier", 95, n, no_peer, 0, since);
}

bool check(const diagnosis& d, const std::string& text, const std::string& pattern, int32_t n,
           std::string& why) {
  const std::string all = "0-" + std::to_string(n - 1);
  if (d.result != verdict::hang || !d.missing_ranks.empty()) {
    why = "not a hang of all ranks";
    return false;
  }
  if (pattern == "ring") {
    std::vector<int32_t> members;
    if (d.deadlocks.size() == 1)
      for (const waiting_rank& w : d.deadlocks[0].cycle)
        members.push_back(w.rank);
    if (members.size() != static_cast<size_t>(n) || rank_ranges(members) != all ||
        text.find("DEADLOCK: ranks " + all + " wait for each other") == std::string::npos) {
      why = "the cycle is not ranks " + all;
      return false;
    }
    return true;
  }
  if (pattern == "wildcard") { // every rank's receive named as one nothing can match, and stuck
    size_t stuck = 0;
    for (const deadlock& dl : d.deadlocks)
      stuck += dl.cycle.size() + dl.blocked_behind.size();
    if (stuck != static_cast<size_t>(n) || !d.computing.empty()) {
      why = "not every wildcard receive is in a deadlock or behind one";
      return false;
    }
    if (d.unmatched.size() != static_cast<size_t>(n) ||
        std::any_of(d.unmatched.begin(), d.unmatched.end(), [](const unmatched_receive& u) {
          return u.source != any_source || !u.sends.empty();
        })) {
      why = "not every wildcard receive is named";
      return false;
    }
    return true;
  }
  if (pattern == "barrier_late") {
    if (d.computing.size() != 1 || d.computing[0].rank != n - 1 || !d.deadlocks.empty() ||
        rank_ranges(d.computing[0].waiting_directly) != "0-" + std::to_string(n - 2) ||
        text.find("WAITING FOR A COMPUTING RANK: rank " + std::to_string(n - 1)) ==
            std::string::npos) {
      why = "the late rank " + std::to_string(n - 1) + " is not named";
      return false;
    }
    return true;
  }
  if (pattern == "barrier_half") { // one cycle of the upper half, the lower half behind it
    const int32_t half = n / 2;
    std::vector<int32_t> members;
    if (d.deadlocks.size() == 1)
      for (const waiting_rank& w : d.deadlocks[0].cycle)
        members.push_back(w.rank);
    const std::string upper = std::to_string(half) + "-" + std::to_string(n - 1);
    if (rank_ranges(members) != upper || members.size() != static_cast<size_t>(n - half) ||
        rank_ranges(d.deadlocks[0].blocked_behind) != "0-" + std::to_string(half - 1) ||
        text.find("DEADLOCK: ranks " + upper + " wait for each other") == std::string::npos) {
      why = "the cycle is not ranks " + upper + " with the barrier behind it";
      return false;
    }
    return true;
  }
  if (d.unmatched.empty() || d.unmatched[0].reason != unmatched_receive::why::wrong_tag ||
      d.unmatched[0].receiver.rank != 0 || d.unmatched[0].sends.size() != 1 ||
      d.unmatched[0].sends[0].sender != 1 || d.deadlocks.size() != 1 ||
      rank_ranges(d.deadlocks[0].blocked_behind) != "2-" + std::to_string(n - 1)) {
    why = "the wrong-tag receive of rank 0 is not named";
    return false;
  }
  return true;
}

// What a class would carry up a tree: its fixed fields, its names and its ranks as ranges.
size_t wire_bytes(const std::vector<rank_class>& classes) {
  size_t bytes = 0;
  for (const rank_class& c : classes)
    bytes +=
        40 + c.routine.size() + c.file.size() + c.function.size() + rank_ranges(c.ranks).size();
  return bytes;
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

} // namespace

int main(int argc, char** argv) {
  int32_t n = 1000;
  std::string pattern = "ring", dir;
  int fanout = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--ranks")
      n = std::atoi(argv[i + 1]);
    else if (key == "--pattern")
      pattern = argv[i + 1];
    else if (key == "--dir")
      dir = argv[i + 1];
    else if (key == "--fanout")
      fanout = std::atoi(argv[i + 1]);
  }
  if (n < 3 || fanout < 2 ||
      (pattern != "ring" && pattern != "barrier_late" && pattern != "barrier_half" &&
       pattern != "wrong_tag" && pattern != "wildcard")) {
    std::fprintf(stderr, "usage: hang_scale_sim --ranks N(>=3) --pattern "
                         "ring|barrier_late|barrier_half|wrong_tag|wildcard [--dir DIR] "
                         "[--fanout K(>=2)]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const bool own_dir = dir.empty();
  if (own_dir)
    dir = fs::temp_directory_path() / ("hang_scale_sim." + std::to_string(::getpid()));
  fs::create_directories(dir);

  const uint64_t now = realtime_ns();
  const uint64_t since = now - 30 * second;
  auto start = clock_type::now();
  uint64_t file_bytes = 0;
  for (int32_t r = 0; r < n; ++r) {
    const std::string path = dir + "/job-1.rank" + std::to_string(r) + ".hang";
    std::string error;
    std::optional<state_writer> w = state_writer::open(path, r, n, 1, error);
    if (!w) {
      std::fprintf(stderr, "hang_scale_sim: %s\n", error.c_str());
      return 2;
    }
    w->write(0, thread_of(pattern, r, n, since));
    w->observe(now);
    file_bytes += fs::file_size(path);
  }
  const double write_ms = ms_since(start);

  start = clock_type::now();
  hang_options o;
  o.inputs = {dir};
  loaded_states loaded = load_states(o);
  const double read_ms = ms_since(start);
  if (!loaded.error.empty() || loaded.states.size() != static_cast<size_t>(n)) {
    std::fprintf(stderr, "hang_scale_sim: reading: %s\n", loaded.error.c_str());
    return 1;
  }
  const long rss_read = peak_rss_kib();

  start = clock_type::now();
  const diagnosis d = diagnose(loaded.states, now, 10 * second);
  const double diagnose_ms = ms_since(start);
  start = clock_type::now();
  const std::string text = format_text(d);
  const double text_ms = ms_since(start);
  start = clock_type::now();
  const std::string json = format_json(d);
  const double json_ms = ms_since(start);
  const long rss_diagnosed = peak_rss_kib();

  std::string why;
  bool right = check(d, text, pattern, n, why);

  // The classes merged over a binary tree: level 0 the ranks, each level pairs of the one below.
  // A level's merges run side by side in a real tree: its time there is its slowest merge.
  start = clock_type::now();
  std::vector<std::vector<rank_class>> level(static_cast<size_t>(n)); // the leaves in rank order
  for (const rank_state& r : loaded.states)
    level[static_cast<size_t>(r.world_rank)] = rank_classes(r, now);
  std::string per_level;
  size_t largest_node_bytes = 0;
  double path_ms = 0;
  int levels = 0;
  while (level.size() > 1) {
    std::vector<std::vector<rank_class>> up;
    up.reserve((level.size() + 1) / 2);
    double slowest = 0;
    size_t level_bytes = 0;
    for (size_t i = 0; i < level.size(); i += 2) {
      level_bytes += wire_bytes(level[i]) + (i + 1 < level.size() ? wire_bytes(level[i + 1]) : 0);
      const auto t0 = clock_type::now();
      up.push_back(i + 1 < level.size()
                       ? merge_classes(std::move(level[i]), std::move(level[i + 1]))
                       : std::move(level[i]));
      slowest = std::max(slowest, ms_since(t0));
    }
    largest_node_bytes = std::max(largest_node_bytes, wire_bytes(up.front()));
    path_ms += slowest;
    ++levels;
    per_level += (per_level.empty() ? "" : ",") + std::to_string(level_bytes);
    level = std::move(up);
  }
  const double tree_ms = ms_since(start);
  const size_t root_bytes = wire_bytes(level.front());
  // The root's classes are the diagnosis's (same ranks, same places).
  bool same_classes = level.front().size() == d.classes.size();
  for (size_t i = 0; same_classes && i < d.classes.size(); ++i)
    same_classes = level.front()[i].ranks == d.classes[i].ranks &&
                   level.front()[i].routine == d.classes[i].routine &&
                   level.front()[i].line == d.classes[i].line;
  if (!same_classes) {
    right = false;
    why +=
        (why.empty() ? "" : "; ") + std::string("the tree's classes differ from the diagnosis's");
  }
  const long rss_tree = peak_rss_kib();

  // The states through the tool ranks' tree: the leaves read their ranks' files, each level
  // decodes, merges and encodes its children's batches; the root decodes and diagnoses.
  start = clock_type::now();
  std::vector<std::string> batches;
  double states_path_ms = 0;
  size_t state_tool_ranks = 0;
  {
    double slowest = 0;
    for (int32_t first = 0; first < n; first += fanout) {
      const auto t0 = clock_type::now();
      std::vector<int32_t> ranks;
      for (int32_t r = first; r < std::min(n, first + fanout); ++r)
        ranks.push_back(r);
      state_batch leaf = read_rank_states(dir, "job-1", ranks);
      leaf.tool_ranks = 1;
      batches.push_back(encode_batch(leaf));
      slowest = std::max(slowest, ms_since(t0));
    }
    states_path_ms += slowest;
    state_tool_ranks += batches.size();
  }
  size_t states_root_bytes = 0;
  std::string states_level_bytes;
  state_batch at_root;
  bool states_right = true;
  while (true) {
    const bool root = batches.size() <= static_cast<size_t>(fanout);
    std::vector<std::string> up;
    double slowest = 0;
    size_t level_bytes = 0;
    for (size_t i = 0; i < batches.size(); i += static_cast<size_t>(fanout)) {
      const auto t0 = clock_type::now();
      state_batch merged;
      for (size_t c = i; c < std::min(batches.size(), i + static_cast<size_t>(fanout)); ++c) {
        level_bytes += batches[c].size();
        batch_read_result part = decode_batch(batches[c]);
        states_right = states_right && part.ok();
        merge_batch(merged, std::move(part.batch));
      }
      merged.tool_ranks += 1;
      if (root)
        at_root = std::move(merged);
      else
        up.push_back(encode_batch(merged));
      slowest = std::max(slowest, ms_since(t0));
    }
    states_path_ms += slowest;
    states_level_bytes += (states_level_bytes.empty() ? "" : ",") + std::to_string(level_bytes);
    if (root) {
      states_root_bytes = level_bytes;
      state_tool_ranks += 1;
      break;
    }
    state_tool_ranks += up.size();
    batches = std::move(up);
  }
  const double states_total_ms = ms_since(start);
  start = clock_type::now();
  const diagnosis through_tree = diagnose(at_root.states, now, 10 * second);
  const double states_diagnose_ms = ms_since(start);
  if (!states_right || at_root.tool_ranks != state_tool_ranks ||
      format_text(through_tree) != text) {
    right = false;
    why += (why.empty() ? "" : "; ") +
           std::string("the diagnosis through the tree differs from the files'");
  }
  const long rss_states = peak_rss_kib();

  if (own_dir)
    fs::remove_all(dir);
  std::printf("bench hangsim pattern=%s ranks=%d right=%s file_bytes_per_rank=%llu "
              "bytes_read=%llu write_ms=%.1f read_ms=%.1f diagnose_ms=%.1f text_ms=%.1f "
              "json_ms=%.1f text_bytes=%zu json_bytes=%zu classes=%zu peak_rss_read_kib=%ld "
              "peak_rss_diagnosed_kib=%ld tree_levels=%d tree_root_bytes=%zu "
              "tree_largest_node_bytes=%zu tree_path_ms=%.3f tree_total_ms=%.1f "
              "peak_rss_tree_kib=%ld tree_level_bytes=%s states_fanout=%d states_tool_ranks=%zu "
              "states_root_bytes=%zu states_path_ms=%.1f states_total_ms=%.1f "
              "states_diagnose_ms=%.1f states_level_bytes=%s peak_rss_states_kib=%ld\n",
              pattern.c_str(), n, right ? "yes" : "no",
              static_cast<unsigned long long>(file_bytes / static_cast<uint64_t>(n)),
              static_cast<unsigned long long>(file_bytes), write_ms, read_ms, diagnose_ms, text_ms,
              json_ms, text.size(), json.size(), d.classes.size(), rss_read, rss_diagnosed, levels,
              root_bytes, largest_node_bytes, path_ms, tree_ms, rss_tree, per_level.c_str(), fanout,
              state_tool_ranks, states_root_bytes, states_path_ms, states_total_ms,
              states_diagnose_ms, states_level_bytes.c_str(), rss_states);
  if (!right) {
    std::fprintf(stderr, "hang_scale_sim: wrong diagnosis (%s, %d ranks): %s\n%s", pattern.c_str(),
                 n, why.c_str(), text.c_str());
    return 1;
  }
  return 0;
}
