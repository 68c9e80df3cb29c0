// The event clock: CLOCK_MONOTONIC nanoseconds for every event and for strata_host::now_ns.
//
// Two clock reads per wrapped call were most of a profiled call's cost (clock_gettime through
// the vDSO: about 22 ns each here, a bare rdtsc about 10 ns). Where the CPU says its
// time-stamp counter is invariant (CPUID 0x80000007 EDX bit 8: constant rate, running in every
// power state), the clock reads the TSC and scales it with a rate measured against
// CLOCK_MONOTONIC over the long interval from the library's load to the return of MPI_Init,
// anchored there, so both clocks agree to a few parts per million. That holds also where the
// kernel keeps time with another source (kvm-clock in most virtual machines): the kernel's
// choice says nothing about the counter's rate, and clock_check() (at finalize and at
// subtotals) measures what the readings are worth instead of trusting either. Until MPI_Init
// returns, on other hardware, or with STRATA_CLOCK=monotonic, it is clock_gettime.
//
// rdtsc, not rdtscp, on the call path: a call's two readings bracket MPI's own work, and
// rdtscp's wait for earlier instructions adds cost without making a call's time more exact.
// The calibration and the check fence rdtsc with lfence and ask the kernel for the CPU (the
// getcpu system call): rdtscp's auxiliary value does not name it on every virtual machine,
// and valgrind cannot run rdtscp on every x86-64 (clock.cpp).
#pragma once

#include <cstdint>

struct strata_clock_check;

namespace strata::core {

struct event_clock {
  bool use_tsc = false;
  int64_t tsc_base = 0;
  uint64_t ns_base = 0;
  uint64_t ns_per_tick_q32 = 0; // nanoseconds per tick, fixed point with 32 fraction bits
};
extern event_clock g_event_clock __attribute__((visibility("hidden")));

uint64_t monotonic_ns();

// The clock's readings, raw and scaled to CLOCK_MONOTONIC nanoseconds: now_ns below takes one;
// a call the core sums into a lent slot (dispatch.hpp, count_timed_body) takes two, with the
// clock chosen once before the call rather than at each reading: the entry is read raw, and
// only the duration and the exit time are scaled. The choice cannot change while the
// core sums: the TSC is taken when MPI_Init returns, before the core asks for slots
// (lifecycle.cpp). A duration scaled from the ticks between the readings may differ by 1 ns
// from the difference of the two readings scaled apart.
struct monotonic_readings {
  static uint64_t raw() { return monotonic_ns(); }
  static uint64_t duration_ns(uint64_t enter, uint64_t exit) { return exit - enter; }
  static uint64_t time_ns(uint64_t raw) { return raw; }
  static uint64_t raw_per_ms() { return 1'000'000; }
};
#if defined(__x86_64__)
struct tsc_readings {
  static uint64_t raw() { return __builtin_ia32_rdtsc(); }
  static uint64_t scaled(uint64_t ticks) {
    return static_cast<uint64_t>(
        (static_cast<unsigned __int128>(ticks) * g_event_clock.ns_per_tick_q32) >> 32);
  }
  static uint64_t duration_ns(uint64_t enter, uint64_t exit) { return scaled(exit - enter); }
  // Unsigned (one multiply, where a signed one took three more instructions): tsc_base lies
  // a margin before the anchor (clock_finish_calibration), so a thread that reads a counter
  // a few ticks behind the anchor's on another core still has a positive difference.
  static uint64_t time_ns(uint64_t raw) {
    return g_event_clock.ns_base + scaled(raw - static_cast<uint64_t>(g_event_clock.tsc_base));
  }
  static uint64_t raw_per_ms() {
    return (uint64_t{1'000'000} << 32) / g_event_clock.ns_per_tick_q32;
  }
};
inline bool tsc_in_use() {
  return __builtin_expect(g_event_clock.use_tsc, true);
}
#else
using tsc_readings = monotonic_readings;
inline bool tsc_in_use() {
  return false;
}
#endif

inline uint64_t now_ns() {
  if (tsc_in_use())
    return tsc_readings::time_ns(tsc_readings::raw());
  return monotonic_ns();
}

// The TSC scaled by the rate between two readings of both clocks (the calibration's first
// sample and its last, the anchor), the base a margin before the anchor; rate_error_ppm scales
// the rate (a test's forced error). use_tsc false when the counter or the clock did not advance.
event_clock clock_between(int64_t first_tsc, uint64_t first_ns, int64_t last_tsc, uint64_t last_ns,
                          double rate_error_ppm = 0);
// A counter reading in CLOCK_MONOTONIC nanoseconds by clock `c`, signed: the check's reading,
// which may lie before the base (tsc_readings::time_ns is the call path's, unsigned).
int64_t event_ns_of(const event_clock& c, int64_t tsc);

// At load: the first sample of the rate measurement.
void clock_start_calibration();
// After MPI_Init: the second sample; switches to the TSC when it is usable (see above).
void clock_finish_calibration();
// Why the TSC is not used ("" when it is), for `strata` diagnostics and tests.
const char* clock_fallback_reason();
// Both clocks read again and compared (strata_host::check_clock, module.h).
int clock_check(strata_clock_check* out);

} // namespace strata::core
