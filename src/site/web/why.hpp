// Why a job spends its time in MPI, from its record alone, as a few plain findings for the job
// page: the routine and call site that take most, ranks waiting for each other, time over the
// machine model, small or many messages, waiting at collectives. Each says what to try next and
// which tool shows more (the trace module and its analyzer, the overhead module).
#pragma once

#include "profiler/record/record.hpp"

#include <string>
#include <vector>

namespace strata::web {

struct finding {
  std::string kind; // where, imbalance, model, messages, collectives
  std::string text; // what the record says
  std::string next; // what to try
  std::string tool; // trace, overhead: the module that shows more
  std::string how;  // the command that runs it
};

// The findings of a job, most telling first; none for a job with no MPI time.
std::vector<finding> findings_of(const record::job_record& r);

} // namespace strata::web
