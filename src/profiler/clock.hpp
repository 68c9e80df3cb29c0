// The profiler's own clock readings (not the call path's, whose times come in the events).
#pragma once

#include <cstdint>
#include <ctime>

namespace strata::profiler {

inline uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// clock_gettime is async-signal-safe: the signal handlers use this too.
inline int64_t unix_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace strata::profiler
