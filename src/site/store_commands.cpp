#include "site/store_commands.hpp"

#include "site/ingest.hpp"
#include "site/mail.hpp"
#include "site/models.hpp"
#include "site/mpi_t_query.hpp"
#include "site/queries.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/synth.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#ifndef STRATA_DEFAULT_SITE_DB
#define STRATA_DEFAULT_SITE_DB "sqlite:/var/lib/strata/site.db"
#endif

namespace strata::site {

std::string default_db_url() {
  const char* env = std::getenv("STRATA_SITE_DB");
  return env != nullptr && *env != '\0' ? env : STRATA_DEFAULT_SITE_DB;
}

store_commands::store_commands(CLI::App& site) {
  site.require_subcommand(1);
  auto add_db = [&](CLI::App* sub) {
    sub->add_option("--db", db_,
                    "store: sqlite:PATH or postgresql://... (default: " + default_db_url() +
                        ", or $STRATA_SITE_DB)");
  };
  ingest_ = site.add_subcommand("ingest", "move spooled job records into the site store");
  add_db(ingest_);
  ingest_->add_option("SPOOL", spools_, "spool directories")->required();
  ingest_->add_option("--quarantine", quarantine_,
                      "where unreadable records go (default: SPOOL/quarantine)");
  ingest_->add_option("--batch", batch_, "records per transaction")->check(CLI::Range(1, 1000000));
  ingest_->add_flag("--no-regressions", no_regressions_,
                    "do not score jobs against their programs' earlier runs (bulk loads)");

  report_ = site.add_subcommand("report", "weekly/monthly summaries for users and the site");
  add_db(report_);
  auto* when = report_->add_option_group("period", "the period (one of)");
  when->add_flag("--week", week_, "the last full week (Monday to Monday, UTC)");
  when->add_flag("--month", month_, "the last full calendar month (UTC)");
  when->add_option("--since", since_, "the last DURATION up to now: 7d, 36h, 2w");
  when->add_option("--from", from_, "from this date or time (YYYY-MM-DD[THH:MM:SSZ])");
  when->require_option(1);
  report_->add_option("--to", to_, "with --from: up to this date or time (default: now)");
  report_->add_option("--user", user_, "only this user's summary");
  report_->add_flag("--users-only", users_only_, "the users' summaries without the site part");
  report_->add_option("--by", by_, "jobs, CPU hours and MPI % per Slurm account or partition")
      ->check(CLI::IsMember({"account", "partition"}));
  report_->add_option("--format", format_, "text, html, json or mail")
      ->check(CLI::IsMember({"text", "html", "json", "mail"}));
  report_->add_option("--critical", critical_, "MPI % above which a job or user is critical")
      ->check(CLI::Range(0.0, 100.0));
  report_->add_option("--model", model_, "machine model (strata bench) for latency/transfer/sync");
  report_->add_option("--cores", cores_, "cores of the machine, for the share of the machine")
      ->check(CLI::PositiveNumber);
  report_->add_option("--outbox", outbox_, "mail: write USER.eml files here instead of sending");
  report_->add_option("--sendmail", sendmail_, "mail: the sendmail command (default: sendmail)");
  report_->add_option("--mail-from", mail_from_, "mail: From address (default: strata@HOST)");
  report_->add_option("--mail-domain", mail_domain_, "mail: send to USER@DOMAIN (default: USER)");

  models_ = site.add_subcommand(
      "models", "scaling models of each program run at three or more sizes, with predictions");
  add_db(models_);
  models_->add_option("--user", user_, "only this user's programs");
  models_->add_option("--executable", executable_, "only this executable (its full path)");
  models_->add_option("--since", since_, "only runs of the last DURATION: 30d, 12w");
  models_->add_option("--format", format_, "text or json")->check(CLI::IsMember({"text", "json"}));

  mpi_t_ = site.add_subcommand(
      "mpi-t", "the MPI library's own variables (MPI_T) across jobs: each control variable's "
               "values with their jobs and median MPI time per rank, performance variables");
  add_db(mpi_t_);
  mpi_t_->add_option("--name", variable_,
                     "only this variable (control or performance; NAME* for a prefix); "
                     "default: the control variables with more than one value");
  mpi_t_->add_flag("--all", all_variables_, "every control variable, also those with one value");
  mpi_t_->add_option("--user", user_, "only this user's jobs");
  mpi_t_->add_option("--executable", executable_, "only this executable (its full path)");
  mpi_t_->add_option("--since", since_, "only jobs of the last DURATION: 30d, 12w");
  mpi_t_->add_option("--jobs", listed_jobs_, "record ids listed per value (newest first)")
      ->check(CLI::Range(0, 100000));
  mpi_t_->add_option("--format", format_, "text or json")->check(CLI::IsMember({"text", "json"}));

  synth_ = site.add_subcommand("synth", "write synthetic job records for scale tests");
  synth_->add_option("--count", count_, "records")->check(CLI::Range(0, 100000000));
  auto* synth_to = synth_->add_option_group("target", "where the records go (one of)");
  synth_to->add_option("--out", out_, "directory to write them into (a spool)");
  synth_to->add_option("--db", db_, "straight into this store (for report benchmarks)");
  synth_to->require_option(1);
  synth_->add_option("--seed", seed_, "the same seed gives the same records");
  synth_->add_option("--users", users_, "number of users")->check(CLI::Range(1, 100000));
  synth_->add_option("--from", from_, "job ends from this date (default: 28 days ago)");
  synth_->add_option("--to", to_, "job ends before this date (default: now)");
  synth_->add_flag("--no-chown", no_chown_, "as root: leave the files to root");
  synth_->add_flag("--pretty", pretty_, "indented JSON as the profile module writes it");
  synth_->add_flag("--mpi-t", synth_mpi_t_,
                   "each record carries an MPI_T section like an Open MPI job's");
}

namespace {

std::optional<std::int64_t> time_arg(const std::string& text, const char* what, bool& bad) {
  if (text.empty())
    return std::nullopt;
  const auto t = parse_utc_time(text);
  if (!t) {
    std::fprintf(stderr, "strata site: %s \"%s\" is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ\n", what,
                 text.c_str());
    bad = true;
  }
  return t;
}

// The start of the last `since` (a DURATION: "30d") before `now`; nullopt, the reason told for
// the subcommand `command` ("models"), when it is not a duration.
std::optional<std::int64_t> since_start(const std::string& since, const char* command,
                                        std::int64_t now) {
  const duration_result d = parse_duration(since);
  if (!d.seconds) {
    std::fprintf(stderr, "strata site %s: --since: %s\n", command, d.error.c_str());
    return std::nullopt;
  }
  return now - *d.seconds;
}

int month_start(std::int64_t t, int months_back, std::int64_t& out) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  int year = tm.tm_year + 1900;
  int month = tm.tm_mon + 1 - months_back;
  while (month < 1) {
    month += 12;
    --year;
  }
  out = *parse_utc_time(fmt::format("{:04}-{:02}-01", year, month));
  return 0;
}

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  ok = static_cast<bool>(in) || in.eof();
  return s.str();
}

// `report --by account|partition`: one line per group, or a JSON object keyed by it.
int print_slurm_totals(const std::map<std::string, job_totals>& groups, const std::string& by,
                       const std::string& format) {
  if (format == "json") {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, t] : groups)
      out[name] = {{"jobs", t.jobs},
                   {"cpu_hours", t.cpu_time_s / 3600},
                   {"mpi_percent", t.cpu_time_s > 0 ? 100 * t.mpi_time_s / t.cpu_time_s : 0.0}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("%-24s %8s %12s %7s\n", by.c_str(), "jobs", "CPU hours", "MPI %");
  for (const auto& [name, t] : groups)
    std::printf("%-24s %8lld %12.3f %7.2f\n", name.empty() ? "(none)" : name.c_str(),
                static_cast<long long>(t.jobs), t.cpu_time_s / 3600,
                t.cpu_time_s > 0 ? 100 * t.mpi_time_s / t.cpu_time_s : 0);
  return 0;
}

} // namespace

int store_commands::run() const {
  const std::string url = db_.empty() ? default_db_url() : db_;
  try {
    if (synth_->parsed()) {
      synth_options o;
      o.count = count_;
      o.seed = seed_;
      o.users = users_;
      o.compact = !pretty_;
      o.mpi_t = synth_mpi_t_;
      bool bad = false;
      o.from = time_arg(from_, "--from", bad).value_or(0);
      o.to = time_arg(to_, "--to", bad).value_or(0);
      if (bad)
        return 2;
      std::unique_ptr<store> db;
      if (!db_.empty())
        db = store::open(db_);
      const synth_result r =
          db ? store_synth(o, *db) : write_synth(o, out_, ::geteuid() == 0 && !no_chown_);
      if (!r.error.empty()) {
        std::fprintf(stderr, "strata site synth: %s\n", r.error.c_str());
        return 1;
      }
      std::printf("synth: %lld records in %s\n", static_cast<long long>(r.written),
                  db ? db_.c_str() : out_.c_str());
      return 0;
    }
    if (ingest_->parsed()) {
      auto db = store::open(url);
      ingest_options o;
      o.spools = spools_;
      o.quarantine = quarantine_;
      o.batch = batch_;
      o.score = !no_regressions_;
      const ingest_summary s = ingest(*db, o);
      for (const std::string& p : s.problems)
        std::fprintf(stderr, "strata site ingest: %s\n", p.c_str());
      std::printf("%s\n", s.summary_line().c_str());
      return 0;
    }
    if (models_->parsed()) {
      model_options o;
      if (!user_.empty())
        o.owner = user_;
      if (!executable_.empty())
        o.executable = executable_;
      if (!since_.empty()) {
        const auto start = since_start(since_, "models", std::time(nullptr));
        if (!start)
          return 2;
        o.since = *start;
      }
      auto db = store::open(url);
      const std::vector<program_models> models = build_models(*db, o);
      const std::string text =
          format_ == "json" ? render_models_json(models) : render_models_text(models);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    if (mpi_t_->parsed())
      return run_mpi_t(url);
    if (report_->parsed()) {
      report_options o;
      const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
      bool bad = false;
      if (week_) {
        o.when.to = week_start(now);
        o.when.from = o.when.to - std::int64_t{7} * 86400;
        o.period_label = "week of " + format_utc_time(o.when.from, true);
      } else if (month_) {
        month_start(now, 0, o.when.to);
        month_start(now, 1, o.when.from);
        o.period_label = "month " + format_utc_time(o.when.from, true).substr(0, 7);
      } else if (!since_.empty()) {
        const auto start = since_start(since_, "report", now);
        if (!start)
          return 2;
        o.when = {*start, now + 1};
        o.period_label = "last " + since_;
      } else {
        o.when.from = time_arg(from_, "--from", bad).value_or(0);
        o.when.to = time_arg(to_, "--to", bad).value_or(now + 1);
        o.period_label =
            format_utc_time(o.when.from, true) + " to " + format_utc_time(o.when.to, true);
      }
      if (bad)
        return 2;
      if (o.when.to <= o.when.from) {
        std::fprintf(stderr,
                     "strata site report: the period is empty (--to is not after --from)\n");
        return 2;
      }
      if (!user_.empty())
        o.user = user_;
      o.site_part = !users_only_ && format_ != "mail";
      o.critical_mpi_percent = critical_;
      o.machine_cores = cores_;
      if (!model_.empty()) {
        bool ok = false;
        const std::string text = read_file(model_, ok);
        auto parsed = model::read_model(text, model::model_parts::routines);
        if (!ok || !parsed.ok()) {
          std::fprintf(stderr, "strata site report: %s: %s\n", model_.c_str(),
                       ok ? parsed.error.c_str() : "cannot read");
          return 2;
        }
        o.model = *parsed.model;
      }
      auto db = store::open(url);
      if (!by_.empty())
        return print_slurm_totals(slurm_totals(*db, o.when, by_ == "partition"), by_, format_);
      const report r = build_report(*db, o);
      if (format_ == "mail") {
        mail_options m;
        m.outbox = outbox_;
        m.sendmail = sendmail_;
        m.from = mail_from_;
        m.domain = mail_domain_;
        const mail_result sent = send_mails(r, m);
        for (const std::string& p : sent.problems)
          std::fprintf(stderr, "strata site report: mail to %s\n", p.c_str());
        std::printf("mail: %d sent%s%s\n", sent.sent, outbox_.empty() ? "" : " to ",
                    outbox_.c_str());
        return sent.problems.empty() ? 0 : 1;
      }
      const std::string text = format_ == "html"   ? render_html(r)
                               : format_ == "json" ? render_json(r)
                                                   : render_text(r);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
  } catch (const store_error& e) {
    std::fprintf(stderr, "strata site: %s\n", e.what());
    return 2;
  }
  return 2;
}

int store_commands::run_mpi_t(const std::string& url) const {
  mpi_t_query q;
  if (!variable_.empty())
    q.name = variable_;
  if (!user_.empty())
    q.owner = user_;
  if (!executable_.empty())
    q.executable = executable_;
  q.all = all_variables_;
  q.listed_jobs = listed_jobs_;
  if (!since_.empty()) {
    q.since = since_start(since_, "mpi-t", std::time(nullptr));
    if (!q.since)
      return 2;
  }
  auto db = store::open(url);
  const mpi_t_summary s = query_mpi_t(*db, q);
  if (q.name && s.cvars.empty() && s.pvars.empty()) {
    std::fprintf(stderr,
                 "strata site mpi-t: no MPI_T variable named '%s' in the %lld chosen job%s "
                 "that carry MPI_T (names as `strata report` shows them)\n",
                 q.name->c_str(), static_cast<long long>(s.jobs), s.jobs == 1 ? "" : "s");
    return 1;
  }
  const std::string text = format_ == "json" ? render_mpi_t_json(s) : render_mpi_t_text(s, q);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

} // namespace strata::site
