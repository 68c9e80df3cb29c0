// libFuzzer target: the per-rank profile reader must reject any damaged file with a message and
// never read outside it; an accepted one must aggregate into a record.
#include "profiler/job_figures.hpp"
#include "profiler/rank_file.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const strata::profiler::read_result r = strata::profiler::parse_rank_image(data, size, "fuzz");
  if (r.error.empty()) {
    strata::profiler::job_figures job;
    strata::profiler::add_rank(job, r.data);
    if (strata::record::to_json(strata::profiler::to_record(job)).empty())
      std::abort();
  } else if (r.error.find("fuzz: ") != 0) {
    std::abort(); // every message names the file
  }
  return 0;
}
