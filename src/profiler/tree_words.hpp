#pragma once
// 64-bit words in the messages the finalize tree carries (the pairs, the collectives): written
// and read in the host's byte order, as every rank of a job runs the same binary.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace strata::profiler {

inline void append_word(std::string& out, uint64_t word) {
  char raw[sizeof word];
  std::memcpy(raw, &word, sizeof word);
  out.append(raw, sizeof word);
}

// False, and `in` unchanged, when fewer than eight bytes are left.
inline bool take_word(std::string_view& in, uint64_t& word) {
  if (in.size() < sizeof word)
    return false;
  std::memcpy(&word, in.data(), sizeof word);
  in.remove_prefix(sizeof word);
  return true;
}

} // namespace strata::profiler
