// The store tests' fixture: each test runs against a fresh SQLite file, or against the
// PostgreSQL server named by STRATA_SITE_TEST_POSTGRESQL (tests/integration/test_site.py starts
// one and runs the StoreBackend tests on it), and the helpers several test files share.
#pragma once

#include "profiler/record/record.hpp"
#include "site/store.hpp"
#include "site/synth.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace strata::site::store_testing {

// What migrations 12 to 16 added (the Slurm columns, the exit code, each job's pairs of ranks,
// the index of failed jobs, each job's collectives): a store taken back before them drops them.
inline constexpr const char* drop_version_12 =
    "DROP TABLE job_collectives; DROP TABLE job_collective_members; "
    "DROP TABLE job_collectives_elsewhere; "
    "DROP TABLE job_pairs; DROP TABLE job_unlisted_pairs; "
    "ALTER TABLE jobs DROP COLUMN slurm_account; ALTER TABLE jobs DROP COLUMN slurm_partition; "
    "DROP INDEX jobs_failed; ALTER TABLE jobs DROP COLUMN exit_code; ";
// What migrations 8 and 9 added (programs and the store's health; the MPI_T index, as
// version 10 keeps it): tests that take a store back to an older version drop it first, with
// the columns, tables and index of versions 12 to 16.
inline constexpr const char* drop_version_9 =
    "DROP TABLE job_collectives; DROP TABLE job_collective_members; "
    "DROP TABLE job_collectives_elsewhere; "
    "DROP TABLE job_pairs; DROP TABLE job_unlisted_pairs; "
    "ALTER TABLE jobs DROP COLUMN slurm_account; ALTER TABLE jobs DROP COLUMN slurm_partition; "
    "DROP INDEX jobs_failed; ALTER TABLE jobs DROP COLUMN exit_code; "
    "DROP TABLE mpi_t_settings; DROP TABLE job_mpi_t; DROP TABLE job_pvars; ";
inline constexpr const char* drop_version_8 =
    "DROP TABLE programs; DROP TABLE program_runs; DROP TABLE regressions; DROP TABLE ingests; ";

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class StoreBackend : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("strata_site_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    url_ = "sqlite:" + (dir_ / "sub" / "site.db").string();
    // The same tests against a PostgreSQL server when one is given (tests/integration starts
    // one for the site suite and runs this binary with it).
    if (const char* pg = std::getenv("STRATA_SITE_TEST_POSTGRESQL"); pg != nullptr && *pg)
      url_ = pg;
    const std::string text = read_file(std::string(STRATA_RECORD_TESTDATA) + "/sample.json");
    auto parsed = record::parse_record(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    sample_ = *parsed.record;
    sample_text_ = text;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string url_;
  record::job_record sample_;
  std::string sample_text_;
};

// Synthetic jobs over [from, to) with end times and MPI % set for the tests below: MPI %
// on and around whole-number thresholds, and jobs on day boundaries.
inline std::vector<stored_job> synth_jobs(int count, std::int64_t from, std::int64_t to) {
  synth_options o;
  o.seed = 11;
  o.users = 5;
  o.from = from;
  o.to = to;
  std::vector<stored_job> jobs;
  for (int i = 0; i < count; ++i) {
    const record::job_record r = synth_record(o, i);
    stored_job j =
        make_stored_job(r, record::to_json(r), static_cast<std::int64_t>(r.job.uid), r.job.user);
    const double special[] = {0, 15, 15.000001, 14.999999, 100, 16, 20, 20.5, 120};
    if (i % 4 == 0)
      j.job.mpi_percent = special[static_cast<size_t>(i / 4) % std::size(special)];
    if (i % 13 == 0)
      j.job.end_time = from + (j.job.end_time - from) / 86400 * 86400; // midnight exactly
    jobs.push_back(std::move(j));
  }
  return jobs;
}

inline std::vector<std::int64_t> ids_of(const std::vector<job_row>& rows) {
  std::vector<std::int64_t> ids;
  ids.reserve(rows.size());
  for (const job_row& r : rows)
    ids.push_back(r.job_id);
  return ids;
}

} // namespace strata::site::store_testing
