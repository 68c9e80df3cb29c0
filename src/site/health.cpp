#include "site/health.hpp"

#include "site/prometheus.hpp"
#include "site/store.hpp"

namespace strata::site {

void record_ingest(store& db, const ingest_record& r) {
  db.append("ingests",
            {"started", "finished", "records", "stored", "duplicates", "quarantined", "flagged",
             "lag_median_s", "lag_max_s"},
            {{r.started, r.finished, r.records, r.stored, r.duplicates, r.quarantined, r.flagged,
              r.lag_median_s, r.lag_max_s}});
}

store_health read_health(store& db) {
  store_health h;
  h.schema_version = db.schema_version();
  db.query("SELECT COALESCE(SUM(jobs), 0) FROM day_owners", {},
           [&](const store::row& r) { h.jobs = r.i64(0); });
  db.query("SELECT COUNT(*) FROM regressions", {},
           [&](const store::row& r) { h.regressions = r.i64(0); });
  db.query("SELECT COUNT(*), COALESCE(SUM(records), 0), COALESCE(SUM(stored), 0), "
           "COALESCE(SUM(duplicates), 0), COALESCE(SUM(quarantined), 0) FROM ingests",
           {}, [&](const store::row& r) {
             h.ingests = r.i64(0);
             h.records = r.i64(1);
             h.stored = r.i64(2);
             h.duplicates = r.i64(3);
             h.quarantined = r.i64(4);
           });
  db.query("SELECT started, finished, records, stored, duplicates, quarantined, flagged, "
           "lag_median_s, lag_max_s FROM ingests ORDER BY ingest_id DESC LIMIT 1",
           {}, [&](const store::row& r) {
             h.last = ingest_record{r.i64(0), r.i64(1), r.i64(2), r.i64(3), r.i64(4),
                                    r.i64(5), r.i64(6), r.f64(7), r.f64(8)};
           });
  return h;
}

std::string health_metrics(const store_health& h, std::int64_t now) {
  using prometheus::metric_type;
  using prometheus::single;
  std::vector<prometheus::family> f = {
      single("strata_site_jobs", "Jobs in the site store", metric_type::gauge,
             static_cast<double>(h.jobs)),
      single("strata_site_jobs_ingested_total", "Jobs stored by the ingests recorded",
             metric_type::counter, static_cast<double>(h.stored)),
      single("strata_site_records_read_total", "Record files read by the ingests recorded",
             metric_type::counter, static_cast<double>(h.records)),
      single("strata_site_records_duplicate_total",
             "Records read that were stored already (removed from the spool)", metric_type::counter,
             static_cast<double>(h.duplicates)),
      single("strata_site_records_quarantined_total",
             "Records that did not parse, moved to the quarantine directory", metric_type::counter,
             static_cast<double>(h.quarantined)),
      single("strata_site_ingests_total", "Ingests recorded", metric_type::counter,
             static_cast<double>(h.ingests)),
      single("strata_site_regressions", "Jobs flagged as regressions in the store",
             metric_type::gauge, static_cast<double>(h.regressions)),
      single("strata_site_schema_version", "Schema version of the store", metric_type::gauge,
             h.schema_version)};
  if (h.last) {
    f.push_back(single("strata_site_last_ingest_timestamp_seconds",
                       "When the newest ingest finished (seconds since the epoch)",
                       metric_type::gauge, static_cast<double>(h.last->finished)));
    f.push_back(single("strata_site_seconds_since_last_ingest",
                       "Seconds from the newest ingest's end to this scrape", metric_type::gauge,
                       static_cast<double>(now - h.last->finished)));
    f.push_back(single("strata_site_ingest_lag_seconds",
                       "Median time from a job's end to its ingest, newest ingest",
                       metric_type::gauge, h.last->lag_median_s));
    f.push_back(single("strata_site_ingest_lag_max_seconds",
                       "Longest time from a job's end to its ingest, newest ingest",
                       metric_type::gauge, h.last->lag_max_s));
  }
  return prometheus::write_text(f);
}

} // namespace strata::site
