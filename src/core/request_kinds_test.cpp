// The table of the application's requests' kinds (request_kinds.hpp): a handle's kind is that of
// its latest maker, handles that share a home slot are told apart, and a full table leaves new
// receives out instead of filling up. Handles are made-up bits, as the MPIs' handles are to it.
#include "core/request_kinds.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace strata::decode {

// The core's mark_receive_request says once that the table is full (completions.cpp, which
// needs MPI); here it counts the keys left out.
namespace {
size_t left_out = 0;
} // namespace

void mark_receive_request(uint64_t bits) {
  if (!add_receive_key(bits))
    ++left_out;
}

namespace {

// What a call that made a request does (completions.hpp, note_request_made).
void note_request_kind(uint64_t bits, bool receive) {
  STRATA_NOTE_REQUEST_KIND(bits, receive);
}

size_t keys_in_table() {
  size_t keys = 0;
  for (const std::atomic<uint64_t>& slot : request_kinds)
    keys += slot.load() != 0 ? 1 : 0;
  return keys;
}

// A handle other than `bits` whose probe starts at the same slot.
uint64_t same_home_as(uint64_t bits, uint64_t from) {
  for (uint64_t other = from;; ++other)
    if (other != bits && request_kind_home(other) == request_kind_home(bits))
      return other;
}

// Each test uses handles of its own: the table is the process's.
TEST(RequestKinds, AHandleNoCallMadeIsNoReceive) {
  EXPECT_FALSE(made_by_receive(0x7f00'0000'1000));
}

TEST(RequestKinds, TheLatestMakerSaysTheKind) {
  const uint64_t request = 0x7f00'0000'2000; // an Open MPI handle: a pointer's bits
  note_request_kind(request, true);          // MPI_Irecv
  EXPECT_TRUE(made_by_receive(request));
  note_request_kind(request, false); // reused by MPI_Isend
  EXPECT_FALSE(made_by_receive(request));
  note_request_kind(request, true); // and by MPI_Irecv again
  EXPECT_TRUE(made_by_receive(request));
}

TEST(RequestKinds, OnlyReceivesTakeSlots) {
  const size_t before = keys_in_table();
  note_request_kind(0x7f00'0000'3000, false); // a send's request, never a receive's
  EXPECT_EQ(keys_in_table(), before);
  EXPECT_FALSE(made_by_receive(0x7f00'0000'3000));
  note_request_kind(0x2c00'0001, true); // an MPICH handle: an int
  note_request_kind(0x2c00'0001, true); // reused by another receive: the same slot
  EXPECT_EQ(keys_in_table(), before + 1);
  note_request_kind(0x2c00'0001, false); // ... and by a send: the slot stays, its kind changes
  EXPECT_EQ(keys_in_table(), before + 1);
  EXPECT_FALSE(made_by_receive(0x2c00'0001));
}

TEST(RequestKinds, HandlesSharingAHomeSlot) {
  const uint64_t first = 0x7f00'0000'4000;
  const uint64_t second = same_home_as(first, 0x7f00'1000'0000);
  const uint64_t third = same_home_as(first, second + 1);
  note_request_kind(first, true);
  note_request_kind(second, true);
  EXPECT_TRUE(made_by_receive(first));
  EXPECT_TRUE(made_by_receive(second));
  EXPECT_FALSE(made_by_receive(third));
  note_request_kind(first, false);
  EXPECT_FALSE(made_by_receive(first));
  EXPECT_TRUE(made_by_receive(second));
}

// Last in this file: the table stays full for the tests after it in the same process.
TEST(RequestKinds, AFullTableLeavesNewReceivesOut) {
  left_out = 0;
  const uint64_t kept = 0x7f00'0000'5000;
  note_request_kind(kept, true);
  uint64_t next = uint64_t{1} << 40;
  // Bounded below a full table, so that a table without its limit fails here instead of hanging.
  for (size_t tries = 0; left_out == 0 && tries < request_kind_slots / 8 * 7; ++tries)
    note_request_kind(next++, true);
  ASSERT_EQ(left_out, 1U);
  const uint64_t refused = next - 1;
  EXPECT_EQ(keys_in_table(), request_kind_most_keys);
  EXPECT_FALSE(made_by_receive(refused));
  EXPECT_TRUE(made_by_receive(next - 2));
  // A quarter of the slots stays empty, so a probe for an unknown handle still ends.
  EXPECT_FALSE(made_by_receive(0x7f00'0000'6000));
  // The handles in the table still change kind.
  note_request_kind(kept, false);
  EXPECT_FALSE(made_by_receive(kept));
  note_request_kind(kept, true);
  EXPECT_TRUE(made_by_receive(kept));
}

} // namespace
} // namespace strata::decode
