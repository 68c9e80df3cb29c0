#include "tracer/request_table.hpp"

#include <gtest/gtest.h>

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

TEST(RequestTable, CollidingHandlesProbePastEachOtherAndTheirTombstones) {
  auto table = std::make_unique<request_table>();
  const std::vector<uint64_t> h = colliding_handles(4);
  for (uint32_t i = 0; i < 4; ++i)
    table->track(h[i], i + 1, 0, false);
  pending_request p;
  ASSERT_TRUE(table->take(h[1], p)); // leaves a tombstone between h[0] and h[2]
  EXPECT_EQ(p.id, 2u);
  ASSERT_TRUE(table->take(h[3], p)); // found past the tombstone
  EXPECT_EQ(p.id, 4u);
  table->track(h[1], 9, 0, true); // reuses the tombstone's slot
  ASSERT_TRUE(table->take(h[2], p));
  EXPECT_EQ(p.id, 3u);
  ASSERT_TRUE(table->take(h[1], p));
  EXPECT_EQ(p.id, 9u);
  ASSERT_TRUE(table->take(h[0], p));
  EXPECT_EQ(p.id, 1u);
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
}

} // namespace
} // namespace strata::trace
