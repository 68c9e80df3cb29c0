// libFuzzer target: the hang state file reader must never crash on any bytes, an accepted state
// must encode back to a file that reads as the same state, and the diagnosis over it (with a
// second rank) must complete and format.
#include "hang/diagnose.hpp"
#include "hang/state.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const strata::hang::state_read_result read = strata::hang::parse_state(bytes, "fuzz.hang");
  if (!read.ok()) {
    if (read.error.empty())
      std::abort();
    return 0;
  }
  const strata::hang::state_read_result again =
      strata::hang::parse_state(strata::hang::encode_state(*read.state));
  if (!again.ok() || again.state->threads.size() != read.state->threads.size())
    std::abort();
  for (size_t i = 0; i < read.state->threads.size(); ++i)
    if (!read.state->threads[i].torn && !(again.state->threads[i] == read.state->threads[i]))
      std::abort();
  // The analysis sizes its tables by the world (up to 2^24 ranks, a few hundred MB): fuzzed in
  // worlds of up to 2^16 ranks so that each input stays fast.
  if (read.state->world_size > (1 << 16))
    return 0;
  // The same rank as every other rank of a small world: the analysis must not trust the fields.
  std::vector<strata::hang::rank_state> states{*read.state};
  if (read.state->world_size <= 64)
    for (int32_t r = 0; r < read.state->world_size; ++r)
      if (r != read.state->world_rank) {
        states.push_back(*read.state);
        states.back().world_rank = r;
      }
  const strata::hang::diagnosis d =
      strata::hang::diagnose(states, strata::hang::latest_time(states), 1'000'000'000);
  if (strata::hang::format_text(d).empty() || strata::hang::format_json(d).empty())
    std::abort();
  return 0;
}
