// libFuzzer target: the batches of hang states the monitor's tool ranks send up their tree
// (strata.hang-batch/1) must never crash the reader on any bytes; an accepted batch must encode
// back to one that reads as the same, and the diagnosis over its states must complete.
#include "hang/batch.hpp"
#include "hang/diagnose.hpp"

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::hang;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const batch_read_result read = decode_batch(bytes);
  if (!read.ok()) {
    if (read.error.empty() || read.error.find('\n') != std::string::npos)
      std::abort();
    return 0;
  }
  const batch_read_result again = decode_batch(encode_batch(read.batch));
  if (!again.ok() || again.batch.states.size() != read.batch.states.size() ||
      again.batch.unread != read.batch.unread || again.batch.tool_ranks != read.batch.tool_ranks)
    std::abort();
  for (size_t i = 0; i < read.batch.states.size(); ++i)
    if (again.batch.states[i].threads != read.batch.states[i].threads ||
        again.batch.states[i].observed_ns != read.batch.states[i].observed_ns)
      std::abort();
  // The analysis, as a requester runs it: one state a rank, of one world (the requester's
  // load keeps the first of each rank); worlds of up to 2^16 ranks keep each input fast.
  std::vector<rank_state> states;
  std::set<int32_t> seen;
  for (const rank_state& s : read.batch.states)
    if (s.world_size <= (1 << 16) &&
        (states.empty() || s.world_size == states.front().world_size) &&
        seen.insert(s.world_rank).second)
      states.push_back(s);
  const diagnosis d = diagnose(states, latest_time(states), 1'000'000'000);
  if (format_text(d).empty() || format_json(d).empty())
    std::abort();
  return 0;
}
