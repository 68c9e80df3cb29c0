#include "profiler/counters/counters.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

// Counts operator new while `counting` is set: read() runs at every MPI call and must not
// allocate.
namespace {
thread_local bool counting = false;
size_t allocations = 0;
} // namespace

// g++ 12 sees the replaced operator new inlined and then warns that operator delete frees
// "new" memory with free(); the pair is consistent, both replaced here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t n) {
  if (counting) {
    ++allocations;
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

using namespace strata::counters;

namespace {

constexpr uint64_t ms = 1000000;

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t wall_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Spins until this thread has had `ns` of CPU, however busy the machine is.
void burn_cpu(uint64_t ns) {
  uint64_t t0 = thread_cpu_ns();
  volatile uint64_t x = 0;
  while (thread_cpu_ns() - t0 < ns) {
    for (int i = 0; i < 1000; ++i) {
      x = x + uint64_t(i);
    }
  }
}

size_t index_of(const counter_set& s, const std::string& name) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.name(i) == name) {
      return i;
    }
  }
  return s.size();
}

counter_set open_printing(const std::vector<std::string>& names,
                          std::vector<std::string>& problems) {
  auto s = counter_set::open(names, problems);
  for (const auto& p : problems) {
    std::printf("problem: %s\n", p.c_str());
  }
  return s;
}

bool has_line(const std::vector<std::string>& problems, const std::string& start) {
  for (const auto& p : problems) {
    if (p.rfind(start, 0) == 0) {
      return true;
    }
  }
  return false;
}

// Unprivileged under perf_event_paranoid 2, context switches (kernel-only) cannot be counted.
bool cs_forbidden(const std::vector<std::string>& problems) {
  return has_line(problems, "context-switches: kernel-mode event not permitted");
}

// On a machine without a PMU the only line for software events is PAPI's, said once; an
// unprivileged run adds lines naming perf_event_paranoid.
void expect_only_papi_line(const std::vector<std::string>& problems) {
  size_t papi = 0;
  for (const auto& p : problems) {
    papi += p.rfind("PAPI: ", 0) == 0;
    EXPECT_TRUE(p.rfind("PAPI: ", 0) == 0 || p.find("(perf_event_paranoid=") != p.npos) << p;
  }
  EXPECT_LE(papi, 1u);
}

} // namespace

TEST(EventList, SplitsOnCommasAndBlanks) {
  auto l = parse_event_list(" task-clock, page-faults  context-switches\t,PAPI_TOT_INS ");
  ASSERT_TRUE(l.ok()) << l.error;
  EXPECT_EQ(l.names, (std::vector<std::string>{"task-clock", "page-faults", "context-switches",
                                               "PAPI_TOT_INS"}));
  EXPECT_EQ(parse_event_list("perf::CYCLES:u").names, std::vector<std::string>{"perf::CYCLES:u"});
}

TEST(EventList, BlankIsEmpty) {
  for (const char* text : {"", "  ", "\t\n"}) {
    auto l = parse_event_list(text);
    EXPECT_TRUE(l.ok()) << l.error;
    EXPECT_TRUE(l.names.empty());
  }
}

TEST(EventList, EmptyNamesAndDuplicatesAreErrors) {
  EXPECT_EQ(parse_event_list("a,,b").error, "empty counter name in 'a,,b'");
  EXPECT_EQ(parse_event_list("a, ,b").error, "empty counter name in 'a, ,b'");
  EXPECT_EQ(parse_event_list("a,").error, "empty counter name in 'a,'");
  EXPECT_EQ(parse_event_list(",").error, "empty counter name in ','");
  EXPECT_EQ(parse_event_list("cycles,task-clock cycles").error,
            "counter 'cycles' listed twice in 'cycles,task-clock cycles'");
  EXPECT_EQ(parse_event_list("cycles,CYCLES").error,
            "counter 'CYCLES' listed twice in 'cycles,CYCLES'");
  EXPECT_TRUE(parse_event_list("a,,b").names.empty());
}

TEST(SplitAccumulator, OneReadPerBoundaryWithNesting) {
  split_accumulator acc(2);
  auto at = [](uint64_t a, uint64_t b) { return std::vector<uint64_t>{a, b}; };
  acc.start(at(100, 7).data());
  acc.enter_mpi(at(110, 8).data()); // application: 10, 1
  acc.enter_mpi(at(111, 9).data()); // nested (a collective calling MPI_Send): no boundary
  acc.leave_mpi(at(113, 9).data());
  EXPECT_EQ(acc.depth(), 1u);
  acc.leave_mpi(at(120, 12).data()); // MPI: 10, 4
  acc.enter_mpi(at(150, 12).data()); // application: 30, 0
  acc.leave_mpi(at(155, 20).data()); // MPI: 5, 8
  acc.finish(at(160, 21).data());    // application: 5, 1
  EXPECT_EQ(acc.outside_mpi(0), 45u);
  EXPECT_EQ(acc.outside_mpi(1), 2u);
  EXPECT_EQ(acc.in_mpi(0), 15u);
  EXPECT_EQ(acc.in_mpi(1), 12u);
  EXPECT_EQ(acc.in_mpi(0) + acc.outside_mpi(0), 160u - 100u);
}

TEST(SplitAccumulator, FinishGivesSubtotalsAndInsideMpiCountsAsMpi) {
  split_accumulator acc(1);
  uint64_t v = 0;
  acc.start(&v);
  v = 10;
  acc.finish(&v); // a subtotal (MPI_Pcontrol) ...
  EXPECT_EQ(acc.outside_mpi(0), 10u);
  v = 15;
  acc.enter_mpi(&v); // ... does not disturb the next boundary
  EXPECT_EQ(acc.outside_mpi(0), 15u);
  v = 40;
  acc.finish(&v); // finishing inside MPI_Finalize: MPI's
  EXPECT_EQ(acc.in_mpi(0), 25u);
  v = 41;
  acc.leave_mpi(&v);
  acc.leave_mpi(&v); // unmatched: ignored
  EXPECT_EQ(acc.depth(), 0u);
  EXPECT_EQ(acc.in_mpi(0), 26u);
  v = 30; // went backwards (scaled multiplexed value): adds nothing
  acc.enter_mpi(&v);
  EXPECT_EQ(acc.outside_mpi(0), 15u);
  acc.start(&v); // starts over
  EXPECT_EQ(acc.in_mpi(0) + acc.outside_mpi(0), 0u);
}

TEST(CounterSet, SoftwareEventsOpenAndAreMonotonic) {
  std::vector<std::string> problems;
  auto s = open_printing({"task-clock", "page-faults", "context-switches"}, problems);
  expect_only_papi_line(problems);
  ASSERT_EQ(s.size(), cs_forbidden(problems) ? 2u : 3u);
  EXPECT_EQ(s.name(0), "task-clock");
  EXPECT_EQ(s.name(1), "page-faults");
  EXPECT_STREQ(s.unit(0), "ns");
  EXPECT_STREQ(s.unit(1), "events");
  uint64_t a[3], b[3];
  ASSERT_TRUE(s.read(a));
  burn_cpu(2 * ms);
  usleep(1000);
  ASSERT_TRUE(s.read(b));
  EXPECT_GE(b[0] - a[0], 1 * ms);
  for (size_t i = 1; i < s.size(); ++i) {
    EXPECT_GE(b[i], a[i]);
    EXPECT_LT(b[i] - a[i], 10000u); // its own event's count, not the group leader's nanoseconds
  }
}

TEST(CounterSet, BusyLoopRaisesTaskClock) {
  std::vector<std::string> problems;
  auto s = counter_set::open({"task-clock"}, problems);
  ASSERT_EQ(s.size(), 1u);
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(s.read(&a));
  uint64_t w0 = wall_ns();
  burn_cpu(50 * ms);
  ASSERT_TRUE(s.read(&b));
  uint64_t wall = wall_ns() - w0;
  EXPECT_GE(b - a, 40 * ms);
  EXPECT_LE(b - a, wall + ms); // one thread's CPU time cannot exceed the wall time
}

TEST(CounterSet, TouchingPagesRaisesPageFaults) {
  std::vector<std::string> problems;
  auto s = counter_set::open({"page-faults", "minor-faults"}, problems);
  ASSERT_EQ(s.size(), 2u);
  const size_t pages = 512, page = size_t(sysconf(_SC_PAGESIZE));
  auto* mem = static_cast<char*>(
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  uint64_t a[2], b[2];
  ASSERT_TRUE(s.read(a));
  for (size_t i = 0; i < pages; ++i) {
    static_cast<volatile char*>(mem)[i * page] = 1;
  }
  ASSERT_TRUE(s.read(b));
  munmap(mem, pages * page);
  EXPECT_GE(b[0] - a[0], pages / 2);
  EXPECT_GE(b[1] - a[1], pages / 2);
}

TEST(CounterSet, SplitsApplicationFromMpi) {
  std::vector<std::string> problems;
  auto s = open_printing({"task-clock", "context-switches"}, problems);
  ASSERT_EQ(s.size(), cs_forbidden(problems) ? 1u : 2u);
  split_accumulator acc(s.size());
  uint64_t v[2], first[2];
  ASSERT_TRUE(s.read(first));
  acc.start(first);
  for (int round = 0; round < 3; ++round) {
    burn_cpu(10 * ms); // the application computes
    ASSERT_TRUE(s.read(v));
    acc.enter_mpi(v);
    for (int i = 0; i < 3; ++i) { // "MPI" waits in the kernel
      usleep(3000);
      (void)getppid();
    }
    ASSERT_TRUE(s.read(v));
    acc.leave_mpi(v);
  }
  ASSERT_TRUE(s.read(v));
  acc.finish(v);
  std::printf("task-clock ns: application %llu, MPI %llu\n", (unsigned long long)acc.outside_mpi(0),
              (unsigned long long)acc.in_mpi(0));
  EXPECT_GE(acc.outside_mpi(0), 27 * ms); // 30 ms burnt; the two clocks differ by microseconds
  EXPECT_GT(acc.outside_mpi(0), 5 * acc.in_mpi(0));
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(acc.outside_mpi(i) + acc.in_mpi(i), v[i] - first[i]);
  }
  if (s.size() == 2) { // each sleep switches away: 9 at least inside "MPI", few outside
    std::printf("context-switches: application %llu, MPI %llu\n",
                (unsigned long long)acc.outside_mpi(1), (unsigned long long)acc.in_mpi(1));
    EXPECT_GE(acc.in_mpi(1), 9u);
    EXPECT_LT(acc.outside_mpi(1), 1000u);
  }
}

TEST(CounterSet, MissingPmuIsOneLineAndTheRestCounts) {
  std::vector<std::string> problems;
  auto s = open_printing({"cycles", "task-clock"}, problems);
  size_t tc = index_of(s, "task-clock");
  ASSERT_LT(tc, s.size());
  uint64_t a[2], b[2];
  ASSERT_TRUE(s.read(a));
  burn_cpu(5 * ms);
  ASSERT_TRUE(s.read(b));
  EXPECT_GE(b[tc] - a[tc], 4 * ms);
  if (size_t cy = index_of(s, "cycles"); cy < s.size()) {
    EXPECT_GT(b[cy] - a[cy], 0u); // a machine with a PMU
    return;
  }
  EXPECT_EQ(s.size(), 1u);
  size_t about_cycles = 0, papi = 0;
  for (const auto& p : problems) {
    about_cycles += p.find("cycles") != std::string::npos;
    papi += p.rfind("PAPI: ", 0) == 0;
  }
  EXPECT_EQ(about_cycles, 1u);
  EXPECT_LE(papi, 1u);
  EXPECT_EQ(problems.size(), about_cycles + papi);
  EXPECT_EQ(problems.back().rfind("cycles: no hardware PMU on this machine (perf_event_open: ", 0),
            0u)
      << problems.back();
  EXPECT_NE(problems.back().find("); not counted"), std::string::npos);
}

TEST(CounterSet, UnknownNameIsNamedAndTheRestCounts) {
  std::vector<std::string> problems;
  auto s = open_printing({"xyz", "task-clock"}, problems);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.name(0), "task-clock");
  EXPECT_TRUE(has_line(problems, "xyz: unknown counter (known: cycles, instructions, "));
  EXPECT_NE(problems.back().find(", task-clock, "), std::string::npos) << problems.back();
}

TEST(CounterSet, RawPerfEventSkipsPapi) {
  std::vector<std::string> problems;
  auto s = counter_set::open({"perf:1:0x0"}, problems); // PERF_TYPE_SOFTWARE, cpu-clock
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(s.size(), 1u);
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(s.read(&a));
  burn_cpu(3 * ms);
  ASSERT_TRUE(s.read(&b));
  EXPECT_GE(b - a, 2 * ms);
  std::vector<std::string> bad;
  EXPECT_EQ(counter_set::open({"perf:1:zz"}, bad).size(), 0u);
  ASSERT_FALSE(bad.empty());
  EXPECT_EQ(bad.back().rfind("perf:1:zz: unknown counter", 0), 0u) << bad.back();
}

TEST(CounterSet, MovesAndReadsWithoutAllocating) {
  std::vector<std::string> problems;
  counter_set s;
  uint64_t v[3];
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.read(v));
  s = counter_set::open({"task-clock", "page-faults", "minor-faults"}, problems);
  counter_set t(std::move(s));
  EXPECT_EQ(s.size(), 0u); // NOLINT(bugprone-use-after-move): moved-from is empty by design
  ASSERT_EQ(t.size(), 3u);
  split_accumulator acc(t.size());
  ASSERT_TRUE(t.read(v));
  acc.start(v);
  counting = true;
  bool ok = true;
  for (int i = 0; i < 100; ++i) {
    ok = t.read(v) && ok;
    acc.enter_mpi(v);
    ok = t.read(v) && ok;
    acc.leave_mpi(v);
  }
  counting = false;
  EXPECT_TRUE(ok);
  EXPECT_EQ(allocations, 0u);
}
