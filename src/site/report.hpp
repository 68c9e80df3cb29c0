// Site reports (section VI of Rabenseifner's "Automatic MPI Counter Profiling"): per user the
// weekly summary of Fig. 4 with reference values against the site, and for the site the
// overview of Fig. 5 with the breakdowns of Figs. 6-11 and the critical jobs. Built from the
// store's grouped queries (the sums are done in SQL); rendered as text, HTML or JSON, and per user
// as a MIME mail (site/mail.hpp).
#pragma once

#include "profiler/record/record.hpp"
#include "site/programs.hpp"
#include "site/store.hpp"

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

struct report_options {
  period when;
  std::string period_label;        // "week 2026-11-16", "since 7d", ...
  std::optional<std::string> user; // only this user's part
  bool site_part = true;           // Fig. 5-11 and critical jobs (ignored with `user`)
  // false: the site part alone (the web's site page), without the users' parts and from the
  // day tables only when the period is whole UTC days (see store::count_critical).
  bool user_parts = true;
  double critical_mpi_percent = 15;                  // jobs and users above it are marked
  double critical_routine_share = 10;                // % of a user's MPI time that marks a routine
  std::optional<strata::model::machine_model> model; // latency/transfer/sync estimate
  std::optional<double> machine_cores;               // for the share of the machine
  std::int64_t critical_job_limit = 50;
};

struct routine_line {
  std::string name;
  std::int64_t jobs = 0, calls = 0, bytes = 0, count_sum = 0;
  double time_s = 0;
  double calls_per_pe = 0, time_per_call_us = 0, bytes_per_call = 0;
  double share_of_mpi = 0;                 // % of the MPI time of the user (or site)
  std::optional<record::time_split> split; // with a model that knows the routine
  bool critical = false;
  bool sync_critical = false; // synchronisation is most of its time
};

// One figure of a user against the site's users in the same period.
struct reference_value {
  std::string name, unit;
  double value = 0, site_min = 0, site_median = 0, site_max = 0;
  int rank = 0, of = 0; // 1 = highest value among `of` users
  bool higher_is_worse = false;
  bool critical = false; // worst of the site, or MPI % above the threshold
};

struct user_report {
  std::string owner;
  job_totals totals;
  std::int64_t c_jobs = 0, fortran_jobs = 0, other_language_jobs = 0;
  std::int64_t critical_jobs = 0;
  std::optional<double> machine_share_percent; // with machine_cores
  double analysed_share_percent = 0;           // of all users' CPU time in the period
  double mpi_percent = 0;
  bool mpi_critical = false;
  int routines_used = 0;
  std::vector<routine_line> routines; // by time, longest first
  std::vector<reference_value> references;
  std::vector<job_row> critical_job_list;
  // Jobs slower than their program's earlier runs at the same size (site/regressions.hpp),
  // newest first, with the call sites that moved where recorded.
  std::vector<regression_row> regressions;
  std::int64_t regression_count = 0;
};

struct breakdown_line {
  std::string label;
  std::int64_t jobs = 0;
  double cpu_time_s = 0, mpi_time_s = 0;
  double cpu_percent = 0, jobs_percent = 0, mpi_percent = 0;
};

struct language_summary {
  std::string language;
  job_totals totals;
  double cpu_percent = 0, jobs_percent = 0;
  int routines_used = 0;
};

struct group_line {
  std::string name;
  double jobs_percent = 0, cpu_weighted_percent = 0;
};

struct site_report {
  job_totals totals;
  int users = 0, routines_used = 0;
  std::optional<double> machine_share_percent;
  std::optional<record::time_split> split; // summed over routines, with a model
  double p2p_time_s = 0, collective_time_s = 0;
  std::optional<record::time_split> p2p_split, collective_split;
  std::vector<std::pair<int, double>> top_users; // (N, % of CPU time of the top N users)
  std::vector<language_summary> languages;
  std::vector<breakdown_line> by_size;      // Fig. 8
  std::vector<breakdown_line> by_cpu_class; // Fig. 6/7, with language columns below
  std::vector<breakdown_line> by_cpu_class_c, by_cpu_class_fortran;
  std::vector<breakdown_line> by_user; // Fig. 9, by CPU time
  std::vector<routine_line> routines;  // Fig. 10, by time
  std::vector<group_line> groups;      // Fig. 11
  std::vector<job_row> critical_jobs;
  std::int64_t critical_job_count = 0;
  std::vector<regression_row> regressions; // newest first, up to critical_job_limit
  std::int64_t regression_count = 0;
};

struct report {
  report_options options;
  std::optional<site_report> site;
  std::vector<user_report> users;
};

// Runs the queries and builds the report. Throws store_error.
report build_report(store& db, const report_options& options);

std::string render_text(const report& r);
std::string render_html(const report& r);
std::string render_json(const report& r);
// The JSON report's "site" part, the web's site page's figures too.
nlohmann::json site_report_json(const site_report& s);
// Sums over jobs as JSON (with their MPI %): the JSON report's and the web's.
nlohmann::json totals_json(const job_totals& t);
// One breakdown (by size, by CPU class, by user) as JSON: the JSON report's and the web's.
nlohmann::json breakdown_json(const std::vector<breakdown_line>& lines);
// Regressions as JSON: the JSON report's and the web's.
nlohmann::json regressions_json(const std::vector<regression_row>& rows);

// "1-4" style label of the paper's size classes: powers of two alone, the ranges between them.
std::string size_class_label(std::int64_t ranks);
std::int64_t size_class_order(std::int64_t ranks);

} // namespace strata::site

namespace strata::site {
// One user's part alone, for the per-user mail; and an HTML document around a body.
std::string user_text(const user_report& u, const report_options& o);
std::string user_html(const user_report& u, const report_options& o);
std::string html_page(const std::string& title, const std::string& body);
} // namespace strata::site
