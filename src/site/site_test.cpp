#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/ingest.hpp"
#include "site/mail.hpp"
#include "site/parse.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
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

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SiteParse, DatabaseUrls) {
  auto a = parse_db_url("sqlite:/var/lib/strata/site.db");
  ASSERT_TRUE(a.url);
  EXPECT_EQ(a.url->kind, backend::sqlite);
  EXPECT_EQ(a.url->target, "/var/lib/strata/site.db");
  EXPECT_EQ(parse_db_url("sqlite:///tmp/x.db").url->target, "/tmp/x.db");
  auto p = parse_db_url("postgresql://strata@db.example/site");
  ASSERT_TRUE(p.url);
  EXPECT_EQ(p.url->kind, backend::postgresql);
  EXPECT_EQ(p.url->target, "postgresql://strata@db.example/site");
  EXPECT_TRUE(parse_db_url("postgres://h/d").url);
  EXPECT_FALSE(parse_db_url("sqlite:").url);
  auto bad = parse_db_url("mysql://x");
  EXPECT_FALSE(bad.url);
  EXPECT_NE(bad.error.find("neither sqlite:PATH nor postgresql://"), std::string::npos);
}

TEST(SiteParse, Durations) {
  EXPECT_EQ(*parse_duration("7d").seconds, 7 * 86400);
  EXPECT_EQ(*parse_duration("36h").seconds, 36 * 3600);
  EXPECT_EQ(*parse_duration("2w").seconds, 14 * 86400);
  EXPECT_EQ(*parse_duration("90s").seconds, 90);
  EXPECT_EQ(*parse_duration("5m").seconds, 300);
  for (const char* bad : {"", "d", "7", "7x", "-3d", "0d", "7dd", "99999999999999999999d"}) {
    const auto r = parse_duration(bad);
    EXPECT_FALSE(r.seconds) << bad;
    EXPECT_FALSE(r.error.empty()) << bad;
  }
}

TEST(SiteParse, UtcTimes) {
  EXPECT_EQ(*parse_utc_time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_utc_time("2026-11-22T01:27:18Z"), 1795310838);
  EXPECT_EQ(*parse_utc_time("2024-02-29"), 1709164800);
  EXPECT_FALSE(parse_utc_time("2023-02-29"));
  EXPECT_FALSE(parse_utc_time("2026-13-01"));
  EXPECT_FALSE(parse_utc_time("2026-11-22 01:27:18"));
  EXPECT_FALSE(parse_utc_time("2026-11-22T25:00:00Z"));
  EXPECT_EQ(format_utc_time(1795310838), "2026-11-22T01:27:18Z");
  EXPECT_EQ(format_utc_time(1795310838, true), "2026-11-22");
}

TEST(SiteGroups, SeedGroups) {
  EXPECT_EQ(group_of("MPI_Send"), routine_group::blocking_p2p);
  EXPECT_EQ(group_of("MPI_Irecv"), routine_group::nonblocking_p2p);
  EXPECT_EQ(group_of("MPI_Waitall"), routine_group::nonblocking_p2p);
  EXPECT_EQ(group_of("MPI_Send_init"), routine_group::persistent_p2p);
  EXPECT_EQ(group_of("MPI_Allreduce"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Iallreduce"), routine_group::collective);
  EXPECT_EQ(group_of("MPI_Type_vector"), routine_group::derived_datatype);
  EXPECT_EQ(group_of("MPI_Comm_split"), routine_group::group_subcomm);
  EXPECT_EQ(group_of("MPI_Intercomm_create"), routine_group::intercomm);
  EXPECT_EQ(group_of("MPI_Comm_get_attr"), routine_group::attribute_inquiry);
  EXPECT_EQ(group_of("MPI_Comm_set_errhandler"), routine_group::error_handler);
  EXPECT_EQ(group_of("MPI_Cart_create"), routine_group::topology);
  EXPECT_EQ(group_of("MPI_Wtime"), routine_group::wtime);
  EXPECT_EQ(group_of("MPI_Get_accumulate"), routine_group::one_sided);
  EXPECT_EQ(group_of("MPI_File_open"), routine_group::io);
  EXPECT_EQ(group_of("MPI_Pack"), routine_group::pack_unpack);
  EXPECT_FALSE(group_of("MPI_Init"));
  EXPECT_FALSE(group_of("MPI_Comm_rank"));
}

TEST(SiteReport, SizeClassesOfTheSeed) {
  EXPECT_EQ(size_class_label(1), "1");
  EXPECT_EQ(size_class_label(64), "64");
  EXPECT_EQ(size_class_label(65), "65-127");
  EXPECT_EQ(size_class_label(127), "65-127");
  EXPECT_EQ(size_class_label(3), "3");
}

TEST(SiteMail, QuotedPrintable) {
  EXPECT_EQ(quoted_printable("plain text\n"), "plain text\r\n");
  EXPECT_EQ(quoted_printable("a=b"), "a=3Db");
  EXPECT_EQ(quoted_printable("trailing \n"), "trailing=20\r\n");
  EXPECT_EQ(quoted_printable("\xc3\xa4"), "=C3=A4");
  EXPECT_EQ(quoted_printable(".dot"), "=2Edot");
  const std::string long_line(200, 'x');
  const std::string encoded = quoted_printable(long_line);
  size_t start = 0;
  while (start < encoded.size()) {
    size_t end = encoded.find("\r\n", start);
    if (end == std::string::npos)
      end = encoded.size();
    EXPECT_LE(end - start, 76u);
    start = end + 2;
  }
}

TEST(SiteMail, MultipartWithBothParts) {
  user_report u;
  u.owner = "alice";
  u.totals.jobs = 3;
  u.mpi_percent = 40;
  u.mpi_critical = true;
  report_options o;
  o.period_label = "week of 2026-11-16";
  o.when = {*parse_utc_time("2026-11-16"), *parse_utc_time("2026-11-23")};
  mail_options m;
  m.domain = "example.org";
  m.from = "hpc@example.org\r\nBcc: victim@example.org"; // no header injection
  m.date = *parse_utc_time("2026-11-23");
  const std::string mail = build_mail(u, o, m);
  EXPECT_NE(mail.find("To: alice@example.org\r\n"), std::string::npos);
  EXPECT_EQ(mail.find("\r\nBcc:"), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: multipart/alternative; boundary="), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: text/plain; charset=utf-8"), std::string::npos);
  EXPECT_NE(mail.find("Content-Type: text/html; charset=utf-8"), std::string::npos);
  EXPECT_NE(mail.find("Date: Mon, 23 Nov 2026 00:00:00 +0000"), std::string::npos);
  EXPECT_NE(mail.find("(critical)"), std::string::npos);
}

TEST(SiteSynth, ValidDeterministicRecords) {
  synth_options o;
  o.seed = 5;
  o.from = *parse_utc_time("2026-11-01");
  o.to = *parse_utc_time("2026-11-29");
  for (std::int64_t i = 0; i < 300; ++i) {
    const record::job_record r = synth_record(o, i);
    const auto again = record::parse_record(record::to_json(r));
    ASSERT_TRUE(again.ok()) << again.error;
    EXPECT_EQ(record::to_json(synth_record(o, i)), record::to_json(r));
    const auto end = parse_utc_time(r.job.end);
    ASSERT_TRUE(end);
    EXPECT_GE(*end, o.from);
    EXPECT_LT(*end, o.to);
    double mpi = 0;
    for (const auto& routine : r.routines)
      mpi += routine.time_s;
    EXPECT_NEAR(mpi, r.job.mpi_time_s, 1e-9 * (1 + mpi));
  }
  o.seed = 6;
  EXPECT_NE(record::to_json(synth_record(o, 0)), record::to_json(synth_record({}, 0)));
}

// The ingest's parse workers lower only their own priority (Linux keeps nice per thread), by
// the step, and never past 19; the thread that started them keeps its own.
TEST(SiteIngest, ParseWorkersLowerOnlyTheirOwnPriority) {
  const auto nice_of_this_thread = [] {
    return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  };
  const int before = nice_of_this_thread();
  int worker_before = 0, worker_after = 0, near_the_end_after = 0;
  std::thread worker([&] {
    worker_before = nice_of_this_thread();
    lower_this_threads_priority();
    worker_after = nice_of_this_thread();
    std::thread near_the_end([&] { // started at the worker's nice value, raised to 18 first
      ASSERT_EQ(::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 18), 0);
      lower_this_threads_priority();
      near_the_end_after = nice_of_this_thread();
    });
    near_the_end.join();
  });
  worker.join();
  EXPECT_EQ(worker_before, before);
  EXPECT_EQ(worker_after, std::min(before + parse_worker_niceness_step, 19));
  EXPECT_EQ(near_the_end_after, 19);
  EXPECT_EQ(nice_of_this_thread(), before);
}

TEST(SiteStore, WeekStartsMonday) {
  // 2026-11-22 is a Sunday; its week began Monday 2026-11-16.
  EXPECT_EQ(week_start(*parse_utc_time("2026-11-22T23:00:00Z")), *parse_utc_time("2026-11-16"));
  EXPECT_EQ(week_start(*parse_utc_time("2026-11-16")), *parse_utc_time("2026-11-16"));
}

TEST(SiteStore, PackedRecordsReadBackWhoeverPackedThem) {
  const std::string text = read_file(std::string(STRATA_RECORD_TESTDATA) + "/sample.json");
  const std::string packed = pack_record(text);
  ASSERT_EQ(packed.substr(0, 2), "z1");
  EXPECT_LT(packed.size(), text.size() / 2);
  EXPECT_EQ(unpack_record(packed), text);
  // Stores written before libdeflate hold zlib's own output, level 1, in the same frame.
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string old(6 + size, '\0');
  old[0] = 'z';
  old[1] = '1';
  for (int i = 0; i < 4; ++i)
    old[2 + i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(old.data() + 6), &size,
                      reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                      Z_BEST_SPEED),
            Z_OK);
  old.resize(6 + size);
  EXPECT_EQ(unpack_record(old), text);
  EXPECT_EQ(unpack_record("{\"hand\": \"made\"}"), "{\"hand\": \"made\"}");
  std::string damaged = packed;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x5a);
  EXPECT_THROW(unpack_record(damaged), store_error);
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
  EXPECT_EQ(s->count_jobs(all), 2);
  auto rows = s->jobs(all);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].owner, "bob"); // latest end first
  EXPECT_EQ(rows[0].claimed_user, "alice");
  job_filter bobs;
  bobs.owner = "bob";
  EXPECT_EQ(s->count_jobs(bobs), 1);
  job_filter text;
  text.text = "stencil";
  EXPECT_EQ(s->count_jobs(text), 2);
  text.text = "nothing-like-this";
  EXPECT_EQ(s->count_jobs(text), 0);
  job_filter critical;
  critical.min_mpi_percent = 15;
  EXPECT_EQ(s->jobs(critical).at(0).record_id, "slurm:81235");

  auto one = s->job(rows[1].job_id);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->record_json, sample_text_);
  EXPECT_EQ(one->routines.size(), sample_.routines.size());
  EXPECT_TRUE(s->job_by_key(a.job.job_key));
  EXPECT_FALSE(s->job(999999));

  const period all_time{0, std::int64_t{1} << 40};
  EXPECT_EQ(s->owners(all_time), (std::vector<std::string>{"alice", "bob"}));
  const job_totals t = s->totals(all_time, std::nullopt);
  EXPECT_EQ(t.jobs, 2);
  EXPECT_EQ(t.pes, 8);
  EXPECT_DOUBLE_EQ(t.mpi_time_s, 2 * 6.110008);
  EXPECT_EQ(s->totals(all_time, std::string("alice")).jobs, 1);

  auto sums = s->routine_sums(all_time, std::nullopt, false);
  ASSERT_EQ(sums.size(), sample_.routines.size());
  EXPECT_EQ(sums[0].routine, "MPI_Allreduce");
  EXPECT_EQ(sums[0].calls, 1600);
  EXPECT_EQ(sums[0].jobs, 2);
  auto by_owner = s->routine_sums(all_time, std::nullopt, true);
  EXPECT_EQ(by_owner.size(), 2 * sample_.routines.size());

  auto classes = s->job_classes(all_time, 15, std::nullopt);
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[1].critical_jobs, 1);
  EXPECT_EQ(classes[0].group_jobs[static_cast<int>(routine_group::collective)], 1);
  EXPECT_EQ(classes[0].group_jobs[static_cast<int>(routine_group::topology)], 0);

  auto weeks = s->owner_weeks(all_time, std::nullopt);
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
    const job_totals t = s->totals(p, std::nullopt);
    EXPECT_EQ(t.jobs, expected_jobs);
    EXPECT_EQ(t.pes, from_rows.pes);
    EXPECT_NEAR(t.cpu_time_s, from_rows.cpu_time_s, 1e-6);
    EXPECT_EQ(t.mpi_calls, from_rows.mpi_calls);
    std::int64_t class_jobs = 0, critical = 0;
    for (const job_class_row& c : s->job_classes(p, 20, std::nullopt)) {
      class_jobs += c.totals.jobs;
      critical += c.critical_jobs;
    }
    EXPECT_EQ(class_jobs, expected_jobs);
    job_filter over20;
    over20.when = p;
    over20.min_mpi_percent = 20;
    EXPECT_EQ(critical, s->count_jobs(over20));
    std::int64_t send_calls = 0;
    for (const owner_routine_row& r : s->routine_sums(p, std::nullopt, true))
      if (r.routine == "MPI_Send")
        send_calls += r.calls;
    EXPECT_EQ(send_calls, 4000 * expected_jobs);
    std::int64_t week_jobs = 0;
    for (const owner_week_row& w : s->owner_weeks(p, std::string("u1")))
      week_jobs += w.totals.jobs;
    EXPECT_EQ(week_jobs, s->totals(p, std::string("u1")).jobs);
  }
}

// Synthetic jobs over [from, to) with end times and MPI % set for the tests below: MPI %
// on and around whole-number thresholds, and jobs on day boundaries.
std::vector<stored_job> synth_jobs(int count, std::int64_t from, std::int64_t to) {
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

std::vector<std::int64_t> ids_of(const std::vector<job_row>& rows) {
  std::vector<std::int64_t> ids;
  for (const job_row& r : rows)
    ids.push_back(r.job_id);
  return ids;
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
  std::vector<std::pair<std::int64_t, std::string>> critical_ends;
  for (const stored_job& j : jobs) {
    ++per_owner[j.job.owner];
    if (j.job.mpi_percent > 15) {
      ++critical;
      critical_ends.emplace_back(j.job.end_time, j.job.job_key);
    }
  }
  const site_report& f = *fast.site;
  EXPECT_EQ(f.totals.jobs, 240);
  EXPECT_EQ(f.users, 5);
  EXPECT_EQ(f.critical_job_count, critical);
  EXPECT_GT(critical, 50); // the list is bounded, the count is not
  ASSERT_EQ(f.critical_jobs.size(), 50u);
  std::sort(critical_ends.rbegin(), critical_ends.rend());
  EXPECT_EQ(f.critical_jobs[0].end_time, critical_ends[0].first);
  EXPECT_EQ(f.critical_jobs[49].end_time, critical_ends[49].first);
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
        EXPECT_EQ(db.count_critical(p, threshold), expected)
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
             "DROP TABLE executables; DROP INDEX jobs_by_executable; DROP INDEX jobs_record_id; "
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
             "cpu_time_s, language); "
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
        for (const job_row& j : s->jobs(f))
          found.insert(j.job_key);
        EXPECT_EQ(found, expected) << text << " threshold " << threshold;
      }
    }
    EXPECT_EQ(s->count_jobs(f), static_cast<std::int64_t>(expected.size())) << text;
  }
  // "7012" and ".head" are inside record ids, not at their start: not found.
  job_filter inside;
  inside.when = days;
  inside.text = "7012";
  EXPECT_EQ(s->count_jobs(inside), 0);
}

// A store of version 6 (an index on job_routines' end_time) is migrated to 7, which drops it:
// the routines of the partial days at a period's ends, found through their jobs since, sum to
// what the jobs hold, for the site and for one owner, before and after the migration.
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
    for (const owner_routine_row& r : db.routine_sums(p, owner, true))
      out[{r.owner, r.routine}] = {r.jobs, r.calls};
    return out;
  };
  const std::string one = jobs.front().job.owner;
  ASSERT_FALSE(expected(std::nullopt).empty());
  s->execute("CREATE INDEX job_routines_end_time ON job_routines (end_time); "
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
std::vector<std::string> contents(store& s, std::int64_t from, std::int64_t to) {
  struct table {
    std::string sql;
    int text_columns; // then numbers
  };
  const std::string jobs_in = " FROM jobs j WHERE j.end_time >= $1 AND j.end_time < $2";
  const table tables[] = {
      {"SELECT j.record_id, j.owner, j.executable, j.language, j.end_time - $1, j.ranks, "
       "j.cpu_class, j.mpi_percent, j.cpu_time_s, j.mpi_calls" +
           jobs_in + " ORDER BY j.record_id",
       4},
      {"SELECT j.record_id, r.routine, r.owner, r.end_time - $1, r.calls, r.bytes, r.time_s "
       "FROM job_routines r JOIN jobs j ON j.job_id = r.job_id WHERE j.end_time >= $1 AND "
       "j.end_time < $2 ORDER BY j.record_id, r.routine",
       3},
      {"SELECT j.record_id, CASE WHEN LENGTH(k.record) > 100 THEN 1 ELSE 0 END FROM "
       "job_records k JOIN jobs j ON j.job_id = "
       "k.job_id WHERE j.end_time >= $1 AND j.end_time < $2 ORDER BY j.record_id",
       1},
      {"SELECT owner, routine, day - $1, jobs, calls, bytes, count_sum, time_s FROM "
       "day_routines WHERE day >= $1 AND day < $2 ORDER BY day, owner, routine",
       2},
      {"SELECT owner, language, day - $1, ranks, cpu_class, jobs, pes, cpu_time_s, mpi_calls, "
       "g0_jobs, g0_cpu FROM day_classes WHERE day >= $1 AND day < $2 ORDER BY day, owner, "
       "language, ranks, cpu_class",
       2},
      {"SELECT day - $1, mpi_bucket, jobs FROM day_mpi WHERE day >= $1 AND day < $2 ORDER BY "
       "day, mpi_bucket",
       0},
      {"SELECT owner, day - $1, jobs, pes, cpu_time_s, wall_time_s FROM day_owners WHERE day >= "
       "$1 AND day < $2 ORDER BY day, owner",
       1},
      {"SELECT language, day - $1, size_class, cpu_class, jobs, cpu_time_s, g1_jobs FROM "
       "day_shapes WHERE day >= $1 AND day < $2 ORDER BY day, language, size_class, cpu_class",
       1},
  };
  std::vector<std::string> lines;
  for (const table& t : tables) {
    const size_t before = lines.size();
    s.query(t.sql, {from, to}, [&](const store::row& r) {
      std::string line = std::to_string(&t - tables) + ":";
      for (int c = 0; c < t.text_columns; ++c)
        line += " " + r.text(c);
      // Column count unknown to the row interface: the SQL's commas after SELECT tell it.
      const std::string select = t.sql.substr(0, t.sql.find(" FROM "));
      const int columns = static_cast<int>(std::count(select.begin(), select.end(), ',')) + 1;
      for (int c = t.text_columns; c < columns; ++c) {
        char number[64];
        std::snprintf(number, sizeof number, " %.12g", r.f64(c));
        line += number;
      }
      lines.push_back(line);
    });
    EXPECT_GT(lines.size(), before) << t.sql; // every table has rows for the period
  }
  return lines;
}

// Writes the synthetic records for [from, from + 3 days) into `dir`, and a second copy of the
// first `twice` of them under other names (a record spooled twice: one key for two writers).
void spool_synth(const std::filesystem::path& dir, std::int64_t from, int count, int twice) {
  synth_options o;
  o.count = count;
  o.seed = 5;
  o.users = 4;
  o.from = from;
  o.to = from + 3 * 86400;
  const synth_result w = write_synth(o, dir.string(), false);
  ASSERT_EQ(w.written, count) << w.error;
  int copied = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (copied < twice && e.path().extension() == ".json") {
      std::filesystem::copy_file(e.path(), dir / ("again-" + e.path().filename().string()));
      ++copied;
    }
  ASSERT_EQ(copied, twice);
}

// Two writers (PostgreSQL's second connection) store exactly what one does: the same records,
// a week apart, ingested in small batches once with one writer and once with two, leave the
// same jobs, routines, records and day-table sums relative to their first day.
TEST_F(StoreBackend, IngestWithTwoWritersStoresWhatOneDoes) {
  auto s = store::open(url_);
  const std::int64_t one = *parse_utc_time("2025-09-01"), two = one + 7 * 86400;
  for (const auto& [from, writers] : {std::pair{one, 1u}, std::pair{two, 2u}}) {
    const std::filesystem::path spool = dir_ / ("spool" + std::to_string(writers));
    std::filesystem::create_directories(spool);
    spool_synth(spool, from, 120, 10);
    ingest_options o;
    o.spools = {spool.string()};
    o.batch = 7; // many batches: both writers busy, a key in two of them at once
    o.writers = writers;
    const ingest_summary r = ingest(*s, o);
    EXPECT_EQ(r.records, 130);
    EXPECT_EQ(r.stored, 120);
    EXPECT_EQ(r.duplicates, 10);
    EXPECT_EQ(r.quarantined, 0);
    size_t left = 0;
    for (const auto& e : std::filesystem::directory_iterator(spool))
      left += e.path().extension() == ".json" ? 1 : 0;
    EXPECT_EQ(left, 0u);
  }
  const std::vector<std::string> by_one = contents(*s, one, one + 3 * 86400);
  const std::vector<std::string> by_two = contents(*s, two, two + 3 * 86400);
  ASSERT_EQ(by_two.size(), by_one.size());
  for (size_t i = 0; i < by_one.size(); ++i)
    EXPECT_EQ(by_two[i], by_one[i]);
}

// A store failure in the middle of an ingest (a trigger rejects one job's routine in
// day_routines, the last tables a batch writes) leaves no part of the failed batch stored:
// every record is either stored whole (job, routines, record, day sums) and gone from the
// spool, or not stored at all and still spooled, with one writer and with two.
TEST_F(StoreBackend, FailedIngestLeavesNothingHalfStored) {
  auto s = store::open(url_);
  const bool sqlite = s->kind() == backend::sqlite;
  s->execute(sqlite ? "CREATE TRIGGER strata_test_boom BEFORE INSERT ON day_routines "
                      "WHEN NEW.routine = 'MPI_Boom' BEGIN SELECT RAISE(ABORT, 'boom'); END"
                    : "CREATE OR REPLACE FUNCTION strata_test_boom() RETURNS trigger AS $$ BEGIN "
                      "IF NEW.routine = 'MPI_Boom' THEN RAISE EXCEPTION 'boom'; END IF; "
                      "RETURN NEW; END $$ LANGUAGE plpgsql; CREATE TRIGGER strata_test_boom "
                      "BEFORE INSERT ON day_routines FOR EACH ROW EXECUTE FUNCTION "
                      "strata_test_boom()");
  const std::int64_t base = *parse_utc_time("2025-10-06");
  for (const unsigned writers : {1u, 2u}) {
    const std::int64_t from = base + (writers - 1) * 7 * 86400, to = from + 3 * 86400;
    const std::filesystem::path spool = dir_ / ("failing" + std::to_string(writers));
    std::filesystem::create_directories(spool);
    synth_options o;
    o.count = 60;
    o.seed = 9;
    o.users = 3;
    o.from = from;
    o.to = to;
    ASSERT_EQ(write_synth(o, spool.string(), false).written, 60);
    // The 32nd record in directory order, the ingest's, gets the fatal routine (a batch in
    // the middle; rewriting the file in place keeps the order).
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(spool))
      files.push_back(e.path());
    auto bad = record::parse_record(read_file(files[31].string()));
    ASSERT_TRUE(bad.ok()) << bad.error;
    bad.record->routines.front().name = "MPI_Boom";
    std::ofstream(files[31]) << record::to_json(*bad.record);
    std::vector<record::job_record> records;
    for (const std::filesystem::path& f : files) {
      auto parsed = record::parse_record(read_file(f.string()));
      ASSERT_TRUE(parsed.ok()) << parsed.error;
      records.push_back(*parsed.record);
    }
    ingest_options io;
    io.spools = {spool.string()};
    io.batch = 6;
    io.writers = writers;
    EXPECT_THROW(ingest(*s, io), store_error);
    std::set<std::string> spooled;
    for (const auto& e : std::filesystem::directory_iterator(spool))
      if (e.path().extension() == ".json")
        spooled.insert(e.path().string());
    EXPECT_TRUE(spooled.count(files[31].string())) << "the failed batch's files stay";
    EXPECT_LT(spooled.size(), files.size()) << "batches before the failure were committed";
    job_totals expected;
    std::int64_t expected_routines = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::filesystem::path& f = files[i];
      const std::optional<stored_job> stored =
          s->job_by_key(make_stored_job(records[i], "", 0, "x").job.job_key);
      EXPECT_NE(stored.has_value(), spooled.count(f.string()) == 1) << f;
      if (!stored)
        continue;
      EXPECT_EQ(stored->routines.size(), records[i].routines.size()) << f;
      EXPECT_FALSE(stored->record_json.empty()) << f;
      ++expected.jobs;
      expected.cpu_time_s += stored->job.cpu_time_s;
      expected_routines += static_cast<std::int64_t>(stored->routines.size());
    }
    // The day tables hold exactly the stored jobs: whole days and the partial ones agree.
    const job_totals t = s->totals(period{from - from % 86400, to - to % 86400 + 86400}, {});
    EXPECT_EQ(t.jobs, expected.jobs);
    EXPECT_NEAR(t.cpu_time_s, expected.cpu_time_s, 1e-6 * (1 + expected.cpu_time_s));
    std::int64_t routine_jobs = 0;
    for (const owner_routine_row& r :
         s->routine_sums(period{from - from % 86400, to - to % 86400 + 86400}, {}, false))
      routine_jobs += r.jobs;
    EXPECT_EQ(routine_jobs, expected_routines);
  }
  s->execute(sqlite ? "DROP TRIGGER strata_test_boom"
                    : "DROP TRIGGER strata_test_boom ON day_routines; "
                      "DROP FUNCTION strata_test_boom()");
}

// Past 1000 matching executables the query matches them itself (a subquery, not a list).
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
  EXPECT_EQ(s->jobs(f).size(), 1005u);
  EXPECT_EQ(s->count_jobs(f), 1005);
  f.text = "/run-100";
  f.owner = jobs[1000].job.owner;
  std::int64_t expected = 0;
  for (const stored_job& j : jobs)
    expected += j.job.owner == *f.owner && j.job.executable.find("/run-100") != std::string::npos;
  EXPECT_EQ(static_cast<std::int64_t>(s->jobs(f).size()), expected);
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
  const std::vector<job_row> all = s->jobs(everything);
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
          EXPECT_EQ(ids_of(s->jobs(f)), ids_of(page))
              << "order " << static_cast<int>(order) << " offset " << offset << " threshold "
              << threshold;
        }
        s->set_list_plan_threshold(list_plan_threshold);
        const job_page both = s->jobs_and_count(f, 10);
        EXPECT_EQ(ids_of(both.rows), ids_of(page));
        EXPECT_EQ(both.matches,
                  std::min<std::int64_t>(10, static_cast<std::int64_t>(expected.size())));
        EXPECT_EQ(s->count_jobs(f), static_cast<std::int64_t>(expected.size()));
      }
  }
}

TEST_F(StoreBackend, BadUrlsAndFilesSayWhy) {
  EXPECT_THROW(store::open("nosuch://x"), store_error);
  try {
    store::open("sqlite:/proc/no/such/dir/site.db");
    FAIL();
  } catch (const store_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/site.db"), std::string::npos);
  }
}

} // namespace
} // namespace strata::site
