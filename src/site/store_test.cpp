#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/ingest.hpp"
#include "site/job_pairs.hpp"
#include "site/mail.hpp"
#include "site/parse.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/store_test_fixture.hpp"
#include "site/synth.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <zlib.h>

namespace strata::site {
namespace {

using namespace store_testing;

TEST_F(StoreBackend, PostgresqlStoresHaveNoForeignKeys) {
  const auto s = store::open(url_);
  if (s->kind() != backend::postgresql)
    GTEST_SKIP() << "SQLite keeps its foreign keys";
  std::int64_t n = -1;
  s->query("SELECT COUNT(*) FROM information_schema.table_constraints WHERE constraint_type = "
           "'FOREIGN KEY' AND table_name IN ('job_routines', 'job_records')",
           {}, [&](const store::row& r) { n = r.i64(0); });
  EXPECT_EQ(n, 0); // migration 3: checking them per row cost more than the inserts
}

TEST_F(StoreBackend, PostgresqlKeepsRecordsInTheirRows) {
  if (parse_db_url(url_).url->kind != backend::postgresql)
    GTEST_SKIP() << "SQLite keeps every value in its row";
  // A store of its own (a schema of the server's database), which the other tests do not see.
  store::open(url_)->execute("DROP SCHEMA IF EXISTS in_row_test CASCADE; CREATE SCHEMA "
                             "in_row_test");
  const std::string url = url_ + (url_.find('?') == std::string::npos ? "?" : "&") +
                          "options=-csearch_path%3Din_row_test";
  const auto s = store::open(url);
  synth_options o;
  o.seed = 23;
  o.mpi_t = true; // a record of some 18 KB, 4 KB deflated: over the server's 2 KB
  std::vector<stored_job> jobs;
  for (int i = 0; i < 4; ++i) {
    record::job_record r = synth_record(o, i);
    r.job.id = "in-row:" + std::to_string(i);
    jobs.push_back(
        make_stored_job(r, record::to_json(r), static_cast<std::int64_t>(r.job.uid), r.job.user));
    ASSERT_GT(pack_record(jobs.back().record_json).size(), 3000u);
  }
  std::string toast;
  s->query("SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = "
           "'job_records'::regclass",
           {}, [&](const store::row& r) { toast = r.text(0); });
  const auto toasted = [&] {
    std::int64_t n = -1;
    s->query("SELECT COUNT(DISTINCT chunk_id) FROM " + toast, {},
             [&](const store::row& r) { n = r.i64(0); });
    return n;
  };
  const auto tuned = [&] {
    std::string storage;
    s->query("SELECT attstorage FROM pg_attribute WHERE attrelid = 'job_records'::regclass AND "
             "attname = 'record'",
             {}, [&](const store::row& r) { storage = r.text(0); });
    return storage;
  };
  ASSERT_EQ(s->insert({jobs[0]}).inserted, 1); // a connection's first write sets the storage
  EXPECT_EQ(tuned(), "e");
  const std::int64_t before = toasted();
  // As in a store written by an older strata, on a connection that has checked already: the
  // record goes to the TOAST table.
  s->execute("ALTER TABLE job_records ALTER COLUMN record SET STORAGE EXTENDED, RESET "
             "(toast_tuple_target)");
  ASSERT_EQ(s->insert({jobs[1]}).inserted, 1);
  EXPECT_EQ(toasted(), before + 1);
  // Not while a reader holds the table: the write goes on without it, at once.
  const auto reader = store::open(url);
  reader->execute("BEGIN; LOCK TABLE job_records IN ACCESS SHARE MODE");
  std::future<std::int64_t> written =
      std::async(std::launch::async, [&] { return store::open(url)->insert({jobs[2]}).inserted; });
  const bool waited = written.wait_for(std::chrono::seconds(60)) == std::future_status::timeout;
  reader->execute("ROLLBACK"); // lets a waiting write go on, so that the test ends either way
  ASSERT_FALSE(waited) << "the write waited for the reader's lock";
  ASSERT_EQ(written.get(), 1);
  EXPECT_EQ(tuned(), "x");
  EXPECT_EQ(toasted(), before + 2);
  // A new connection sets it again at its first write: the record stays in its row.
  ASSERT_EQ(store::open(url)->insert({jobs[3]}).inserted, 1);
  EXPECT_EQ(tuned(), "e");
  EXPECT_EQ(toasted(), before + 2);
  for (const stored_job& j : jobs) {
    const std::optional<stored_job> back = s->job_by_key(j.job.job_key);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->record_json, j.record_json);
  }
  s->execute("DROP SCHEMA in_row_test CASCADE");
}

TEST_F(StoreBackend, MigratesInsertsOnceAndQueries) {
  auto s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  stored_job a = make_stored_job(sample_, sample_text_, 1000, "alice");
  EXPECT_FALSE(a.job.owner_mismatch);
  EXPECT_EQ(a.job.job_key, "slurm:81234@2026-11-22T01:27:18Z");
  EXPECT_DOUBLE_EQ(a.job.cpu_time_s, 12.91 * 4);
  record::job_record other = sample_;
  other.job.id = "slurm:81235";
  other.job.end = "2026-11-23T00:00:00Z";
  other.job.mpi_percent = 40;
  stored_job b = make_stored_job(other, record::to_json(other), 2000, "bob");
  EXPECT_TRUE(b.job.owner_mismatch); // the record claims uid 1000
  auto r = s->insert({a, b, a});
  EXPECT_EQ(r.inserted, 2);
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_EQ(r.was_new, (std::vector<bool>{true, true, false}));
  r = s->insert({a});
  EXPECT_EQ(r.inserted, 0);

  // A reopened store keeps its version and does not migrate again.
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);

  job_filter all;
  EXPECT_EQ(count_jobs(*s, all), 2);
  auto rows = jobs(*s, all);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].owner, "bob"); // latest end first
  EXPECT_EQ(rows[0].claimed_user, "alice");
  job_filter bobs;
  bobs.owner = "bob";
  EXPECT_EQ(count_jobs(*s, bobs), 1);
  job_filter text;
  text.text = "stencil";
  EXPECT_EQ(count_jobs(*s, text), 2);
  text.text = "nothing-like-this";
  EXPECT_EQ(count_jobs(*s, text), 0);
  job_filter critical;
  critical.min_mpi_percent = 15;
  EXPECT_EQ(jobs(*s, critical).at(0).record_id, "slurm:81235");

  auto one = s->job(rows[1].job_id);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->record_json, sample_text_);
  EXPECT_EQ(one->routines.size(), sample_.routines.size());
  EXPECT_TRUE(s->job_by_key(a.job.job_key));
  EXPECT_FALSE(s->job(999999));

  const period all_time{0, std::int64_t{1} << 40};
  EXPECT_EQ(owners(*s, all_time), (std::vector<std::string>{"alice", "bob"}));
  const job_totals t = totals(*s, all_time, std::nullopt);
  EXPECT_EQ(t.jobs, 2);
  EXPECT_EQ(t.pes, 8);
  EXPECT_DOUBLE_EQ(t.mpi_time_s, 2 * 6.110008);
  EXPECT_EQ(totals(*s, all_time, std::string("alice")).jobs, 1);

  auto sums = routine_sums(*s, all_time, std::nullopt, false);
  ASSERT_EQ(sums.size(), sample_.routines.size());
  EXPECT_EQ(sums[0].routine, "MPI_Allreduce");
  EXPECT_EQ(sums[0].calls, 1600);
  EXPECT_EQ(sums[0].jobs, 2);
  auto by_owner = routine_sums(*s, all_time, std::nullopt, true);
  EXPECT_EQ(by_owner.size(), 2 * sample_.routines.size());

  auto classes = job_classes(*s, all_time, 15, std::nullopt);
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[1].critical_jobs, 1);
  EXPECT_EQ(classes[0].group_jobs[static_cast<int>(routine_group::collective)], 1);
  EXPECT_EQ(classes[0].group_jobs[static_cast<int>(routine_group::topology)], 0);

  auto weeks = owner_weeks(*s, all_time, std::nullopt);
  ASSERT_EQ(weeks.size(), 2u);
  EXPECT_EQ(weeks[0].week_start, *parse_utc_time("2026-11-16"));
  EXPECT_EQ(weeks[1].week_start, *parse_utc_time("2026-11-23"));
}

// The day tables and the job rows must give the same sums, whichever way a period falls on
// day boundaries.
TEST_F(StoreBackend, DayTablesAgreeWithJobRows) {
  auto s = store::open(url_);
  std::vector<stored_job> jobs;
  const std::int64_t base = *parse_utc_time("2026-11-10");
  for (int i = 0; i < 40; ++i) {
    record::job_record r = sample_;
    r.job.id = "t:" + std::to_string(i);
    r.job.end = format_utc_time(base + i * 20000 + 7); // spread over about 9 days
    r.job.ranks = r.job.ranks_reported = static_cast<std::uint64_t>(1 + i % 5);
    r.job.wall_time_s = 10.0 + i;
    r.job.language = i % 3 == 0 ? "Fortran" : "C/C++";
    r.job.mpi_percent = i;
    for (auto& routine : r.routines)
      routine.per_rank.calls.max_rank = routine.per_rank.time_s.max_rank = 0;
    r.job.mpi_percent_by_rank.min_rank = r.job.mpi_percent_by_rank.max_rank = 0;
    jobs.push_back(
        make_stored_job(r, record::to_json(r), 1000 + i % 3, "u" + std::to_string(i % 3)));
  }
  // In two batches, so that the second adds to day rows the first created.
  s->insert(std::vector<stored_job>(jobs.begin(), jobs.begin() + 25));
  s->insert(std::vector<stored_job>(jobs.begin() + 20, jobs.end()));
  for (const period p : {period{base, base + 9 * 86400},            // whole days only
                         period{base + 3600, base + 8 * 86400 + 5}, // partial ends
                         period{base + 100, base + 50000}}) {       // within one day... and a bit
    job_totals from_rows;
    int expected_jobs = 0;
    for (const stored_job& j : jobs) {
      if (j.job.end_time < p.from || j.job.end_time >= p.to)
        continue;
      ++expected_jobs;
      from_rows.cpu_time_s += j.job.cpu_time_s;
      from_rows.mpi_calls += j.job.mpi_calls;
      from_rows.pes += j.job.ranks;
    }
    const job_totals t = totals(*s, p, std::nullopt);
    EXPECT_EQ(t.jobs, expected_jobs);
    EXPECT_EQ(t.pes, from_rows.pes);
    EXPECT_NEAR(t.cpu_time_s, from_rows.cpu_time_s, 1e-6);
    EXPECT_EQ(t.mpi_calls, from_rows.mpi_calls);
    std::int64_t class_jobs = 0, critical = 0;
    for (const job_class_row& c : job_classes(*s, p, 20, std::nullopt)) {
      class_jobs += c.totals.jobs;
      critical += c.critical_jobs;
    }
    EXPECT_EQ(class_jobs, expected_jobs);
    job_filter over20;
    over20.when = p;
    over20.min_mpi_percent = 20;
    EXPECT_EQ(critical, count_jobs(*s, over20));
    std::int64_t send_calls = 0;
    for (const owner_routine_row& r : routine_sums(*s, p, std::nullopt, true))
      if (r.routine == "MPI_Send")
        send_calls += r.calls;
    EXPECT_EQ(send_calls, 4000 * expected_jobs);
    std::int64_t week_jobs = 0;
    for (const owner_week_row& w : owner_weeks(*s, p, std::string("u1")))
      week_jobs += w.totals.jobs;
    EXPECT_EQ(week_jobs, totals(*s, p, std::string("u1")).jobs);
  }
}

void expect_same_lines(const std::vector<breakdown_line>& a, const std::vector<breakdown_line>& b,
                       const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].label, b[i].label) << what;
    EXPECT_EQ(a[i].jobs, b[i].jobs) << what << " " << a[i].label;
    EXPECT_NEAR(a[i].cpu_time_s, b[i].cpu_time_s, 1e-9 * (1 + b[i].cpu_time_s)) << what;
    EXPECT_NEAR(a[i].mpi_time_s, b[i].mpi_time_s, 1e-9 * (1 + b[i].mpi_time_s)) << what;
    EXPECT_NEAR(a[i].cpu_percent, b[i].cpu_percent, 1e-9) << what;
    EXPECT_NEAR(a[i].jobs_percent, b[i].jobs_percent, 1e-9) << what;
    EXPECT_NEAR(a[i].mpi_percent, b[i].mpi_percent, 1e-9) << what;
  }
}

void expect_same_site(const site_report& f, const site_report& o) {
  EXPECT_EQ(f.totals.jobs, o.totals.jobs);
  EXPECT_EQ(f.totals.pes, o.totals.pes);
  EXPECT_EQ(f.totals.mpi_calls, o.totals.mpi_calls);
  EXPECT_NEAR(static_cast<double>(f.totals.mpi_bytes), static_cast<double>(o.totals.mpi_bytes),
              1e-12 * static_cast<double>(o.totals.mpi_bytes));
  EXPECT_NEAR(f.totals.cpu_time_s, o.totals.cpu_time_s, 1e-9 * o.totals.cpu_time_s);
  EXPECT_NEAR(f.totals.mpi_time_s, o.totals.mpi_time_s, 1e-9 * o.totals.mpi_time_s);
  EXPECT_EQ(f.users, o.users);
  EXPECT_EQ(f.routines_used, o.routines_used);
  EXPECT_EQ(f.critical_job_count, o.critical_job_count);
  // The same latest critical jobs (jobs that end in the same second may come in any order).
  std::vector<std::int64_t> mine = ids_of(f.critical_jobs), theirs = ids_of(o.critical_jobs);
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(mine, theirs);
  expect_same_lines(f.by_size, o.by_size, "by_size");
  expect_same_lines(f.by_cpu_class, o.by_cpu_class, "by_cpu_class");
  expect_same_lines(f.by_cpu_class_c, o.by_cpu_class_c, "by_cpu_class_c");
  expect_same_lines(f.by_cpu_class_fortran, o.by_cpu_class_fortran, "by_cpu_class_fortran");
  expect_same_lines(f.by_user, o.by_user, "by_user");
  ASSERT_EQ(f.routines.size(), o.routines.size());
  for (size_t i = 0; i < f.routines.size(); ++i) {
    EXPECT_EQ(f.routines[i].name, o.routines[i].name);
    EXPECT_EQ(f.routines[i].jobs, o.routines[i].jobs);
    EXPECT_EQ(f.routines[i].calls, o.routines[i].calls);
    // Sums past 2^53 are done in double precision: equal to the last bits of their order.
    EXPECT_NEAR(static_cast<double>(f.routines[i].bytes), static_cast<double>(o.routines[i].bytes),
                1e-12 * static_cast<double>(o.routines[i].bytes));
    EXPECT_NEAR(f.routines[i].time_s, o.routines[i].time_s, 1e-9 * (1 + o.routines[i].time_s));
  }
  ASSERT_EQ(f.languages.size(), o.languages.size());
  for (size_t i = 0; i < f.languages.size(); ++i) {
    EXPECT_EQ(f.languages[i].language, o.languages[i].language);
    EXPECT_EQ(f.languages[i].totals.jobs, o.languages[i].totals.jobs);
  }
  ASSERT_EQ(f.groups.size(), o.groups.size());
  for (size_t i = 0; i < f.groups.size(); ++i) {
    EXPECT_NEAR(f.groups[i].jobs_percent, o.groups[i].jobs_percent, 1e-9) << f.groups[i].name;
    EXPECT_NEAR(f.groups[i].cpu_weighted_percent, o.groups[i].cpu_weighted_percent, 1e-9);
  }
}

// The web's site page (the site part alone, whole days: day tables and day_mpi) gives the full
// report's figures, and those of a period with partial days read from the job rows.
TEST_F(StoreBackend, SitePageFromDayTablesEqualsFullReport) {
  auto s = store::open(url_);
  // Days of their own: on PostgreSQL the tests share one database.
  const std::int64_t base = *parse_utc_time("2025-03-10");
  std::vector<stored_job> jobs = synth_jobs(240, base + 1, base + 3 * 86400 - 1);
  s->insert(std::vector<stored_job>(jobs.begin(), jobs.begin() + 150));
  s->insert(std::vector<stored_job>(jobs.begin() + 100, jobs.end())); // overlap: duplicates

  report_options page;
  page.when = {base, base + 3 * 86400};
  page.user_parts = false;
  const report fast = build_report(*s, page);
  report_options full = page;
  full.user_parts = true;
  const report slow = build_report(*s, full);
  report_options partial = full; // the same jobs, read from job rows at both ends
  partial.when = {base + 1, base + 3 * 86400 - 1};
  const report rows = build_report(*s, partial);
  ASSERT_TRUE(fast.site && slow.site && rows.site);
  EXPECT_TRUE(fast.users.empty());
  EXPECT_EQ(slow.users.size(), 5u);

  // Known figures, from the jobs themselves.
  std::int64_t critical = 0;
  std::map<std::string, std::int64_t> per_owner;
  std::vector<double> critical_mpi_times; // the list's order: most MPI core-hours first
  for (const stored_job& j : jobs) {
    ++per_owner[j.job.owner];
    if (j.job.mpi_percent > 15) {
      ++critical;
      critical_mpi_times.push_back(j.job.mpi_time_s);
    }
  }
  const site_report& f = *fast.site;
  EXPECT_EQ(f.totals.jobs, 240);
  EXPECT_EQ(f.users, 5);
  EXPECT_EQ(f.critical_job_count, critical);
  EXPECT_GT(critical, 50); // the list is bounded, the count is not
  ASSERT_EQ(f.critical_jobs.size(), 50u);
  std::sort(critical_mpi_times.rbegin(), critical_mpi_times.rend());
  for (size_t i = 0; i < 50; ++i)
    EXPECT_DOUBLE_EQ(f.critical_jobs[i].mpi_time_s, critical_mpi_times[i]) << i;
  for (const breakdown_line& l : f.by_user)
    EXPECT_EQ(l.jobs, per_owner[l.label]) << l.label;

  for (const report* other : {&slow, &rows})
    expect_same_site(f, *other->site);
}

// count_critical from day_mpi (whole days, whole-number thresholds) and from job rows (the
// rest) against counting the rows; and a store made by schema version 3 gets the day tables of
// version 4 filled, giving the same site page.
TEST_F(StoreBackend, CriticalCountsFromDayBucketsAndAfterMigration) {
  auto s = store::open(url_);
  const std::int64_t base = *parse_utc_time("2025-04-14");
  const std::vector<stored_job> jobs = synth_jobs(180, base, base + 4 * 86400);
  s->insert(jobs);
  auto check = [&](store& db) {
    for (const period p : {period{base, base + 4 * 86400}, period{base + 86400, base + 2 * 86400},
                           period{base + 5000, base + 3 * 86400 + 7}, period{base, base + 100}})
      for (const double threshold : {0.0, 15.0, 15.5, 16.0, 20.0, 99.0, 100.0, -1.0, 150.0}) {
        std::int64_t expected = 0;
        for (const stored_job& j : jobs)
          expected +=
              j.job.end_time >= p.from && j.job.end_time < p.to && j.job.mpi_percent > threshold;
        EXPECT_EQ(count_critical(db, p, threshold), expected)
            << "threshold " << threshold << " from " << p.from - base;
      }
  };
  check(*s);
  EXPECT_EQ(mpi_bucket(15), 15);
  EXPECT_EQ(mpi_bucket(15.000001), 16);
  EXPECT_EQ(mpi_bucket(0), 0);
  EXPECT_EQ(mpi_bucket(-3), 0);
  EXPECT_EQ(mpi_bucket(100), 100);
  EXPECT_EQ(mpi_bucket(100.5), 101);

  report_options page;
  page.when = {base, base + 4 * 86400};
  page.user_parts = false;
  const report before = build_report(*s, page);
  ASSERT_TRUE(before.site);
  EXPECT_EQ(before.site->totals.jobs, 180);

  // Back to what version 3 had, then open: migration 4 runs and fills the new day tables from
  // the jobs and day_classes, migration 5 adds the per-owner list indexes, 6 drops them again
  // and adds the search's table and indexes.
  s->execute("DROP TABLE day_mpi; DROP TABLE day_owners; DROP TABLE day_shapes; "
             "DROP INDEX jobs_owner_list; DROP INDEX jobs_by_mpi; "
             "DROP INDEX jobs_by_cpu; DROP INDEX jobs_by_ranks; "
             "CREATE INDEX jobs_owner_end_time ON jobs (owner, end_time); DROP INDEX jobs_period; "
             "CREATE INDEX jobs_period ON jobs (end_time, mpi_percent, owner, language, ranks, "
             "cpu_class); "
             "DROP TABLE executables; DROP INDEX jobs_by_executable; DROP INDEX jobs_record_id; " +
             std::string(drop_version_8) + drop_version_9 +
             "DELETE FROM schema_version WHERE version >= 4");
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  check(*s);
  const report after = build_report(*s, page);
  ASSERT_TRUE(after.site);
  expect_same_site(*after.site, *before.site);
}

// A store of version 5 (per-owner sort indexes, no `executables`) is migrated to 6: searches
// find the jobs stored before and after it by a substring of their executable or a prefix of
// their record id, in every way of reading a page, and the count agrees.
TEST_F(StoreBackend, RoutineSumsOfPartialDaysAfterMigrationFromVersion6) {
  auto s = store::open(url_);
  const std::int64_t base = *parse_utc_time("2025-08-04");
  const std::vector<stored_job> jobs = synth_jobs(150, base, base + 3 * 86400);
  s->insert(jobs);
  const period p{base + 3600, base + 2 * 86400 + 7200}; // partial days at both ends
  using sums = std::map<std::pair<std::string, std::string>, std::pair<std::int64_t, std::int64_t>>;
  auto expected = [&](const std::optional<std::string>& owner) {
    sums out; // (owner, routine) -> (jobs, calls)
    for (const stored_job& j : jobs) {
      if (j.job.end_time < p.from || j.job.end_time >= p.to || (owner && j.job.owner != *owner))
        continue;
      for (const routine_row& r : j.routines) {
        auto& [n, calls] = out[{j.job.owner, r.routine}];
        ++n;
        calls += r.calls;
      }
    }
    return out;
  };
  auto stored = [&](store& db, const std::optional<std::string>& owner) {
    sums out;
    for (const owner_routine_row& r : routine_sums(db, p, owner, true))
      out[{r.owner, r.routine}] = {r.jobs, r.calls};
    return out;
  };
  const std::string one = jobs.front().job.owner;
  ASSERT_FALSE(expected(std::nullopt).empty());
  s->execute("CREATE INDEX job_routines_end_time ON job_routines (end_time); " +
             std::string(drop_version_8) + drop_version_9 +
             "DELETE FROM schema_version WHERE version >= 7");
  EXPECT_EQ(stored(*s, std::nullopt), expected(std::nullopt));
  s.reset();
  s = store::open(url_);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  std::int64_t indexes = -1;
  s->query(s->kind() == backend::sqlite
               ? "SELECT COUNT(*) FROM sqlite_master WHERE name = 'job_routines_end_time'"
               : "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'job_routines_end_time'",
           {}, [&](const store::row& r) { indexes = r.i64(0); });
  EXPECT_EQ(indexes, 0);
  EXPECT_EQ(stored(*s, std::nullopt), expected(std::nullopt));
  EXPECT_EQ(stored(*s, one), expected(one));
}

// What a store holds for the jobs that ended in [from, to), times relative to `from`: the jobs,
// their routines and records (there and not empty: their JSON holds the times), and the day
// tables' rows, one line each. Sums rounded to 12
// digits: two writers add a day row's parts in the order their transactions commit.
TEST_F(StoreBackend, BadUrlsAndFilesSayWhy) {
  EXPECT_THROW(store::open("nosuch://x"), store_error);
  try {
    store::open("sqlite:/proc/no/such/dir/site.db");
    FAIL();
  } catch (const store_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/site.db"), std::string::npos);
  }
}

// A migration a released strata has applied is never rewritten: a store made by that release
// must reach today's schema by the SQL it would have run. The day tables of migrations 1 and 4
// hold one pair of columns per routine group of that time, written out; a group added later
// adds its columns in a migration of its own. Pinned: FNV-1a of each migration's SQLite SQL.
TEST_F(StoreBackend, AppliedMigrationsNeverChange) {
  auto store = store::open("sqlite:" + (dir_ / "pinned.db").string());
  const auto fnv1a = [](std::string_view text) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : text)
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return h;
  };
  const std::uint64_t pinned[] = {
      17762210977416191018ULL, 805472441913174137ULL,   1846049006458406130ULL,
      6935066292756075219ULL,  11253595723536361735ULL, 1939783111810881003ULL,
      5001915358561043501ULL,  881657592039964358ULL,   11364681328949135678ULL,
      15576076753753389769ULL, 11882564890429325428ULL, 10168593772630028602ULL,
      17707348518935595590ULL, 3423102318135383698ULL,  9898742876444624662ULL};
  for (int version = 1; version <= static_cast<int>(std::size(pinned)); ++version)
    EXPECT_EQ(fnv1a(store->migration_sql(version)), pinned[version - 1])
        << "migration " << version << " changed:\n"
        << store->migration_sql(version);
  EXPECT_NE(store->migration_sql(4).find("g14_cpu DOUBLE PRECISION NOT NULL"), std::string::npos);
  EXPECT_EQ(store->migration_sql(4).find("g15_"), std::string::npos);
}

// Each job's pairs of ranks from its record (who sends how much to whom, each kind apart, a
// one-sided kind too), read
// back per pair with the kinds summed, heaviest first; a large job's left-out pairs; a record
// without the section stores none.
TEST_F(StoreBackend, KeepsEachJobsPairsOfRanks) {
  const auto s = store::open(url_);
  record::job_record whole = sample_, cut = sample_, none = sample_;
  whole.job.id = "pairs:whole";
  whole.communication.emplace();
  whole.communication->by_kind["point_to_point"] = {{0, 1, 100, 8000}, {2, 3, 3, 30}};
  whole.communication->by_kind["persistent"] = {{2, 3, 5, 160}};
  whole.communication->by_kind["put"] = {{2, 3, 6, 240}}; // one-sided: in by_kind alone
  whole.communication->pairs = {{0, 1, 100, 8000}, {2, 3, 8, 190}};
  cut.job.id = "pairs:cut";
  cut.communication.emplace();
  cut.communication->by_kind["sendrecv"] = {{1, 0, 4, 4000}};
  cut.communication->pairs = {{1, 0, 4, 4000}};
  cut.communication->unlisted = record::unlisted_pairs{7, 70, 7000};
  none.job.id = "pairs:none";
  std::vector<stored_job> jobs;
  for (const record::job_record* r : {&whole, &cut, &none})
    jobs.push_back(make_stored_job(*r, record::to_json(*r), 1000, "alice"));
  const insert_result inserted = s->insert(jobs);
  ASSERT_EQ(inserted.inserted, 3);

  const std::optional<job_partners> w = partners_of(*s, inserted.job_ids[0]);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->whole());
  ASSERT_EQ(w->pairs.size(), 2u);
  EXPECT_EQ(
      std::make_tuple(w->pairs[0].from, w->pairs[0].to, w->pairs[0].messages, w->pairs[0].bytes),
      std::make_tuple(0, 1, 100, 8000));
  EXPECT_EQ(
      std::make_tuple(w->pairs[1].from, w->pairs[1].to, w->pairs[1].messages, w->pairs[1].bytes),
      std::make_tuple(2, 3, 14, 430));
  EXPECT_EQ(w->pairs[1].bytes_by_kind,
            (std::map<std::string, std::int64_t>{
                {"persistent", 160}, {"point_to_point", 30}, {"put", 240}}));
  EXPECT_EQ(
      w->pairs[1].messages_by_kind,
      (std::map<std::string, std::int64_t>{{"persistent", 5}, {"point_to_point", 3}, {"put", 6}}));

  const std::optional<job_partners> c = partners_of(*s, inserted.job_ids[1]);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->whole());
  EXPECT_EQ(std::make_tuple(c->unlisted_pairs, c->unlisted_messages, c->unlisted_bytes),
            std::make_tuple(7, 70, 7000));
  ASSERT_EQ(c->pairs.size(), 1u);
  EXPECT_EQ(c->pairs[0].bytes_by_kind, (std::map<std::string, std::int64_t>{{"sendrecv", 4000}}));

  EXPECT_FALSE(partners_of(*s, inserted.job_ids[2]));
  EXPECT_TRUE(has_pairs(*s, inserted.job_ids[0]));
  EXPECT_TRUE(has_pairs(*s, inserted.job_ids[1]));
  EXPECT_FALSE(has_pairs(*s, inserted.job_ids[2]));
}

} // namespace
} // namespace strata::site
