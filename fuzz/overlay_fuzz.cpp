// The overlay's decoders (profiles, packets, filter parts) and the file transport's reader take
// bytes from other processes and from files: they must reject anything malformed cleanly.
#include "monitor/engine.hpp"
#include "monitor/filter.hpp"
#include "monitor/filters.hpp"
#include "monitor/profile_round.hpp"
#include "monitor/wire.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  using namespace strata::overlay;
  try {
    (void)decode_profile(bytes);
  } catch (const wire_error&) {
  }
  try {
    (void)decode_packet(bytes);
  } catch (const wire_error&) {
  }
  try {
    (void)decode_classes(bytes);
  } catch (const wire_error&) {
  }
  try {
    (void)decode_hists(bytes);
  } catch (const wire_error&) {
  }
  // A node fed arbitrary packets from a child must not crash either.
  static std::string error;
  static auto hist = make_filter("histogram", {}, error);
  node_engine engine(*hist, 2, true, true);
  std::vector<node_output> out;
  try {
    packet p = decode_packet(bytes);
    engine.on_child(static_cast<int>(p.ranks % 3), p, out);
  } catch (const wire_error&) {
  }
  return 0;
}
