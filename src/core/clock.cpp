#include "core/clock.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace strata::core {

event_clock g_event_clock;

namespace {

struct clock_sample {
  int64_t tsc = 0;
  uint64_t ns = 0;
};

clock_sample g_first;
const char* g_fallback_reason = "not calibrated yet";

// Rates over shorter intervals are too coarse (a sample's jitter of ~30 ns is 15 ppm of 2 ms).
constexpr uint64_t min_calibration_ns = 2'000'000;

#if defined(__x86_64__)
// clock_gettime between two TSC reads, taken at their midpoint; of 20 tries the narrowest pair
// (a first call can take microseconds, faulting in the vDSO's data, or be preempted), which
// brings the rate's error to parts per billion instead of 100 ppm.
clock_sample take_sample() {
  clock_sample best;
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 20; ++i) {
    const auto before = static_cast<int64_t>(__rdtsc());
    const uint64_t ns = monotonic_ns();
    const auto after = static_cast<int64_t>(__rdtsc());
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

bool tsc_is_invariant() {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0)
    return false;
  return (edx & (1u << 8)) != 0;
}

// The kernel drops the TSC as its clock source when it finds it unstable (unsynchronised
// sockets, a hypervisor that migrates the guest badly); then we do not trust it either.
bool kernel_uses_tsc() {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr)
    return false;
  char name[32] = {};
  const bool ok = std::fgets(name, sizeof name, f) != nullptr;
  std::fclose(f);
  return ok && std::strncmp(name, "tsc", 3) == 0 && (name[3] == '\n' || name[3] == '\0');
}
#endif

} // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void clock_start_calibration() {
#if defined(__x86_64__)
  g_first = take_sample();
#endif
}

void clock_finish_calibration() {
#if defined(__x86_64__)
  const char* choice = std::getenv("STRATA_CLOCK");
  if (choice != nullptr && std::strcmp(choice, "monotonic") == 0) {
    g_fallback_reason = "STRATA_CLOCK=monotonic";
    return;
  }
  if (!tsc_is_invariant()) {
    g_fallback_reason = "the CPU's time-stamp counter is not invariant";
    return;
  }
  if (!kernel_uses_tsc()) {
    g_fallback_reason = "the kernel's clock source is not the TSC";
    return;
  }
  clock_sample last = take_sample();
  while (last.ns - g_first.ns < min_calibration_ns)
    last = take_sample();
  const int64_t ticks = last.tsc - g_first.tsc;
  if (ticks <= 0) {
    g_fallback_reason = "the time-stamp counter did not advance";
    return;
  }
  event_clock c;
  c.tsc_base = last.tsc;
  c.ns_base = last.ns;
  c.ns_per_tick_q32 = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(last.ns - g_first.ns) << 32) / static_cast<uint64_t>(ticks));
  c.use_tsc = true;
  g_event_clock = c;
  g_fallback_reason = "";
#else
  g_fallback_reason = "not an x86-64 machine";
#endif
}

const char* clock_fallback_reason() {
  return g_fallback_reason;
}

} // namespace strata::core
