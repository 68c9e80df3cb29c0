#include "core/clock.hpp"

#include <strata/module.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace strata::core {

event_clock g_event_clock;

namespace {

struct clock_sample {
  int64_t tsc = 0;
  uint64_t ns = 0;
  int cpu = -1; // the kernel's CPU number (current_cpu); -1 when not known
};

clock_sample g_first;
clock_sample g_anchor;
uint64_t g_calibration_ns = 0;
const char* g_fallback_reason = "not calibrated yet";
char g_kernel_clocksource[32] = "unknown";

// Rates over shorter intervals are too coarse (a sample's jitter of ~30 ns is 15 ppm of 2 ms).
constexpr uint64_t min_calibration_ns = 2'000'000;

// A check passes when the clocks differ by at most this, or by this many parts per million of
// the time since the anchor, whichever is larger: two samples' jitter and CLOCK_MONOTONIC's
// own slewing by NTP (usually a few ppm) stay inside.
constexpr int64_t tolerance_ns = 1000;
constexpr double tolerance_ppm = 100.0;

void read_kernel_clocksource() {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr)
    return;
  char name[sizeof g_kernel_clocksource] = {};
  if (std::fgets(name, sizeof name, f) != nullptr) {
    name[std::strcspn(name, "\n")] = '\0';
    std::memcpy(g_kernel_clocksource, name, sizeof name);
  }
  std::fclose(f);
}

// The CPU this thread runs on, as the kernel numbers it; -1 when it does not say. Neither
// rdtscp's nor RDPID's auxiliary value, which is whatever is in TSC_AUX: some virtual machines
// leave it the same on every CPU or fill it with the host's numbers; nor sched_getcpu(), which
// glibc answers from TSC_AUX too (the vDSO's RDPID) where rseq is not registered, unless the
// system call is refused (a seccomp filter). A system call, made only by the calibration and
// the check.
int current_cpu() {
  unsigned cpu = 0;
  return syscall(SYS_getcpu, &cpu, nullptr, nullptr) == 0 ? static_cast<int>(cpu) : sched_getcpu();
}

#if defined(__x86_64__)
bool tsc_is_invariant() {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0)
    return false;
  return (edx & (1u << 8)) != 0;
}

// rdtsc kept in its place by lfence on both sides: earlier instructions have completed and
// later ones (clock_gettime's own reads) start after it. Not rdtscp: valgrind's CPUID says
// every CPU has it, while valgrind decodes it only where the host's CPUID does (SIGILL
// elsewhere), and its auxiliary value names no CPU for certain (current_cpu).
int64_t ordered_counter() {
  __builtin_ia32_lfence();
  const auto t = static_cast<int64_t>(__builtin_ia32_rdtsc());
  __builtin_ia32_lfence();
  return t;
}

// clock_gettime between two counter reads, taken at their midpoint; of 20 tries the narrowest
// pair read on one CPU (a first call can take microseconds, faulting in the vDSO's data, or be
// preempted), which brings the rate's error to parts per billion instead of 100 ppm. The CPU
// is asked before and after the bracket, outside it, so that it does not widen the pair.
clock_sample take_sample() {
  clock_sample best;
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 20; ++i) {
    const int cpu_before = current_cpu();
    const int64_t before = ordered_counter();
    const uint64_t ns = monotonic_ns();
    const int64_t after = ordered_counter();
    if (current_cpu() != cpu_before)
      continue; // moved between the readings: the pair may compare two CPUs' counters
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns, cpu_before};
    }
  }
  if (best_width == INT64_MAX) { // moved in every try: the last pair, CPU unknown
    best.tsc = ordered_counter();
    best.ns = monotonic_ns();
  }
  return best;
}

// The anchor's CPU may no longer be this thread's: a sample taken there, the thread's own
// CPUs restored after. False when the thread may not run there.
bool sample_on_cpu(int cpu, clock_sample& out) {
  cpu_set_t saved;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof saved, &saved) != 0)
    return false;
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  if (sched_setaffinity(0, sizeof only, &only) != 0)
    return false;
  out = take_sample();
  sched_setaffinity(0, sizeof saved, &saved);
  return out.cpu == cpu;
}

// A test's forced calibration error (STRATA_CLOCK_TEST_RATE_ERROR_PPM): the rate is scaled by
// 1 + ppm / 10^6 after it was measured, so that the check has something to catch.
double forced_rate_error_ppm() {
  const char* text = std::getenv("STRATA_CLOCK_TEST_RATE_ERROR_PPM");
  if (text == nullptr || *text == '\0')
    return 0;
  char* end = nullptr;
  const double ppm = std::strtod(text, &end);
  return *end == '\0' && std::isfinite(ppm) && ppm > -500000 && ppm < 500000 ? ppm : 0;
}
#endif

} // namespace

event_clock clock_between(int64_t first_tsc, uint64_t first_ns, int64_t last_tsc, uint64_t last_ns,
                          double rate_error_ppm) {
  event_clock c;
  const int64_t ticks = last_tsc - first_tsc;
  if (ticks <= 0 || last_ns <= first_ns)
    return c;
  c.ns_per_tick_q32 = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(last_ns - first_ns) << 32) / static_cast<uint64_t>(ticks));
  if (rate_error_ppm != 0)
    c.ns_per_tick_q32 = static_cast<uint64_t>(static_cast<double>(c.ns_per_tick_q32) *
                                              (1.0 + rate_error_ppm / 1e6));
  // The base a margin of ticks before the anchor, its time as far before (time_ns' unsigned
  // difference): about a second, far more than counters of two cores ever differ by. Every
  // reading moves by at most 1 ns of rounding; unsigned arithmetic wraps back if the anchor's
  // time is smaller than the margin.
  constexpr int64_t base_margin_ticks = int64_t{1} << 32;
  c.tsc_base = last_tsc - base_margin_ticks;
  c.ns_base =
      last_ns - static_cast<uint64_t>(
                    (static_cast<unsigned __int128>(base_margin_ticks) * c.ns_per_tick_q32) >> 32);
  c.use_tsc = true;
  return c;
}

int64_t event_ns_of(const event_clock& c, int64_t tsc) {
  const __int128 ticks = tsc - c.tsc_base;
  return static_cast<int64_t>(c.ns_base) +
         static_cast<int64_t>((ticks * static_cast<__int128>(c.ns_per_tick_q32)) >> 32);
}

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void clock_start_calibration() {
  read_kernel_clocksource();
#if defined(__x86_64__)
  g_first = take_sample();
#endif
}

void clock_finish_calibration() {
  g_anchor.ns = monotonic_ns();
  g_anchor.cpu = current_cpu();
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
  clock_sample last = take_sample();
  while (last.ns - g_first.ns < min_calibration_ns)
    last = take_sample();
  const event_clock c =
      clock_between(g_first.tsc, g_first.ns, last.tsc, last.ns, forced_rate_error_ppm());
  if (!c.use_tsc) {
    g_fallback_reason = "the time-stamp counter did not advance";
    return;
  }
  g_calibration_ns = last.ns - g_first.ns;
  g_event_clock = c;
  g_anchor = last;
  g_fallback_reason = "";
#else
  g_fallback_reason = "not an x86-64 machine";
#endif
}

const char* clock_fallback_reason() {
  return g_fallback_reason;
}

int clock_check(strata_clock_check* out) {
  if (out == nullptr || out->size < sizeof(strata_clock_check))
    return -1;
  strata_clock_check r{};
  r.size = out->size;
  const event_clock& c = g_event_clock;
  r.tsc = c.use_tsc ? 1 : 0;
  r.fallback_reason = g_fallback_reason;
  r.kernel_clocksource = g_kernel_clocksource;
  r.anchor_cpu = g_anchor.cpu;
  r.trusted = 1;
  r.correctable = 1;
  r.correction = 1.0;
#if defined(__x86_64__)
  if (c.use_tsc) {
    r.tsc_hz = std::ldexp(1e9, 32) / static_cast<double>(c.ns_per_tick_q32);
    r.calibration_s = static_cast<double>(g_calibration_ns) / 1e9;
    clock_sample now = take_sample();
    r.check_cpu = now.cpu;
    const auto over = static_cast<int64_t>(now.ns - g_anchor.ns);
    r.checked_over_s = static_cast<double>(over) / 1e9;
    r.offset_ns = event_ns_of(c, now.tsc) - static_cast<int64_t>(now.ns);
    r.drift_ppm = over > 0 ? static_cast<double>(r.offset_ns) / static_cast<double>(over) * 1e6 : 0;
    const double tolerance = std::fmax(static_cast<double>(tolerance_ns),
                                       static_cast<double>(over) * tolerance_ppm / 1e6);
    if (std::fabs(static_cast<double>(r.offset_ns)) > tolerance && over > 0) {
      r.trusted = 0;
      // The event clock ran (over + offset) while CLOCK_MONOTONIC ran `over`. On the anchor's
      // CPU that is the rate's error; on another, a step between the CPUs' counters would look
      // the same, so the anchor's CPU is asked again.
      clock_sample there = now;
      const bool same_cpu = now.cpu >= 0 && now.cpu == g_anchor.cpu;
      r.correctable = same_cpu || sample_on_cpu(g_anchor.cpu, there) ? 1 : 0;
      if (r.correctable != 0 && !same_cpu) {
        const auto over_there = static_cast<int64_t>(there.ns - g_anchor.ns);
        const int64_t offset_there = event_ns_of(c, there.tsc) - static_cast<int64_t>(there.ns);
        // A rate error grows with time: the anchor's CPU, read a little later, must show this
        // CPU's offset grown in proportion, within the tolerance, for one rate error on both.
        const double expected = static_cast<double>(r.offset_ns) * static_cast<double>(over_there) /
                                static_cast<double>(over);
        r.correctable =
            std::fabs(static_cast<double>(offset_there) - expected) <= tolerance ? 1 : 0;
      }
      r.correction = static_cast<double>(over) / static_cast<double>(over + r.offset_ns);
    }
    *out = r;
    return 0;
  }
#endif
  r.check_cpu = current_cpu();
  r.checked_over_s = static_cast<double>(monotonic_ns() - g_anchor.ns) / 1e9;
  *out = r;
  return 0;
}

} // namespace strata::core
