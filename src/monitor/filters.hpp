// The built-in filters' data, exposed for tests and for the one-process simulation.
#pragma once

#include "monitor/filter.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace strata::overlay {

// Summary statistics of one metric across ranks: n ranks, sum, sum of squares, min, max.
struct metric_stats {
  uint64_t n = 0;
  double sum = 0;
  double sumsq = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(double v);
  void merge(const metric_stats& o);
  double mean() const { return n > 0 ? sum / static_cast<double>(n) : 0; }
  double stddev() const; // population standard deviation across the ranks
};

struct event_stats {
  metric_stats m[metric_count];
};

// One functional class (or, for `stats` and `histogram`, all ranks as one class).
struct class_part {
  uint64_t ranks = 0;
  std::vector<uint32_t> rank_sample; // the lowest ranks of the class, at most sample_limit
  std::map<std::string, event_stats> events;
  static constexpr size_t sample_limit = 16;
};
using class_table = std::map<uint64_t, class_part>;

// Bins of one event's histogram over [lo, hi].
struct event_hist {
  double lo = 0;
  double hi = 0;
  std::vector<uint64_t> bins;
};
using hist_table = std::map<uint64_t, std::map<std::string, event_hist>>; // class -> event

std::string encode_classes(const class_table& t);
class_table decode_classes(const std::string& bytes);
std::string encode_hists(const hist_table& t);
hist_table decode_hists(const std::string& bytes);

// The bin of `v` in [lo, hi] with `bins` bins (values outside are clamped).
size_t bin_of(double v, double lo, double hi, size_t bins);

// The class id of a profile: FNV-1a over the sorted names of its events that match `glob`
// (all events when empty); names starting with "strata." (the monitor's counters) never count.
uint64_t class_id(const rank_profile& p, const std::string& glob);

} // namespace strata::overlay
