#include "tracer/request_table.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace strata::trace {
namespace {

// Handles that land on the same slot, found by trying: the table must probe past each other.
std::vector<uint64_t> colliding_handles(size_t n) {
  std::vector<uint64_t> out;
  const auto slot = [](uint64_t h) {
    return ((h * 0x9E3779B97F4A7C15ull) >> 48) & (request_table::slots - 1);
  };
  for (uint64_t h = 0x1000; out.size() < n; h += 8)
    if (slot(h) == slot(0x1000))
      out.push_back(h);
  return out;
}

TEST(RequestTable, TakesWhatWasTrackedOnce) {
  auto table = std::make_unique<request_table>();
  table->track(0x7f0010, 5, 2, true);
  pending_request p;
  ASSERT_TRUE(table->take(0x7f0010, p));
  EXPECT_EQ(p.id, 5u);
  EXPECT_EQ(p.comm, 2u);
  EXPECT_TRUE(p.recv);
  EXPECT_FALSE(table->take(0x7f0010, p)); // completed: gone
  EXPECT_FALSE(table->take(0x7f0020, p)); // never tracked
  EXPECT_FALSE(table->take(0, p));        // MPI_REQUEST_NULL under MPICH
}

TEST(RequestTable, AHandleMpiReusedReplacesItsOldEntry) {
  auto table = std::make_unique<request_table>();
  table->track(42, 1, 0, false);
  table->track(42, 2, 3, true);
  pending_request p;
  ASSERT_TRUE(table->take(42, p));
  EXPECT_EQ(p.id, 2u);
  EXPECT_FALSE(table->take(42, p));
}

TEST(RequestTable, CollidingHandlesStayReachableAsOthersComplete) {
  auto table = std::make_unique<request_table>();
  const std::vector<uint64_t> h = colliding_handles(4);
  for (uint32_t i = 0; i < 4; ++i)
    table->track(h[i], i + 1, 0, false);
  pending_request p;
  ASSERT_TRUE(table->take(h[1], p)); // h[2] and h[3] move back
  EXPECT_EQ(p.id, 2u);
  ASSERT_TRUE(table->take(h[3], p));
  EXPECT_EQ(p.id, 4u);
  table->track(h[1], 9, 0, true);
  ASSERT_TRUE(table->take(h[2], p));
  EXPECT_EQ(p.id, 3u);
  ASSERT_TRUE(table->take(h[1], p));
  EXPECT_EQ(p.id, 9u);
  ASSERT_TRUE(table->take(h[0], p));
  EXPECT_EQ(p.id, 1u);
}

TEST(RequestTable, ManyCompletedRequestsDoNotFillTheTable) {
  auto table = std::make_unique<request_table>();
  pending_request p;
  // Four times as many distinct handles as slots, each completed before the next: every one is
  // tracked, and quickly (markers of removed entries, never cleared, made each insertion probe the
  // whole table once they had filled it: 11 s for this loop).
  for (uint64_t i = 1; i <= 4 * request_table::slots; ++i) {
    table->track(i * 64, static_cast<uint32_t>(i), 0, false);
    ASSERT_TRUE(table->take(i * 64, p)) << i;
    ASSERT_EQ(p.id, static_cast<uint32_t>(i));
  }
}

// Random Isend/Irecv and completions over handles crowded into a few slots, against a map.
TEST(RequestTable, AgreesWithAMapUnderRandomUse) {
  auto table = std::make_unique<request_table>();
  std::vector<uint64_t> handles = colliding_handles(40);
  for (uint64_t h = 0x9000; handles.size() < 200; h += 24)
    handles.push_back(h);
  std::map<uint64_t, uint32_t> model;
  std::mt19937 rng(7);
  pending_request p;
  for (uint32_t step = 1; step < 200000; ++step) {
    const uint64_t h = handles[rng() % handles.size()];
    if (rng() % 2 == 0) {
      table->track(h, step, 0, false);
      model[h] = step;
    } else {
      const auto it = model.find(h);
      ASSERT_EQ(table->take(h, p), it != model.end()) << step;
      if (it != model.end()) {
        ASSERT_EQ(p.id, it->second) << step;
        model.erase(it);
      }
    }
  }
}

// Entries whose probe sequences wrap around the end of the table.
TEST(RequestTable, RemovalMovesBackEntriesAcrossTheEndOfTheTable) {
  auto table = std::make_unique<request_table>();
  const auto slot = [](uint64_t h) {
    return ((h * 0x9E3779B97F4A7C15ull) >> 48) & (request_table::slots - 1);
  };
  std::vector<uint64_t> last;  // handles whose home is the last slot
  std::vector<uint64_t> first; // and the first
  for (uint64_t h = 8; last.size() < 3 || first.size() < 2; h += 8) {
    if (slot(h) == request_table::slots - 1 && last.size() < 3)
      last.push_back(h);
    else if (slot(h) == 0 && first.size() < 2)
      first.push_back(h);
  }
  // last[0] in the last slot, last[1] and last[2] wrapped to slots 0 and 1, first[0] in 2,
  // first[1] in 3.
  for (uint64_t h : last)
    table->track(h, static_cast<uint32_t>(h), 0, false);
  for (uint64_t h : first)
    table->track(h, static_cast<uint32_t>(h), 0, false);
  pending_request p;
  ASSERT_TRUE(table->take(last[0], p));
  ASSERT_TRUE(table->take(first[0], p));
  for (uint64_t h : {last[1], last[2], first[1]}) {
    ASSERT_TRUE(table->take(h, p)) << h;
    EXPECT_EQ(p.id, static_cast<uint32_t>(h));
  }
  EXPECT_FALSE(table->take(first[0], p));
}

TEST(RequestTable, WhenFullNewRequestsGoUntracked) {
  auto table = std::make_unique<request_table>();
  for (uint64_t i = 1; i <= request_table::slots; ++i)
    table->track(i * 16, static_cast<uint32_t>(i), 0, false);
  table->track(~uint64_t{0} - 1, 7, 0, false);
  pending_request p;
  EXPECT_FALSE(table->take(~uint64_t{0} - 1, p));
  ASSERT_TRUE(table->take(16, p)); // the ones in the table are still there
  EXPECT_EQ(p.id, 1u);
  for (uint64_t i = 2; i <= request_table::slots; ++i) {
    ASSERT_TRUE(table->take(i * 16, p)) << i;
    ASSERT_EQ(p.id, static_cast<uint32_t>(i));
  }
}

} // namespace
} // namespace strata::trace
