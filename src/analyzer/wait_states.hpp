// The wait states Scalasca defines, as times computed from the enter and leave times of the
// operations involved. The streaming analysis (analysis.cpp) decides which operations meet; these
// say how long each waited. No state, no I/O.
#pragma once

#include <algorithm>
#include <cstdint>

namespace strata::analyze {

enum wait_pattern : uint8_t {
  late_sender,
  late_receiver,
  wait_at_barrier,
  wait_at_nxn,
  late_broadcast,
  early_reduce,
  pattern_count
};
inline constexpr const char* pattern_names[pattern_count] = {"late_sender",     "late_receiver",
                                                             "wait_at_barrier", "wait_at_nxn",
                                                             "late_broadcast",  "early_reduce"};

// Late sender: the receive was entered before the send began; it waited until then (at most
// until it left).
inline uint64_t late_sender_wait(uint64_t send_enter, uint64_t recv_enter, uint64_t recv_leave) {
  return send_enter > recv_enter ? std::min(send_enter, recv_leave) - recv_enter : 0;
}

// Late receiver: a blocking send still in progress when the receive was posted, posted after the
// send began; the send was held up waiting for it.
inline uint64_t late_receiver_wait(uint64_t send_enter, uint64_t send_leave, uint64_t recv_post) {
  return recv_post > send_enter && recv_post < send_leave ? recv_post - send_enter : 0;
}

// The pattern a collective operation (an OTF2_CollectiveOp) can show; false for one without any
// (scans, for instance).
bool collective_pattern(uint32_t op, wait_pattern& kind);

inline constexpr uint32_t no_member = UINT32_MAX;

// The waits in one instance of a collective: `members[i].enter` and `.leave` for each member i,
// `root` the root's member index (no_member when there is none). Calls waited(i, ticks) for each
// member that waited:
// - wait at barrier / at N x N: every member until the last one entered;
// - late broadcast: every member but the root until the root entered;
// - early reduce: the root until the first other member entered.
template <class Members, class Waited>
void collective_waits(wait_pattern kind, const Members& members, uint32_t root, Waited&& waited) {
  const auto size = static_cast<uint32_t>(members.size());
  if (size < 2)
    return;
  if (kind == wait_at_barrier || kind == wait_at_nxn) {
    uint64_t last = 0;
    for (const auto& m : members)
      last = std::max(last, m.enter);
    for (uint32_t i = 0; i < size; ++i)
      if (last > members[i].enter)
        waited(i, std::min(last, members[i].leave) - members[i].enter);
    return;
  }
  if (root >= size)
    return;
  const auto& r = members[root];
  if (kind == late_broadcast) {
    for (uint32_t i = 0; i < size; ++i)
      if (i != root && r.enter > members[i].enter)
        waited(i, std::min(r.enter, members[i].leave) - members[i].enter);
    return;
  }
  if (kind != early_reduce)
    return;
  uint64_t first = UINT64_MAX;
  for (uint32_t i = 0; i < size; ++i)
    if (i != root)
      first = std::min(first, members[i].enter);
  if (first != UINT64_MAX && first > r.enter)
    waited(root, std::min(first, r.leave) - r.enter);
}

} // namespace strata::analyze
