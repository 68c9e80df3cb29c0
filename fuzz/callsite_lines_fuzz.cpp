// libFuzzer target: the readers of what ranks send up the tree at finalize (the message,
// profiler/site_reduction.hpp, and its text of host names and call sites, profiler/call_sites.hpp)
// must take any bytes without crashing; a message read must write and read back as itself, and a
// merged text must write and read back as itself.
#include "profiler/call_sites.hpp"
#include "profiler/site_reduction.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <tuple>

namespace {
auto key(const strata::profiler::callsite_total& c) {
  return std::tie(c.function, c.file, c.line, c.caller, c.calls, c.time_ns, c.bytes, c.wasted_ns,
                  c.ranks);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::profiler;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tree_message message;
  const size_t words = size > 0 ? data[0] % 8 : 0;
  if (read_tree_message(bytes, words, message)) {
    tree_message again;
    if (!read_tree_message(write_tree_message(message.ranks, message.figures, message.text), words,
                           again) ||
        again.ranks != message.ranks || again.figures != message.figures ||
        again.text != message.text)
      std::abort();
  }
  ranks_summary merged;
  merged.add_text(std::string_view(reinterpret_cast<const char*>(data), size));
  ranks_summary again;
  again.add_text(summary_text(merged));
  if (again.hosts() != merged.hosts() || again.callsites().size() != merged.callsites().size())
    std::abort();
  for (size_t i = 0; i < merged.callsites().size(); ++i)
    if (key(merged.callsites()[i]) != key(again.callsites()[i]))
      std::abort();
  return 0;
}
