#include "tracer/buffer.hpp"
#include "tracer/clock.hpp"
#include "tracer/options.hpp"
#include "tracer/unify.hpp"

#include <gtest/gtest.h>

#include <map>
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

TEST(Options, EnvironmentThenArguments) {
  std::map<std::string, std::string> env = {{"STRATA_TRACE_LIMIT", "1M"},
                                            {"STRATA_TRACE_POLICY", "ring"},
                                            {"STRATA_TRACE_REGIONS", "solver,io*"}};
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  options o;
  ASSERT_EQ(parse_options({{"limit", "2G"}, {"start", "0.5"}, {"stop", "2"}}, getenv, o), "");
  EXPECT_EQ(o.limit_bytes, 2ull << 30);
  EXPECT_EQ(o.policy, limit_policy::ring);
  EXPECT_DOUBLE_EQ(o.start_s, 0.5);
  EXPECT_DOUBLE_EQ(o.stop_s, 2);
  EXPECT_TRUE(o.region_wanted("solver"));
  EXPECT_TRUE(o.region_wanted("io_write"));
  EXPECT_FALSE(o.region_wanted("halo"));
}

TEST(Options, EachBadSettingIsNamed) {
  auto none = [](const char*) -> const char* { return nullptr; };
  options o;
  EXPECT_NE(parse_options({{"limit", "lots"}}, none, o).find("limit=lots"), std::string::npos);
  EXPECT_NE(parse_options({{"policy", "drop"}}, none, o).find("policy=drop"), std::string::npos);
  EXPECT_NE(parse_options({{"start", "-1"}}, none, o).find("start=-1"), std::string::npos);
  EXPECT_NE(parse_options({{"colour", "red"}}, none, o).find("unknown argument 'colour'"),
            std::string::npos);
  EXPECT_NE(parse_options({{"analyze", "maybe"}}, none, o).find("analyze=maybe"),
            std::string::npos);
  EXPECT_NE(parse_options({{"analyze_limit", "soon"}}, none, o).find("analyze_limit=soon"),
            std::string::npos);
  options a;
  EXPECT_EQ(parse_options({{"analyze", "yes"}, {"analyze_limit", "2.5"}}, none, a), "");
  EXPECT_TRUE(a.analyze);
  EXPECT_EQ(a.analyze_limit_s, 2.5);
  options w;
  EXPECT_NE(parse_options({{"start", "3"}, {"stop", "1"}}, none, w).find("later"),
            std::string::npos);
  auto bad_env = [](const char* n) -> const char* {
    return std::string(n) == "STRATA_TRACE_POLICY" ? "sometimes" : nullptr;
  };
  options e;
  EXPECT_NE(parse_options({}, bad_env, e).find("STRATA_TRACE_POLICY"), std::string::npos);
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

} // namespace
} // namespace strata::trace
