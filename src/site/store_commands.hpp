// `strata site ...`: the command-line side of the site library (ingest, report, models, mpi-t,
// synth).
// commands.cpp adds them, with the web interface's, under `strata site` (add_site_commands).
#pragma once

#include "common/wing_commands.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

// The store used when --db is not given: $STRATA_SITE_DB, else the install's default.
std::string default_db_url();

class store_commands {
public:
  explicit store_commands(CLI::App& site);
  int run() const; // after parsing: runs the chosen subcommand, returns the exit status

private:
  int run_mpi_t(const std::string& url) const;

private:
  CLI::App* ingest_ = nullptr;
  CLI::App* report_ = nullptr;
  CLI::App* synth_ = nullptr;
  CLI::App* models_ = nullptr;
  CLI::App* mpi_t_ = nullptr;
  std::string db_;
  // ingest
  std::vector<std::string> spools_;
  std::string quarantine_;
  std::size_t batch_ = 5000;
  bool no_regressions_ = false;
  // report
  bool week_ = false, month_ = false;
  std::string since_, from_, to_, user_, format_ = "text", model_, outbox_, sendmail_;
  std::string mail_from_, mail_domain_;
  double critical_ = 15;
  std::optional<double> cores_;
  bool users_only_ = false;
  std::string by_; // report: "account" or "partition"
  // models (and --user, --since, --format above)
  std::string executable_;
  // mpi-t (and --user, --since, --executable, --format above)
  std::string variable_;
  bool all_variables_ = false;
  std::size_t listed_jobs_ = 10;
  // synth
  std::int64_t count_ = 1000;
  std::uint64_t seed_ = 1;
  int users_ = 60;
  std::string out_;
  bool no_chown_ = false, pretty_ = false, synth_mpi_t_ = false;
};

} // namespace strata::site
