// Each job's collectives by communicator in the store (both backends: StoreBackend runs on
// PostgreSQL too): written from the record and read back exact, heaviest first.
#include "profiler/record/record.hpp"
#include "site/job_collectives.hpp"
#include "site/store.hpp"
#include "site/store_test_fixture.hpp"

#include <gtest/gtest.h>
#include <optional>
#include <tuple>
#include <vector>

namespace strata::site {
namespace {

using store_testing::StoreBackend;

// A 40-rank job: the world (too large for a per-member list), a communicator of three members
// with each member's figures, one of barriers only (no bytes: no imbalance), and what the record
// left out and could not attribute. A record without the section stores none.
TEST_F(StoreBackend, KeepsEachJobsCollectivesByCommunicator) {
  const auto s = store::open(url_);
  record::job_record with = sample_, without = sample_;
  with.job.id = "collectives:with";
  with.job.ranks = 40;
  with.communication.emplace();
  record::collectives_section& c = with.communication->collectives.emplace();
  record::communicator_collectives world;
  world.members = "0-39";
  world.size = world.members_reported = 40;
  world.calls = 800;
  world.bytes = 1'000'000;
  world.calls_min = world.calls_max = 20;
  world.bytes_per_member = {10'000, 61'000, 3, 17, 25'000.0};
  record::communicator_collectives three;
  three.members = "0,2,4";
  three.size = three.members_reported = 3;
  three.calls = 30;
  three.bytes = 600;
  three.calls_min = 9;
  three.calls_max = 11;
  three.bytes_per_member = {100, 300, 2, 4, 200.0};
  three.per_member = {{0, 10, 200}, {2, 9, 100}, {4, 11, 300}};
  record::communicator_collectives barriers;
  barriers.members = "5-6";
  barriers.size = barriers.members_reported = 2;
  barriers.calls = 4;
  barriers.calls_min = barriers.calls_max = 2;
  barriers.per_member = {{5, 2, 0}, {6, 2, 0}};
  c.communicators = {world, three, barriers};
  c.unlisted = record::collective_sums{70, 7000};
  c.unattributed = record::collective_sums{8, 64};
  without.job.id = "collectives:without";
  std::vector<stored_job> jobs;
  for (const record::job_record* r : {&with, &without})
    jobs.push_back(make_stored_job(*r, record::to_json(*r), 1000, "alice"));
  const insert_result inserted = s->insert(jobs);
  ASSERT_EQ(inserted.inserted, 2);

  const std::optional<job_collective_rows> back = collectives_of(*s, inserted.job_ids[0]);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->communicators.size(), 3u);
  const communicator_row& w = back->communicators[0];
  EXPECT_EQ(std::make_tuple(w.members, w.size, w.members_reported, w.calls, w.bytes, w.calls_min,
                            w.calls_max),
            std::make_tuple(std::string("0-39"), 40, 40, 800, 1'000'000, 20, 20));
  EXPECT_EQ(std::make_tuple(w.bytes_min, w.bytes_min_rank, w.bytes_max, w.bytes_max_rank),
            std::make_tuple(10'000, 3, 61'000, 17));
  EXPECT_DOUBLE_EQ(w.bytes_mean, 25'000.0);
  ASSERT_TRUE(w.imbalance);
  EXPECT_DOUBLE_EQ(*w.imbalance, 2.44);
  EXPECT_TRUE(w.per_member.empty());
  const communicator_row& t = back->communicators[1];
  EXPECT_EQ(t.members, "0,2,4");
  EXPECT_EQ(std::make_tuple(t.calls_min, t.calls_max, t.bytes_max_rank), std::make_tuple(9, 11, 4));
  ASSERT_TRUE(t.imbalance);
  EXPECT_DOUBLE_EQ(*t.imbalance, 1.5);
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> members;
  for (const collective_member_row& m : t.per_member)
    members.emplace_back(m.rank, m.calls, m.bytes);
  EXPECT_EQ(members, (std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
                         {0, 10, 200}, {2, 9, 100}, {4, 11, 300}}));
  const communicator_row& b = back->communicators[2];
  EXPECT_EQ(b.members, "5-6");
  EXPECT_FALSE(b.imbalance); // no member sent bytes: NULL, not a ratio
  EXPECT_EQ(b.per_member.size(), 2u);
  EXPECT_EQ(std::make_tuple(back->unlisted_calls, back->unlisted_bytes, back->unattributed_calls,
                            back->unattributed_bytes),
            std::make_tuple(70, 7000, 8, 64));

  // What a site asks in SQL: the communicators most out of balance (of this job: a PostgreSQL
  // server keeps the other tests' jobs).
  std::vector<std::string> imbalanced;
  s->query("SELECT members FROM job_collectives WHERE job_id = $1 AND imbalance > 2 ORDER BY "
           "imbalance DESC",
           {inserted.job_ids[0]},
           [&](const store::row& row) { imbalanced.push_back(row.text(0)); });
  EXPECT_EQ(imbalanced, std::vector<std::string>{"0-39"});

  EXPECT_FALSE(collectives_of(*s, inserted.job_ids[1]));
}

} // namespace
} // namespace strata::site
