#include "profiler/communication.hpp"

#include "profiler/record/record.hpp"
#include "profiler/site_reduction.hpp"
#include "profiler/testdata/stencil_pairs.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

namespace strata::profiler {
namespace {

TEST(Communication, KindsAreTheTracesKinds) {
  EXPECT_EQ(pair_kind_of("MPI_Send"), pair_kind_point_to_point);
  EXPECT_EQ(pair_kind_of("MPI_Issend"), pair_kind_point_to_point);
  EXPECT_EQ(pair_kind_of("MPI_Isend_c"), pair_kind_point_to_point);
  EXPECT_EQ(pair_kind_of("MPI_Sendrecv"), pair_kind_sendrecv);
  EXPECT_EQ(pair_kind_of("MPI_Sendrecv_replace"), pair_kind_sendrecv);
  EXPECT_EQ(pair_kind_of("MPI_Recv"), -1);
  EXPECT_EQ(pair_kind_of("MPI_Send_init"), -1);
  EXPECT_EQ(pair_kind_of("MPI_Bcast"), -1);
  // One-sided operations, each kind apart; not the synchronization.
  EXPECT_EQ(pair_kind_of("MPI_Put"), pair_kind_put);
  EXPECT_EQ(pair_kind_of("MPI_Rget"), pair_kind_get);
  EXPECT_EQ(pair_kind_of("MPI_Accumulate"), pair_kind_accumulate);
  EXPECT_EQ(pair_kind_of("MPI_Fetch_and_op"), pair_kind_accumulate);
  EXPECT_EQ(pair_kind_of("MPI_Win_fence"), -1);
  EXPECT_EQ(pair_kind_of("MPI_Win_lock"), -1);
}

// `pairs` is point-to-point; a one-sided kind is in `by_kind` alone.
// A partitioned send is two-sided: in `pairs` with the other point-to-point kinds, and apart in
// `by_kind`.
TEST(Communication, PartitionedSendsAreInThePairs) {
  EXPECT_TRUE(common::is_point_to_point(pair_kind_partitioned));
  EXPECT_STREQ(pair_kind_names[pair_kind_partitioned], "partitioned");
  pair_list list;
  pair_figures mixed{2, 0, {}, {}};
  mixed.messages[pair_kind_persistent] = 1;
  mixed.bytes[pair_kind_persistent] = 8;
  mixed.messages[pair_kind_partitioned] = 4;
  mixed.bytes[pair_kind_partitioned] = 480;
  list.pairs = {mixed};
  const record::communication_section section = communication_of(list);
  EXPECT_EQ(section.pairs, (std::vector<record::message_pair>{{2, 0, 5, 488}}));
  EXPECT_EQ(section.by_kind.at("partitioned"), (std::vector<record::message_pair>{{2, 0, 4, 480}}));
  EXPECT_EQ(section.by_kind.at("persistent"), (std::vector<record::message_pair>{{2, 0, 1, 8}}));
  // A partitioned send keeps its kind's sums by handle, for its starts.
  sent_pairs sums;
  ASSERT_TRUE(sums.open(2));
  persistent_requests table;
  EXPECT_TRUE(table.note(7, &sums.row(pair_kind_partitioned)[1].messages, 120));
  EXPECT_TRUE(table.note(8, &sums.row(pair_kind_persistent)[1].messages, 8));
  EXPECT_EQ(table.find(7)->sums, &sums.row(pair_kind_partitioned)[1].messages);
  EXPECT_EQ(table.find(7)->bytes, 120U);
  EXPECT_EQ(table.find(8)->sums, &sums.row(pair_kind_persistent)[1].messages);
}

TEST(Communication, OneSidedKindsAreKeptOutOfThePairs) {
  pair_list list;
  pair_figures both{0, 1, {}, {}};
  both.messages[pair_kind_point_to_point] = 2;
  both.bytes[pair_kind_point_to_point] = 16;
  both.messages[pair_kind_put] = 3;
  both.bytes[pair_kind_put] = 96;
  pair_figures one_sided{1, 0, {}, {}};
  one_sided.messages[pair_kind_get] = 1;
  one_sided.bytes[pair_kind_get] = 24;
  list.pairs = {one_sided, both};
  const record::communication_section section = communication_of(list);
  EXPECT_EQ(section.pairs, (std::vector<record::message_pair>{{0, 1, 2, 16}}));
  EXPECT_EQ(section.by_kind.at("put"), (std::vector<record::message_pair>{{0, 1, 3, 96}}));
  EXPECT_EQ(section.by_kind.at("get"), (std::vector<record::message_pair>{{1, 0, 1, 24}}));
  EXPECT_EQ(section.by_kind.at("point_to_point"),
            (std::vector<record::message_pair>{{0, 1, 2, 16}}));
}

TEST(Communication, PersistentRequestsHaveTheirRoles) {
  EXPECT_EQ(request_role_of("MPI_Send_init"), request_role::makes_send);
  EXPECT_EQ(request_role_of("MPI_Rsend_init_c"), request_role::makes_send);
  EXPECT_EQ(request_role_of("MPI_Recv_init"), request_role::makes_receive);
  // MPI 4's partitioned requests: a message of every partition per start, of a kind of its own.
  EXPECT_EQ(request_role_of("MPI_Psend_init"), request_role::makes_partitioned_send);
  EXPECT_EQ(request_role_of("MPI_Precv_init"), request_role::makes_receive);
  EXPECT_EQ(request_role_of("MPI_Pready"), request_role::none);
  EXPECT_EQ(request_role_of("MPI_Parrived"), request_role::none);
  EXPECT_EQ(request_role_of("MPI_Start"), request_role::starts_one);
  EXPECT_EQ(request_role_of("MPI_Startall"), request_role::starts_many);
  EXPECT_EQ(request_role_of("MPI_Isend"), request_role::none);
  // MPI 4's persistent collectives (MPICH's header declares them): each start is a call.
  EXPECT_EQ(request_role_of("MPI_Bcast_init"), request_role::makes_collective);
  EXPECT_EQ(request_role_of("MPI_Neighbor_alltoallw_init_c"), request_role::makes_collective);
  EXPECT_EQ(request_role_of("MPI_Ibcast"), request_role::none);
  EXPECT_EQ(request_role_of("MPI_Bcast"), request_role::none);
}

// A persistent collective keeps its communicator's sums and bytes by handle; a handle made again
// by a send is a send's, by a receive no one's.
TEST(Communication, PersistentCollectivesAreKeptBesideTheSends) {
  persistent_requests table;
  strata_comm_sum communicator{};
  strata_pair_sum pairs[3] = {};
  ASSERT_TRUE(table.note(11, &communicator.calls, 50));
  ASSERT_TRUE(table.note(12, &pairs[2].messages, 8));
  const persistent_requests::made* found = table.find(11);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->sums, &communicator.calls);
  EXPECT_EQ(found->bytes, 50U);
  EXPECT_EQ(table.find(12)->sums, &pairs[2].messages);
  ASSERT_TRUE(table.note(11, &pairs[1].messages, 4));
  EXPECT_EQ(table.find(11)->sums, &pairs[1].messages);
  table.forget(11);
  EXPECT_EQ(table.find(11), nullptr);
  EXPECT_EQ(table.find(12)->sums, &pairs[2].messages);
  // Handle 0 is no request's: never kept, never found (it marks an empty slot).
  EXPECT_TRUE(table.note(0, &pairs[0].messages, 1));
  EXPECT_EQ(table.find(0), nullptr);
}

// The table is laid out as the core reads it (module.h): a handle is found from
// strata_started_home on, in the slots open() returned.
TEST(Communication, PersistentRequestsAreWhereTheCoreLooks) {
  persistent_requests table;
  const strata_started_slot* slots = table.open();
  ASSERT_NE(slots, nullptr);
  EXPECT_EQ(table.open(), slots);
  strata_pair_sum pair{};
  const uint64_t handle = 0x7f00deadbee0;
  ASSERT_TRUE(table.note(handle, &pair.messages, 24));
  const strata_started_slot& slot = slots[strata_started_home(handle)];
  EXPECT_EQ(slot.handle, handle);
  EXPECT_EQ(slot.sums, &pair.messages);
  EXPECT_EQ(slot.bytes, 24U);
  EXPECT_EQ(table.find(handle), &slot);
}

// Handles that share a home slot, found and forgotten in every order: the table never loses a
// send behind a forgotten one, and a handle made again takes its new send.
TEST(Communication, PersistentSendsAreFoundAfterOthersAreForgotten) {
  persistent_requests table;
  strata_pair_sum pairs[10] = {};
  // Handles of one home slot, and one of the next slot (which a forgotten one's move must keep).
  std::vector<uint64_t> same;
  const size_t home = persistent_requests::home(1);
  for (uint64_t h = 1; same.size() < 4; ++h)
    if (persistent_requests::home(h) == home)
      same.push_back(h);
  for (uint64_t h = 1;; ++h)
    if (persistent_requests::home(h) == (home + 1) % persistent_requests::capacity) {
      same.insert(same.begin() + 2, h);
      break;
    }
  for (size_t i = 0; i < same.size(); ++i)
    ASSERT_TRUE(table.note(same[i], &pairs[i].messages, 10 * i));
  table.forget(same[1]);
  table.forget(same[3]);
  EXPECT_EQ(table.find(same[1]), nullptr);
  EXPECT_EQ(table.find(same[3]), nullptr);
  for (size_t i : {0, 2, 4}) {
    const persistent_requests::made* s = table.find(same[i]);
    ASSERT_NE(s, nullptr) << i;
    EXPECT_EQ(s->sums, &pairs[i].messages);
    EXPECT_EQ(s->bytes, 10 * i);
  }
  ASSERT_TRUE(table.note(same[2], &pairs[9].messages, 99));
  EXPECT_EQ(table.find(same[2])->sums, &pairs[9].messages);
  EXPECT_EQ(table.find(same[2])->bytes, 99U);
  // Full: one send too many is not kept, and said.
  persistent_requests full;
  size_t kept = 0;
  for (uint64_t h = 1; h <= persistent_requests::capacity; ++h)
    kept += full.note(h, &pairs[0].messages, 1) ? 1 : 0;
  EXPECT_EQ(kept, persistent_requests::capacity - 1);
  EXPECT_EQ(full.not_kept(), 1U);
  for (uint64_t h = 1; h < persistent_requests::capacity; ++h)
    full.forget(h);
  EXPECT_EQ(full.find(2), nullptr);
  EXPECT_TRUE(full.note(5, &pairs[1].messages, 1));
}

// The sums of a small job are a file's, which a killed rank leaves: read back as that rank's
// pairs; cleared by hand (a file's pages keep their contents); a file cut short is refused.
TEST(Communication, PairsFileIsReadBackAsTheRanksPairs) {
  char dir[] = "/tmp/strata_pairs_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = pairs_file_of(std::string(dir) + "/job.rank2.prof");
  EXPECT_EQ(path, std::string(dir) + "/job.rank2.pairs");
  {
    sent_pairs sums;
    ASSERT_TRUE(sums.open(4, path, 2));
    EXPECT_EQ(sums.path(), path);
    sums.row(pair_kind_persistent)[3] = {5, 160};
    sums.row(pair_kind_point_to_point)[0] = {1, 8};
    pair_list back;
    std::string error;
    ASSERT_TRUE(read_pairs_file(path, back, error)) << error;
    ASSERT_EQ(back.pairs.size(), 2U);
    EXPECT_EQ(back.pairs[0].from, 2U);
    EXPECT_EQ(back.pairs[0].to, 0U);
    EXPECT_EQ(back.pairs[0].bytes[pair_kind_point_to_point], 8U);
    EXPECT_EQ(back.pairs[1].to, 3U);
    EXPECT_EQ(back.pairs[1].messages[pair_kind_persistent], 5U);
    EXPECT_EQ(back.pairs[1].bytes[pair_kind_persistent], 160U);
    sums.clear();
    ASSERT_TRUE(read_pairs_file(path, back, error)) << error;
    EXPECT_TRUE(back.pairs.empty());
  }
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  pair_list back;
  std::string error;
  EXPECT_FALSE(read_pairs_file(path, back, error));
  EXPECT_NE(error.find("not a pairs file"), std::string::npos) << error;
  ::unlink(path.c_str());
  ::rmdir(dir);
  // Too many ranks for a file: in memory, no file made.
  sent_pairs large;
  ASSERT_TRUE(large.open(pairs_file_ranks + 1, path, 0));
  EXPECT_TRUE(large.path().empty());
}

// A rank's sums as the call path leaves them.
struct rank_sums {
  std::vector<strata_pair_sum> kinds[pair_kind_count];
  explicit rank_sums(uint32_t ranks) {
    for (auto& k : kinds)
      k.assign(ranks, strata_pair_sum{0, 0});
  }
  pair_list list(uint32_t from, size_t limit = listed_pairs_limit) const {
    const strata_pair_sum* rows[pair_kind_count] = {kinds[0].data(), kinds[1].data(),
                                                    kinds[2].data()};
    return rank_pairs(from, rows, static_cast<uint32_t>(kinds[0].size()), limit);
  }
};

// A rank of a job started under the previous Strata leaves a file of six kinds, without the
// partitioned sends: `strata recover` still reads its pairs, each kind where it was.
TEST(Communication, PairsFileOfTheKindsBeforePartitionedSendsIsRead) {
  char dir[] = "/tmp/strata_pairs_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/job.rank1.pairs";
  const uint32_t kinds = pairs_kinds_before_partitioned, ranks = 3;
  const int32_t rank = 1;
  std::string bytes(pairs_file_header_bytes + sizeof(strata_pair_sum) * kinds * ranks, '\0');
  std::memcpy(bytes.data(), pairs_file_magic, sizeof pairs_file_magic);
  std::memcpy(bytes.data() + 8, &kinds, sizeof kinds);
  std::memcpy(bytes.data() + 12, &ranks, sizeof ranks);
  std::memcpy(bytes.data() + 16, &rank, sizeof rank);
  auto put = [&](uint32_t row, uint32_t to, strata_pair_sum sum) {
    std::memcpy(bytes.data() + pairs_file_header_bytes + sizeof sum * (row * ranks + to), &sum,
                sizeof sum);
  };
  put(2, 0, {4, 64}); // the third row: persistent sends, then as now
  put(3, 2, {7, 56}); // the fourth row: puts then, the fifth kind now
  put(5, 2, {1, 8});  // the sixth: accumulates
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  pair_list back;
  std::string error;
  ASSERT_TRUE(read_pairs_file(path, back, error)) << error;
  ASSERT_EQ(back.pairs.size(), 2U);
  EXPECT_EQ(back.pairs[0].to, 0U);
  EXPECT_EQ(back.pairs[0].messages[pair_kind_persistent], 4U);
  EXPECT_EQ(back.pairs[1].to, 2U);
  EXPECT_EQ(back.pairs[1].messages[pair_kind_put], 7U);
  EXPECT_EQ(back.pairs[1].bytes[pair_kind_accumulate], 8U);
  EXPECT_EQ(back.pairs[1].messages[pair_kind_partitioned], 0U);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(Communication, SmallJobListsEveryPairExactlyEachKindApart) {
  rank_sums r0(3), r1(3);
  r0.kinds[pair_kind_point_to_point][1] = {4, 400};
  r0.kinds[pair_kind_sendrecv][1] = {1, 8};
  r0.kinds[pair_kind_point_to_point][2] = {2, 20};
  r1.kinds[pair_kind_sendrecv][0] = {1, 8};
  pair_list all = r1.list(1);
  combine_pairs(all, r0.list(0));
  // Through the words the tree carries.
  pair_list carried;
  ASSERT_TRUE(read_pair_list(write_pair_list(all), carried));
  const record::communication_section c = communication_of(carried);
  const std::vector<record::message_pair> pairs = {{0, 1, 5, 408}, {0, 2, 2, 20}, {1, 0, 1, 8}};
  EXPECT_EQ(c.pairs, pairs);
  const std::vector<record::message_pair> p2p = {{0, 1, 4, 400}, {0, 2, 2, 20}};
  const std::vector<record::message_pair> sendrecv = {{0, 1, 1, 8}, {1, 0, 1, 8}};
  EXPECT_EQ(c.by_kind.at("point_to_point"), p2p);
  EXPECT_EQ(c.by_kind.at("sendrecv"), sendrecv);
  EXPECT_FALSE(c.unlisted.has_value());
}

TEST(Communication, MalformedWordsAreRefused) {
  rank_sums r(2);
  r.kinds[0][1] = {1, 1};
  const std::string words = write_pair_list(r.list(0));
  pair_list out;
  EXPECT_FALSE(read_pair_list(words.substr(0, words.size() - 1), out));
  EXPECT_FALSE(read_pair_list(words + "12345678", out));
  EXPECT_FALSE(read_pair_list("", out));
}

TEST(Communication, AboveTheLimitTheHeaviestPairsAreListedAndTheRestSummed) {
  rank_sums r(10);
  for (uint32_t to = 0; to < 10; ++to)
    r.kinds[0][to] = {1, 100 + to};
  pair_list list = r.list(0, 3);
  const record::communication_section c = communication_of(list);
  const std::vector<record::message_pair> heaviest = {
      {0, 7, 1, 107}, {0, 8, 1, 108}, {0, 9, 1, 109}};
  EXPECT_EQ(c.pairs, heaviest);
  ASSERT_TRUE(c.unlisted.has_value());
  EXPECT_EQ(c.unlisted->pairs, 7U);
  EXPECT_EQ(c.unlisted->messages, 7U);
  EXPECT_EQ(c.unlisted->bytes, 100U + 101 + 102 + 103 + 104 + 105 + 106);
}

// 100,000 ranks (testdata::large_world_ranks) in a 3-D stencil (six partners each, sizes by rank),
// combined along the finalize tree: the record's section stays under 1 MiB, holds the job's
// heaviest pairs, and what it lists plus what it sums is every message.
TEST(Communication, RecordOfAHundredThousandRanksStaysUnderOneMebibyte) {
  const uint32_t ranks = testdata::large_world_ranks;
  uint64_t messages = 0, bytes = 0;
  std::vector<pair_list> subtree(ranks);
  // Children have higher ranks than their parents: from the last rank down (site_reduction).
  for (int rank = static_cast<int>(ranks) - 1; rank >= 0; --rank) {
    const auto r = static_cast<uint32_t>(rank);
    // The rank's pairs as rank_pairs makes them (the test above), without a row of 100,000 per
    // rank to scan.
    pair_list here = testdata::stencil_pairs(r, ranks);
    for (const pair_figures& p : here.pairs) {
      messages += p.messages[pair_kind_point_to_point];
      bytes += p.bytes[pair_kind_point_to_point];
    }
    for (const int child : site_tree_place_of(rank, static_cast<int>(ranks)).children) {
      pair_list carried;
      ASSERT_TRUE(read_pair_list(write_pair_list(subtree[static_cast<size_t>(child)]), carried));
      combine_pairs(here, std::move(carried));
      subtree[static_cast<size_t>(child)] = {};
    }
    subtree[r] = std::move(here);
  }
  record::job_record job;
  job.job.ranks = ranks;
  job.job.ranks_reported = ranks;
  const std::string without = record::to_json(job);
  job.communication = communication_of(subtree[0]);
  const std::string with = record::to_json(job);
  EXPECT_LE(with.size() - without.size(), size_t{1} << 20);
  ASSERT_EQ(job.communication->pairs.size(), listed_pairs_limit);
  ASSERT_TRUE(job.communication->unlisted.has_value());
  uint64_t listed_messages = 0, listed_bytes = 0, lightest_listed = UINT64_MAX;
  for (const record::message_pair& p : job.communication->pairs) {
    listed_messages += p.messages;
    listed_bytes += p.bytes;
    lightest_listed = std::min(lightest_listed, p.bytes);
  }
  EXPECT_EQ(listed_messages + job.communication->unlisted->messages, messages);
  EXPECT_EQ(listed_bytes + job.communication->unlisted->bytes, bytes);
  EXPECT_EQ(job.communication->pairs.size() + job.communication->unlisted->pairs,
            uint64_t{ranks} * 6);
  // The listed pairs are the heaviest: the unlisted ones average no more than the lightest.
  EXPECT_LE(job.communication->unlisted->bytes / job.communication->unlisted->pairs,
            lightest_listed);
  // And the record reads back the same.
  const record::parse_result back = record::parse_record(with);
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.record->communication, job.communication);
  RecordProperty("communication_bytes", std::to_string(with.size() - without.size()));
  std::printf("communication section of %u ranks: %zu bytes\n", ranks,
              with.size() - without.size());
}

TEST(Communication, RecordRejectsAPairOutsideTheJob) {
  record::job_record job;
  job.job.ranks = 2;
  job.job.ranks_reported = 2;
  job.communication = record::communication_section{{{0, 2, 1, 1}}, {}, {}, {}};
  const record::parse_result back = record::parse_record(record::to_json(job));
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error.find("communication.pairs[0].to"), std::string::npos) << back.error;
}

} // namespace
} // namespace strata::profiler
