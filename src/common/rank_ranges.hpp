// A set of ranks as text, "0-7,16": runs of consecutive ranks, ascending, each a rank or
// "first-last". One writer and one reader, for records and reports (a communicator's members).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::common {

struct rank_run {
  uint32_t first = 0, last = 0;
  bool operator==(const rank_run&) const = default;
  friend bool operator<(const rank_run& a, const rank_run& b) {
    return a.first != b.first ? a.first < b.first : a.last < b.last;
  }
};

// The runs of ascending, distinct ranks.
inline std::vector<rank_run> runs_of(std::span<const uint32_t> sorted_ranks) {
  std::vector<rank_run> runs;
  for (const uint32_t r : sorted_ranks) {
    if (!runs.empty() && runs.back().last + 1 == r)
      runs.back().last = r;
    else
      runs.push_back({r, r});
  }
  return runs;
}

inline uint64_t ranks_in(std::span<const rank_run> runs) {
  uint64_t n = 0;
  for (const rank_run& r : runs)
    n += uint64_t{r.last} - r.first + 1;
  return n;
}

inline std::string rank_ranges_text(std::span<const rank_run> runs) {
  std::string out;
  for (const rank_run& r : runs) {
    if (!out.empty())
      out += ',';
    out += std::to_string(r.first);
    if (r.last != r.first)
      out += '-' + std::to_string(r.last);
  }
  return out;
}

// The runs of a text rank_ranges_text wrote: ascending, disjoint, every rank below `ranks`;
// nullopt for anything else (adjacent runs are accepted as written).
inline std::optional<std::vector<rank_run>> parse_rank_ranges(std::string_view text,
                                                              uint64_t ranks) {
  std::vector<rank_run> runs;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  const auto number = [&](uint32_t& out) {
    const auto [next, ec] = std::from_chars(p, end, out);
    if (ec != std::errc() || next == p)
      return false;
    p = next;
    return true;
  };
  while (p != end) {
    rank_run run;
    if (!number(run.first))
      return std::nullopt;
    run.last = run.first;
    if (p != end && *p == '-') {
      ++p;
      if (!number(run.last) || run.last < run.first)
        return std::nullopt;
    }
    if (run.last >= ranks || (!runs.empty() && run.first <= runs.back().last))
      return std::nullopt;
    runs.push_back(run);
    if (p != end && *p++ != ',')
      return std::nullopt;
    if (p == end && text.back() == ',')
      return std::nullopt;
  }
  if (runs.empty())
    return std::nullopt;
  return runs;
}

} // namespace strata::common
