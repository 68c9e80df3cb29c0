// Cost of the profiler's per-boundary counter read (one read() of a perf_event group) next to
// clock_gettime, which every boundary pays anyway. Not built by CMake; from the repository root:
//   g++-12 -O2 -std=c++20 -Isrc -DSTRATA_HAVE_PAPI bench/counters_read.cpp
//     src/profiler/counters/counters.cpp -lbenchmark -lpapi -lpthread -o /tmp/counters_read
//   /tmp/counters_read
// (one command line; drop -DSTRATA_HAVE_PAPI and -lpapi to build without PAPI).
#include "profiler/counters/counters.hpp"

#include <benchmark/benchmark.h>

#include <ctime>

namespace {

using strata::counters::counter_set;
using strata::counters::split_accumulator;

const std::vector<std::string> software3 = {"task-clock", "page-faults", "context-switches"};

void BM_clock_gettime_monotonic(benchmark::State& state) {
  timespec ts{};
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_clock_gettime_monotonic);

// The syscall a task-clock counter would otherwise be replaced by.
void BM_clock_gettime_thread_cputime(benchmark::State& state) {
  timespec ts{};
  for (auto _ : state) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_clock_gettime_thread_cputime);

// Arg: how many of the three software events the group holds.
void BM_read_group(benchmark::State& state) {
  std::vector<std::string> problems;
  auto names = std::vector<std::string>(software3.begin(), software3.begin() + state.range(0));
  counter_set set = counter_set::open(names, problems);
  if (set.size() != names.size()) {
    state.SkipWithError(problems.empty() ? "not all events opened" : problems.back().c_str());
    return;
  }
  uint64_t v[3];
  for (auto _ : state) {
    benchmark::DoNotOptimize(set.read(v));
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_read_group)->Arg(1)->Arg(3);

// One MPI call as the profiler sees it: read + enter_mpi, read + leave_mpi (two boundaries).
void BM_mpi_call_boundaries(benchmark::State& state) {
  std::vector<std::string> problems;
  counter_set set = counter_set::open(software3, problems);
  split_accumulator acc(set.size());
  uint64_t v[3];
  set.read(v);
  acc.start(v);
  for (auto _ : state) {
    set.read(v);
    acc.enter_mpi(v);
    set.read(v);
    acc.leave_mpi(v);
  }
  benchmark::DoNotOptimize(acc.in_mpi(0));
}
BENCHMARK(BM_mpi_call_boundaries);

} // namespace

BENCHMARK_MAIN();
