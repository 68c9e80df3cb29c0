// libFuzzer target: the trace module's definitions as ranks send them up the tree (a rank's own,
// and a subtree's merged ones) and the maps sent back down must never crash the reader, whatever
// the bytes; what is accepted must serialise back to the same bytes and merge. The settings
// parser gets the same bytes as a size.
#include "tracer/options.hpp"
#include "tracer/unify.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  strata::trace::local_defs defs;
  if (strata::trace::deserialize(bytes, defs)) {
    if (strata::trace::serialize(defs) != bytes)
      std::abort();
    strata::trace::global_defs global;
    std::vector<strata::trace::rank_map> maps;
    strata::trace::unify({defs, defs}, global, maps);
    if (maps.size() != 2 || maps[0].comm != maps[1].comm)
      std::abort();
  }
  strata::trace::merged_defs merged;
  if (strata::trace::deserialize(bytes, merged, 64)) {
    if (strata::trace::serialize(merged) != bytes)
      std::abort();
    strata::trace::merged_defs twice = merged;
    const strata::trace::rank_map map = strata::trace::merge_into(twice, merged);
    if (twice.comms.size() != merged.comms.size() || map.comm.size() != merged.comms.size() ||
        twice.rank_host.size() != 2 * merged.rank_host.size())
      std::abort();
  }
  std::vector<uint32_t> flat(size / sizeof(uint32_t));
  if (!flat.empty())
    std::memcpy(flat.data(), data, flat.size() * sizeof(uint32_t));
  strata::trace::rank_map map;
  if (strata::trace::unflatten(flat, map) && strata::trace::flatten(map) != flat)
    std::abort();
  return 0;
}
