#include "monitor/profile_round.hpp"

#include "monitor/wire.hpp"

namespace strata::overlay {

namespace {
constexpr uint32_t profile_magic = 0x31524d53; // "SMR1"
} // namespace

const char* metric_name(int m) {
  switch (m) {
  case metric_calls:
    return "calls";
  case metric_time:
    return "time";
  case metric_bytes:
    return "bytes";
  default:
    return "?";
  }
}

int metric_from_name(std::string_view name) {
  for (int m = 0; m < metric_count; ++m)
    if (name == metric_name(m))
      return m;
  return -1;
}

double metric_value(const event_row& row, int m) {
  switch (m) {
  case metric_calls:
    return static_cast<double>(row.calls);
  case metric_time:
    return static_cast<double>(row.time_ns) / 1e9;
  case metric_bytes:
    return static_cast<double>(row.bytes);
  default:
    return 0;
  }
}

std::string encode_profile(const rank_profile& p) {
  wire_writer w;
  w.u32(profile_magic);
  w.u32(p.rank);
  w.u64(p.round);
  w.f64(p.elapsed_s);
  w.u32(static_cast<uint32_t>(p.events.size()));
  for (const event_row& e : p.events) {
    w.str(e.name);
    w.u64(e.calls);
    w.u64(e.time_ns);
    w.u64(e.bytes);
  }
  return w.take();
}

rank_profile decode_profile(std::string_view bytes) {
  wire_reader r(bytes);
  if (r.u32() != profile_magic)
    throw wire_error("not a Strata monitor profile (bad magic)");
  rank_profile p;
  p.rank = r.u32();
  p.round = r.u64();
  p.elapsed_s = r.f64();
  const uint32_t n = r.count(4 + 24);
  p.events.resize(n);
  for (event_row& e : p.events) {
    e.name = r.str();
    e.calls = r.u64();
    e.time_ns = r.u64();
    e.bytes = r.u64();
  }
  if (!r.done())
    throw wire_error("trailing bytes after the profile");
  return p;
}

} // namespace strata::overlay
