// The store's schema: versioned migrations, applied in order when a store is opened
// (store::migrate), written once for both backends with a few dialect placeholders.
#include "site/schema.hpp"

#include "site/groups.hpp"
#include "site/mpi_t_index.hpp"
#include "site/programs.hpp"
#include "site/rollups.hpp"
#include "site/store.hpp"

#include <iterator>
#include <string>
#include <string_view>

namespace strata::site {
namespace {

// Versioned migrations: entry i takes the store from version i to i + 1. "{{id}}" is the
// auto-numbered primary key of the backend, "{{blob}}" its type for bytes. Never edit an applied
// entry; append a new one.
const char* const migrations[] = {
    R"sql(
CREATE TABLE jobs (
  job_id {{id}},
  job_key TEXT NOT NULL UNIQUE,
  record_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  owner_uid BIGINT NOT NULL,
  claimed_user TEXT NOT NULL,
  claimed_uid BIGINT NOT NULL,
  owner_mismatch INTEGER NOT NULL,
  start_time BIGINT NOT NULL,
  end_time BIGINT NOT NULL,
  ranks BIGINT NOT NULL,
  ranks_reported BIGINT NOT NULL,
  hosts BIGINT NOT NULL,
  executable TEXT NOT NULL,
  language TEXT NOT NULL,
  mpi_flavor TEXT NOT NULL,
  status TEXT NOT NULL,
  partial INTEGER NOT NULL,
  wall_time_s DOUBLE PRECISION NOT NULL,
  cpu_time_s DOUBLE PRECISION NOT NULL,
  mpi_time_s DOUBLE PRECISION NOT NULL,
  mpi_percent DOUBLE PRECISION NOT NULL,
  overhead_s DOUBLE PRECISION NOT NULL,
  mpi_calls BIGINT NOT NULL,
  mpi_bytes BIGINT NOT NULL,
  routine_groups BIGINT NOT NULL,
  cpu_class INTEGER NOT NULL,
  instructions DOUBLE PRECISION,
  ingested_at BIGINT NOT NULL
);
-- Covers the period scans of reports (critical jobs, owners) without touching the rows.
CREATE INDEX jobs_period ON jobs (end_time, mpi_percent, owner, language, ranks, cpu_class);
CREATE INDEX jobs_owner_end_time ON jobs (owner, end_time);
CREATE TABLE job_records (
  job_id BIGINT PRIMARY KEY REFERENCES jobs (job_id) ON DELETE CASCADE,
  record {{blob}} NOT NULL
);
CREATE TABLE job_routines (
  job_id BIGINT NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
  routine TEXT NOT NULL,
  owner TEXT NOT NULL,
  end_time BIGINT NOT NULL,
  calls BIGINT NOT NULL,
  time_s DOUBLE PRECISION NOT NULL,
  bytes BIGINT NOT NULL,
  count_sum BIGINT NOT NULL,
  PRIMARY KEY (job_id, routine)
);
CREATE INDEX job_routines_end_time ON job_routines (end_time);
-- Pre-aggregates per UTC day (day = end_time rounded down to 00:00), kept by every insert, so
-- that reports over whole days read a few thousand rows instead of every job.
CREATE TABLE day_routines (
  day BIGINT NOT NULL,
  owner TEXT NOT NULL,
  routine TEXT NOT NULL,
  jobs BIGINT NOT NULL,
  calls DOUBLE PRECISION NOT NULL,
  bytes DOUBLE PRECISION NOT NULL,
  count_sum DOUBLE PRECISION NOT NULL,
  time_s DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (day, owner, routine)
);
CREATE TABLE day_classes (
  day BIGINT NOT NULL,
  owner TEXT NOT NULL,
  language TEXT NOT NULL,
  ranks BIGINT NOT NULL,
  cpu_class INTEGER NOT NULL,
  jobs BIGINT NOT NULL,
  pes BIGINT NOT NULL,
  cpu_time_s DOUBLE PRECISION NOT NULL,
  mpi_time_s DOUBLE PRECISION NOT NULL,
  overhead_s DOUBLE PRECISION NOT NULL,
  wall_time_s DOUBLE PRECISION NOT NULL,
  pe_weighted DOUBLE PRECISION NOT NULL,
  mpi_calls DOUBLE PRECISION NOT NULL,
  mpi_bytes DOUBLE PRECISION NOT NULL,
  instructions DOUBLE PRECISION NOT NULL,
  instructions_cpu_time_s DOUBLE PRECISION NOT NULL,
  g0_jobs BIGINT NOT NULL, g0_cpu DOUBLE PRECISION NOT NULL,
  g1_jobs BIGINT NOT NULL, g1_cpu DOUBLE PRECISION NOT NULL,
  g2_jobs BIGINT NOT NULL, g2_cpu DOUBLE PRECISION NOT NULL,
  g3_jobs BIGINT NOT NULL, g3_cpu DOUBLE PRECISION NOT NULL,
  g4_jobs BIGINT NOT NULL, g4_cpu DOUBLE PRECISION NOT NULL,
  g5_jobs BIGINT NOT NULL, g5_cpu DOUBLE PRECISION NOT NULL,
  g6_jobs BIGINT NOT NULL, g6_cpu DOUBLE PRECISION NOT NULL,
  g7_jobs BIGINT NOT NULL, g7_cpu DOUBLE PRECISION NOT NULL,
  g8_jobs BIGINT NOT NULL, g8_cpu DOUBLE PRECISION NOT NULL,
  g9_jobs BIGINT NOT NULL, g9_cpu DOUBLE PRECISION NOT NULL,
  g10_jobs BIGINT NOT NULL, g10_cpu DOUBLE PRECISION NOT NULL,
  g11_jobs BIGINT NOT NULL, g11_cpu DOUBLE PRECISION NOT NULL,
  g12_jobs BIGINT NOT NULL, g12_cpu DOUBLE PRECISION NOT NULL,
  g13_jobs BIGINT NOT NULL, g13_cpu DOUBLE PRECISION NOT NULL,
  g14_jobs BIGINT NOT NULL, g14_cpu DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (day, owner, language, ranks, cpu_class)
);
)sql",
    // 2: the web interface's login tokens (web_tokens.hpp), kept only as SHA-256 hashes.
    R"sql(
CREATE TABLE web_tokens (
  token_hash TEXT PRIMARY KEY,
  uid BIGINT NOT NULL,
  user_name TEXT NOT NULL,
  created BIGINT NOT NULL,
  expires BIGINT NOT NULL,
  revoked INTEGER NOT NULL
);
CREATE INDEX web_tokens_uid ON web_tokens (uid);
)sql",
    // 3: no foreign keys from job_routines and job_records to jobs on PostgreSQL. Checking them
    // (a query and a row lock per routine row) cost the server more than the inserts
    // themselves; the one writer, store::insert, adds a job's routines and record in the job's
    // own transaction with the id the insert returned, and nothing deletes jobs. SQLite keeps
    // them (cheap there, and it cannot drop a constraint).
    "{{drop_foreign_keys}}",
    // 4: the web interface at a million jobs. Jobs lists first pick the page's job ids from one of
    // these indexes alone (each holds every column the lists filter and sort on), then read those
    // rows: one owner's list reads none of the owner's other rows, and the site's lists by MPI %,
    // CPU time or size stop at the page's last entry; jobs_period gets cpu_time_s for lists of a
    // period by CPU time. The owner index serves the reports' latest jobs of an owner, as (owner,
    // end_time) did. The site page's sums over whole days come from three more day tables, a few
    // hundred rows a day where day_classes (per owner and exact size) holds thousands: per owner,
    // per language, size class and CPU-time class, and per MPI % bucket (see mpi_bucket).
    // fill_site_days (rollups.cpp) fills them from what is already stored.
    R"sql(
DROP INDEX jobs_owner_end_time;
DROP INDEX jobs_period;
CREATE INDEX jobs_period ON jobs (end_time, mpi_percent, owner, language, ranks, cpu_class,
                                  cpu_time_s);
CREATE INDEX jobs_owner_list ON jobs (owner, end_time, mpi_percent, cpu_time_s, ranks, language);
CREATE INDEX jobs_by_mpi ON jobs (mpi_percent, end_time, cpu_time_s, ranks, owner, language);
CREATE INDEX jobs_by_cpu ON jobs (cpu_time_s, end_time, mpi_percent, ranks, owner, language);
CREATE INDEX jobs_by_ranks ON jobs (ranks, end_time, mpi_percent, cpu_time_s, owner, language);
CREATE TABLE day_mpi (
  day BIGINT NOT NULL,
  mpi_bucket INTEGER NOT NULL,
  jobs BIGINT NOT NULL,
  PRIMARY KEY (day, mpi_bucket)
);
CREATE TABLE day_owners (
  day BIGINT NOT NULL,
  owner TEXT NOT NULL,
  {{totals_columns}}
  PRIMARY KEY (day, owner)
);
CREATE TABLE day_shapes (
  day BIGINT NOT NULL,
  language TEXT NOT NULL,
  size_class BIGINT NOT NULL,
  cpu_class INTEGER NOT NULL,
  {{totals_columns}}
  g0_jobs BIGINT NOT NULL, g0_cpu DOUBLE PRECISION NOT NULL,
  g1_jobs BIGINT NOT NULL, g1_cpu DOUBLE PRECISION NOT NULL,
  g2_jobs BIGINT NOT NULL, g2_cpu DOUBLE PRECISION NOT NULL,
  g3_jobs BIGINT NOT NULL, g3_cpu DOUBLE PRECISION NOT NULL,
  g4_jobs BIGINT NOT NULL, g4_cpu DOUBLE PRECISION NOT NULL,
  g5_jobs BIGINT NOT NULL, g5_cpu DOUBLE PRECISION NOT NULL,
  g6_jobs BIGINT NOT NULL, g6_cpu DOUBLE PRECISION NOT NULL,
  g7_jobs BIGINT NOT NULL, g7_cpu DOUBLE PRECISION NOT NULL,
  g8_jobs BIGINT NOT NULL, g8_cpu DOUBLE PRECISION NOT NULL,
  g9_jobs BIGINT NOT NULL, g9_cpu DOUBLE PRECISION NOT NULL,
  g10_jobs BIGINT NOT NULL, g10_cpu DOUBLE PRECISION NOT NULL,
  g11_jobs BIGINT NOT NULL, g11_cpu DOUBLE PRECISION NOT NULL,
  g12_jobs BIGINT NOT NULL, g12_cpu DOUBLE PRECISION NOT NULL,
  g13_jobs BIGINT NOT NULL, g13_cpu DOUBLE PRECISION NOT NULL,
  g14_jobs BIGINT NOT NULL, g14_cpu DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (day, language, size_class, cpu_class)
);
)sql",
    // 5: one owner's list by MPI %, CPU time or size walks that owner's entries in the list's
    // order and stops at the page's last one (with jobs_owner_list alone, every such page read
    // and sorted all of the owner's entries).
    R"sql(
CREATE INDEX jobs_owner_by_mpi ON jobs (owner, mpi_percent, end_time, cpu_time_s, ranks, language);
CREATE INDEX jobs_owner_by_cpu ON jobs (owner, cpu_time_s, end_time, mpi_percent, ranks, language);
CREATE INDEX jobs_owner_by_ranks ON jobs (owner, ranks, end_time, mpi_percent, cpu_time_s,
                                          language);
)sql",
    // 6 (PostgreSQL also: the lists' indexes again with job_id last, see list_indexes): the
    // jobs list's text search at a million jobs, and ingest's cost of the lists' indexes. A
    // search matches executables by substring and record ids by
    // prefix. Executables are few (a site's programs, not its jobs), so their substrings are
    // looked up in `executables` (kept by each insert) and the jobs of the executables found
    // through jobs_by_executable, which holds every column the lists filter and sort on; record
    // ids by a range of jobs_record_id (byte order: "C" on PostgreSQL, whatever the database's
    // collation, so that a prefix is a range). The three per-owner sort indexes of version 5
    // go: store::jobs_and_count counts the matches first (bounded) and, for many, walks the
    // site-wide index of the sort order, filtering by owner inside it; for few, reads them by
    // the owner's index and sorts them (each of those indexes cost ingest more than all the
    // lists gained from it).
    R"sql(
DROP INDEX jobs_owner_by_mpi;
DROP INDEX jobs_owner_by_cpu;
DROP INDEX jobs_owner_by_ranks;
CREATE TABLE executables (
  executable TEXT PRIMARY KEY
);
INSERT INTO executables (executable) SELECT DISTINCT executable FROM jobs;
CREATE INDEX jobs_by_executable ON jobs (executable, end_time, mpi_percent, cpu_time_s, ranks,
                                         owner, language {{row_id}});
CREATE INDEX jobs_record_id ON jobs (record_id {{byte_order}});
{{list_indexes_with_row_id}}
)sql",
    // 7: no index on job_routines' end_time. Every job adds about ten routine rows, and this
    // was the one index of theirs in random order (job_id, the key's first column, only
    // grows): the largest cost of an ingest in both backends' stores after the jobs' indexes.
    // Its one reader, routine_sums (queries.cpp) over the partial days at a period's ends, finds
    // the period's jobs through jobs_period and their rows through the key instead. The web reads
    // whole days only (day_routines). IF EXISTS: the tests take stores back to older versions.
    R"sql(
DROP INDEX IF EXISTS job_routines_end_time;
)sql",
    // 8: scaling models and regressions (programs.hpp) and the store's health (health.hpp).
    // A program is an owner's executable with its arguments; program_runs holds each job's time
    // per rank under its program and size, ordered so that a size's newest runs are one range
    // (a regression's history, a model's runs). fill_programs (programs.cpp) fills both from
    // the jobs stored before. `regressions` holds the jobs flagged at ingest, `ingests` one row
    // per ingest (what `strata site serve` reports as the store's health).
    R"sql(
CREATE TABLE programs (
  program_id {{id}},
  owner TEXT NOT NULL,
  executable TEXT NOT NULL,
  arguments TEXT NOT NULL,
  UNIQUE (owner, executable, arguments)
);
CREATE TABLE program_runs (
  program_id BIGINT NOT NULL,
  ranks BIGINT NOT NULL,
  end_time BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  complete INTEGER NOT NULL,
  wall_s DOUBLE PRECISION NOT NULL,
  mpi_s DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (program_id, ranks, end_time, job_id)
) {{clustered}};
CREATE TABLE regressions (
  job_id BIGINT PRIMARY KEY,
  program_id BIGINT NOT NULL,
  owner TEXT NOT NULL,
  end_time BIGINT NOT NULL,
  ranks BIGINT NOT NULL,
  metric TEXT NOT NULL,
  value_s DOUBLE PRECISION NOT NULL,
  baseline_s DOUBLE PRECISION NOT NULL,
  noise_s DOUBLE PRECISION NOT NULL,
  history_runs INTEGER NOT NULL,
  moved TEXT NOT NULL
);
CREATE INDEX regressions_owner ON regressions (owner, end_time);
CREATE INDEX regressions_end_time ON regressions (end_time);
CREATE TABLE ingests (
  ingest_id {{id}},
  started BIGINT NOT NULL,
  finished BIGINT NOT NULL,
  records BIGINT NOT NULL,
  stored BIGINT NOT NULL,
  duplicates BIGINT NOT NULL,
  quarantined BIGINT NOT NULL,
  flagged BIGINT NOT NULL,
  lag_median_s DOUBLE PRECISION NOT NULL,
  lag_max_s DOUBLE PRECISION NOT NULL
);
)sql",
    // 9: the MPI library's own variables (MPI_T) across jobs, so that a site can correlate its
    // settings with performance (site/mpi_t_index.hpp). A job's control variables are some
    // hundreds of name = value pairs, nearly always the same set for every job of one MPI
    // installation: each distinct set is kept once (mpi_t_settings, keyed by a digest of its
    // text; mpi_t_setting_values its pairs) and a job adds one row naming its set (job_mpi_t).
    // Performance variables differ per job: one row per job and variable (job_pvars), its sum,
    // min and max over the ranks. fill_mpi_t fills them from the records stored before.
    R"sql(
CREATE TABLE mpi_t_settings (
  settings_id {{id}},
  digest TEXT NOT NULL UNIQUE
);
CREATE TABLE mpi_t_setting_values (
  settings_id BIGINT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  from_environment INTEGER NOT NULL,
  PRIMARY KEY (settings_id, name)
) {{clustered}};
CREATE TABLE job_mpi_t (
  job_id BIGINT PRIMARY KEY,
  settings_id BIGINT NOT NULL,
  owner TEXT NOT NULL,
  end_time BIGINT NOT NULL
);
CREATE INDEX job_mpi_t_end_time ON job_mpi_t (end_time);
CREATE TABLE job_pvars (
  name TEXT NOT NULL,
  job_id BIGINT NOT NULL,
  var_class TEXT NOT NULL,
  ranks BIGINT NOT NULL,
  sum_value DOUBLE PRECISION NOT NULL,
  min_value DOUBLE PRECISION NOT NULL,
  max_value DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (name, job_id)
) {{clustered}};
)sql",
    // 10: a set of control variables is one row, its text (site/mpi_t_settings.hpp) beside its
    // digest, instead of a row per variable in mpi_t_setting_values: a new set cost a few
    // hundred rows and index entries, as many as a hundred jobs' routines, and a site whose
    // jobs vary in size meets a new set every few dozen jobs. keep_settings_as_text moves the
    // rows of version 9 into the texts and drops their table.
    R"sql(
ALTER TABLE mpi_t_settings ADD COLUMN settings TEXT NOT NULL DEFAULT '';
)sql",
    // 11: the jobs' MPI time (MPI core-hours) in the period's and the owner's list indexes, so
    // that the site's critical jobs by MPI time and the lists ranked by it sort index entries
    // instead of reading every matching row (the site page of 90 days at 200,000 jobs: 1.4 s).
    R"sql(
DROP INDEX jobs_period;
CREATE INDEX jobs_period ON jobs (end_time, mpi_percent, owner, language, ranks, cpu_class,
  cpu_time_s, mpi_time_s{{row_id}});
DROP INDEX jobs_owner_list;
CREATE INDEX jobs_owner_list ON jobs (owner, end_time, mpi_percent, cpu_time_s, ranks, language,
  mpi_time_s{{row_id}});
)sql",
    // 12: the Slurm account and partition of a job (its record's "slurm" block), for reports
    // by account and partition beside those by user. Jobs stored before have neither: their
    // records kept no Slurm facts.
    R"sql(
ALTER TABLE jobs ADD COLUMN slurm_account TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN slurm_partition TEXT NOT NULL DEFAULT '';
)sql",
    // 13: rank 0's exit code after MPI_Finalize, for the jobs lists. NULL where the record
    // does not know it (jobs stored before included: their records are not read again), never
    // 0, which would call a job clean that was not seen exiting.
    R"sql(
ALTER TABLE jobs ADD COLUMN exit_code BIGINT;
)sql",
    // 14: who talks to whom: each job's point-to-point pairs from its record's communication
    // section, one row per kind of message, sender and receiver (world ranks), and what a large
    // job's record left out of its list (the job's matrix is whole without such a row). Jobs
    // stored before have none: their records are not read again.
    R"sql(
CREATE TABLE job_pairs (
  job_id BIGINT NOT NULL,
  kind TEXT NOT NULL,
  from_rank BIGINT NOT NULL,
  to_rank BIGINT NOT NULL,
  messages BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  PRIMARY KEY (job_id, kind, from_rank, to_rank)
) {{clustered}};
CREATE TABLE job_unlisted_pairs (
  job_id BIGINT PRIMARY KEY,
  pairs BIGINT NOT NULL,
  messages BIGINT NOT NULL,
  bytes BIGINT NOT NULL
);
)sql",
    // 15: the jobs that did not exit with 0, for the jobs lists' filter of them (exit=nonzero),
    // which read every job without it (0.26-1.1 s at 212,000 jobs, whatever the order). Partial:
    // failed jobs are few, and the filter's condition is written as the index's.
    R"sql(
CREATE INDEX jobs_failed ON jobs (end_time) WHERE exit_code <> 0;
)sql",
    // 16: the collectives of each job by communicator (its record's communication.collectives):
    // one row per communicator, numbered heaviest first as the record lists them (its members'
    // text can be tens of kilobytes: too long for a key, and kept out of a clustered table), with
    // the figures a site asks of it (the most a member sent over the mean: NULL when no member sent
    // bytes); each member of a communicator the record lists them for (up to 32 members); and what
    // the record left out or could not name. Jobs stored before have none: their records are not
    // read again.
    R"sql(
CREATE TABLE job_collectives (
  job_id BIGINT NOT NULL,
  communicator BIGINT NOT NULL,
  members TEXT NOT NULL,
  size BIGINT NOT NULL,
  members_reported BIGINT NOT NULL,
  calls BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  calls_min BIGINT NOT NULL,
  calls_max BIGINT NOT NULL,
  bytes_min BIGINT NOT NULL,
  bytes_min_rank BIGINT NOT NULL,
  bytes_mean DOUBLE PRECISION NOT NULL,
  bytes_max BIGINT NOT NULL,
  bytes_max_rank BIGINT NOT NULL,
  imbalance DOUBLE PRECISION,
  PRIMARY KEY (job_id, communicator)
);
CREATE TABLE job_collective_members (
  job_id BIGINT NOT NULL,
  communicator BIGINT NOT NULL,
  member_rank BIGINT NOT NULL,
  calls BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  PRIMARY KEY (job_id, communicator, member_rank)
) {{clustered}};
CREATE TABLE job_collectives_elsewhere (
  job_id BIGINT PRIMARY KEY,
  unlisted_calls BIGINT NOT NULL,
  unlisted_bytes BIGINT NOT NULL,
  unattributed_calls BIGINT NOT NULL,
  unattributed_bytes BIGINT NOT NULL
);
)sql",
};

// The jobs lists' indexes as of version 5 (migration 4's), which migration 6 builds again on
// PostgreSQL with job_id last: a list picks its page's job ids from one of them, and only with
// the id inside is that an index-only scan there (SQLite's indexes hold the row id anyway);
// without it, a walk of an index fetched every row it passed.
const std::pair<const char*, const char*> list_indexes[] = {
    {"jobs_period", "end_time, mpi_percent, owner, language, ranks, cpu_class, cpu_time_s"},
    {"jobs_owner_list", "owner, end_time, mpi_percent, cpu_time_s, ranks, language"},
    {"jobs_by_mpi", "mpi_percent, end_time, cpu_time_s, ranks, owner, language"},
    {"jobs_by_cpu", "cpu_time_s, end_time, mpi_percent, ranks, owner, language"},
    {"jobs_by_ranks", "ranks, end_time, mpi_percent, cpu_time_s, owner, language"},
};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

std::string store::migration_sql(int version) const {
  if (version < 1 || version > static_cast<int>(std::size(migrations)))
    throw store_error("no migration to schema version " + std::to_string(version));
  std::string sql = replace_all(migrations[version - 1], "{{id}}", id_column_type());
  sql = replace_all(sql, "{{blob}}", blob_column_type());
  sql = replace_all(sql, "{{drop_foreign_keys}}", drop_foreign_keys_sql());
  sql = replace_all(sql, "{{byte_order}}", byte_order_collation());
  sql = replace_all(sql, "{{row_id}}", row_id_column());
  sql = replace_all(sql, "{{clustered}}", clustered_table());
  std::string rebuilt;
  if (!row_id_column().empty())
    for (const auto& [name, columns] : list_indexes)
      rebuilt += std::string("DROP INDEX ") + name + ";\nCREATE INDEX " + name + " ON jobs (" +
                 columns + row_id_column() + ");\n";
  sql = replace_all(sql, "{{list_indexes_with_row_id}}", rebuilt);
  sql = replace_all(sql, "{{totals_columns}}",
                    "jobs BIGINT NOT NULL, pes BIGINT NOT NULL, cpu_time_s DOUBLE PRECISION "
                    "NOT NULL, mpi_time_s DOUBLE PRECISION NOT NULL, overhead_s DOUBLE "
                    "PRECISION NOT NULL, wall_time_s DOUBLE PRECISION NOT NULL, pe_weighted "
                    "DOUBLE PRECISION NOT NULL, mpi_calls DOUBLE PRECISION NOT NULL, mpi_bytes "
                    "DOUBLE PRECISION NOT NULL, instructions DOUBLE PRECISION NOT NULL, "
                    "instructions_cpu_time_s DOUBLE PRECISION NOT NULL,");
  return sql;
}

void store::migrate() {
  execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  constexpr int known = static_cast<int>(std::size(migrations));
  static_assert(known == store_schema_version);
  if (schema_version() == known)
    return;
  begin_migration(); // two ingests starting at once must not both migrate
  try {
    const int have = schema_version();
    if (have > known)
      throw store_error("the store has schema version " + std::to_string(have) +
                        ", newer than this strata knows (" + std::to_string(known) +
                        "): upgrade strata");
    for (int v = have; v < known; ++v) {
      execute(migration_sql(v + 1));
      if (v + 1 == 4)
        fill_site_days(*this);
      if (v + 1 == 8)
        fill_programs(*this);
      // The index of the records stored before version 9 is written as version 10 keeps it.
      if (v + 1 == 10) {
        keep_settings_as_text(*this);
        if (have < 9)
          fill_mpi_t(*this);
      }
      execute("INSERT INTO schema_version (version) VALUES (" + std::to_string(v + 1) + ")");
    }
    execute("COMMIT");
  } catch (...) {
    try {
      execute("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

} // namespace strata::site
