// libFuzzer target for the ELF analysis behind `strata patch`, which reads untrusted binaries.
// Build: clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/patch/include
//        src/patch/patch.cpp fuzz/patch_fuzz.cpp -lelf -o /tmp/patch_fuzz
// Seed the corpus with real shared objects (e.g. from /usr/lib/x86_64-linux-gnu).
#include "strata/patch/patch.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto result = strata::patch::analyze({data, size});
  // Either outcome is fine, but it must be a coherent one: success renames C imports or keeps
  // Fortran ones (or both); failure has a reason and nothing else.
  const bool found_imports = !result.renamed.empty() || !result.fortran_kept.empty();
  if (result.ok != found_imports || result.ok != result.error.empty())
    std::abort();
  for (const auto& r : result.renamed)
    if (r.from.size() != r.to.size() || r.from.substr(1) != r.to.substr(1))
      std::abort();
  return 0;
}
