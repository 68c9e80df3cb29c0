// The kinds of message a job record's `communication.by_kind` keeps apart, as the
// profile counts them and `strata analyze` finds them in a trace (docs/job-record.md): one list,
// so that the two readings of the same run name the same kinds.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::common {

enum pair_kind : uint8_t {
  pair_kind_point_to_point,
  pair_kind_sendrecv,
  pair_kind_persistent,
  // MPI 4's partitioned sends (MPI_Psend_init): one message per start, all partitions together.
  pair_kind_partitioned,
  // One-sided operations, from origin to target (traces hold them as OTF2 RMA events).
  pair_kind_put,
  pair_kind_get,
  pair_kind_accumulate,
  pair_kind_count
};
inline constexpr const char* pair_kind_names[pair_kind_count] = {
    "point_to_point", "sendrecv", "persistent", "partitioned", "put", "get", "accumulate"};

// The two-sided kinds, which a record's `pairs` sums; the one-sided ones are in `by_kind` alone.
inline constexpr bool is_point_to_point(int kind) {
  return kind < pair_kind_put;
}

// Whether the kind a record's `by_kind` names `name` is one-sided (a name not in the list is not).
inline constexpr bool is_one_sided(std::string_view name) {
  for (int k = 0; k < pair_kind_count; ++k)
    if (name == pair_kind_names[k])
      return !is_point_to_point(k);
  return false;
}

} // namespace strata::common
