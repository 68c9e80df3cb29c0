// libFuzzer target: the per-rank profile reader must reject any damaged file with a message and
// never read outside it; an accepted one must aggregate into a record.
#include "profile/aggregate.hpp"
#include "profile/rank_file.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const strata::profile::read_result r = strata::profile::parse_rank_image(data, size, "fuzz");
  if (r.error.empty()) {
    strata::profile::job_totals job;
    strata::profile::add_rank(job, r.data);
    if (strata::profile::record_json(job).empty())
      std::abort();
  } else if (r.error.find("fuzz: ") != 0) {
    std::abort(); // every message names the file
  }
  return 0;
}
