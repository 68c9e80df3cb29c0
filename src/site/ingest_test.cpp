#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/ingest.hpp"
#include "site/mail.hpp"
#include "site/parse.hpp"
#include "site/report.hpp"
#include "site/store.hpp"
#include "site/store_test_fixture.hpp"
#include "site/synth.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
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

// A job run with the profile and the overhead module leaves two records of one job: the
// profile's is stored, the overhead module's waits for the next ingest, where the job is
// already stored; an overhead record alone is its job's.
TEST_F(StoreBackend, IngestStoresOneJobOfAProfileAndOverheadPair) {
  auto s = store::open(url_);
  const std::filesystem::path spool = dir_ / "pair";
  std::filesystem::create_directories(spool);
  spool_synth(spool, *parse_utc_time("2025-10-01"), 3, 0);
  std::vector<std::filesystem::path> records;
  for (const auto& e : std::filesystem::directory_iterator(spool))
    records.push_back(e.path());
  std::sort(records.begin(), records.end());
  ASSERT_EQ(records.size(), 3u);
  const auto overhead_copy = [](const std::filesystem::path& from, const std::string& to) {
    std::ifstream in(from);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t job = text.find('{', text.find("\"job\""));
    ASSERT_NE(job, std::string::npos);
    text.insert(job + 1, "\"module\": \"overhead\", ");
    std::ofstream(from.parent_path() / to) << text;
  };
  const std::string stem = records[0].stem().string();
  overhead_copy(records[0], stem + ".overhead.json"); // a pair
  overhead_copy(records[1], records[1].stem().string() + ".overhead.json");
  std::filesystem::remove(records[1]); // an overhead record alone
  ingest_options o;
  o.spools = {spool.string()};
  ingest_summary r = ingest(*s, o);
  EXPECT_EQ(r.records, 3);
  EXPECT_EQ(r.stored, 3);
  EXPECT_TRUE(std::filesystem::exists(spool / (stem + ".overhead.json")));
  r = ingest(*s, o);
  EXPECT_EQ(r.records, 1);
  EXPECT_EQ(r.stored, 0);
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_TRUE(std::filesystem::is_empty(spool));
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
    const job_totals t = totals(*s, period{from - from % 86400, to - to % 86400 + 86400}, {});
    EXPECT_EQ(t.jobs, expected.jobs);
    EXPECT_NEAR(t.cpu_time_s, expected.cpu_time_s, 1e-6 * (1 + expected.cpu_time_s));
    std::int64_t routine_jobs = 0;
    for (const owner_routine_row& r :
         routine_sums(*s, period{from - from % 86400, to - to % 86400 + 86400}, {}, false))
      routine_jobs += r.jobs;
    EXPECT_EQ(routine_jobs, expected_routines);
  }
  s->execute(sqlite ? "DROP TRIGGER strata_test_boom"
                    : "DROP TRIGGER strata_test_boom ON day_routines; "
                      "DROP FUNCTION strata_test_boom()");
}

// Past 1000 matching executables the query matches them itself (a subquery, not a list).
} // namespace
} // namespace strata::site
