#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/ingest.hpp"
#include "site/mail.hpp"
#include "site/parse.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/store_test_fixture.hpp"
#include "site/synth.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <zlib.h>

namespace strata::site {
namespace {

using namespace store_testing;

TEST_F(StoreBackend, SearchByExecutableAndRecordIdAfterMigrationFromVersion5) {
  auto s = store::open(url_);
  const std::int64_t base = *parse_utc_time("2025-06-09");
  const period days{base, base + 2 * 86400}; // the tests' jobs (PostgreSQL: one database)
  std::vector<stored_job> before = synth_jobs(120, base, base + 86400);
  s->insert(before);
  s->execute("DROP TABLE executables; DROP INDEX jobs_by_executable; DROP INDEX jobs_record_id; "
             "CREATE INDEX jobs_owner_by_mpi ON jobs (owner, mpi_percent, end_time, cpu_time_s, "
             "ranks, language); "
             "CREATE INDEX jobs_owner_by_cpu ON jobs (owner, cpu_time_s, end_time, mpi_percent, "
             "ranks, language); "
             "CREATE INDEX jobs_owner_by_ranks ON jobs (owner, ranks, end_time, mpi_percent, "
             "cpu_time_s, language); " +
             std::string(drop_version_8) + drop_version_9 +
             "DELETE FROM schema_version WHERE version >= 6");
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  // After the migration: a program no job had before, and record ids of another scheme.
  std::vector<stored_job> after = synth_jobs(40, base + 86400, base + 2 * 86400);
  for (size_t i = 0; i < after.size(); ++i) {
    after[i].job.executable = "/opt/site/bin/solver-" + std::to_string(i % 3);
    after[i].job.record_id = "pbs." + std::to_string(7000 + i) + ".head";
    after[i].job.job_key = after[i].job.record_id + "@x";
  }
  s->insert(after);
  std::vector<job_row> all;
  for (const auto* part : {&before, &after})
    for (const stored_job& j : *part)
      all.push_back(j.job);
  for (const std::string text : {"app3", ".f90x", "/bin/", "solver-1", "synth:11:4", "pbs.701",
                                 "pbs.7012.head", "7012", ".head", "no-such-thing"}) {
    std::multiset<std::string> expected;
    for (const job_row& j : all)
      if (j.executable.find(text) != std::string::npos || j.record_id.starts_with(text))
        expected.insert(j.job_key);
    job_filter f;
    f.when = days;
    f.text = text;
    f.limit = 1000;
    for (const std::int64_t threshold : {list_plan_threshold, std::int64_t{0}, INT64_MAX}) {
      s->set_list_plan_threshold(threshold);
      for (const job_order order : {job_order::end_desc, job_order::cpu_time_desc}) {
        f.order = order;
        std::multiset<std::string> found;
        for (const job_row& j : jobs(*s, f))
          found.insert(j.job_key);
        EXPECT_EQ(found, expected) << text << " threshold " << threshold;
      }
    }
    EXPECT_EQ(count_jobs(*s, f), static_cast<std::int64_t>(expected.size())) << text;
  }
  // "7012" and ".head" are inside record ids, not at their start: not found.
  job_filter inside;
  inside.when = days;
  inside.text = "7012";
  EXPECT_EQ(count_jobs(*s, inside), 0);
}

// A store of version 6 (an index on job_routines' end_time) is migrated to 7, which drops it:
// the routines of the partial days at a period's ends, found through their jobs since, sum to
// what the jobs hold, for the site and for one owner, before and after the migration.
TEST_F(StoreBackend, SearchOverManyExecutables) {
  auto s = store::open(url_);
  const std::int64_t base = *parse_utc_time("2025-07-07");
  std::vector<stored_job> jobs = synth_jobs(1005, base, base + 86400);
  for (size_t i = 0; i < jobs.size(); ++i)
    jobs[i].job.executable = "/scratch/run-" + std::to_string(i) + "/prog";
  s->insert(jobs);
  job_filter f;
  f.when = period{base, base + 86400};
  f.text = "/run-";
  f.limit = 2000;
  EXPECT_EQ(site::jobs(*s, f).size(), 1005u);
  EXPECT_EQ(count_jobs(*s, f), 1005);
  f.text = "/run-100";
  f.owner = jobs[1000].job.owner;
  std::int64_t expected = 0;
  for (const stored_job& j : jobs)
    expected += j.job.owner == *f.owner && j.job.executable.find("/run-100") != std::string::npos;
  EXPECT_EQ(static_cast<std::int64_t>(site::jobs(*s, f).size()), expected);
  EXPECT_GE(expected, 1);
}

// Every filter and order of the jobs list (two-step query: ids from an index, then rows)
// against filtering and sorting all rows here.
TEST_F(StoreBackend, JobListsFilterSortAndPage) {
  auto s = store::open(url_);
  const std::int64_t base = *parse_utc_time("2025-05-12");
  s->insert(synth_jobs(300, base, base + 6 * 86400));
  const period days{base, base + 6 * 86400}; // the tests' jobs (PostgreSQL: one database)
  job_filter everything;
  everything.when = days;
  everything.limit = 100000;
  const std::vector<job_row> all = jobs(*s, everything);
  ASSERT_EQ(all.size(), 300u);

  std::vector<job_filter> filters(9);
  filters[1].owner = "anna00"; // the busiest synthetic user
  filters[2].language = "Fortran";
  filters[3].min_mpi_percent = 15;
  filters[4].min_ranks = 8;
  filters[4].max_ranks = 100;
  filters[5].when = period{base + 86400, base + 3 * 86400 + 5};
  filters[6].text = "synth:11:1"; // record ids 1, 10-19, 100-199 (a prefix)
  filters[7].text = ".f90x";      // Fortran executables
  filters[8].owner = "anna00";
  filters[8].min_mpi_percent = 10;
  filters[8].language = "C/C++";
  filters[8].when = period{base, base + 5 * 86400};
  for (job_filter f : filters) {
    if (!f.when)
      f.when = days;
    for (const job_order order :
         {job_order::end_desc, job_order::end_asc, job_order::mpi_percent_desc,
          job_order::cpu_time_desc, job_order::ranks_desc})
      for (const std::int64_t offset : {0, 7, 1000}) {
        std::vector<job_row> expected;
        for (const job_row& j : all)
          if ((!f.owner || j.owner == *f.owner) && (!f.language || j.language == *f.language) &&
              (!f.min_mpi_percent || j.mpi_percent > *f.min_mpi_percent) &&
              (!f.min_ranks || j.ranks >= *f.min_ranks) &&
              (!f.max_ranks || j.ranks <= *f.max_ranks) &&
              (!f.when || (j.end_time >= f.when->from && j.end_time < f.when->to)) &&
              (!f.text || j.executable.find(*f.text) != std::string::npos ||
               j.record_id.starts_with(*f.text)))
            expected.push_back(j);
        auto key = [order](const job_row& j) {
          switch (order) {
          case job_order::mpi_percent_desc:
            return j.mpi_percent;
          case job_order::cpu_time_desc:
            return j.cpu_time_s;
          case job_order::ranks_desc:
            return static_cast<double>(j.ranks);
          default:
            return static_cast<double>(j.end_time);
          }
        };
        std::sort(expected.begin(), expected.end(), [&](const job_row& a, const job_row& b) {
          if (order == job_order::end_asc)
            return a.end_time != b.end_time ? a.end_time < b.end_time : a.job_id < b.job_id;
          if (key(a) != key(b))
            return key(a) > key(b);
          return a.end_time != b.end_time ? a.end_time > b.end_time : a.job_id > b.job_id;
        });
        EXPECT_FALSE(expected.empty());
        f.order = order;
        f.limit = 9;
        f.offset = offset;
        std::vector<job_row> page(
            expected.begin() +
                std::min<std::ptrdiff_t>(offset, static_cast<std::ptrdiff_t>(expected.size())),
            expected.begin() +
                std::min<std::ptrdiff_t>(offset + 9, static_cast<std::ptrdiff_t>(expected.size())));
        // Each way of reading a page (store.cpp, list_plan): as the count chooses, always
        // by the sort order's index, always by a filter's index.
        for (const std::int64_t threshold : {list_plan_threshold, std::int64_t{0}, INT64_MAX}) {
          s->set_list_plan_threshold(threshold);
          EXPECT_EQ(ids_of(jobs(*s, f)), ids_of(page))
              << "order " << static_cast<int>(order) << " offset " << offset << " threshold "
              << threshold;
        }
        s->set_list_plan_threshold(list_plan_threshold);
        const job_page both = jobs_and_count(*s, f, 10);
        EXPECT_EQ(ids_of(both.rows), ids_of(page));
        EXPECT_EQ(both.matches,
                  std::min<std::int64_t>(10, static_cast<std::int64_t>(expected.size())));
        EXPECT_EQ(count_jobs(*s, f), static_cast<std::int64_t>(expected.size()));
      }
  }
}

} // namespace
} // namespace strata::site
