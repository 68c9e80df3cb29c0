#include "profiler/call_sites.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace strata::profiler;

namespace {

callsite_total site(const std::string& function, const std::string& file, int line,
                    uint64_t time_ns, uint64_t wasted_ns) {
  return {function, file, line, "main", 1, time_ns, 8, wasted_ns, 1};
}

} // namespace

TEST(CallSites, TheLinesReadBackAsTheSites) {
  const std::vector<callsite_total> mine = {site("MPI_Send", "a.c", 12, 500, 0),
                                            site("MPI_Recv", "b.f90", 7, 900, 40)};
  const std::string lines = callsite_lines(mine);
  EXPECT_EQ(lines,
            "MPI_Send\ta.c\t12\tmain\t1\t500\t8\t0\nMPI_Recv\tb.f90\t7\tmain\t1\t900\t8\t40\n");
  const std::vector<callsite_total> back = merge_callsite_lines(lines);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].function, "MPI_Recv"); // the longest wasted time first
  EXPECT_EQ(back[0].wasted_ns, 40u);
  EXPECT_EQ(back[1].file, "a.c");
  EXPECT_EQ(back[1].line, 12);
  EXPECT_EQ(back[1].caller, "main");
  EXPECT_EQ(back[1].ranks, 1);
}

TEST(CallSites, TabsAndNewlinesInNamesCannotBreakALine) {
  const std::string lines =
      callsite_lines({{"MPI_Send", "odd\tdir/x\n.c", 3, "f\tg", 1, 2, 3, 4, 1}});
  EXPECT_EQ(lines, "MPI_Send\todd dir/x .c\t3\tf g\t1\t2\t3\t4\n");
  const auto back = merge_callsite_lines(lines);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].file, "odd dir/x .c");
}

// Rank 0 merges every rank's lines per source line; ranks count the ranks that made the call.
TEST(CallSites, RanksMergePerSourceLine) {
  std::string all;
  for (int rank = 0; rank < 3; ++rank)
    all += callsite_lines({site("MPI_Send", "a.c", 12, 100, 10),
                           site("MPI_Send", "a.c", 13, 1000 + static_cast<uint64_t>(rank), 0)});
  all += callsite_lines({site("MPI_Recv", "a.c", 12, 5, 0)}); // same line, another function
  const std::vector<callsite_total> merged = merge_callsite_lines(all);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].line, 12); // wasted time first
  EXPECT_EQ(merged[0].function, "MPI_Send");
  EXPECT_EQ(merged[0].ranks, 3);
  EXPECT_EQ(merged[0].time_ns, 300u);
  EXPECT_EQ(merged[0].wasted_ns, 30u);
  EXPECT_EQ(merged[0].bytes, 24u);
  EXPECT_EQ(merged[1].line, 13); // then time
  EXPECT_EQ(merged[1].time_ns, 3003u);
  EXPECT_EQ(merged[2].function, "MPI_Recv");
}

TEST(CallSites, MalformedLinesAreSkipped) {
  const auto merged = merge_callsite_lines("MPI_Send\ta.c\t12\tmain\t1\t2\t3\n"     // 7 fields
                                           "MPI_Send\ta.c\tx\tmain\t1\t2\t3\t4\n"   // line
                                           "MPI_Send\ta.c\t12\tmain\t-1\t2\t3\t4\n" // calls
                                           "\n"                                     // empty
                                           "MPI_Bcast\tb.c\t9\tf\t1\t2\t3\t4");     // no \n
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].function, "MPI_Bcast");
}

// The return address of the call below, in this test's own code.
__attribute__((noinline)) uint64_t return_address_here() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

TEST(CallSites, EachRankResolvesItsOwnReturnAddresses) {
  std::vector<callsite_slot> slots(8, callsite_slot{});
  const uint64_t address = return_address_here();
  slots[3] = {callsite_key(address, 1), 2, 70, 16, 5};
  slots[5] = {callsite_key(address, 9), 1, 1, 1, 0}; // a function id this rank does not know
  slots[6] = {callsite_key(address, 0), 0, 0, 0, 0}; // claimed, never counted
  const std::vector<callsite_total> sites =
      resolve_callsites(slots.data(), slots.size(), {"MPI_Send", "MPI_Recv"});
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].function, "MPI_Recv");
  EXPECT_EQ(sites[0].calls, 2u);
  EXPECT_EQ(sites[0].time_ns, 70u);
  EXPECT_EQ(sites[0].wasted_ns, 5u);
  EXPECT_EQ(sites[0].ranks, 1);
  EXPECT_NE(sites[0].caller.find("EachRankResolvesItsOwnReturnAddresses"), std::string::npos)
      << sites[0].caller;
}
