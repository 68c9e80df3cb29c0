// Return addresses of this process to source locations, with libdw (elfutils). Each rank
// resolves its own addresses, so address-space randomisation cannot mix them up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::common {

struct source_location {
  std::string file;     // source file (basename-free path as in the debug info), or the module
  int line = 0;         // 0 when the module has no line information
  std::string function; // the calling function's symbol, when known
};

// One location per address; an address is a return address, so the call is just before it.
// When the call was inlined from a file whose path ends with `inlined_from` (the annotation
// header's wrappers), the location is where that inlined code was called instead.
std::vector<source_location> resolve_return_addresses(const std::vector<uint64_t>& addresses,
                                                      const char* inlined_from = nullptr);

} // namespace strata::common
