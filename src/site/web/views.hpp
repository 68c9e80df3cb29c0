// What the web's pages read, as JSON (and the job's own report as HTML): jobs, totals, the site
// page's figures, a job's details with its comparison to the previous run of its program at
// its size, and a user's programs' scaling models and histories (site/models.hpp). Every
// string from a job travels as JSON data that the page inserts as text.
#pragma once

#include "profiler/record/render.hpp"
#include "site/models.hpp"
#include "site/report.hpp"
#include "site/store.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::web {

nlohmann::json job_json(const site::job_row& j);
// The site page's figures (Figs. 5-11 of the automatic counter profiling paper): the JSON site
// report's "site" part (site::site_report_json, its key names), with the period ("days", "from"
// and "to" in seconds) and "critical_job_rows", the critical jobs as job_json's rows.
nlohmann::json site_json(const site::report& r, int days);
// The site's jobs per Slurm account or partition (site::slurm_totals), most CPU time first:
// label ("" for jobs without one), jobs, CPU time, MPI %, share of the CPU time.
nlohmann::json slurm_groups_json(const std::map<std::string, site::job_totals>& groups);
// The job's own report (src/profiler/record's HTML fragment, which escapes every string of the
// record and scopes its style to the report's <div class="report">), to sit inside our page;
// without its heat map where the page draws its own of the store's pairs (site::has_pairs).
std::string job_report_html(const std::string& record_json, record::heat_map map);
// What the job page needs: the job, per-routine time across ranks (min/mean/max: the
// imbalance), the message-size histograms; whether it was flagged as a regression; and, routine
// by routine, the previous complete run of its program at its size.
nlohmann::json job_detail_json(site::store& db, const site::stored_job& sj);

// Sets "flagged" on each of a page's jobs (job_json's form): whether ingest flagged it as a
// regression. One query for the page.
void mark_flagged(site::store& db, nlohmann::json& jobs);

// A user's programs with their models (site::models_json's form) for the trends page.
nlohmann::json models_json(site::store& db, const std::string& user);
// One program's runs at each size over time, flagged regressions marked; nothing when the
// program is not `user`'s.
// `newest`: at most this many runs of each size, the newest (a job page's choice of runs to
// compare with needs no more).
std::optional<nlohmann::json> history_json(site::store& db, std::int64_t program_id,
                                           const std::string& user, std::size_t newest = SIZE_MAX);
// The trends page in one answer: models_json and the histories (at most `newest` runs a size,
// as columns: each size's "end" and "wall_s" of complete runs, "flagged" points, "shown" and
// "all_runs") of the programs whose charts the page draws: `chosen` if modelled, else
// the first `charts` modelled ones, flagged regressions first, then most runs.
nlohmann::json trends_json(site::store& db, const std::string& user,
                           std::optional<std::int64_t> chosen, std::size_t charts,
                           std::size_t newest);

} // namespace strata::web
