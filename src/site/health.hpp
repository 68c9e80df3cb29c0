// The store's own health, for `strata site serve`'s /metrics: each ingest leaves one row in
// `ingests` (schema version 8) with what it read, stored, quarantined and flagged and how long
// after their end the jobs arrived; the jobs stored are counted from the day tables (a few
// thousand rows, not the jobs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata::site {

class store;

struct ingest_record {
  std::int64_t started = 0, finished = 0; // seconds since the epoch
  std::int64_t records = 0, stored = 0, duplicates = 0, quarantined = 0, flagged = 0;
  double lag_median_s = 0, lag_max_s = 0; // from a job's end to its ingest
};
void record_ingest(store& db, const ingest_record& r);

struct store_health {
  int schema_version = 0;
  std::int64_t jobs = 0;        // in the store
  std::int64_t regressions = 0; // flagged jobs in the store
  // Over the ingests recorded:
  std::int64_t ingests = 0, records = 0, stored = 0, duplicates = 0, quarantined = 0;
  std::optional<ingest_record> last; // the newest
};
store_health read_health(store& db);

// The health in the Prometheus text exposition format (strata_site_*), `now` for the lag.
std::string health_metrics(const store_health& h, std::int64_t now);

} // namespace strata::site
