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

// Rank 0's merge, in the record's order.
std::vector<callsite_total> merged(std::string_view text) {
  ranks_summary all;
  all.add_text(text);
  return all.ordered_callsites();
}

TEST(CallSites, TheTextReadsBackAsTheHostAndSites) {
  const std::vector<callsite_total> mine = {site("MPI_Send", "a.c", 12, 500, 0),
                                            site("MPI_Recv", "b.f90", 7, 900, 40)};
  const std::string text = summary_text({"node1"}, mine);
  EXPECT_EQ(text, "node1\nMPI_Send\ta.c\t12\tmain\t1\t500\t8\t0\t1\n"
                  "MPI_Recv\tb.f90\t7\tmain\t1\t900\t8\t40\t1\n");
  ranks_summary all;
  all.add_text(text);
  EXPECT_EQ(all.hosts(), std::vector<std::string>{"node1"});
  const std::vector<callsite_total> back = all.ordered_callsites();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].function, "MPI_Recv"); // the longest wasted time first
  EXPECT_EQ(back[0].wasted_ns, 40u);
  EXPECT_EQ(back[1].file, "a.c");
  EXPECT_EQ(back[1].line, 12);
  EXPECT_EQ(back[1].caller, "main");
  EXPECT_EQ(back[1].ranks, 1);
  EXPECT_EQ(summary_text(all), text); // first seen first, as written
}

TEST(CallSites, TabsAndNewlinesInNamesCannotBreakALine) {
  const std::string text =
      summary_text({"n\t1"}, {{"MPI_Send", "odd\tdir/x\n.c", 3, "f\tg", 1, 2, 3, 4, 1}});
  EXPECT_EQ(text, "n 1\nMPI_Send\todd dir/x .c\t3\tf g\t1\t2\t3\t4\t1\n");
  const auto back = merged(text);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].file, "odd dir/x .c");
}

// Texts merge per source line, hosts once each, in the order first seen; ranks add up.
TEST(CallSites, RanksMergePerSourceLine) {
  ranks_summary all;
  for (int rank = 0; rank < 3; ++rank)
    all.add_text(
        summary_text({rank == 1 ? "node2" : "node1"},
                     {site("MPI_Send", "a.c", 12, 100, 10),
                      site("MPI_Send", "a.c", 13, 1000 + static_cast<uint64_t>(rank), 0)}));
  all.add_text(summary_text({"node3", "node1"}, {site("MPI_Recv", "a.c", 12, 5, 0)}));
  EXPECT_EQ(all.hosts(), (std::vector<std::string>{"node1", "node2", "node3"}));
  const std::vector<callsite_total> sites = all.ordered_callsites();
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(sites[0].line, 12); // wasted time first
  EXPECT_EQ(sites[0].function, "MPI_Send");
  EXPECT_EQ(sites[0].ranks, 3);
  EXPECT_EQ(sites[0].time_ns, 300u);
  EXPECT_EQ(sites[0].wasted_ns, 30u);
  EXPECT_EQ(sites[0].bytes, 24u);
  EXPECT_EQ(sites[1].line, 13); // then time
  EXPECT_EQ(sites[1].time_ns, 3003u);
  EXPECT_EQ(sites[2].function, "MPI_Recv"); // same line, another function
}

// A merged text (of a set of ranks) keeps its ranks count when read again.
TEST(CallSites, AMergedTextKeepsItsRanks) {
  ranks_summary two;
  two.add_text(summary_text({"a"}, {site("MPI_Send", "a.c", 1, 10, 0)}));
  two.add_text(summary_text({"b"}, {site("MPI_Send", "a.c", 1, 20, 0)}));
  ranks_summary three;
  three.add_text(summary_text(two));
  three.add_text(summary_text({"a"}, {site("MPI_Send", "a.c", 1, 30, 0)}));
  ASSERT_EQ(three.callsites().size(), 1u);
  EXPECT_EQ(three.callsites()[0].ranks, 3);
  EXPECT_EQ(three.callsites()[0].time_ns, 60u);
  EXPECT_EQ(three.hosts(), (std::vector<std::string>{"a", "b"}));
}

TEST(CallSites, MalformedLinesAreSkipped) {
  std::string padded = "node\n"
                       "MPI_Send\ta.c\t12\tmain\t1\t2\t3\t4\n"     // 8 fields
                       "MPI_Send\ta.c\tx\tmain\t1\t2\t3\t4\t1\n"   // line
                       "MPI_Send\ta.c\t12\tmain\t-1\t2\t3\t4\t1\n" // calls
                       "MPI_Send\ta.c\t12\tmain\t1\t2\t3\t4\t-1\n" // ranks
                       "\n"                                        // empty
                       "MPI_Bcast\tb.c\t9\tf\t1\t2\t3\t4\t1";      // no \n
  padded.resize(padded.size() + 16, '\0');                         // the padding of a fixed block
  const auto sites = merged(padded);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].function, "MPI_Bcast");
  EXPECT_TRUE(merged("").empty());
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
