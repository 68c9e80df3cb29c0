// Periods over job end times and the whole UTC days inside them. The store answers whole days
// from its per-day tables (site/rollups.hpp) and the partial days at a period's ends from the
// job rows; both backends compute days and weeks with the same integer arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace strata::site {

// Half-open [from, to) over end_time, in seconds since the epoch (UTC).
struct period {
  std::int64_t from = 0, to = 0;
};

inline constexpr std::int64_t day_seconds = 86400;

// Division rounding towards minus infinity (C++ rounds towards zero).
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0))
    --q;
  return q;
}

// 00:00 UTC of the day holding `t`: the key of the day tables.
inline std::int64_t day_of(std::int64_t t) {
  return floor_div(t, day_seconds) * day_seconds;
}

// Monday 00:00 UTC of the week holding `t`.
inline std::int64_t week_start(std::int64_t t) {
  constexpr std::int64_t week = 7 * day_seconds, monday = 4 * day_seconds; // 1970-01-05: Monday
  return floor_div(t - monday, week) * week + monday;
}

// A period as whole UTC days (read from the day tables) and the partial days at its ends
// (read from the job rows).
struct day_split {
  std::optional<period> days;
  std::vector<period> raw;
};

inline day_split split_days(const period& p) {
  day_split out;
  const std::int64_t first = -floor_div(-p.from, day_seconds) * day_seconds;
  const std::int64_t last = day_of(p.to);
  if (first < last) {
    out.days = period{first, last};
    if (p.from < first)
      out.raw.push_back({p.from, first});
    if (last < p.to)
      out.raw.push_back({last, p.to});
  } else if (p.from < p.to) {
    out.raw.push_back(p);
  }
  return out;
}

} // namespace strata::site
