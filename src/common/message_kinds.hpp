// The kinds of point-to-point message a job record's `communication.by_kind` keeps apart, as the
// profile counts them and `strata analyze` finds them in a trace (docs/job-record.md): one list,
// so that the two readings of the same run name the same kinds.
#pragma once

#include <cstdint>

namespace strata::common {

enum pair_kind : uint8_t {
  pair_kind_point_to_point,
  pair_kind_sendrecv,
  pair_kind_persistent,
  pair_kind_count
};
inline constexpr const char* pair_kind_names[pair_kind_count] = {"point_to_point", "sendrecv",
                                                                 "persistent"};

} // namespace strata::common
