// Apart from the rest of call_sites.cpp: only this needs libdw (common/symbols.hpp).
#include "profiler/call_sites.hpp"

#include "common/symbols.hpp"

namespace strata::profiler {

std::vector<callsite_total> resolve_callsites(const callsite_slot* slots, size_t capacity,
                                              const std::vector<std::string>& names) {
  std::vector<uint64_t> addresses;
  std::vector<const callsite_slot*> used;
  for (size_t i = 0; i < capacity; ++i) {
    if (slots[i].key != 0 && slots[i].calls != 0) {
      used.push_back(&slots[i]);
      addresses.push_back(callsite_address(slots[i].key));
    }
  }
  const std::vector<common::source_location> where = common::resolve_return_addresses(addresses);
  std::vector<callsite_total> sites;
  for (size_t i = 0; i < used.size(); ++i) {
    const int fid = callsite_function(used[i]->key);
    if (fid < 0 || fid >= static_cast<int>(names.size()))
      continue;
    sites.push_back({names[static_cast<size_t>(fid)], where[i].file, where[i].line,
                     where[i].function, used[i]->calls, used[i]->time_ns, used[i]->bytes,
                     used[i]->wasted_ns, 1});
  }
  return sites;
}

} // namespace strata::profiler
