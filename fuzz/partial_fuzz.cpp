// libFuzzer target: an analysis process's partial result as another process sends it must never
// crash the reader; anything it accepts must encode and read back as itself.
#include "analyzer/partial.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::analyze;
  std::vector<uint64_t> words(size / sizeof(uint64_t));
  if (!words.empty())
    std::memcpy(words.data(), data, words.size() * sizeof(uint64_t));
  if (!words.empty())
    words[0] = 0x5354524150415254ULL; // past the magic number, to reach the rest
  try {
    const partial_result p = decode_partial(words.data(), words.size());
    const std::vector<uint64_t> again = encode_partial(p);
    const partial_result q = decode_partial(again.data(), again.size());
    bool same = p.events == q.events && p.messages == q.messages && p.ranks == q.ranks &&
                p.tables.size() == q.tables.size() && p.waits.size() == q.waits.size();
    for (auto a = p.waits.begin(), b = q.waits.begin(); same && a != p.waits.end(); ++a, ++b)
      same = !(a->first < b->first) && !(b->first < a->first) && a->second == b->second;
    for (size_t i = 0; same && i < p.tables.size(); ++i) {
      const rank_tables& a = p.tables[i];
      const rank_tables& b = q.tables[i];
      same = a.first == b.first && a.last == b.last && a.comm_ticks == b.comm_ticks &&
             a.level_counts == b.level_counts && a.ops.size() == b.ops.size();
      for (const auto& [key, stat] : a.ops) {
        const auto it = b.ops.find(key);
        same = same && it != b.ops.end() && it->second.count == stat.count &&
               it->second.ticks == stat.ticks;
      }
    }
    if (!same)
      std::abort();
  } catch (const trace_error&) {
  }
  return 0;
}
