#include "analyzer/recording_notes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace strata::analyze {
namespace {

constexpr std::string_view counted_prefix = "strata:counted_calls:";
constexpr size_t ranks_named = 4; // in the line; the others are counted

rank_drops& drops_of(std::vector<rank_drops>& drops, uint32_t rank) {
  for (rank_drops& d : drops)
    if (d.rank == rank)
      return d;
  drops.push_back({rank, 0, 0, 0});
  return drops.back();
}

} // namespace

bool recording_notes::note(uint32_t rank, const std::string& name, uint64_t value) {
  if (name == "strata:dropped_events")
    drops_of(drops, rank).events = value;
  else if (name == "strata:dropped_after_ns")
    drops_of(drops, rank).after = value;
  else if (name == "strata:dropped_before_ns")
    drops_of(drops, rank).before = value;
  else if (name.size() > counted_prefix.size() && name.starts_with(counted_prefix))
    counted.push_back({rank, name.substr(counted_prefix.size()), value});
  else
    return false;
  return true;
}

void recording_notes::finish() {
  std::erase_if(drops, [](const rank_drops& d) { return d.events == 0; });
  std::sort(drops.begin(), drops.end(),
            [](const rank_drops& a, const rank_drops& b) { return a.rank < b.rank; });
  std::sort(counted.begin(), counted.end(), [](const counted_calls& a, const counted_calls& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.routine < b.routine;
  });
}

uint64_t recording_notes::dropped() const {
  uint64_t total = 0;
  for (const rank_drops& d : drops)
    total += d.events;
  return total;
}

std::string truncation_line(const recording_notes& notes, uint64_t offset, uint64_t resolution) {
  if (notes.drops.empty())
    return {};
  auto seconds = [&](uint64_t t) {
    return static_cast<double>(t > offset ? t - offset : 0) /
           static_cast<double>(resolution == 0 ? 1 : resolution);
  };
  std::string ranks;
  for (size_t i = 0; i < notes.drops.size() && i < ranks_named; ++i) {
    const rank_drops& d = notes.drops[i];
    ranks += fmt::format("{}rank {}: {}", i == 0 ? "" : "; ", d.rank, d.events);
    if (d.after != 0)
      ranks += fmt::format(" after {:.3f} s", seconds(d.after));
    else if (d.before != 0)
      ranks += fmt::format(" before {:.3f} s", seconds(d.before));
  }
  if (notes.drops.size() > ranks_named)
    ranks += fmt::format("; {} more ranks", notes.drops.size() - ranks_named);
  return fmt::format("the trace is truncated: {} events were dropped at the tracer's size limit "
                     "({}); what they held is missing here",
                     notes.dropped(), ranks);
}

} // namespace strata::analyze
