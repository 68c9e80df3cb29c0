// libFuzzer target: the reader of the call-site lines that ranks send to rank 0 at finalize must
// take any text without crashing, and what it merged must write and read back as itself (ranks
// aside: a line stands for one rank).
#include "profiler/call_sites.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <tuple>

namespace {
auto key(const strata::profiler::callsite_total& c) {
  return std::tie(c.function, c.file, c.line, c.caller, c.calls, c.time_ns, c.bytes, c.wasted_ns);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::profiler;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<callsite_total> merged = merge_callsite_lines(text);
  std::vector<callsite_total> again = merge_callsite_lines(callsite_lines(merged));
  if (again.size() != merged.size())
    std::abort();
  const auto by_key = [](const callsite_total& a, const callsite_total& b) {
    return key(a) < key(b);
  };
  std::sort(merged.begin(), merged.end(), by_key);
  std::sort(again.begin(), again.end(), by_key);
  for (size_t i = 0; i < merged.size(); ++i)
    if (key(merged[i]) != key(again[i]))
      std::abort();
  return 0;
}
