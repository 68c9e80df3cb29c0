// Whether a process still runs, for those who must not touch a live job's files (`strata recover`,
// the hang tree's leftovers). No MPI.
#pragma once

#include <cstdint>

namespace strata::common {

// Whether a process of that pid runs on this machine: it exists and has not exited (a zombie,
// exited and not yet reaped by its parent, counts as gone).
bool process_runs(int64_t pid);

} // namespace strata::common
