// The call path without MPI: events as the core delivers them, counted into slots the way the
// profile module counts them, with plain adds and with relaxed atomics.
#include "profiler/counting.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

using namespace strata::profiler;

namespace {

constexpr int send = 0, bcast = 1, test = 2;

// A rank's counting state in memory, as before its rank file exists.
struct rank_in_memory {
  std::vector<routine_slot> slots = std::vector<routine_slot>(3);
  rank_header header{};
  std::vector<uint8_t> traits = {routine_trait::with_peer, routine_trait::collective,
                                 routine_trait::sampled_poll};
  std::vector<poll_figures> polls = std::vector<poll_figures>(3);
  std::vector<callsite_slot> sites;
  call_counting counting;

  explicit rank_in_memory(bool threaded, bool with_callsites = false) {
    for (routine_slot& s : slots)
      s.min_ns = UINT64_MAX;
    counting.slots = slots.data();
    counting.header = &header;
    counting.traits = traits.data();
    counting.polls = polls.data();
    counting.threaded = threaded;
    if (with_callsites) {
      sites.assign(callsite_table::capacity, callsite_slot{});
      counting.callsites.slots = sites.data();
    }
  }
};

strata_event event(int function, uint64_t enter, uint64_t exit) {
  strata_event ev{};
  ev.function = function;
  ev.t_enter_ns = enter;
  ev.t_exit_ns = exit;
  ev.peer = STRATA_NO_RANK;
  ev.bytes_received = -1; // unknown
  return ev;
}

// `threads` threads each make `calls` MPI_Bcast on 4 ranks at once; thread t's calls take
// t + 1 ns, and with `distinct_sites` each thread calls from a call site of its own.
void bcasts_from_threads(rank_in_memory& rank, int threads, int calls, bool distinct_sites) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&rank, t, calls, distinct_sites] {
      strata_event ev = event(bcast, 0, 0);
      ev.comm_size = 4;
      if (distinct_sites)
        ev.call_site = reinterpret_cast<const void*>(uintptr_t{0x4000} + static_cast<uintptr_t>(t));
      for (int i = 0; i < calls; ++i) {
        ev.t_enter_ns = static_cast<uint64_t>(i);
        ev.t_exit_ns = static_cast<uint64_t>(i) + 1 + static_cast<uint64_t>(t);
        count_call(rank.counting, ev);
      }
    });
  for (std::thread& w : workers)
    w.join();
}

std::vector<strata_event> some_calls() {
  std::vector<strata_event> calls;
  strata_event s = event(send, 100, 350);
  s.peer = 1;
  s.count = 8;
  s.bytes_sent = 64;
  calls.push_back(s);
  s.t_exit_ns = 1100; // 1000 ns
  calls.push_back(s);
  strata_event b = event(bcast, 2000, 2040);
  b.comm_size = 6;
  b.bytes_received = 4096;
  calls.push_back(b);
  strata_event t = event(test, 3000, 3010);
  t.bytes_received = 16;
  calls.push_back(t);
  calls.push_back(event(test, 4000, 4000 + max_sample_ns + 1)); // descheduled, most likely
  return calls;
}

} // namespace

TEST(Counting, ATimedCallFillsItsRoutinesSlot) {
  rank_in_memory rank(false);
  for (const strata_event& ev : some_calls())
    count_call(rank.counting, ev);
  const routine_slot& s = rank.slots[send];
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.time_ns, 250u + 1000u);
  EXPECT_EQ(s.min_ns, 250u);
  EXPECT_EQ(s.max_ns, 1000u);
  EXPECT_EQ(s.count_sum, 16u);
  EXPECT_EQ(s.bytes_sent, 128u);
  EXPECT_EQ(s.bytes_received, 0u);          // -1: unknown, not a huge count
  EXPECT_EQ(s.size_hist[size_bin(64)], 2u); // point to point: a message size
  EXPECT_EQ(s.comm_hist[0] + s.comm_hist[1] + s.comm_hist[2], 0u);
  const routine_slot& b = rank.slots[bcast];
  EXPECT_EQ(b.bytes_received, 4096u);
  EXPECT_EQ(b.size_hist[size_bin(4096)], 1u); // a collective: what arrived
  EXPECT_EQ(b.comm_hist[comm_bin(6)], 1u);
  EXPECT_EQ(rank.slots[test].size_hist[size_bin(16)], 0u); // neither: no size histogram
  EXPECT_EQ(rank.header.last_mono_ns, 4000 + max_sample_ns + 1);
  // The timed polls of a sampled routine: all of them, and the short ones for the mean.
  const poll_figures& p = rank.polls[test];
  EXPECT_EQ(p.timed_polls, 2u);
  EXPECT_EQ(p.timed_poll_bytes, 16u);
  EXPECT_EQ(p.sample_calls, 1u);
  EXPECT_EQ(p.sample_ns, 10u);
  EXPECT_EQ(rank.polls[send].timed_polls, 0u); // not a sampled poll
}

TEST(Counting, PlainAndAtomicAddsGiveTheSameFigures) {
  rank_in_memory plain(false, true);
  rank_in_memory atomic(true, true);
  for (const strata_event& ev : some_calls()) {
    count_call(plain.counting, ev);
    count_call(atomic.counting, ev);
  }
  for (size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(std::memcmp(&plain.slots[f], &atomic.slots[f], sizeof(routine_slot)), 0) << f;
    EXPECT_EQ(plain.polls[f].sample_ns, atomic.polls[f].sample_ns) << f;
    EXPECT_EQ(plain.polls[f].timed_poll_bytes, atomic.polls[f].timed_poll_bytes) << f;
  }
  EXPECT_EQ(plain.header.last_mono_ns, atomic.header.last_mono_ns);
  EXPECT_EQ(std::memcmp(plain.sites.data(), atomic.sites.data(),
                        plain.sites.size() * sizeof(callsite_slot)),
            0);
}

// MPI_THREAD_MULTIPLE: threads count into the same slots at once, and no call is lost.
TEST(Counting, ThreadsLoseNoCall) {
  rank_in_memory rank(true, true);
  constexpr int threads = 4, calls = 20000;
  bcasts_from_threads(rank, threads, calls, true);
  const routine_slot& b = rank.slots[bcast];
  EXPECT_EQ(b.calls, uint64_t{threads} * calls);
  EXPECT_EQ(b.min_ns, 1u);
  EXPECT_EQ(b.max_ns, uint64_t{threads});
  EXPECT_EQ(b.comm_hist[comm_bin(4)], uint64_t{threads} * calls);
  EXPECT_EQ(rank.header.last_mono_ns, uint64_t{calls} - 1 + threads);
  uint64_t site_calls = 0;
  int used = 0;
  for (const callsite_slot& s : rank.sites) {
    site_calls += s.calls;
    used += s.key != 0 ? 1 : 0;
  }
  EXPECT_EQ(site_calls, uint64_t{threads} * calls);
  EXPECT_EQ(used, threads); // one slot per (function, call site)
  EXPECT_EQ(rank.header.callsites_dropped, 0u);
}

// Under MPI_THREAD_MULTIPLE the one thread that calls MPI counts with plain adds; the first
// call of a second thread hands every thread over to atomic adds. The hand-over happens while
// the first thread keeps counting; repeated so that it falls in every part of its calls.
TEST(Counting, TheSoleCounterHandsOverWithoutLosingACall) {
  for (int round = 0; round < 20; ++round) {
    rank_in_memory rank(true, true);
    sole_counter sole;
    if (!sole.start())
      GTEST_SKIP() << "membarrier(2) refused here: every thread counts with atomic adds";
    rank.counting.sole = &sole;
    constexpr int alone = 1000, calls = 20000, others = 2;
    strata_event ev = event(bcast, 0, 1);
    ev.comm_size = 4;
    ev.call_site = reinterpret_cast<const void*>(uintptr_t{0x4000});
    for (int i = 0; i < alone; ++i)
      count_call(rank.counting, ev);
    EXPECT_FALSE(sole.shared());
    std::vector<uint64_t> uncharged(3);
    std::atomic<bool> go{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < others; ++t)
      workers.emplace_back([&rank, &go, ev] {
        while (!go.load())
          std::this_thread::yield();
        for (int i = 0; i < calls; ++i)
          count_call(rank.counting, ev);
      });
    go = true;
    for (int i = 0; i < calls; ++i) {
      count_call(rank.counting, ev);
      strata_event poll = event(test, 0, 0);
      poll.bytes_received = 3;
      count_completed_untimed_poll(rank.counting, uncharged.data(), poll);
    }
    for (std::thread& w : workers)
      w.join();
    EXPECT_TRUE(sole.shared());
    const uint64_t expected = alone + uint64_t{calls} * (others + 1);
    EXPECT_EQ(rank.slots[bcast].calls, expected);
    EXPECT_EQ(rank.slots[bcast].time_ns, expected);
    EXPECT_EQ(rank.slots[bcast].comm_hist[comm_bin(4)], expected);
    EXPECT_EQ(rank.slots[test].bytes_received, uint64_t{3} * calls);
    EXPECT_EQ(uncharged[test], uint64_t{calls});
    uint64_t site_calls = 0;
    for (const callsite_slot& s : rank.sites)
      site_calls += s.calls;
    EXPECT_EQ(site_calls, expected);
  }
}

// Threads that call MPI beside another count into arrays of their own with plain adds: a
// thread past the arrays counts into the shared slots with atomics, and the sum is what a
// reader sees. The first thread is the sole counter until the others come.
TEST(Counting, ThreadsWithArraysOfTheirOwnLoseNoCall) {
  rank_in_memory rank(true);
  sole_counter sole;
  const bool with_sole = sole.start();
  if (with_sole)
    rank.counting.sole = &sole;
  constexpr uint32_t arrays = 2;
  constexpr int threads = 4, calls = 20000;
  std::vector<routine_slot> own(arrays * rank.slots.size());
  std::atomic<uint32_t> claimed{0};
  rank.counting.thread_arrays = {own.data(), arrays, static_cast<uint32_t>(rank.slots.size()),
                                 &claimed};
  bcasts_from_threads(rank, threads, calls, false);
  EXPECT_GE(claimed.load(), arrays); // the arrays were handed out, and no more than there are
  const std::vector<routine_slot> sum =
      merged_slots(rank.slots.data(), rank.slots.size(), rank.counting.thread_arrays);
  const routine_slot& b = sum[bcast];
  EXPECT_EQ(b.calls, uint64_t{threads} * calls);
  EXPECT_LT(rank.slots[bcast].calls, b.calls); // some were counted in the threads' own arrays
  EXPECT_EQ(b.time_ns, uint64_t{calls} * (1 + 2 + 3 + 4));
  EXPECT_EQ(b.min_ns, 1u);
  EXPECT_EQ(b.max_ns, uint64_t{threads});
  EXPECT_EQ(b.comm_hist[comm_bin(4)], uint64_t{threads} * calls);
  EXPECT_EQ(sum[send].calls, 0u);
  EXPECT_EQ(sum[send].min_ns, UINT64_MAX); // a routine nobody called stays empty
  // The latest exit moves on in steps of latest_exit_grain_ns from the threads' own arrays.
  EXPECT_GT(rank.header.last_mono_ns, 0u);
  clear_thread_slots(rank.counting.thread_arrays);
  EXPECT_EQ(
      merged_slots(rank.slots.data(), rank.slots.size(), rank.counting.thread_arrays)[bcast].calls,
      rank.slots[bcast].calls);
}

TEST(Counting, CallSitesAreKeyedByFunctionAndReturnAddress) {
  rank_in_memory rank(false, true);
  strata_event ev = event(send, 10, 30);
  ev.peer = 1;
  ev.bytes_sent = 5;
  ev.call_site = reinterpret_cast<const void*>(uintptr_t{0x401234});
  count_call(rank.counting, ev);
  count_call(rank.counting, ev);
  ev.function = bcast; // the same line, another function: another slot
  count_call(rank.counting, ev);
  const uint64_t send_key = callsite_key(0x401234, send);
  const callsite_slot* found = nullptr;
  int used = 0;
  for (const callsite_slot& s : rank.sites) {
    used += s.key != 0 ? 1 : 0;
    if (s.key == send_key)
      found = &s;
  }
  EXPECT_EQ(used, 2);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->calls, 2u);
  EXPECT_EQ(found->time_ns, 40u);
  EXPECT_EQ(found->bytes, 10u);
  EXPECT_EQ(found->wasted_ns, 0u); // no model
  EXPECT_EQ(callsite_function(send_key), send);
  EXPECT_EQ(callsite_address(send_key), 0x401234u);
}

// A full neighbourhood drops the call rather than slowing it down.
TEST(Counting, AFullCallSiteTableDropsTheCall) {
  rank_in_memory rank(false, true);
  for (callsite_slot& s : rank.sites)
    s.key = 1; // every slot claimed by some other site
  strata_event ev = event(send, 0, 1);
  ev.call_site = reinterpret_cast<const void*>(uintptr_t{0x1000});
  count_call(rank.counting, ev);
  count_call(rank.counting, ev);
  EXPECT_EQ(rank.header.callsites_dropped, 2u);
  EXPECT_EQ(rank.slots[send].calls, 2u); // the routine's figures are kept
}

TEST(Counting, UntimedPollsThatCompletedSomethingBringTheirBytes) {
  for (const bool threaded : {false, true}) {
    rank_in_memory rank(threaded);
    std::vector<uint64_t> uncharged(3, 0);
    strata_event ev = event(test, 0, 0);
    ev.bytes_received = 48;
    count_completed_untimed_poll(rank.counting, uncharged.data(), ev);
    ev.bytes_received = -1;
    count_completed_untimed_poll(rank.counting, uncharged.data(), ev);
    EXPECT_EQ(uncharged[test], 2u);
    EXPECT_EQ(rank.slots[test].bytes_received, 48u);
    EXPECT_EQ(rank.slots[test].calls, 0u); // charged later (poll_charging.hpp)
  }
}

TEST(Counting, CalibrationTimesTheCallPathOnScratchSlots) {
  const std::vector<uint8_t> traits = {0, routine_trait::collective,
                                       routine_trait::sampled_poll | routine_trait::lean_poll};
  const uint64_t plain = calibrate_call_cost(traits, false);
  const uint64_t with_sites = calibrate_call_cost(traits, true);
  // Two clock readings and a count: more than nothing, far less than a microsecond.
  EXPECT_GT(plain, 0u);
  EXPECT_LT(plain, 100'000u);
  EXPECT_GT(with_sites, 0u);
  // The core's sum into a lent slot, timed the same way.
  const uint64_t core_sum = calibrate_core_sum_cost(traits);
  EXPECT_GT(core_sum, 0u);
  EXPECT_LT(core_sum, 100'000u);
}
