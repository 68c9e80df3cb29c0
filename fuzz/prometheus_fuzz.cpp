// libFuzzer target: the Prometheus text format reader never crashes, says why it refuses in one
// line, and what it accepts, written again, reads back to the same families.
#include "site/prometheus.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::prometheus;
  const parse_result p = parse_text(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!p.ok()) {
    if (p.error.find('\n') != std::string::npos || !p.families.empty())
      std::abort();
    return 0;
  }
  const parse_result again = parse_text(write_text(p.families));
  if (!again.ok() || again.families.size() != p.families.size())
    std::abort();
  for (size_t f = 0; f < p.families.size(); ++f) {
    const family& a = p.families[f];
    const family& b = again.families[f];
    if (a.name != b.name || a.help != b.help || a.samples.size() != b.samples.size())
      std::abort();
    for (size_t s = 0; s < a.samples.size(); ++s) {
      const double x = a.samples[s].value, y = b.samples[s].value;
      if (a.samples[s].name != b.samples[s].name || !(x == y || (std::isnan(x) && std::isnan(y))))
        std::abort();
    }
  }
  return 0;
}
