// Pieces of the profile module kept apart from its MPI call path.
#pragma once

#include "profiler/record/record.hpp"

#include <string>

namespace strata::profiler {

// The user's report (STRATA_PROFILE_OUT) from a job record, with the latency/transfer/sync
// estimate when STRATA_MODEL names a machine model.
std::string render_user_report(const record::job_record& job);

} // namespace strata::profiler
