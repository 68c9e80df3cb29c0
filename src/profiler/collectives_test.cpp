#include "profiler/collectives.hpp"

#include "profiler/communication.hpp"
#include "profiler/record/record.hpp"
#include "profiler/site_reduction.hpp"
#include "profiler/testdata/stencil_pairs.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace strata::profiler;
namespace record = strata::record;

namespace {

// A rank's sums as the core leaves them: ids 1 and up, one group each.
struct rank_sums {
  std::vector<strata_comm_sum> sums = std::vector<strata_comm_sum>(8);
  void add(uint32_t id, const std::vector<int>* group, int size, uint64_t calls, uint64_t bytes,
           uint32_t flags = 0) {
    sums[id].calls += calls;
    sums[id].bytes += bytes;
    sums[id].world_ranks = group != nullptr ? group->data() : nullptr;
    sums[id].size = size;
    sums[id].flags = flags;
  }
  communicator_list list(uint32_t rank, uint32_t world) const {
    return rank_communicators(rank, world, sums.data(), static_cast<uint32_t>(sums.size()));
  }
};

const communicator_total* find(const communicator_list& list, const std::string& members) {
  for (const communicator_total& c : list.communicators)
    if (strata::common::rank_ranges_text(c.members) == members)
      return &c;
  return nullptr;
}

} // namespace

TEST(Collectives, RankRangesReadBackWhatTheyWrite) {
  const std::vector<uint32_t> ranks = {0, 1, 2, 3, 7, 9, 10};
  const auto runs = strata::common::runs_of(ranks);
  EXPECT_EQ(strata::common::rank_ranges_text(runs), "0-3,7,9-10");
  EXPECT_EQ(strata::common::parse_rank_ranges("0-3,7,9-10", 11), runs);
  for (const char* bad : {"", "3-1", "0-3,2", "0,", ",0", "0-3,11", "a", "1 2", "0--3"})
    EXPECT_FALSE(strata::common::parse_rank_ranges(bad, 11).has_value()) << bad;
}

// Ids of the same members are one communicator, whatever their order in the group; what has no
// communicator the profile can name is counted apart.
TEST(Collectives, ARanksIdsOfTheSameMembersMerge) {
  const std::vector<int> odd = {3, 1}, odd_again = {1, 3}, stranger = {0, 2}, outside = {1, 9};
  rank_sums r;
  r.add(1, nullptr, 4, 5, 100);   // the world of 4
  r.add(2, &odd, 2, 3, 30);       // a split
  r.add(3, &odd_again, 2, 1, 10); // freed and made again, or a duplicate
  r.add(4, &odd, 2, 2, 7, STRATA_EVENT_INTERCOMM);
  r.add(5, &stranger, 2, 1, 1); // not holding this rank: not trusted
  r.add(6, &outside, 2, 1, 1);  // a rank beyond the world
  r.add(0, nullptr, 0, 1, 1);   // no communicator known
  r.add(7, nullptr, 4, 1, 1);   // the last id: ids past the table
  const communicator_list list = r.list(1, 4);
  ASSERT_EQ(list.communicators.size(), 2u);
  const communicator_total* world = find(list, "0-3");
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->size, 4u);
  EXPECT_EQ(world->calls, 5u);
  EXPECT_EQ(world->bytes, 100u);
  EXPECT_EQ(world->per_member, (std::vector<member_sum>{{1, 5, 100}}));
  const communicator_total* odds = find(list, "1,3");
  ASSERT_NE(odds, nullptr);
  EXPECT_EQ(odds->calls, 4u);
  EXPECT_EQ(odds->bytes, 40u);
  EXPECT_EQ(list.unattributed.calls, 6u);
  EXPECT_EQ(list.unattributed.bytes, 11u);
}

// Four ranks, the world and two halves by parity: combined in any order, every member's figures
// are exact, and the spread names the right ranks.
TEST(Collectives, CombinedRanksGiveEachMemberExactly) {
  const std::vector<int> evens = {0, 2}, odds = {1, 3};
  std::vector<communicator_list> lists;
  for (uint32_t rank = 0; rank < 4; ++rank) {
    rank_sums r;
    r.add(1, nullptr, 4, 6, uint64_t{100} * (rank + 1));
    r.add(2 + rank % 2, rank % 2 == 0 ? &evens : &odds, 2, 3, 10 + rank);
    lists.push_back(r.list(rank, 4));
  }
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2, 3}, {3, 1, 0, 2}}) {
    communicator_list all;
    for (const int i : order) {
      communicator_list carried;
      ASSERT_TRUE(
          read_communicator_list(write_communicator_list(lists[static_cast<size_t>(i)]), carried));
      combine_communicators(all, std::move(carried));
    }
    const record::collectives_section section = collectives_of(all);
    ASSERT_EQ(section.communicators.size(), 3u);
    const record::communicator_collectives& world = section.communicators[0];
    EXPECT_EQ(world.members, "0-3");
    EXPECT_EQ(world.size, 4u);
    EXPECT_EQ(world.members_reported, 4u);
    EXPECT_EQ(world.calls, 24u);
    EXPECT_EQ(world.bytes, 1000u);
    EXPECT_EQ(world.calls_min, 6u);
    EXPECT_EQ(world.calls_max, 6u);
    EXPECT_EQ(world.bytes_per_member, (record::member_bytes_spread{100, 400, 0, 3, 250.0}));
    EXPECT_EQ(world.per_member, (std::vector<record::member_collectives>{
                                    {0, 6, 100}, {1, 6, 200}, {2, 6, 300}, {3, 6, 400}}));
    EXPECT_EQ(section.communicators[1].members, "1,3");
    EXPECT_EQ(section.communicators[1].bytes, 11u + 13u);
    EXPECT_EQ(section.communicators[2].members, "0,2");
    EXPECT_EQ(section.communicators[2].per_member,
              (std::vector<record::member_collectives>{{0, 3, 10}, {2, 3, 12}}));
    EXPECT_FALSE(section.unlisted.has_value());
    EXPECT_FALSE(section.unattributed.has_value());
  }
}

TEST(Collectives, MalformedWordsAreRefused) {
  rank_sums r;
  r.add(1, nullptr, 4, 6, 100);
  const std::string words = write_communicator_list(r.list(2, 4));
  communicator_list out;
  ASSERT_TRUE(read_communicator_list(words, out));
  for (size_t cut = 0; cut < words.size(); cut += 8)
    EXPECT_FALSE(read_communicator_list(words.substr(0, cut), out)) << cut;
  std::string longer = words + std::string(8, '\0');
  EXPECT_FALSE(read_communicator_list(longer, out));
  // A size that does not count the members.
  std::string wrong = words;
  wrong[5 * 8 + 2 * 8 + 4] = 9;
  EXPECT_FALSE(read_communicator_list(wrong, out));
}

TEST(Collectives, TrafficCarriesPairsAndCommunicators) {
  pair_list pairs;
  pair_figures p;
  p.from = 1;
  p.to = 2;
  p.messages[pair_kind_sendrecv] = 3;
  p.bytes[pair_kind_sendrecv] = 30;
  pairs.pairs.push_back(p);
  rank_sums r;
  r.add(1, nullptr, 4, 6, 100);
  const communicator_list comms = r.list(1, 4);
  pair_list pairs_back;
  communicator_list comms_back;
  const std::string words = write_traffic(pairs, comms);
  ASSERT_TRUE(read_traffic(words, pairs_back, comms_back));
  EXPECT_EQ(pairs_back.pairs.size(), 1u);
  EXPECT_EQ(pairs_back.pairs[0].bytes[pair_kind_sendrecv], 30u);
  EXPECT_EQ(comms_back.communicators, comms.communicators);
  EXPECT_FALSE(read_traffic(words.substr(0, words.size() - 8), pairs_back, comms_back));
  EXPECT_FALSE(read_traffic(words.substr(8), pairs_back, comms_back));
}

// The record's parser checks the section against the job: members below job.ranks, a size that
// counts them, per-member ranks among them; each problem in one line naming the field.
TEST(Collectives, TheParserRefusesAMalformedSection) {
  record::job_record job;
  job.job.ranks = 4;
  job.job.ranks_reported = 4;
  job.communication.emplace();
  record::communicator_collectives c;
  c.members = "0-3";
  c.size = 4;
  c.members_reported = 4;
  c.calls = 8;
  c.calls_min = c.calls_max = 2;
  c.bytes_per_member = {0, 0, 0, 0, 0.0};
  c.per_member = {{0, 2, 0}, {1, 2, 0}, {2, 2, 0}, {3, 2, 0}};
  job.communication->collectives.emplace().communicators.push_back(c);
  const record::parse_result good = record::parse_record(record::to_json(job));
  ASSERT_TRUE(good.ok()) << good.error;
  EXPECT_EQ(good.record->communication, job.communication);
  const auto error_of = [&](auto change) {
    record::job_record bad = job;
    change(bad.communication->collectives->communicators[0]);
    return record::parse_record(record::to_json(bad)).error;
  };
  EXPECT_NE(
      error_of([](auto& b) { b.members = "0-4"; })
          .find("communication.collectives.communicators[0].members: expected ascending world "
                "ranks below job.ranks (4)"),
      std::string::npos);
  EXPECT_NE(error_of([](auto& b) { b.members = "2,1"; }).find("members"), std::string::npos);
  EXPECT_NE(error_of([](auto& b) { b.size = 3; }).find("communicators[0].size"), std::string::npos);
  EXPECT_NE(error_of([](auto& b) { b.per_member[3].rank = 2; }).find("per_member[3].rank"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& b) { b.per_member.pop_back(); }).find("per_member: 3 entries"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& b) { b.bytes_per_member.max_rank = 7; }).find("bytes_per_member"),
            std::string::npos);
}

// 100,000 ranks (testdata::large_world_ranks): the world, groups of 32 consecutive ranks, "columns"
// of the ranks equal modulo 1000 (100 scattered members each) and every rank's MPI_COMM_SELF,
// combined along the finalize tree beside a 3-D stencil's pairs (communication_test.cpp): the whole
// communication section stays under 1 MiB, the world's figures are exact, and what the section
// lists plus what it sums is every collective.
TEST(Collectives, RecordOfAHundredThousandRanksStaysUnderOneMebibyte) {
  const uint32_t ranks = testdata::large_world_ranks, group = 32, columns = 1000;
  std::vector<std::vector<int>> column_members(columns);
  for (uint32_t r = 0; r < ranks; ++r)
    column_members[r % columns].push_back(static_cast<int>(r));
  uint64_t calls = 0, bytes = 0;
  std::vector<pair_list> pairs(ranks);
  std::vector<communicator_list> comms(ranks);
  for (int rank = static_cast<int>(ranks) - 1; rank >= 0; --rank) {
    const auto r = static_cast<uint32_t>(rank);
    pair_list here = testdata::stencil_pairs(r, ranks);
    std::vector<int> in_group(group), self = {rank};
    for (uint32_t i = 0; i < group; ++i)
      in_group[i] = static_cast<int>(r / group * group + i);
    rank_sums sums;
    sums.add(1, nullptr, static_cast<int>(ranks), 20, 1000 + r % 7);
    sums.add(2, &in_group, static_cast<int>(group), 10, 50'000 + r % 13);
    sums.add(3, &column_members[r % columns], static_cast<int>(ranks / columns), 10,
             20'000 + r % 11);
    sums.add(4, &self, 1, 1, 10);
    for (const strata_comm_sum& s : sums.sums) {
      calls += s.calls;
      bytes += s.bytes;
    }
    communicator_list mine = sums.list(r, ranks);
    for (const int child : site_tree_place_of(rank, static_cast<int>(ranks)).children) {
      const auto c = static_cast<size_t>(child);
      pair_list carried_pairs;
      ASSERT_TRUE(read_pair_list(write_pair_list(pairs[c]), carried_pairs));
      combine_pairs(here, std::move(carried_pairs));
      communicator_list carried;
      ASSERT_TRUE(read_communicator_list(write_communicator_list(comms[c]), carried));
      combine_communicators(mine, std::move(carried));
      pairs[c] = {};
      comms[c] = {};
    }
    pairs[r] = std::move(here);
    comms[r] = std::move(mine);
  }
  record::job_record job;
  job.job.ranks = ranks;
  job.job.ranks_reported = ranks;
  const std::string without = record::to_json(job);
  job.communication = communication_of(pairs[0]);
  job.communication->collectives = collectives_of(comms[0]);
  const std::string with = record::to_json(job);
  EXPECT_LE(with.size() - without.size(), size_t{1} << 20);
  const record::collectives_section& section = *job.communication->collectives;
  ASSERT_EQ(section.communicators.size(), listed_communicators_limit);
  const record::communicator_collectives& world = section.communicators[0];
  EXPECT_EQ(world.members, "0-" + std::to_string(ranks - 1));
  EXPECT_EQ(world.members_reported, ranks);
  EXPECT_EQ(world.calls, uint64_t{20} * ranks);
  EXPECT_EQ(world.calls_min, 20u);
  EXPECT_EQ(world.bytes_per_member.min, 1000u);
  EXPECT_EQ(world.bytes_per_member.min_rank, 0u);
  EXPECT_EQ(world.bytes_per_member.max, 1006u);
  EXPECT_EQ(world.bytes_per_member.max_rank, 6u);
  EXPECT_TRUE(world.per_member.empty());
  uint64_t listed_calls = 0, listed_bytes = 0;
  bool some_per_member = false;
  for (const record::communicator_collectives& c : section.communicators) {
    listed_calls += c.calls;
    listed_bytes += c.bytes;
    some_per_member = some_per_member || !c.per_member.empty();
  }
  EXPECT_TRUE(some_per_member);
  ASSERT_TRUE(section.unlisted.has_value());
  EXPECT_EQ(listed_calls + section.unlisted->calls, calls);
  EXPECT_EQ(listed_bytes + section.unlisted->bytes, bytes);
  const record::parse_result back = record::parse_record(with);
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.record->communication, job.communication);
}
