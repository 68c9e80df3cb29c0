// The job row's one list of columns against the schema the migrations make, and a store of the
// previous schema opened by this strata (both backends: StoreBackend runs on PostgreSQL too).
#include "profiler/record/record.hpp"
#include "site/job_collectives.hpp"
#include "site/lists.hpp"
#include "site/mpi_t_index.hpp"
#include "site/programs.hpp"
#include "site/queries.hpp"
#include "site/rollups.hpp"
#include "site/store.hpp"
#include "site/store_backends.hpp"
#include "site/store_test_fixture.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <gtest/gtest.h>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::site {
namespace {

using namespace store_testing;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "name type NULL|NOT NULL" of each column of `jobs` as the store declares it, in its order;
// the column the store numbers by name only (its type is the backend's, id_column_type).
std::vector<std::string> declared_columns(store& s) {
  std::vector<std::string> out;
  const auto add = [&](const std::string& name, const std::string& type, bool not_null) {
    out.push_back(name == "job_id" ? name
                                   : name + " " + lower(type) + (not_null ? " NOT NULL" : " NULL"));
  };
  if (s.kind() == backend::sqlite)
    s.query("SELECT name, type, \"notnull\" FROM pragma_table_info('jobs') ORDER BY cid", {},
            [&](const store::row& r) { add(r.text(0), r.text(1), r.i64(2) != 0); });
  else
    s.query("SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE "
            "table_name = 'jobs' AND table_schema = current_schema() ORDER BY ordinal_position",
            {}, [&](const store::row& r) { add(r.text(0), r.text(1), r.text(2) == "NO"); });
  return out;
}

std::vector<std::string> listed_columns() {
  std::vector<std::string> out;
  const job_row none;
  visit_job_columns(none, [&](const job_column& c, const auto& member) {
    using member_type = std::decay_t<decltype(member)>;
    const bool not_null = !nullable_job_column<member_type>;
    out.push_back(c.fill == column_fill::by_store
                      ? std::string(c.name)
                      : std::string(c.name) + " " + lower(job_column_type<member_type>()) +
                            (not_null ? " NOT NULL" : " NULL"));
  });
  return out;
}

// Every column of a row as "name=value", to compare two rows whole.
std::vector<std::string> values_of(const job_row& j) {
  std::vector<std::string> out;
  visit_job_columns(j, [&](const job_column& c, const auto& member) {
    std::ostringstream text;
    text.precision(17);
    if constexpr (nullable_job_column<std::decay_t<decltype(member)>>) {
      if (member)
        text << *member;
      else
        text << "NULL";
    } else {
      text << member;
    }
    out.push_back(std::string(c.name) + "=" + text.str());
  });
  return out;
}

// The list names the columns the migrations made, in their order, with their types: a column
// added by a migration and not to the list (or the other way round) fails here.
TEST_F(StoreBackend, JobColumnsAreTheSchemas) {
  const auto s = store::open(url_);
  const std::vector<std::string> listed = listed_columns();
  EXPECT_EQ(declared_columns(*s), listed);
  ASSERT_GT(listed.size(), 30u);
  EXPECT_EQ(listed[27], "instructions double precision NULL");
  EXPECT_EQ(listed.back(), "exit_code bigint NULL"); // version 13: NULL where not known
  EXPECT_EQ(job_inserted_column_count(), static_cast<int>(listed.size()) - 1);
  EXPECT_EQ(job_columns().substr(0, 17), "job_id, job_key, ");
  EXPECT_EQ(job_inserted_columns().substr(0, 9), "job_key, ");
}

// What strata of schema version 11 (the release before the Slurm columns) inserted, word for
// word: its statement named these 28 columns.
constexpr const char* version_11_job_insert =
    "INSERT INTO jobs (job_key, record_id, owner, owner_uid, claimed_user, claimed_uid, "
    "owner_mismatch, start_time, end_time, ranks, ranks_reported, hosts, executable, language, "
    "mpi_flavor, status, partial, wall_time_s, cpu_time_s, mpi_time_s, mpi_percent, overhead_s, "
    "mpi_calls, mpi_bytes, routine_groups, cpu_class, instructions, ingested_at) VALUES ($1, $2, "
    "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, "
    "$23, $24, $25, $26, $27, $28) RETURNING job_id";

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// Writes `jobs` as strata of schema version 11 did into a store it made: the schema by the
// migrations it ran (their SQL pinned by AppliedMigrationsNeverChange), the rows by its
// statements and the tables it kept beside them. Sets each job's id.
void write_as_version_11(store& old, std::vector<stored_job>& jobs) {
  old.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  for (int v = 1; v <= 11; ++v) {
    old.execute(old.migration_sql(v));
    old.execute("INSERT INTO schema_version (version) VALUES (" + std::to_string(v) + ")");
    if (v == 10) // its sets of MPI_T control variables moved into their texts
      old.execute("DROP TABLE mpi_t_setting_values");
  }
  // One transaction, as that release's insert: PostgreSQL's staging tables for the day
  // tables' upserts keep their rows until the commit only.
  old.execute("BEGIN");
  insert_result inserted;
  for (stored_job& sj : jobs) {
    job_row& j = sj.job;
    j.ingested_at = 1'800'000'000;
    const store::param instructions =
        j.instructions ? store::param(*j.instructions) : store::param();
    old.query(version_11_job_insert,
              {j.job_key,
               j.record_id,
               j.owner,
               j.owner_uid,
               j.claimed_user,
               j.claimed_uid,
               int{j.owner_mismatch},
               j.start_time,
               j.end_time,
               j.ranks,
               j.ranks_reported,
               j.hosts,
               j.executable,
               j.language,
               j.mpi_flavor,
               j.status,
               int{j.partial},
               j.wall_time_s,
               j.cpu_time_s,
               j.mpi_time_s,
               j.mpi_percent,
               j.overhead_s,
               j.mpi_calls,
               j.mpi_bytes,
               j.routine_groups,
               j.cpu_class,
               instructions,
               j.ingested_at},
              [&](const store::row& r) { j.job_id = r.i64(0); });
    inserted.job_ids.push_back(j.job_id);
    inserted.was_new.push_back(true);
    ++inserted.inserted;
    const std::string packed = hex(pack_record(sj.record_json));
    old.execute(
        "INSERT INTO job_records (job_id, record) VALUES (" + std::to_string(j.job_id) + ", " +
        (old.kind() == backend::sqlite ? "X'" + packed + "'" : "decode('" + packed + "', 'hex')") +
        ")");
    for (const routine_row& r : sj.routines)
      old.query("INSERT INTO job_routines (job_id, routine, owner, end_time, calls, time_s, "
                "bytes, count_sum) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                {j.job_id, r.routine, j.owner, j.end_time, r.calls, r.time_s, r.bytes, r.count_sum},
                [](const store::row&) {});
  }
  // What that release's insert added after the rows (store::insert), into tables unchanged since.
  add_program_runs(old, jobs, inserted);
  add_mpi_t(old, jobs, inserted);
  add_day_rollups(old, jobs, inserted.was_new);
  old.execute("COMMIT");
}

// A store written by the previous schema's strata is opened by this one: migrated, its jobs
// read back whole (no Slurm facts: their records kept none), listed and summed, and new jobs
// go in beside them.
TEST_F(StoreBackend, OpensAStoreOfThePreviousSchema) {
  std::string url = url_;
  if (parse_db_url(url_).url->kind == backend::postgresql) {
    // A schema of its own on the server: empty, whatever the other tests left.
    store::open(url_)->execute(
        "DROP SCHEMA IF EXISTS previous_schema_test CASCADE; CREATE SCHEMA previous_schema_test");
    url += (url.find('?') == std::string::npos ? "?" : "&") +
           std::string("options=-csearch_path%3Dprevious_schema_test");
  }
  const db_url where = *parse_db_url(url).url;
  std::vector<stored_job> old_jobs;
  old_jobs.push_back(make_stored_job(sample_, sample_text_, 1000, "alice"));
  record::job_record other = sample_;
  other.job.id = "slurm:81236";
  other.job.counters.erase("instructions"); // a NULL column
  old_jobs.push_back(make_stored_job(other, record::to_json(other), 2000, "bob"));
  ASSERT_FALSE(old_jobs[1].job.instructions);
  {
    const auto old =
        where.kind == backend::sqlite ? open_sqlite(where.target) : open_postgresql(where.target);
    write_as_version_11(*old, old_jobs);
    EXPECT_EQ(old->schema_version(), 11);
  }

  const auto s = store::open(url);
  EXPECT_EQ(s->schema_version(), store_schema_version);
  for (const stored_job& written : old_jobs) {
    const std::optional<stored_job> back = s->job(written.job.job_id);
    ASSERT_TRUE(back);
    EXPECT_EQ(values_of(back->job), values_of(written.job));
    EXPECT_EQ(back->job.slurm_account, "");
    EXPECT_FALSE(back->job.exit_code); // not known, not 0
    EXPECT_EQ(back->record_json, written.record_json);
    EXPECT_EQ(back->routines.size(), written.routines.size());
    EXPECT_FALSE(collectives_of(*s, written.job.job_id)); // its record is not read again
  }
  EXPECT_EQ(count_jobs(*s, job_filter{}), 2);
  const period all_time{0, std::int64_t{1} << 40};
  EXPECT_EQ(totals(*s, all_time, std::nullopt).jobs, 2);

  record::job_record slurm_job = sample_;
  slurm_job.job.id = "slurm:81237";
  slurm_job.job.slurm.emplace();
  slurm_job.job.slurm->account = "physics";
  slurm_job.job.slurm->partition = "short";
  slurm_job.job.exit_code = 0; // a clean exit is 0, not the NULL of not known
  record::communicator_collectives world;
  world.members = "0-3";
  world.size = world.members_reported = 4;
  world.calls = 8;
  world.bytes = 64;
  world.calls_min = world.calls_max = 2;
  world.bytes_per_member = {16, 16, 0, 0, 16.0};
  slurm_job.communication.emplace().collectives.emplace().communicators = {world};
  const stored_job added = make_stored_job(slurm_job, record::to_json(slurm_job), 1000, "alice");
  record::job_record failed = sample_;
  failed.job.id = "slurm:81238";
  failed.job.exit_code = 3;
  const stored_job failed_job = make_stored_job(failed, record::to_json(failed), 1000, "alice");
  const insert_result r = s->insert({added, old_jobs[0], failed_job});
  EXPECT_EQ(r.inserted, 2);
  EXPECT_EQ(r.duplicates, 1); // stored by the previous strata: the same key
  const std::optional<stored_job> back = s->job(r.job_ids[0]);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->job.slurm_account, "physics");
  EXPECT_EQ(back->job.slurm_partition, "short");
  EXPECT_EQ(back->job.exit_code, std::optional<std::int64_t>(0));
  const std::optional<job_collective_rows> collectives = collectives_of(*s, r.job_ids[0]);
  ASSERT_TRUE(collectives); // version 16's tables, made by the migration
  ASSERT_EQ(collectives->communicators.size(), 1u);
  EXPECT_EQ(collectives->communicators[0].members, "0-3");
  EXPECT_EQ(collectives->communicators[0].imbalance, std::optional<double>(1.0));
  EXPECT_EQ(count_jobs(*s, job_filter{}), 4);
  EXPECT_EQ(totals(*s, all_time, std::nullopt).jobs, 4);

  // The jobs lists by exit code: the highest first, the codes not known last; the filters of
  // a failed exit and of a Slurm account and partition.
  job_filter by_exit;
  by_exit.order = job_order::exit_code_desc;
  std::vector<std::string> order;
  for (const job_row& j : jobs(*s, by_exit))
    order.push_back(j.record_id + "=" + (j.exit_code ? std::to_string(*j.exit_code) : "NULL"));
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], "slurm:81238=3");
  EXPECT_EQ(order[1], "slurm:81237=0");
  EXPECT_TRUE(order[2].ends_with("=NULL") && order[3].ends_with("=NULL")) << order[2];
  job_filter failed_only;
  failed_only.nonzero_exit = true;
  ASSERT_EQ(jobs(*s, failed_only).size(), 1u);
  EXPECT_EQ(jobs(*s, failed_only)[0].record_id, "slurm:81238");
  // The filter's condition can be answered from the index of the failed jobs alone (version
  // 15; SQLite refuses INDEXED BY an index that cannot answer it), which holds only those.
  const std::string failed_sql =
      where.kind == backend::sqlite
          ? "SELECT count(*) FROM jobs INDEXED BY jobs_failed WHERE exit_code <> 0"
          : "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = "
            "'jobs_failed' AND indexdef LIKE '%(end_time) WHERE (exit_code <> 0)'";
  std::int64_t failed_count = -1;
  s->query(failed_sql, {}, [&](const store::row& row) { failed_count = row.i64(0); });
  EXPECT_EQ(failed_count, 1);
  job_filter physics;
  physics.account = "physics";
  physics.partition = "short";
  ASSERT_EQ(jobs(*s, physics).size(), 1u);
  EXPECT_EQ(jobs(*s, physics)[0].record_id, "slurm:81237");
  physics.partition = "long";
  EXPECT_EQ(count_jobs(*s, physics), 0);
  if (where.kind == backend::postgresql)
    s->execute("DROP SCHEMA previous_schema_test CASCADE");
}

} // namespace
} // namespace strata::site
