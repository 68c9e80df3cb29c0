#include "monitor/engine.hpp"
#include "monitor/filter.hpp"
#include "monitor/filters.hpp"
#include "monitor/frontend.hpp"
#include "monitor/monitor_options.hpp"
#include "monitor/profile_round.hpp"
#include "monitor/tree.hpp"
#include "monitor/wire.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <set>
#include <unistd.h>

using namespace strata::overlay;

namespace {

rank_profile make_profile(uint32_t rank, uint64_t round, std::vector<event_row> rows) {
  rank_profile p;
  p.rank = rank;
  p.round = round;
  p.events = std::move(rows);
  return p;
}

// P ranks, one round each; MPI_Send time = (rank + 1) ms, calls = rank + 1.
std::vector<std::vector<std::string>> ranks_with_spread(int P, uint64_t round = 0) {
  std::vector<std::vector<std::string>> leaves;
  for (int r = 0; r < P; ++r) {
    const auto u = static_cast<uint64_t>(r);
    leaves.push_back({encode_profile(make_profile(
        static_cast<uint32_t>(r), round,
        {{"MPI_Send", u + 1, (u + 1) * 1000000, 8 * (u + 1)}, {"MPI_Barrier", 2, 500, 0}}))});
  }
  return leaves;
}

std::unique_ptr<filter> need(const std::string& name, const filter_options& o = {}) {
  std::string error;
  auto f = make_filter(name, o, error);
  EXPECT_NE(f, nullptr) << error;
  return f;
}

nlohmann::json only_round(const simulation_result& sim) {
  EXPECT_EQ(sim.rounds.size(), 1u);
  return nlohmann::json::parse(sim.rounds.at(0).json);
}

} // namespace

TEST(Profile, RoundTrip) {
  rank_profile p = make_profile(7, 3, {{"MPI_Send", 4, 1234, 99}, {"solver", 1, 5, 0}});
  p.elapsed_s = 1.5;
  const rank_profile q = decode_profile(encode_profile(p));
  EXPECT_EQ(q.rank, 7u);
  EXPECT_EQ(q.round, 3u);
  EXPECT_DOUBLE_EQ(q.elapsed_s, 1.5);
  ASSERT_EQ(q.events.size(), 2u);
  EXPECT_EQ(q.events[1].name, "solver");
  EXPECT_EQ(q.events[0].bytes, 99u);
}

TEST(Profile, MalformedIsAnError) {
  const std::string good = encode_profile(make_profile(1, 0, {{"MPI_Send", 1, 2, 3}}));
  for (size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_THROW(decode_profile(good.substr(0, cut)), wire_error) << cut;
  EXPECT_THROW(decode_profile(good + "x"), wire_error);
  std::string huge = good;
  huge[24] = '\xff'; // the event count
  huge[25] = '\xff';
  EXPECT_THROW(decode_profile(huge), wire_error);
  EXPECT_THROW(decode_packet(std::string(1, '\x09') + std::string(12, '\0')), wire_error);
}

TEST(Tree, Shape) {
  EXPECT_EQ(tool_ranks_for(4, 2), 3);
  EXPECT_EQ(tool_ranks_for(4, 4), 1);
  EXPECT_EQ(tool_ranks_for(64, 8), 9);
  EXPECT_EQ(tool_ranks_for(1, 2), 1);
  EXPECT_EQ(leaves_for_world(7, 2), 4);
  EXPECT_EQ(leaves_for_world(5, 4), 4);
  EXPECT_EQ(leaves_for_world(73, 8), 64);
  EXPECT_EQ(leaves_for_world(2, 8), 1);
  for (int P : {1, 2, 3, 5, 8, 17, 100}) {
    for (int K : {2, 3, 4, 8, 16}) {
      const tree_layout t = make_tree(P, K);
      EXPECT_EQ(t.level_sizes.front(), 1);
      std::vector<int> parent_seen(static_cast<size_t>(t.tool_count()), 0);
      std::set<int> leaves;
      for (int n = 0; n < t.tool_count(); ++n) {
        const auto kids = t.children(n);
        EXPECT_FALSE(kids.empty()) << P << " " << K << " node " << n;
        EXPECT_LE(static_cast<int>(kids.size()), K);
        for (int c : kids) {
          if (t.children_are_leaves(n)) {
            EXPECT_EQ(t.parent_of_leaf(c), n);
            leaves.insert(c);
          } else {
            EXPECT_EQ(t.parent_of_node(c), n);
            ++parent_seen[static_cast<size_t>(c)];
          }
        }
      }
      EXPECT_EQ(static_cast<int>(leaves.size()), P);
      for (int n = 1; n < t.tool_count(); ++n)
        EXPECT_EQ(parent_seen[static_cast<size_t>(n)], 1);
    }
  }
}

TEST(Filters, StatsEqualDirectComputation) {
  const int P = 11;
  auto f = need("stats");
  const nlohmann::json j = only_round(simulate(*f, ranks_with_spread(P), 3));
  const auto& send = j["events"]["MPI_Send"];
  EXPECT_EQ(send["ranks"], P);
  EXPECT_DOUBLE_EQ(send["calls"]["sum"].get<double>(), P * (P + 1) / 2.0);
  EXPECT_DOUBLE_EQ(send["calls"]["min"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(send["calls"]["max"].get<double>(), P);
  EXPECT_NEAR(send["time"]["mean"].get<double>(), (P + 1) / 2.0 * 1e-3, 1e-12);
  double var = 0;
  for (int r = 1; r <= P; ++r)
    var += std::pow(r - (P + 1) / 2.0, 2);
  EXPECT_NEAR(send["calls"]["std"].get<double>(), std::sqrt(var / P), 1e-9);
  EXPECT_DOUBLE_EQ(j["events"]["MPI_Barrier"]["bytes"]["max"].get<double>(), 0);
  EXPECT_FALSE(send.contains("hist"));
}

TEST(Filters, HistogramThreePhases) {
  const int P = 10;
  auto f = need("histogram", {{"bins", "5"}});
  ASSERT_TRUE(f->three_phase());
  for (int K : {2, 3, 16}) {
    const nlohmann::json j = only_round(simulate(*f, ranks_with_spread(P), K));
    const auto& h = j["events"]["MPI_Send"]["hist"];
    ASSERT_EQ(h["bins"].size(), 5u);
    // Times 1..10 ms over [1, 10] ms in 5 bins: bin = floor((t-1)/9*5), 10 lands in the last.
    EXPECT_EQ(h["bins"], (std::vector<uint64_t>{2, 2, 2, 2, 2})) << K;
    EXPECT_DOUBLE_EQ(h["min"].get<double>(), 1e-3);
    EXPECT_DOUBLE_EQ(h["max"].get<double>(), 10e-3);
    // All ranks equal: everything in bin 0.
    EXPECT_EQ(j["events"]["MPI_Barrier"]["hist"]["bins"], (std::vector<uint64_t>{10, 0, 0, 0, 0}));
  }
}

TEST(Filters, ClassesSplitEvenAndOdd) {
  std::vector<std::vector<std::string>> leaves;
  for (uint32_t r = 0; r < 6; ++r) {
    std::vector<event_row> rows{{"MPI_Barrier", 1, 100 + r, 0}};
    if (r % 2 == 0)
      rows.push_back({"MPI_Send", 3, 1000, 24});
    else
      rows.push_back({"MPI_Recv", 3, 2000, 24});
    rows.push_back({r < 3 ? "phase_a" : "phase_b", 1, 10, 0}); // a region, not an MPI event
    leaves.push_back({encode_profile(make_profile(r, 0, rows))});
  }
  auto by_mpi = need("classes", {{"class-events", "mpi"}, {"bins", "4"}});
  const nlohmann::json j = only_round(simulate(*by_mpi, leaves, 2));
  ASSERT_EQ(j["classes"].size(), 2u);
  std::set<std::vector<uint32_t>> members;
  for (const auto& c : j["classes"]) {
    EXPECT_EQ(c["ranks"], 3);
    members.insert(c["rank_sample"].get<std::vector<uint32_t>>());
    uint64_t in_hist = 0;
    for (uint64_t b : c["events"]["MPI_Barrier"]["hist"]["bins"])
      in_hist += b;
    EXPECT_EQ(in_hist, 3u);
  }
  EXPECT_EQ(members, (std::set<std::vector<uint32_t>>{{0, 2, 4}, {1, 3, 5}}));
  // All events: the regions split each class again.
  auto by_all = need("classes");
  EXPECT_EQ(only_round(simulate(*by_all, leaves, 2))["classes"].size(), 4u);
}

TEST(Engine, PipelinedRoundsSkipsAndFinal) {
  // 5 ranks, rounds 0..2 and final; rank 3 dropped round 1.
  std::vector<std::vector<std::string>> leaves(5);
  for (uint32_t r = 0; r < 5; ++r) {
    for (uint64_t round : {uint64_t{0}, uint64_t{1}, uint64_t{2}, final_round}) {
      if (r == 3 && round == 1)
        continue;
      leaves[r].push_back(encode_profile(make_profile(r, round, {{"MPI_Send", round + 1, 1, 1}})));
    }
  }
  auto f = need("histogram");
  const simulation_result sim = simulate(*f, leaves, 2);
  ASSERT_EQ(sim.rounds.size(), 4u);
  std::map<uint64_t, uint32_t> ranks;
  for (const round_result& r : sim.rounds)
    ranks[r.round] = r.ranks;
  EXPECT_EQ(ranks[0], 5u);
  EXPECT_EQ(ranks[1], 4u);
  EXPECT_EQ(ranks[2], 5u);
  EXPECT_EQ(ranks[final_round], 5u);
  const std::string line = round_json_line(sim.rounds.back(), "histogram", 2.5);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["round"], "final");
  EXPECT_EQ(j["filter"], "histogram");
  EXPECT_TRUE(j.contains("events"));
}

TEST(Engine, DoneOnlyAfterEveryFin) {
  auto f = need("stats");
  node_engine e(*f, 2, true, false);
  std::vector<node_output> out;
  for (uint32_t c : {0u, 1u})
    e.on_child(static_cast<int>(c),
               packet{packet_kind::profile, final_round, 1,
                      encode_profile(make_profile(c, final_round, {{"MPI_Send", 1, 1, 1}}))},
               out);
  ASSERT_EQ(out.size(), 1u); // the final round went up...
  EXPECT_EQ(out[0].p.kind, packet_kind::up_a);
  EXPECT_EQ(out[0].p.ranks, 2u);
  EXPECT_FALSE(e.done()); // ...but the children's fins have not come yet
  e.on_child(0, packet{}, out);
  EXPECT_FALSE(e.done());
  e.on_child(1, packet{}, out);
  EXPECT_TRUE(e.done());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].p.kind, packet_kind::fin);
}

TEST(Engine, ReductionShrinksWhatTheRootReceives) {
  auto raw = need("raw");
  auto hist = need("histogram");
  const auto leaves = ranks_with_spread(256);
  const simulation_result a = simulate(*raw, leaves, 8);
  const simulation_result b = simulate(*hist, leaves, 8);
  ASSERT_EQ(a.rounds.size(), 1u);
  ASSERT_EQ(b.rounds.size(), 1u);
  EXPECT_GT(a.rounds[0].root_bytes, 10 * b.rounds[0].root_bytes);
  EXPECT_EQ(nlohmann::json::parse(a.rounds[0].json)["profiles"].size(), 256u);
  EXPECT_EQ(a.tool_nodes, 32 + 4 + 1);
}

TEST(Registry, ErrorsAndPlugins) {
  std::string error;
  EXPECT_EQ(make_filter("median", {}, error), nullptr);
  EXPECT_NE(error.find("unknown filter 'median'"), std::string::npos) << error;
  EXPECT_NE(error.find("histogram"), std::string::npos) << error;
  EXPECT_EQ(make_filter("histogram", {{"bins", "0"}}, error), nullptr);
  EXPECT_NE(error.find("bins"), std::string::npos);
  EXPECT_EQ(make_filter("stats", {{"metric", "flops"}}, error), nullptr);
  EXPECT_NE(error.find("metric"), std::string::npos);
  EXPECT_EQ(make_filter("/nonexistent/filter.so", {}, error), nullptr);
  EXPECT_NE(error.find("cannot load filter"), std::string::npos);

  auto plugin = make_filter(STRATA_TEST_PLUGIN, {}, error);
  ASSERT_NE(plugin, nullptr) << error;
  EXPECT_EQ(only_round(simulate(*plugin, ranks_with_spread(9), 2))["counted"], 9);
  EXPECT_EQ(make_filter(STRATA_TEST_PLUGIN, {{"refuse", "1"}}, error), nullptr);
  EXPECT_NE(error.find("refused as asked"), std::string::npos);

  register_filter("plain_stats", [](const filter_options& o, std::string& e) {
    return make_filter("stats", o, e);
  });
  auto named = make_filter("plain_stats", {}, error);
  ASSERT_NE(named, nullptr);
  EXPECT_STREQ(named->name(), "stats");
}

TEST(Binning, Edges) {
  EXPECT_EQ(bin_of(1.0, 1.0, 1.0, 10), 0u);
  EXPECT_EQ(bin_of(2.0, 1.0, 2.0, 10), 9u);
  EXPECT_EQ(bin_of(1.5, 1.0, 2.0, 10), 5u);
  EXPECT_EQ(bin_of(0.0, 1.0, 2.0, 10), 0u);
  EXPECT_EQ(bin_of(5.0, 1.0, 2.0, 10), 9u);
  EXPECT_EQ(bin_of(std::nan(""), 1.0, 2.0, 10), 0u);
}

TEST(MonitorOptions, ParsedAndChecked) {
  const std::vector<std::pair<std::string, std::string>> given{
      {"transport", "file"}, {"fanout", "8"},         {"period", "0.5"},
      {"filter", "classes"}, {"class-events", "mpi"}, {"policy", "block"}};
  strata::monitor::options o;
  EXPECT_EQ(strata::monitor::parse_options(given, o), "");
  EXPECT_EQ(o.transport, "file");
  EXPECT_EQ(o.fanout, 8);
  EXPECT_DOUBLE_EQ(o.period_s, 0.5);
  EXPECT_EQ(o.filter_options.at("class-events"), "mpi");
  EXPECT_EQ(o.filter_options.count("bins"), 0u); // not given: the filter's own default
  EXPECT_EQ(o.policy, "block");
  // Nothing given: the declared defaults (docs/monitor.md).
  strata::monitor::options d;
  EXPECT_EQ(strata::monitor::parse_options({}, d), "");
  EXPECT_EQ(d.transport, "tree");
  EXPECT_EQ(d.fanout, 2);
  EXPECT_EQ(d.buffers, 4);
  EXPECT_EQ(d.pcontrol_level, 5);
  EXPECT_EQ(d.filter, "histogram");
  EXPECT_EQ(d.policy, "drop");
  EXPECT_EQ(d.dir, "strata-monitor");
  EXPECT_EQ(d.out, "strata-monitor.jsonl");
  EXPECT_DOUBLE_EQ(d.timeout_s, 60);
  EXPECT_DOUBLE_EQ(d.period_s, 0);
  strata::monitor::options u;
  EXPECT_EQ(
      strata::monitor::parse_options(
          {{"period", "250ms"}, {"node-delay", "60s"}, {"pcontrol", "-3"}, {"fanout", "65536"}}, u),
      "");
  EXPECT_DOUBLE_EQ(u.period_s, 0.25);
  EXPECT_DOUBLE_EQ(u.node_delay_s, 60);
  EXPECT_EQ(u.pcontrol_level, -3);
  EXPECT_EQ(u.fanout, 65536);
  for (const auto& [key, bad, message] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"fanout", "1", "option 'fanout': '1' is not from 2 to 65536"},
           {"fanout", "65537", "option 'fanout': '65537' is not from 2 to 65536"},
           {"fanout", "two", "option 'fanout': 'two' is not from 2 to 65536"},
           {"period", "-1",
            "option 'period': '-1' is not a duration such as 2.5, 10s, 250ms or 40us"},
           {"period", "1000001", "option 'period': '1000001' is not a duration up to 1000000 s"},
           {"policy", "sometimes", "option 'policy': 'sometimes' is not one of drop,block"},
           {"transport", "udp", "option 'transport': 'udp' is not one of tree,file,inline"},
           {"buffers", "0", "option 'buffers': '0' is not from 1 to 1024"},
           {"pcontrol", "x",
            "option 'pcontrol': 'x' is not a whole number from -1000000 to 1000000"},
           {"bins", "x", "option 'bins': 'x' is not a whole number >= 0"},
           {"bins", "0", "option 'bins': '0' is not a number of bins from 1 to 1000"},
           {"metric", "size", "option 'metric': 'size' is not one of calls,time,bytes"},
           {"filter", "median", "option 'filter': unknown filter 'median'"},
           {"node-delay", "100", "option 'node-delay': '100' is not a duration up to 60 s"}}) {
    strata::monitor::options fresh;
    const std::string error = strata::monitor::parse_options({{key, bad}}, fresh);
    EXPECT_EQ(error.substr(0, message.size()), message) << key << "=" << bad << ": " << error;
  }
}

// The module's load checks the filter by making it, and keeps that one: a plug-in is asked once.
TEST(MonitorOptions, TheFilterIsMadeOnceAndKept) {
  void* plugin = ::dlopen(STRATA_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << ::dlerror();
  using count_fn = int (*)();
  const auto made = reinterpret_cast<count_fn>(::dlsym(plugin, "strata_test_plugin_filters_made"));
  ASSERT_NE(made, nullptr);
  const int before = made();
  strata::monitor::options o;
  std::unique_ptr<filter> kept;
  ASSERT_EQ(strata::monitor::parse_options({{"filter", STRATA_TEST_PLUGIN}}, o, true, &kept), "");
  ASSERT_NE(kept, nullptr);
  EXPECT_STREQ(kept->name(), "rank_count");
  EXPECT_EQ(made() - before, 1);
  // Without a place to keep it, the check still makes (and drops) one; unchecked, none.
  ASSERT_EQ(strata::monitor::parse_options({{"filter", STRATA_TEST_PLUGIN}}, o), "");
  EXPECT_EQ(made() - before, 2);
  ASSERT_EQ(strata::monitor::parse_options({{"filter", STRATA_TEST_PLUGIN}}, o, false, &kept), "");
  EXPECT_EQ(made() - before, 2);
  ::dlclose(plugin);
}

TEST(RoundFiles, TornFileKeepsTheRoundsBeforeTheTear) {
  char dir_template[] = "/tmp/strata-rounds-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  for (uint32_t r = 0; r < 3; ++r) {
    const std::string path = dir + "/rank." + std::to_string(r) + ".rounds";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    for (uint64_t round : {uint64_t{0}, final_round})
      ASSERT_TRUE(append_record(
          fd, encode_profile(make_profile(r, round, {{"MPI_Send", round == 0 ? 1u : 2u, 5, 8}}))));
    if (r == 2) { // a job killed in the middle of a write
      ASSERT_EQ(::write(fd, "\x40\x00\x00\x00SMR1", 8), 8);
    }
    ::close(fd);
  }
  auto f = need("stats");
  std::string error;
  const auto lines = read_round_files(dir, *f, 2, error);
  EXPECT_NE(error.find("rank.2.rounds"), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  ASSERT_EQ(lines.size(), 2u);
  const auto final = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(final["round"], "final");
  EXPECT_EQ(final["ranks"], 3);
  EXPECT_EQ(final["events"]["MPI_Send"]["calls"]["sum"], 6.0);
  std::string none;
  EXPECT_TRUE(read_round_files(dir + "/missing", *f, 2, none).empty());
  EXPECT_NE(none.find("cannot open the monitor directory"), std::string::npos);
  (void)std::system(("rm -rf " + dir).c_str());
}
