// One rank's offload: its profile (per event: calls, time, bytes) at one round. What application
// ranks send into the overlay and what the file transport appends to its files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::overlay {

// Rounds are numbered per rank from 0; the profile a rank offloads at MPI_Finalize is the final
// round, numbered `final_round` so that it sorts after every periodic one.
constexpr uint64_t final_round = UINT64_MAX - 1;

struct event_row {
  std::string name;
  uint64_t calls = 0;
  uint64_t time_ns = 0;
  uint64_t bytes = 0;
};

// Metrics a filter reduces, in this order.
enum metric : int { metric_calls = 0, metric_time = 1, metric_bytes = 2, metric_count = 3 };
const char* metric_name(int m);
int metric_from_name(std::string_view name);      // -1 when unknown
double metric_value(const event_row& row, int m); // time in seconds

struct rank_profile {
  uint32_t rank = 0;
  uint64_t round = 0;
  double elapsed_s = 0; // since this rank's MPI_Init
  std::vector<event_row> events;
};

std::string encode_profile(const rank_profile& p);
// Throws wire_error on malformed input.
rank_profile decode_profile(std::string_view bytes);

} // namespace strata::overlay
