#include "tracer/buffer.hpp"
#include "tracer/clock.hpp"
#include "tracer/options.hpp"
#include "tracer/unify.hpp"

#include "config/options.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace strata::trace {
namespace {

std::vector<uint64_t> times(const event_buffer& b) {
  std::vector<uint64_t> out;
  b.for_each([&](const record& r) { out.push_back(r.t_enter); });
  return out;
}

void fill(event_buffer& b, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (record* r = b.append())
      r->t_enter = i;
}

TEST(EventBuffer, KeepsEveryRecordInOrderBelowTheLimit) {
  event_buffer b(64ull << 20, limit_policy::stop);
  fill(b, 3 * event_buffer::chunk_records + 5);
  const auto t = times(b);
  ASSERT_EQ(t.size(), 3 * event_buffer::chunk_records + 5);
  for (size_t i = 0; i < t.size(); ++i)
    ASSERT_EQ(t[i], i);
  EXPECT_EQ(b.dropped(), 0u);
}

TEST(EventBuffer, StopPolicyKeepsTheFirstRecordsAndCountsTheRest) {
  const uint64_t chunk_bytes = event_buffer::chunk_records * sizeof(record);
  event_buffer b(2 * chunk_bytes, limit_policy::stop);
  fill(b, 2 * event_buffer::chunk_records + 100);
  EXPECT_EQ(b.recorded(), 2 * event_buffer::chunk_records);
  EXPECT_EQ(b.dropped(), 100u);
  EXPECT_EQ(times(b).front(), 0u);
  EXPECT_EQ(times(b).back(), 2 * event_buffer::chunk_records - 1);
}

TEST(EventBuffer, RingPolicyKeepsTheLatestRecords) {
  const uint64_t chunk_bytes = event_buffer::chunk_records * sizeof(record);
  event_buffer b(3 * chunk_bytes, limit_policy::ring);
  const uint64_t n = 5 * event_buffer::chunk_records + 7;
  fill(b, n);
  const auto t = times(b);
  // Two full chunks and the 7 records of the current one survive, oldest first.
  ASSERT_EQ(t.size(), 2 * event_buffer::chunk_records + 7);
  EXPECT_EQ(t.back(), n - 1);
  for (size_t i = 1; i < t.size(); ++i)
    ASSERT_EQ(t[i], t[i - 1] + 1);
  EXPECT_EQ(b.dropped(), n - t.size());
}

TEST(EventBuffer, PrefaultedChunksAreUsedFirstAndCountTowardsTheLimit) {
  const uint64_t chunk_bytes = event_buffer::chunk_records * sizeof(record);
  event_buffer b(3 * chunk_bytes, limit_policy::stop, 10 * chunk_bytes);
  EXPECT_EQ(b.recorded(), 0u);
  fill(b, 4 * event_buffer::chunk_records);
  EXPECT_EQ(b.recorded(), 3 * event_buffer::chunk_records);
  EXPECT_EQ(b.dropped(), event_buffer::chunk_records);
  event_buffer r(3 * chunk_bytes, limit_policy::ring, 2 * chunk_bytes);
  fill(r, 7 * event_buffer::chunk_records + 1);
  const auto t = times(r);
  ASSERT_EQ(t.size(), 2 * event_buffer::chunk_records + 1);
  EXPECT_EQ(t.back(), 7 * event_buffer::chunk_records);
}

TEST(EventBuffer, RecordsPackTheirKindAndIndex) {
  record r{};
  r.id = record::make_id(record_kind::region_leave, 77);
  EXPECT_EQ(r.kind(), record_kind::region_leave);
  EXPECT_EQ(r.index(), 77u);
}

// The values as the core resolves them for the trace module: its declarations, the arguments,
// then STRATA_TRACE_<KEY>, then the defaults.
config::resolved_options resolved(const std::vector<std::pair<std::string, std::string>>& given,
                                  const std::map<std::string, std::string>& env = {}) {
  std::vector<config::option_decl> declared;
  const strata_module_options* list = declared_options();
  for (int i = 0; i < list->count; ++i) {
    const strata_option& o = list->options[i];
    declared.push_back(
        {o.key,
         o.type,
         o.default_value != nullptr ? std::optional<std::string>(o.default_value) : std::nullopt,
         o.help,
         {}});
  }
  return config::resolve_options("trace", declared, given, [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Options, ArgumentsThenEnvironmentThenDefaults) {
  const config::resolved_options r = resolved(
      {{"limit", "2G"}, {"start", "0.5"}, {"stop", "2s"}, {"functions", "MPI_Send+MPI_Recv"}},
      {{"STRATA_TRACE_LIMIT", "1M"},
       {"STRATA_TRACE_POLICY", "ring"},
       {"STRATA_TRACE_REGIONS", "solver,io*"}});
  ASSERT_TRUE(r.ok()) << r.error;
  options o;
  ASSERT_EQ(parse_options(r.values, o), "");
  EXPECT_EQ(o.limit_bytes, 2ull << 30);
  EXPECT_EQ(o.prefault_bytes, 16ull << 20); // the default
  EXPECT_EQ(o.policy, limit_policy::ring);
  EXPECT_EQ(o.functions, "MPI_Send,MPI_Recv");
  EXPECT_DOUBLE_EQ(o.start_s, 0.5);
  EXPECT_DOUBLE_EQ(o.stop_s, 2);
  EXPECT_TRUE(o.region_wanted("solver"));
  EXPECT_TRUE(o.region_wanted("io_write"));
  EXPECT_FALSE(o.region_wanted("halo"));
  options defaults;
  ASSERT_EQ(parse_options(resolved({}).values, defaults), "");
  EXPECT_EQ(defaults.limit_bytes, 256ull << 20);
  EXPECT_EQ(defaults.analyze_limit_s, 60);
  EXPECT_FALSE(defaults.record_cheap_calls);
  EXPECT_EQ(defaults.functions, "*");
  EXPECT_LT(defaults.stop_s, 0);
}

TEST(Options, EachBadSettingIsOneLineNamingModuleOptionAndSource) {
  EXPECT_EQ(resolved({{"limit", "lots"}}).error,
            "module 'trace': option 'limit': 'lots' is not a size such as 4096, 512K, 64M or 2G");
  EXPECT_EQ(resolved({{"policy", "drop"}}).error,
            "module 'trace': option 'policy': 'drop' is not one of stop,ring");
  EXPECT_EQ(resolved({}, {{"STRATA_TRACE_POLICY", "sometimes"}}).error,
            "module 'trace': STRATA_TRACE_POLICY: 'sometimes' is not one of stop,ring");
  EXPECT_NE(resolved({{"colour", "red"}}).error.find("unknown option 'colour'"), std::string::npos);
  EXPECT_EQ(
      resolved({{"start", "-1"}}).error,
      "module 'trace': option 'start': '-1' is not a duration such as 2.5, 10s, 250ms or 40us");
  // What a type cannot say: the module's own check, one line naming the option.
  options w;
  EXPECT_EQ(parse_options(resolved({{"start", "3"}, {"stop", "1"}}).values, w),
            "option 'stop': '1' is not later than option 'start' ('3')");
  EXPECT_EQ(parse_options(resolved({{"stop", "0"}}).values, w),
            "option 'stop': '0' is not later than option 'start' ('0')");
  ASSERT_EQ(parse_options(resolved({{"start", "2s"}, {"stop", "2001ms"}}).values, w), "");
  EXPECT_DOUBLE_EQ(w.stop_s, 2.001);
  options z;
  EXPECT_EQ(parse_options(resolved({{"limit", "0"}}).values, z),
            "option 'limit': '0' is not a size of at least 1 byte");
  EXPECT_EQ(parse_options(resolved({{"dir", ""}}).values, z), "option 'dir': '' is empty");
  EXPECT_EQ(resolved({{"analyze", "maybe"}}).error,
            "module 'trace': option 'analyze': 'maybe' is not one of 1, 0, true, false, yes, no, "
            "on, off");
  options a;
  ASSERT_EQ(parse_options(resolved({{"analyze", "yes"}, {"analyze_limit", "2.5"}}).values, a), "");
  EXPECT_TRUE(a.analyze);
  EXPECT_EQ(a.analyze_limit_s, 2.5);
  options f;
  EXPECT_EQ(parse_options(resolved({{"functions", "+,"}}).values, f),
            "option 'functions': '+,' is not a list of one name or more");
}

TEST(Options, JobDirectoryFromTheResourceManager) {
  auto slurm = [](const char* n) -> const char* {
    const std::string name(n);
    return name == "SLURM_JOB_ID" ? "1234" : name == "SLURM_STEP_ID" ? "0" : nullptr;
  };
  EXPECT_EQ(job_id_from_environment(slurm), "1234.0");
  EXPECT_EQ(default_trace_dir("1234.0"), "strata-trace-1234.0");
  EXPECT_EQ(default_trace_dir("a/../b c"), "strata-trace-a_.._b_c");
}

TEST(Clock, CorrectsAlongTheLineThroughBothMeasurements) {
  clock_line c{1000, 500, 3000, 700};
  EXPECT_EQ(c.correct(1000), 1500u);
  EXPECT_EQ(c.correct(2000), 2600u);
  EXPECT_EQ(c.correct(3000), 3700u);
  clock_line single{1000, -40, 0, 0};
  EXPECT_EQ(single.correct(5000), 4960u);
}

TEST(Clock, AnImplausibleDriftTakesTheSurerOffsetAndTheClockRunsForward) {
  // 2 ms apart, offsets 3 ms apart: the corrected clock would run backwards.
  clock_line c{1'000'000, 0, 3'000'000, -3'000'000};
  EXPECT_GT(c.correct(1'000'000), c.correct(3'000'000));
  EXPECT_FALSE(c.keep_plausible_drift(100.0, 5000.0));
  EXPECT_EQ(c.o2, 0);
  EXPECT_LT(c.correct(1'000'000), c.correct(3'000'000));
  clock_line later{1'000'000, 0, 3'000'000, -3'000'000};
  EXPECT_FALSE(later.keep_plausible_drift(5000.0, 100.0));
  EXPECT_EQ(later.o1, -3'000'000);
  // 100 ppm over a second is a real drift, kept.
  clock_line real{0, 0, 1'000'000'000, 100'000};
  EXPECT_TRUE(real.keep_plausible_drift(100.0, 100.0));
  EXPECT_EQ(real.o2, 100'000);
}

TEST(Unify, DefinitionsSurviveTheRoundTrip) {
  local_defs d;
  d.host = "node-1";
  d.mpi_regions = {"MPI_Send", "MPI_Recv"};
  d.user_regions = {"solver", "name:with:colons"};
  d.sites = {{"a.c", 10}, {"b.c", 20}};
  d.comms = {{0, 1, 2}, {1}};
  local_defs back;
  ASSERT_TRUE(deserialize(serialize(d), back));
  EXPECT_EQ(back.host, d.host);
  EXPECT_EQ(back.mpi_regions, d.mpi_regions);
  EXPECT_EQ(back.user_regions, d.user_regions);
  EXPECT_EQ(back.sites, d.sites);
  EXPECT_EQ(back.comms, d.comms);
  std::string cut = serialize(d);
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(deserialize(cut, back));
  EXPECT_FALSE(deserialize("garbage", back));
}

TEST(Unify, SameNamesSameIdsOnEveryRank) {
  local_defs r0;
  r0.host = "h";
  r0.mpi_regions = {"MPI_Send", "MPI_Barrier"};
  r0.user_regions = {"solver"};
  r0.sites = {{"a.c", 10}};
  r0.comms = {{0, 1}, {0, 1}}; // the world and a duplicate of it
  local_defs r1;
  r1.host = "h";
  r1.mpi_regions = {"MPI_Recv", "MPI_Barrier"};
  r1.user_regions = {"io", "solver"};
  r1.sites = {{"b.c", 5}, {"a.c", 10}};
  r1.comms = {{0, 1}, {0, 1}};
  global_defs g;
  std::vector<rank_map> maps;
  unify({r0, r1}, g, maps);
  EXPECT_EQ(g.hosts.size(), 1u);
  EXPECT_EQ(g.mpi_regions.size(), 3u);
  EXPECT_EQ(maps[0].mpi_region[1], maps[1].mpi_region[1]);   // MPI_Barrier
  EXPECT_EQ(maps[0].user_region[0], maps[1].user_region[1]); // solver
  EXPECT_GE(maps[0].user_region[0], 3u);                     // after the MPI regions
  EXPECT_EQ(maps[0].site[0], maps[1].site[1]);
  EXPECT_EQ(g.comms.size(), 2u); // the duplicate stays its own communicator
  EXPECT_NE(maps[0].comm[0], maps[0].comm[1]);
  EXPECT_EQ(maps[0].comm, maps[1].comm);
  rank_map back;
  ASSERT_TRUE(unflatten(flatten(maps[1]), back));
  EXPECT_EQ(back.user_region, maps[1].user_region);
  EXPECT_FALSE(unflatten({5, 1}, back));
}

TEST(Unify, MergedDefinitionsSurviveTheRoundTrip) {
  merged_defs d;
  d.hosts = {"a", "b"};
  d.rank_host = {0, 1, 1};
  d.mpi_regions = {"MPI_Send"};
  d.user_regions = {"solver"};
  d.sites = {{"a.c", 10}};
  d.comms = {{{0, 1, 2, 3, 4, 5}, 0}, {{0, 1, 2, 3, 4, 5}, 1}, {{4, 2, 3, 0}, 0}, {{}, 0}};
  const std::string bytes = serialize(d);
  merged_defs back;
  ASSERT_TRUE(deserialize(bytes, back, 6));
  EXPECT_EQ(back.hosts, d.hosts);
  EXPECT_EQ(back.rank_host, d.rank_host);
  EXPECT_EQ(back.comms, d.comms);
  EXPECT_EQ(serialize(back), bytes);
  EXPECT_FALSE(deserialize(bytes, back, 5)); // rank 5 in a job of 5 ranks
  std::string cut = bytes;
  cut.pop_back();
  EXPECT_FALSE(deserialize(cut, back, 6));
  // A world-sized communicator is one run of ranks, whatever the number of ranks.
  merged_defs world;
  world.comms = {{std::vector<int>(100000), 0}};
  for (int r = 0; r < 100000; ++r)
    world.comms[0].first[static_cast<size_t>(r)] = r;
  EXPECT_LT(serialize(world).size(), 80u);
}

TEST(Unify, BinomialTreeInLogRounds) {
  for (const int size : {1, 2, 3, 7, 8, 9, 64, 100}) {
    int rounds = 0;
    while ((1 << rounds) < size)
      ++rounds;
    std::vector<int> seen_as_child(static_cast<size_t>(size), 0);
    for (int r = 0; r < size; ++r) {
      const tree_links l = binomial_links(r, size);
      EXPECT_EQ(l.parent < 0, r == 0);
      EXPECT_LE(static_cast<int>(l.children.size()), rounds);
      for (const int c : l.children) {
        EXPECT_EQ(binomial_links(c, size).parent, r);
        ++seen_as_child[static_cast<size_t>(c)];
      }
      int depth = 0;
      for (int at = r; at != 0; at = binomial_links(at, size).parent)
        ++depth;
      EXPECT_LE(depth, rounds);
    }
    for (int r = 1; r < size; ++r)
      EXPECT_EQ(seen_as_child[static_cast<size_t>(r)], 1);
  }
}

// Rank r's definitions for the tree test: shared and own names, sites and communicators.
local_defs synthetic_rank(int r, int size) {
  local_defs d;
  d.host = "node" + std::to_string(r / 3);
  d.mpi_regions = {"MPI_Init", r % 2 == 0 ? "MPI_Send" : "MPI_Recv", "MPI_Barrier"};
  if (r % 5 == 4)
    d.mpi_regions.push_back("MPI_Rank" + std::to_string(r));
  d.user_regions = {"solver", "step" + std::to_string(r % 4)};
  d.sites = {{"main.c", 10}, {"main.c", static_cast<uint32_t>(20 + r % 3)}};
  std::vector<int> world(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i)
    world[static_cast<size_t>(i)] = i;
  d.comms = {world, world, {r - r % 2, std::min(r - r % 2 + 1, size - 1)}};
  return d;
}

TEST(Unify, TheTreeGivesWhatMergingRankAfterRankGives) {
  for (const int size : {1, 2, 3, 5, 8, 13, 64}) {
    std::vector<local_defs> ranks;
    ranks.reserve(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      ranks.push_back(synthetic_rank(r, size));
    // One rank after the other, in rank order: the reference.
    merged_defs flat = from_local(ranks[0]);
    std::vector<rank_map> flat_maps(1, prefix(global_ids(flat), ranks[0]));
    for (int r = 1; r < size; ++r)
      flat_maps.push_back(merge_into(flat, from_local(ranks[static_cast<size_t>(r)])));
    // The tree, as finalize runs it: up (children before parents), then down.
    std::vector<merged_defs> sets(static_cast<size_t>(size));
    std::vector<std::vector<rank_map>> child_maps(static_cast<size_t>(size));
    for (int r = size - 1; r >= 0; --r) {
      sets[static_cast<size_t>(r)] = from_local(ranks[static_cast<size_t>(r)]);
      for (const int c : binomial_links(r, size).children)
        child_maps[static_cast<size_t>(r)].push_back(
            merge_into(sets[static_cast<size_t>(r)], sets[static_cast<size_t>(c)]));
    }
    std::vector<rank_map> ids(static_cast<size_t>(size));
    ids[0] = global_ids(sets[0]);
    for (int r = 0; r < size; ++r) {
      const tree_links l = binomial_links(r, size);
      for (size_t c = 0; c < l.children.size(); ++c) {
        ASSERT_TRUE(compose(child_maps[static_cast<size_t>(r)][c], ids[static_cast<size_t>(r)],
                            ids[static_cast<size_t>(l.children[c])]));
      }
    }
    const global_defs tree = to_global(sets[0]);
    global_defs reference;
    std::vector<rank_map> maps;
    unify(ranks, reference, maps);
    EXPECT_EQ(tree.hosts, reference.hosts) << size;
    EXPECT_EQ(tree.rank_host, reference.rank_host) << size;
    EXPECT_EQ(tree.mpi_regions, reference.mpi_regions) << size;
    EXPECT_EQ(tree.user_regions, reference.user_regions) << size;
    EXPECT_EQ(tree.sites, reference.sites) << size;
    EXPECT_EQ(tree.comms, reference.comms) << size;
    EXPECT_EQ(to_global(flat).comms, reference.comms) << size;
    EXPECT_EQ(tree.comms.size(), 2u + static_cast<size_t>((size + 1) / 2)) << size;
    for (int r = 0; r < size; ++r) {
      const rank_map mine = prefix(ids[static_cast<size_t>(r)], ranks[static_cast<size_t>(r)]);
      EXPECT_EQ(mine.mpi_region, maps[static_cast<size_t>(r)].mpi_region) << r;
      EXPECT_EQ(mine.user_region, maps[static_cast<size_t>(r)].user_region) << r;
      EXPECT_EQ(mine.site, maps[static_cast<size_t>(r)].site) << r;
      EXPECT_EQ(mine.comm, maps[static_cast<size_t>(r)].comm) << r;
      // Every id names what the rank meant.
      for (size_t i = 0; i < mine.user_region.size(); ++i)
        EXPECT_EQ(tree.user_regions[mine.user_region[i] - tree.mpi_regions.size()],
                  ranks[static_cast<size_t>(r)].user_regions[i]);
      for (size_t i = 0; i < mine.comm.size(); ++i)
        EXPECT_EQ(tree.comms[mine.comm[i]], ranks[static_cast<size_t>(r)].comms[i]);
    }
  }
}

} // namespace
} // namespace strata::trace
