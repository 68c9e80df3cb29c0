#include "site/store.hpp"

#include "profiler/record/record.hpp"
#include "site/groups.hpp"
#include "site/store_backends.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <libdeflate.h>
#include <map>
#include <memory>
#include <mutex>
#include <pwd.h>
#include <set>
#include <tuple>
#include <unistd.h>
#include <zlib.h>

namespace strata::site {

// What a search text matches in `executables`, looked up before the jobs are (store::search).
struct search_terms {
  std::string byte_order;                              // store::byte_order_collation()
  std::optional<std::vector<std::string>> executables; // none: too many, matched in the query
  bool record_ids = true;                              // some record id starts with the text
};

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
  {{group_columns}}
  PRIMARY KEY (day, owner, language, ranks, cpu_class)
);
)sql",
    // 2: the web interface's login tokens (src/web/tokens.hpp), kept only as SHA-256 hashes.
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
    // cost the server more than the inserts themselves (a query and a row lock per routine row:
    // 50 us of its 137 us a record at ingest, docs/PERFORMANCE.md); the one writer,
    // store::insert, adds a job's routines and record in the job's own transaction with the id
    // the insert returned, and nothing deletes jobs. SQLite keeps them (cheap there, and it
    // cannot drop a constraint).
    "{{drop_foreign_keys}}",
    // 4: the web interface at a million jobs (docs/PERFORMANCE.md, "Web interface").
    // Jobs lists first pick the page's job ids from one of these indexes alone (each holds every
    // column the lists filter and sort on), then read those rows: one owner's list reads none of
    // the owner's other rows, and the site's lists by MPI %, CPU time or size stop at the page's
    // last entry; jobs_period gets cpu_time_s for lists of a period by CPU time. The owner
    // index serves the reports' latest jobs of an owner, as (owner, end_time) did.
    // The site page's sums over whole days come from three more day tables, a few hundred rows
    // a day where day_classes (per owner and exact size) holds thousands: per owner, per
    // language, size class and CPU-time class, and per MPI % bucket (see mpi_bucket).
    // store::fill_site_days fills them from what is already stored.
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
  {{group_columns}}
  PRIMARY KEY (day, language, size_class, cpu_class)
);
)sql",
    // 5: one owner's list by MPI %, CPU time or size walks that owner's entries in the list's
    // order and stops at the page's last one (with jobs_owner_list alone, the busiest user's
    // 200,000 entries at a million jobs were read and sorted for every such page).
    R"sql(
CREATE INDEX jobs_owner_by_mpi ON jobs (owner, mpi_percent, end_time, cpu_time_s, ranks, language);
CREATE INDEX jobs_owner_by_cpu ON jobs (owner, cpu_time_s, end_time, mpi_percent, ranks, language);
CREATE INDEX jobs_owner_by_ranks ON jobs (owner, ranks, end_time, mpi_percent, cpu_time_s,
                                          language);
)sql",
    // 6 (PostgreSQL also: the lists' indexes again with job_id last, see list_indexes): the
    // jobs list's text search at a million jobs, and ingest's cost of the lists' indexes
    // (docs/PERFORMANCE.md). A search matches executables by substring and record ids by
    // prefix. Executables are few (a site's programs, not its jobs), so their substrings are
    // looked up in `executables` (kept by each insert) and the jobs of the executables found
    // through jobs_by_executable, which holds every column the lists filter and sort on; record
    // ids by a range of jobs_record_id (byte order: "C" on PostgreSQL, whatever the database's
    // collation, so that a prefix is a range). The three per-owner sort indexes of version 5
    // go: store::jobs_and_count counts the matches first (bounded) and, for many, walks the
    // site-wide index of the sort order, filtering by owner inside it; for few, reads them by
    // the owner's index and sorts them (each of those indexes cost 1-2 s of CPU per 100,000
    // records at ingest).
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
    // Its one reader, store::routine_sums over the partial days at a period's ends, finds the
    // period's jobs through jobs_period and their rows through the key instead. The web reads
    // whole days only (day_routines). IF EXISTS: the tests take stores back to older versions.
    R"sql(
DROP INDEX IF EXISTS job_routines_end_time;
)sql",
};

// The jobs lists' indexes as of version 5 (migration 4's), which migration 6 builds again on
// PostgreSQL with job_id last: a list picks its page's job ids from one of them, and only with
// the id inside is that an index-only scan there (SQLite's indexes hold the row id anyway). At a
// million jobs the busiest user's list by size walked 300,000 entries of jobs_by_ranks in 700 ms
// fetching each row, 65 ms without.
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

std::string user_name(std::int64_t uid) {
  // Ingest asks for the same few owners again and again; NSS may ask a daemon each time.
  static std::mutex mutex;
  static std::map<std::int64_t, std::string> cache;
  const std::lock_guard lock(mutex);
  if (auto it = cache.find(uid); it != cache.end())
    return it->second;
  std::string& name = cache[uid];
  char buf[4096];
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    name = found->pw_name;
  return name;
}

constexpr const char* job_columns =
    "job_id, job_key, record_id, owner, owner_uid, claimed_user, claimed_uid, owner_mismatch, "
    "start_time, end_time, ranks, ranks_reported, hosts, executable, language, mpi_flavor, "
    "status, partial, wall_time_s, cpu_time_s, mpi_time_s, mpi_percent, overhead_s, mpi_calls, "
    "mpi_bytes, routine_groups, cpu_class, instructions, ingested_at";

job_row read_job(const store::row& r) {
  job_row j;
  int c = 0;
  j.job_id = r.i64(c++);
  j.job_key = r.text(c++);
  j.record_id = r.text(c++);
  j.owner = r.text(c++);
  j.owner_uid = r.i64(c++);
  j.claimed_user = r.text(c++);
  j.claimed_uid = r.i64(c++);
  j.owner_mismatch = r.i64(c++) != 0;
  j.start_time = r.i64(c++);
  j.end_time = r.i64(c++);
  j.ranks = r.i64(c++);
  j.ranks_reported = r.i64(c++);
  j.hosts = r.i64(c++);
  j.executable = r.text(c++);
  j.language = r.text(c++);
  j.mpi_flavor = r.text(c++);
  j.status = r.text(c++);
  j.partial = r.i64(c++) != 0;
  j.wall_time_s = r.f64(c++);
  j.cpu_time_s = r.f64(c++);
  j.mpi_time_s = r.f64(c++);
  j.mpi_percent = r.f64(c++);
  j.overhead_s = r.f64(c++);
  j.mpi_calls = r.i64(c++);
  j.mpi_bytes = r.i64(c++);
  j.routine_groups = r.i64(c++);
  j.cpu_class = static_cast<int>(r.i64(c++));
  if (!r.is_null(c))
    j.instructions = r.f64(c);
  ++c;
  j.ingested_at = r.i64(c++);
  return j;
}

// How a jobs list picks its page of ids (store::jobs_and_count). A backend's planner cannot
// tell, without statistics of the combination (SQLite keeps none), whether walking the sort
// order's index and filtering inside it stops soon (many matches) or reads a million entries
// (few matches); the bounded count tells, and the query is then written so that only the
// chosen index can serve it: a filter on another column becomes an expression (`col + 0`,
// `col || ''`, the same on both backends), or the sort key does.
enum class list_plan {
  planner,   // as written: the backend chooses
  by_filter, // few matches: the index of a filter, then sort them
  by_order,  // many matches: the sort order's index, stopping at the page's last entry
};

// The column an order sorts on first: the leading column of its site-wide index.
std::string_view order_column(job_order o) {
  switch (o) {
  case job_order::mpi_percent_desc:
    return "mpi_percent";
  case job_order::cpu_time_desc:
    return "cpu_time_s";
  case job_order::ranks_desc:
    return "ranks";
  case job_order::end_asc:
  case job_order::end_desc:
  case job_order::latest:
    break;
  }
  return "end_time";
}

// A search text's upper bound for a prefix range in byte order: no text starting with `text`
// sorts at or after it, except one continuing with U+10FFFF (the largest code point, a
// noncharacter, so kept as valid UTF-8 for PostgreSQL).
std::string prefix_end(const std::string& text) {
  return text + "\xf4\x8f\xbf\xbf";
}

// The WHERE clause of a job filter over `jobs`, with its parameters.
std::string where_clause(const job_filter& f, std::vector<store::param>& params,
                         const search_terms& terms, list_plan plan = list_plan::planner,
                         job_order order = job_order::end_desc) {
  std::string sql = " WHERE 1=1";
  // Under by_order only the sort column stays usable by an index.
  auto column = [&](std::string_view name, bool is_text) {
    if (plan != list_plan::by_order || name == order_column(order))
      return std::string(name);
    return "(" + std::string(name) + (is_text ? " || '')" : " + 0)");
  };
  auto add = [&](const std::string& cond, store::param p) {
    params.push_back(std::move(p));
    sql += " AND " + replace_all(cond, "?", "$" + std::to_string(params.size()));
  };
  if (f.when) {
    add(column("end_time", false) + " >= ?", f.when->from);
    add(column("end_time", false) + " < ?", f.when->to);
  }
  // With a search, never the owner's index: jobs_by_executable holds the owner too, and reads
  // no row (SQLite's planner took the owner's index and read each of the busiest user's
  // 214,000 rows for their executable: 1.3-2.2 s at a million jobs).
  if (f.owner)
    add((f.text ? "(owner || '')" : column("owner", true)) + " = ?", *f.owner);
  if (f.language)
    add("language = ?", *f.language);
  if (f.min_mpi_percent)
    add(column("mpi_percent", false) + " > ?", *f.min_mpi_percent);
  if (f.min_ranks)
    add(column("ranks", false) + " >= ?", *f.min_ranks);
  if (f.max_ranks)
    add(column("ranks", false) + " <= ?", *f.max_ranks);
  if (f.text) {
    // Executables by substring (strpos, not LIKE: no wildcards, the same on both backends)
    // through the small `executables` table, record ids by prefix (migration 6).
    // The executables found are given as a list of values, not a subquery: PostgreSQL
    // combines an index's IN list and the record ids' range (a bitmap OR), while with a
    // subquery it scans every job (0.6 s at a million). A part that matches nothing is left
    // out: with an OR PostgreSQL reads every matching row (a bitmap heap scan, 240 ms for
    // 75,000 jobs), with one part it counts and sorts from the index alone.
    // (Each parameter is used: PostgreSQL cannot type one that is not.)
    std::vector<std::string> either;
    if (!terms.executables) {
      params.push_back(*f.text);
      either.push_back(column("executable", true) +
                       " IN (SELECT executable FROM executables WHERE strpos(executable, $" +
                       std::to_string(params.size()) + ") > 0)");
    } else if (!terms.executables->empty()) {
      std::string in = column("executable", true) + " IN (";
      for (size_t i = 0; i < terms.executables->size(); ++i) {
        params.emplace_back((*terms.executables)[i]);
        in += (i == 0 ? "$" : ", $") + std::to_string(params.size());
      }
      either.push_back(in + ")");
    }
    if (terms.record_ids) {
      params.push_back(*f.text);
      const std::string p = "$" + std::to_string(params.size());
      params.push_back(prefix_end(*f.text));
      const std::string end = "$" + std::to_string(params.size());
      const std::string id = column("record_id", true) + " " + terms.byte_order;
      either.push_back("(" + id + " >= " + p + " AND " + id + " < " + end + ")");
    }
    if (either.empty())
      sql += " AND 1=0";
    else if (either.size() == 1)
      sql += " AND " + either[0];
    else
      sql += " AND (" + either[0] + " OR " + either[1] + ")";
  }
  return sql;
}

std::string order_clause(job_order o, list_plan plan = list_plan::planner) {
  // by_filter: the sort key as an expression, so that no index is walked for its order.
  const std::string key = plan == list_plan::by_filter
                              ? "(" + std::string(order_column(o)) + " + 0)"
                              : std::string(order_column(o));
  switch (o) {
  case job_order::end_asc:
    return " ORDER BY " + key + " ASC, job_id ASC";
  case job_order::latest:
    return " ORDER BY " + key + " DESC";
  case job_order::end_desc:
    return " ORDER BY " + key + " DESC, job_id DESC";
  case job_order::mpi_percent_desc:
  case job_order::cpu_time_desc:
  case job_order::ranks_desc:
    break;
  }
  // Ties (many jobs share a size, some an MPI % or CPU time) newest first: the site-wide
  // index of each order holds end_time next, so a walk sorts no group of equal keys.
  return " ORDER BY " + key + " DESC, end_time DESC, job_id DESC";
}

// Sums over `jobs` rows as job_totals columns, in the order read_totals reads them.
constexpr const char* totals_columns =
    "COUNT(*), COALESCE(SUM(ranks), 0), COALESCE(SUM(cpu_time_s), 0), "
    "COALESCE(SUM(mpi_time_s), 0), COALESCE(SUM(overhead_s), 0), COALESCE(SUM(wall_time_s), 0), "
    "COALESCE(SUM(ranks * cpu_time_s), 0), COALESCE(SUM(CAST(mpi_calls AS DOUBLE PRECISION)), 0), "
    "COALESCE(SUM(CAST(mpi_bytes AS DOUBLE PRECISION)), 0), COALESCE(SUM(instructions), 0), "
    "COALESCE(SUM(CASE WHEN instructions IS NULL THEN 0 ELSE cpu_time_s END), 0)";
constexpr int totals_column_count = 11;

job_totals read_totals(const store::row& r, int c) {
  job_totals t;
  t.jobs = r.i64(c++);
  t.pes = r.i64(c++);
  t.cpu_time_s = r.f64(c++);
  t.mpi_time_s = r.f64(c++);
  t.overhead_s = r.f64(c++);
  t.wall_time_s = r.f64(c++);
  t.pe_weighted = r.f64(c++);
  t.mpi_calls = r.i64(c++);
  t.mpi_bytes = r.i64(c++);
  t.instructions = r.f64(c++);
  t.instructions_cpu_time_s = r.f64(c++);
  return t;
}

} // namespace

// Records are kept deflated (about a quarter of the JSON): "z1", the length as 4 bytes little
// endian, then zlib data. Anything else is taken as plain text (for hand-made rows). libdeflate
// writes the zlib format at a third of zlib's cost on records of a few kilobytes (one
// compressor per thread, no per-call set-up); zlib's uncompress reads it as before.
std::string pack_record(const std::string& json) {
  struct compressor_deleter {
    void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
  };
  thread_local const std::unique_ptr<libdeflate_compressor, compressor_deleter> compressor(
      libdeflate_alloc_compressor(1));
  if (!compressor)
    return json;
  const size_t bound = libdeflate_zlib_compress_bound(compressor.get(), json.size());
  std::string out(6 + bound, '\0');
  out[0] = 'z';
  out[1] = '1';
  for (int i = 0; i < 4; ++i)
    out[2 + i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  const size_t size = json.size() > UINT32_MAX
                          ? 0
                          : libdeflate_zlib_compress(compressor.get(), json.data(), json.size(),
                                                     out.data() + 6, bound);
  if (size == 0)
    return json;
  out.resize(6 + size);
  return out;
}

std::string unpack_record(const std::string& stored) {
  if (stored.size() < 6 || stored[0] != 'z' || stored[1] != '1')
    return stored;
  uLongf size = 0;
  for (int i = 0; i < 4; ++i)
    size |= static_cast<uLongf>(static_cast<unsigned char>(stored[2 + i])) << (8 * i);
  std::string out(size, '\0');
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                 reinterpret_cast<const Bytef*>(stored.data() + 6),
                 static_cast<uLong>(stored.size() - 6)) != Z_OK)
    throw store_error("a stored record is damaged (zlib data does not inflate)");
  out.resize(size);
  return out;
}

std::int64_t week_start(std::int64_t t) {
  constexpr std::int64_t week = std::int64_t{7} * 86400,
                         monday = std::int64_t{4} * 86400; // 1970-01-05 was a Monday
  std::int64_t q = (t - monday) / week;
  if ((t - monday) % week < 0)
    --q;
  return q * week + monday;
}

stored_job make_stored_job(const record::job_record& record, std::string record_json,
                           std::int64_t owner_uid, std::string owner_name) {
  stored_job s;
  job_row& j = s.job;
  const record::job_facts& f = record.job;
  const auto start = parse_utc_time(f.start);
  const auto end = parse_utc_time(f.end);
  j.start_time = start.value_or(end.value_or(0));
  j.end_time = end.value_or(j.start_time);
  j.record_id = f.id;
  j.job_key = f.id + "@" + f.start;
  j.owner_uid = owner_uid;
  j.claimed_user = f.user;
  j.claimed_uid = static_cast<std::int64_t>(f.uid);
  j.owner_mismatch = j.claimed_uid != owner_uid;
  if (owner_name.empty())
    owner_name = user_name(owner_uid);
  if (owner_name.empty())
    owner_name = !j.owner_mismatch && !f.user.empty() ? f.user : "uid" + std::to_string(owner_uid);
  j.owner = std::move(owner_name);
  j.ranks = static_cast<std::int64_t>(f.ranks);
  j.ranks_reported = static_cast<std::int64_t>(f.ranks_reported);
  j.hosts = static_cast<std::int64_t>(f.hosts);
  j.executable = f.executable;
  j.language = f.language;
  j.mpi_flavor = f.mpi_flavor;
  j.status = std::string(record::status_name(f.status));
  j.partial = f.partial;
  j.wall_time_s = f.wall_time_s;
  j.cpu_time_s = f.wall_time_s * static_cast<double>(f.ranks_reported);
  j.mpi_time_s = f.mpi_time_s;
  j.mpi_percent = f.mpi_percent;
  j.overhead_s = f.profiler_overhead_s;
  j.cpu_class = j.cpu_time_s >= 1 ? static_cast<int>(std::floor(std::log10(j.cpu_time_s))) : 0;
  if (auto it = f.counters.find("instructions"); it != f.counters.end())
    j.instructions = static_cast<double>(it->second.outside_mpi);
  for (const record::routine& r : record.routines) {
    routine_row row;
    row.routine = r.name;
    row.calls = static_cast<std::int64_t>(std::min<std::uint64_t>(r.calls, INT64_MAX / 1024));
    row.time_s = r.time_s;
    // The store's integers are signed 64-bit: a figure beyond that is kept as the largest.
    row.bytes = static_cast<std::int64_t>(std::min<std::uint64_t>(r.bytes(), INT64_MAX / 1024));
    row.count_sum =
        static_cast<std::int64_t>(std::min<std::uint64_t>(r.count_sum, INT64_MAX / 1024));
    j.mpi_calls = std::min(j.mpi_calls, INT64_MAX - row.calls) + row.calls;
    j.mpi_bytes = std::min(j.mpi_bytes, INT64_MAX - row.bytes) + row.bytes;
    if (r.calls > 0)
      if (const auto g = group_of(r.name))
        j.routine_groups |= std::int64_t{1} << static_cast<int>(*g);
    s.routines.push_back(std::move(row));
  }
  s.record_json = std::move(record_json);
  return s;
}

std::unique_ptr<store> store::open(std::string_view url) {
  const url_result parsed = parse_db_url(url);
  if (!parsed.url)
    throw store_error(parsed.error);
  return open(*parsed.url);
}

std::unique_ptr<store> store::open(const db_url& url) {
  std::unique_ptr<store> s =
      url.kind == backend::sqlite ? open_sqlite(url.target) : open_postgresql(url.target);
  s->migrate();
  return s;
}

int store::schema_version() {
  std::int64_t v = 0;
  query("SELECT COALESCE(MAX(version), 0) FROM schema_version", {},
        [&](const row& r) { v = r.i64(0); });
  return static_cast<int>(v);
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
      std::string sql = replace_all(migrations[v], "{{id}}", id_column_type());
      sql = replace_all(sql, "{{blob}}", blob_column_type());
      sql = replace_all(sql, "{{drop_foreign_keys}}", drop_foreign_keys_sql());
      sql = replace_all(sql, "{{byte_order}}", byte_order_collation());
      sql = replace_all(sql, "{{row_id}}", row_id_column());
      std::string rebuilt;
      if (!row_id_column().empty())
        for (const auto& [name, columns] : list_indexes)
          rebuilt += std::string("DROP INDEX ") + name + ";\nCREATE INDEX " + name + " ON jobs (" +
                     columns + row_id_column() + ");\n";
      sql = replace_all(sql, "{{list_indexes_with_row_id}}", rebuilt);
      std::string groups;
      for (int g = 0; g < routine_group_count; ++g)
        groups += "g" + std::to_string(g) + "_jobs BIGINT NOT NULL, g" + std::to_string(g) +
                  "_cpu DOUBLE PRECISION NOT NULL,\n  ";
      sql = replace_all(sql, "{{totals_columns}}",
                        "jobs BIGINT NOT NULL, pes BIGINT NOT NULL, cpu_time_s DOUBLE PRECISION "
                        "NOT NULL, mpi_time_s DOUBLE PRECISION NOT NULL, overhead_s DOUBLE "
                        "PRECISION NOT NULL, wall_time_s DOUBLE PRECISION NOT NULL, pe_weighted "
                        "DOUBLE PRECISION NOT NULL, mpi_calls DOUBLE PRECISION NOT NULL, mpi_bytes "
                        "DOUBLE PRECISION NOT NULL, instructions DOUBLE PRECISION NOT NULL, "
                        "instructions_cpu_time_s DOUBLE PRECISION NOT NULL,");
      execute(replace_all(sql, "{{group_columns}}", groups));
      if (v + 1 == 4)
        fill_site_days();
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

search_terms store::search(const job_filter& filter) {
  search_terms terms;
  terms.byte_order = byte_order_collation();
  if (!filter.text)
    return terms;
  // A site's programs are few; past this many the query matches them itself.
  constexpr std::int64_t most = 1000;
  terms.executables.emplace();
  query("SELECT executable FROM executables WHERE strpos(executable, $1) > 0 LIMIT $2",
        {*filter.text, most + 1}, [&](const row& r) { terms.executables->push_back(r.text(0)); });
  if (static_cast<std::int64_t>(terms.executables->size()) > most)
    terms.executables.reset();
  terms.record_ids = false;
  const std::string id = "record_id " + terms.byte_order;
  query("SELECT 1 FROM jobs WHERE " + id + " >= $1 AND " + id + " < $2 LIMIT 1",
        {*filter.text, prefix_end(*filter.text)}, [&](const row&) { terms.record_ids = true; });
  return terms;
}

std::vector<job_row> store::jobs(const job_filter& filter) {
  return jobs_and_count(filter, 0).rows;
}

job_page store::jobs_and_count(const job_filter& filter, std::int64_t cap) {
  job_page page;
  const search_terms terms = search(filter);
  // Lists by end time without a search have an index that gives both the filter and the order
  // (the owner's, the period's); the others choose by the number of matches, counted only
  // then (the reports' lists of critical jobs count nothing).
  const bool by_end = filter.order == job_order::end_desc || filter.order == job_order::end_asc ||
                      filter.order == job_order::latest;
  const bool filtered = filter.when || filter.owner || filter.text || filter.language ||
                        filter.min_mpi_percent || filter.min_ranks || filter.max_ranks;
  const bool chooses = filtered && (!by_end || filter.text);
  const std::int64_t bound = chooses ? std::max(cap, list_threshold_) : cap;
  page.matches = bound > 0 ? count_up_to(filter, bound, terms) : 0;
  list_plan plan = list_plan::planner;
  // A deep page walks (offset + limit) / density entries of the order's index, more still
  // when the matches sort late (the busiest user's page 100 by CPU time: 300 ms on
  // PostgreSQL); one owner's or program's jobs, read from their index, cost the same on any
  // page.
  const bool deep = filter.offset + filter.limit > 1000 && (filter.owner || filter.text);
  if (chooses)
    plan = page.matches < list_threshold_ || deep ? list_plan::by_filter : list_plan::by_order;
  // The page's job ids first, from an index that holds every filter and sort column (no row
  // is read for the rows skipped or filtered out, unless a text is searched), then their rows.
  std::vector<param> params;
  std::string sql =
      std::string("SELECT ") + job_columns + " FROM jobs WHERE job_id IN (SELECT job_id FROM jobs" +
      where_clause(filter, params, terms, plan, filter.order) + order_clause(filter.order, plan);
  params.push_back(filter.limit);
  sql += " LIMIT $" + std::to_string(params.size());
  params.push_back(filter.offset);
  sql += " OFFSET $" + std::to_string(params.size()) + ")" + order_clause(filter.order);
  query(sql, params, [&](const row& r) { page.rows.push_back(read_job(r)); });
  page.matches = std::min(page.matches, cap);
  return page;
}

std::int64_t store::count_jobs(const job_filter& filter) {
  std::vector<param> params;
  const std::string sql =
      "SELECT COUNT(*) FROM jobs" + where_clause(filter, params, search(filter));
  std::int64_t n = 0;
  query(sql, params, [&](const row& r) { n = r.i64(0); });
  return n;
}

std::int64_t store::count_up_to(const job_filter& filter, std::int64_t cap,
                                const search_terms& terms) {
  std::vector<param> params;
  std::string sql =
      "SELECT COUNT(*) FROM (SELECT 1 FROM jobs" + where_clause(filter, params, terms);
  params.push_back(cap);
  sql += " LIMIT $" + std::to_string(params.size()) + ") AS capped";
  std::int64_t n = 0;
  query(sql, params, [&](const row& r) { n = r.i64(0); });
  return n;
}

std::optional<stored_job> store::job(std::int64_t job_id) {
  std::optional<stored_job> out;
  query(std::string("SELECT ") + job_columns + " FROM jobs WHERE job_id = $1", {job_id},
        [&](const row& r) {
          out.emplace();
          out->job = read_job(r);
        });
  if (out)
    query("SELECT record FROM job_records WHERE job_id = $1", {job_id},
          [&](const row& r) { out->record_json = unpack_record(r.blob(0)); });
  if (out)
    query("SELECT routine, calls, time_s, bytes, count_sum FROM job_routines WHERE job_id = $1 "
          "ORDER BY routine",
          {job_id}, [&](const row& r) {
            out->routines.push_back({r.text(0), r.i64(1), r.f64(2), r.i64(3), r.i64(4)});
          });
  return out;
}

std::optional<stored_job> store::job_by_key(const std::string& job_key) {
  std::optional<std::int64_t> id;
  query("SELECT job_id FROM jobs WHERE job_key = $1", {job_key},
        [&](const row& r) { id = r.i64(0); });
  return id ? job(*id) : std::nullopt;
}

namespace {

constexpr std::int64_t day_s = 86400;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0))
    --q;
  return q;
}

// A period as whole UTC days (read from the day tables) and the partial days at its ends
// (read from the job rows).
struct day_split {
  std::optional<period> days;
  std::vector<period> raw;
};

day_split split_days(const period& p) {
  day_split out;
  const std::int64_t first = -floor_div(-p.from, day_s) * day_s;
  const std::int64_t last = floor_div(p.to, day_s) * day_s;
  if (first < last) {
    out.days = period{first, last};
    if (p.from < first)
      out.raw.push_back({p.from, first});
    if (last < p.to)
      out.raw.push_back({last, p.to});
  } else if (p.from < p.to) {
    out.raw.push_back(p);
  }
  return out;
}

constexpr const char* rollup_totals_columns =
    "SUM(jobs), SUM(pes), SUM(cpu_time_s), SUM(mpi_time_s), SUM(overhead_s), SUM(wall_time_s), "
    "SUM(pe_weighted), SUM(mpi_calls), SUM(mpi_bytes), SUM(instructions), "
    "SUM(instructions_cpu_time_s)";

// "... AND owner = $N" with its parameter, when asked for one owner.
std::string owner_condition(const std::optional<std::string>& owner,
                            std::vector<store::param>& params) {
  if (!owner)
    return {};
  params.push_back(*owner);
  return " AND owner = $" + std::to_string(params.size());
}

// One job as day sums: what each day table adds for it.
job_totals totals_of(const job_row& j) {
  job_totals one;
  one.jobs = 1;
  one.pes = j.ranks;
  one.cpu_time_s = j.cpu_time_s;
  one.mpi_time_s = j.mpi_time_s;
  one.overhead_s = j.overhead_s;
  one.wall_time_s = j.wall_time_s;
  one.pe_weighted = static_cast<double>(j.ranks) * j.cpu_time_s;
  one.mpi_calls = j.mpi_calls;
  one.mpi_bytes = j.mpi_bytes;
  if (j.instructions) {
    one.instructions = *j.instructions;
    one.instructions_cpu_time_s = j.cpu_time_s;
  }
  return one;
}

} // namespace

void add_totals(job_totals& into, const job_totals& t) {
  into.jobs += t.jobs;
  into.pes += t.pes;
  into.cpu_time_s += t.cpu_time_s;
  into.mpi_time_s += t.mpi_time_s;
  into.overhead_s += t.overhead_s;
  into.wall_time_s += t.wall_time_s;
  into.pe_weighted += t.pe_weighted;
  into.mpi_calls += t.mpi_calls;
  into.mpi_bytes += t.mpi_bytes;
  into.instructions += t.instructions;
  into.instructions_cpu_time_s += t.instructions_cpu_time_s;
}

insert_result store::insert(const std::vector<stored_job>& jobs) {
  begin_write();
  try {
    insert_result r = insert_rows(jobs);
    add_executables(jobs, r.was_new);
    add_rollups(jobs, r.was_new);
    add_site_rollups(jobs, r.was_new);
    execute("COMMIT");
    return r;
  } catch (...) {
    try {
      execute("ROLLBACK");
    } catch (...) { // the first error is the one to report
    }
    throw;
  }
}

store::upsert_clauses store::upsert_sql(const std::string& table,
                                        const std::vector<std::string>& key_columns,
                                        const std::vector<std::string>& sum_columns) {
  upsert_clauses sql;
  for (const std::string& c : key_columns)
    sql.keys += (sql.keys.empty() ? "" : ", ") + c;
  sql.columns = sql.keys;
  for (const std::string& c : sum_columns) {
    sql.columns += ", " + c;
    sql.update +=
        (sql.update.empty() ? "" : ", ") + c + " = " + table + "." + c + " + excluded." + c;
  }
  return sql;
}

void store::upsert(const std::string& table, const std::vector<std::string>& key_columns,
                   const std::vector<std::string>& sum_columns,
                   const std::vector<std::vector<param>>& rows) {
  const size_t width = key_columns.size() + sum_columns.size();
  const size_t chunk = std::max<size_t>(1, 8000 / width); // under both backends' limits
  const auto [columns, keys, update] = upsert_sql(table, key_columns, sum_columns);
  for (size_t begin = 0; begin < rows.size(); begin += chunk) {
    const size_t end = std::min(rows.size(), begin + chunk);
    std::string sql = "INSERT INTO " + table + " (" + columns + ") VALUES ";
    std::vector<param> params;
    params.reserve((end - begin) * width);
    for (size_t i = begin; i < end; ++i) {
      sql += i == begin ? "(" : ", (";
      for (size_t c = 0; c < width; ++c) {
        params.push_back(rows[i][c]);
        sql += (c == 0 ? "$" : ", $") + std::to_string(params.size());
      }
      sql += ")";
    }
    sql += " ON CONFLICT (" + keys + ") DO UPDATE SET " + update;
    query(sql, params, [](const row&) {});
  }
}

void store::add_executables(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new) {
  // A batch holds a site's few programs many times over: each distinct one is offered once.
  std::set<std::string> distinct;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (was_new[i])
      distinct.insert(jobs[i].job.executable);
  constexpr size_t chunk = 1000;
  auto it = distinct.begin();
  while (it != distinct.end()) {
    std::string sql = "INSERT INTO executables (executable) VALUES ";
    std::vector<param> params;
    for (; it != distinct.end() && params.size() < chunk; ++it) {
      params.emplace_back(*it);
      sql += (params.size() == 1 ? "($" : ", ($") + std::to_string(params.size()) + ")";
    }
    query(sql + " ON CONFLICT (executable) DO NOTHING", params, [](const row&) {});
  }
}

void store::add_rollups(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new) {
  using routine_key = std::tuple<std::int64_t, std::string, std::string>;
  struct routine_sum {
    std::int64_t jobs = 0;
    double calls = 0, bytes = 0, count_sum = 0, time_s = 0;
  };
  using class_key = std::tuple<std::int64_t, std::string, std::string, std::int64_t, int>;
  struct class_sum {
    job_totals t;
    std::vector<std::int64_t> group_jobs = std::vector<std::int64_t>(routine_group_count, 0);
    std::vector<double> group_cpu = std::vector<double>(routine_group_count, 0.0);
  };
  std::map<routine_key, routine_sum> routines;
  std::map<class_key, class_sum> classes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!was_new[i])
      continue;
    const job_row& j = jobs[i].job;
    const std::int64_t day = floor_div(j.end_time, day_s) * day_s;
    for (const routine_row& r : jobs[i].routines) {
      routine_sum& s = routines[{day, j.owner, r.routine}];
      ++s.jobs;
      s.calls += static_cast<double>(r.calls);
      s.bytes += static_cast<double>(r.bytes);
      s.count_sum += static_cast<double>(r.count_sum);
      s.time_s += r.time_s;
    }
    class_sum& c = classes[{day, j.owner, j.language, j.ranks, j.cpu_class}];
    add_totals(c.t, totals_of(j));
    for (int g = 0; g < routine_group_count; ++g) {
      if ((j.routine_groups >> g) & 1) {
        ++c.group_jobs[static_cast<size_t>(g)];
        c.group_cpu[static_cast<size_t>(g)] += j.cpu_time_s;
      }
    }
  }
  std::vector<std::vector<param>> rows;
  rows.reserve(routines.size());
  for (const auto& [k, v] : routines)
    rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), v.jobs, v.calls, v.bytes,
                    v.count_sum, v.time_s});
  upsert("day_routines", {"day", "owner", "routine"},
         {"jobs", "calls", "bytes", "count_sum", "time_s"}, rows);
  rows.clear();
  std::vector<std::string> sums = {"jobs",
                                   "pes",
                                   "cpu_time_s",
                                   "mpi_time_s",
                                   "overhead_s",
                                   "wall_time_s",
                                   "pe_weighted",
                                   "mpi_calls",
                                   "mpi_bytes",
                                   "instructions",
                                   "instructions_cpu_time_s"};
  for (int g = 0; g < routine_group_count; ++g) {
    sums.push_back("g" + std::to_string(g) + "_jobs");
    sums.push_back("g" + std::to_string(g) + "_cpu");
  }
  for (const auto& [k, v] : classes) {
    std::vector<param> r = {std::get<0>(k),
                            std::get<1>(k),
                            std::get<2>(k),
                            std::get<3>(k),
                            std::get<4>(k),
                            v.t.jobs,
                            v.t.pes,
                            v.t.cpu_time_s,
                            v.t.mpi_time_s,
                            v.t.overhead_s,
                            v.t.wall_time_s,
                            v.t.pe_weighted,
                            static_cast<double>(v.t.mpi_calls),
                            static_cast<double>(v.t.mpi_bytes),
                            v.t.instructions,
                            v.t.instructions_cpu_time_s};
    for (int g = 0; g < routine_group_count; ++g) {
      r.emplace_back(v.group_jobs[static_cast<size_t>(g)]);
      r.emplace_back(v.group_cpu[static_cast<size_t>(g)]);
    }
    rows.push_back(std::move(r));
  }
  upsert("day_classes", {"day", "owner", "language", "ranks", "cpu_class"}, sums, rows);
}

int mpi_bucket(double mpi_percent) {
  if (!(mpi_percent > 0)) // NaN too: above no threshold
    return 0;
  if (mpi_percent > 100)
    return 101;
  return static_cast<int>(std::ceil(mpi_percent));
}

namespace {

const std::vector<std::string> totals_sum_columns = {"jobs",
                                                     "pes",
                                                     "cpu_time_s",
                                                     "mpi_time_s",
                                                     "overhead_s",
                                                     "wall_time_s",
                                                     "pe_weighted",
                                                     "mpi_calls",
                                                     "mpi_bytes",
                                                     "instructions",
                                                     "instructions_cpu_time_s"};

void append_totals(std::vector<store::param>& row, const job_totals& t) {
  row.emplace_back(t.jobs);
  row.emplace_back(t.pes);
  row.emplace_back(t.cpu_time_s);
  row.emplace_back(t.mpi_time_s);
  row.emplace_back(t.overhead_s);
  row.emplace_back(t.wall_time_s);
  row.emplace_back(t.pe_weighted);
  row.emplace_back(static_cast<double>(t.mpi_calls));
  row.emplace_back(static_cast<double>(t.mpi_bytes));
  row.emplace_back(t.instructions);
  row.emplace_back(t.instructions_cpu_time_s);
}

} // namespace

// Rows of day_mpi, day_owners and day_shapes, summed before they are upserted.
struct site_day_sums {
  std::map<std::pair<std::int64_t, int>, std::int64_t> mpi;
  std::map<std::pair<std::int64_t, std::string>, job_totals> owners;
  using shape_key = std::tuple<std::int64_t, std::string, std::int64_t, int>;
  struct shape {
    job_totals t;
    std::vector<std::int64_t> group_jobs = std::vector<std::int64_t>(routine_group_count, 0);
    std::vector<double> group_cpu = std::vector<double>(routine_group_count, 0.0);
  };
  std::map<shape_key, shape> shapes;
};

std::int64_t size_class_of(std::int64_t ranks) {
  if (ranks <= 1)
    return ranks;
  std::int64_t bucket = 1;
  while (bucket < ranks && bucket < (std::int64_t{1} << 62))
    bucket *= 2;
  return bucket == ranks ? ranks : bucket / 2 + 1;
}

void store::write_site_days(const site_day_sums& sums) {
  std::vector<std::vector<param>> rows;
  rows.reserve(sums.mpi.size());
  for (const auto& [k, n] : sums.mpi)
    rows.push_back({k.first, k.second, n});
  upsert("day_mpi", {"day", "mpi_bucket"}, {"jobs"}, rows);
  rows.clear();
  for (const auto& [k, t] : sums.owners) {
    std::vector<param> r = {k.first, k.second};
    append_totals(r, t);
    rows.push_back(std::move(r));
  }
  upsert("day_owners", {"day", "owner"}, totals_sum_columns, rows);
  rows.clear();
  std::vector<std::string> columns = totals_sum_columns;
  for (int g = 0; g < routine_group_count; ++g) {
    columns.push_back("g" + std::to_string(g) + "_jobs");
    columns.push_back("g" + std::to_string(g) + "_cpu");
  }
  for (const auto& [k, v] : sums.shapes) {
    std::vector<param> r = {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)};
    append_totals(r, v.t);
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      r.emplace_back(v.group_jobs[g]);
      r.emplace_back(v.group_cpu[g]);
    }
    rows.push_back(std::move(r));
  }
  upsert("day_shapes", {"day", "language", "size_class", "cpu_class"}, columns, rows);
}

void store::add_site_rollups(const std::vector<stored_job>& jobs,
                             const std::vector<bool>& was_new) {
  site_day_sums sums;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!was_new[i])
      continue;
    const job_row& j = jobs[i].job;
    const std::int64_t day = floor_div(j.end_time, day_s) * day_s;
    ++sums.mpi[{day, mpi_bucket(j.mpi_percent)}];
    const job_totals one = totals_of(j);
    add_totals(sums.owners[{day, j.owner}], one);
    auto& shape = sums.shapes[{day, j.language, size_class_of(j.ranks), j.cpu_class}];
    add_totals(shape.t, one);
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      if ((j.routine_groups >> g) & 1) {
        ++shape.group_jobs[g];
        shape.group_cpu[g] += j.cpu_time_s;
      }
    }
  }
  write_site_days(sums);
}

void store::fill_site_days() {
  site_day_sums sums;
  query("SELECT end_time, mpi_percent FROM jobs", {}, [&](const row& r) {
    ++sums.mpi[{floor_div(r.i64(0), day_s) * day_s, mpi_bucket(r.f64(1))}];
  });
  // The owners' and shapes' sums are day_classes' rows summed differently.
  std::string sql = std::string("SELECT day, owner, language, ranks, cpu_class, ") +
                    "jobs, pes, cpu_time_s, mpi_time_s, overhead_s, wall_time_s, pe_weighted, "
                    "mpi_calls, mpi_bytes, instructions, instructions_cpu_time_s";
  for (int g = 0; g < routine_group_count; ++g)
    sql += ", g" + std::to_string(g) + "_jobs, g" + std::to_string(g) + "_cpu";
  query(sql + " FROM day_classes", {}, [&](const row& r) {
    const std::int64_t day = r.i64(0);
    job_totals t;
    t.jobs = r.i64(5);
    t.pes = r.i64(6);
    t.cpu_time_s = r.f64(7);
    t.mpi_time_s = r.f64(8);
    t.overhead_s = r.f64(9);
    t.wall_time_s = r.f64(10);
    t.pe_weighted = r.f64(11);
    t.mpi_calls = r.i64(12);
    t.mpi_bytes = r.i64(13);
    t.instructions = r.f64(14);
    t.instructions_cpu_time_s = r.f64(15);
    add_totals(sums.owners[{day, r.text(1)}], t);
    auto& shape =
        sums.shapes[{day, r.text(2), size_class_of(r.i64(3)), static_cast<int>(r.i64(4))}];
    add_totals(shape.t, t);
    int col = 16;
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      shape.group_jobs[g] += r.i64(col++);
      shape.group_cpu[g] += r.f64(col++);
    }
  });
  write_site_days(sums);
}

std::int64_t store::count_critical(const period& when, double threshold) {
  const day_split split = split_days(when);
  std::vector<period> raw = split.raw;
  std::int64_t n = 0;
  if (split.days) {
    if (threshold >= 0 && threshold <= 100 && threshold == std::floor(threshold))
      query("SELECT COALESCE(SUM(jobs), 0) FROM day_mpi WHERE day >= $1 AND day < $2 AND "
            "mpi_bucket > $3",
            {split.days->from, split.days->to, static_cast<std::int64_t>(threshold)},
            [&](const row& r) { n += r.i64(0); });
    else
      raw.push_back(*split.days);
  }
  for (const period& p : raw)
    query("SELECT COUNT(*) FROM jobs WHERE end_time >= $1 AND end_time < $2 AND mpi_percent > $3",
          {p.from, p.to, threshold}, [&](const row& r) { n += r.i64(0); });
  return n;
}

std::vector<std::string> store::owners(const period& when) {
  std::set<std::string> found;
  const day_split split = split_days(when);
  for (const period& p : split.raw)
    query("SELECT DISTINCT owner FROM jobs WHERE end_time >= $1 AND end_time < $2", {p.from, p.to},
          [&](const row& r) { found.insert(r.text(0)); });
  if (split.days)
    query("SELECT DISTINCT owner FROM day_owners WHERE day >= $1 AND day < $2",
          {split.days->from, split.days->to}, [&](const row& r) { found.insert(r.text(0)); });
  return {found.begin(), found.end()};
}

job_totals store::totals(const period& when, const std::optional<std::string>& owner) {
  job_totals t;
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::vector<param> params{p.from, p.to};
    const std::string sql = std::string("SELECT ") + totals_columns +
                            " FROM jobs WHERE end_time >= $1 AND end_time < $2" +
                            owner_condition(owner, params);
    query(sql, params, [&](const row& r) { add_totals(t, read_totals(r, 0)); });
  }
  if (split.days) {
    std::vector<param> params{split.days->from, split.days->to};
    const std::string sql = std::string("SELECT ") + rollup_totals_columns +
                            " FROM day_owners WHERE day >= $1 AND day < $2" +
                            owner_condition(owner, params);
    query(sql, params, [&](const row& r) {
      if (!r.is_null(0))
        add_totals(t, read_totals(r, 0));
    });
  }
  return t;
}

std::vector<job_class_row> store::job_classes(const period& when, double critical_mpi_percent,
                                              const std::optional<std::string>& owner,
                                              bool with_critical) {
  using key = std::tuple<std::string, std::string, std::int64_t, int>;
  std::map<key, job_class_row> acc;
  auto at = [&](const row& r) -> job_class_row& {
    job_class_row& c = acc[{r.text(0), r.text(1), r.i64(2), static_cast<int>(r.i64(3))}];
    if (c.group_jobs.empty()) {
      c.owner = r.text(0);
      c.language = r.text(1);
      c.ranks = r.i64(2);
      c.cpu_class = static_cast<int>(r.i64(3));
      c.group_jobs.assign(routine_group_count, 0);
      c.group_cpu_time_s.assign(routine_group_count, 0.0);
    }
    return c;
  };
  auto read = [&](const row& r) {
    job_class_row& c = at(r);
    add_totals(c.totals, read_totals(r, 4));
    int col = 4 + totals_column_count;
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      c.group_jobs[g] += r.i64(col++);
      c.group_cpu_time_s[g] += r.f64(col++);
    }
  };
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::string sql = "SELECT owner, language, ranks, cpu_class, ";
    sql += totals_columns;
    for (int g = 0; g < routine_group_count; ++g) {
      const std::string bit =
          "((routine_groups / " + std::to_string(std::int64_t{1} << g) + ") % 2)";
      sql += ", COALESCE(SUM(" + bit + "), 0), COALESCE(SUM(" + bit + " * cpu_time_s), 0)";
    }
    std::vector<param> params{p.from, p.to};
    sql += " FROM jobs WHERE end_time >= $1 AND end_time < $2" + owner_condition(owner, params) +
           " GROUP BY owner, language, ranks, cpu_class";
    query(sql, params, read);
  }
  if (split.days) {
    std::string sql =
        std::string("SELECT owner, language, ranks, cpu_class, ") + rollup_totals_columns;
    for (int g = 0; g < routine_group_count; ++g)
      sql += ", SUM(g" + std::to_string(g) + "_jobs), SUM(g" + std::to_string(g) + "_cpu)";
    std::vector<param> params{split.days->from, split.days->to};
    sql += " FROM day_classes WHERE day >= $1 AND day < $2" + owner_condition(owner, params) +
           " GROUP BY owner, language, ranks, cpu_class";
    query(sql, params, read);
  }
  // Critical jobs depend on the threshold asked for: counted from the job rows, through the
  // covering index on (end_time, mpi_percent, owner, language, ranks, cpu_class).
  if (with_critical) {
    std::vector<param> params{when.from, when.to, critical_mpi_percent};
    const std::string sql =
        "SELECT owner, language, ranks, cpu_class, COUNT(*) FROM jobs WHERE end_time >= $1 AND "
        "end_time < $2 AND mpi_percent > $3" +
        owner_condition(owner, params) + " GROUP BY owner, language, ranks, cpu_class";
    query(sql, params, [&](const row& r) { at(r).critical_jobs += r.i64(4); });
  }
  std::vector<job_class_row> out;
  out.reserve(acc.size());
  for (auto& [k, c] : acc)
    out.push_back(std::move(c));
  return out;
}

std::vector<job_class_row> store::job_shapes(const period& when) {
  std::map<std::tuple<std::string, std::int64_t, int>, job_class_row> acc;
  auto read = [&](const row& r) {
    const std::int64_t size = size_class_of(r.i64(1));
    const int cpu_class = static_cast<int>(r.i64(2));
    job_class_row& c = acc[{r.text(0), size, cpu_class}];
    if (c.group_jobs.empty()) {
      c.language = r.text(0);
      c.ranks = size;
      c.cpu_class = cpu_class;
      c.group_jobs.assign(routine_group_count, 0);
      c.group_cpu_time_s.assign(routine_group_count, 0.0);
    }
    add_totals(c.totals, read_totals(r, 3));
    int col = 3 + totals_column_count;
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      c.group_jobs[g] += r.i64(col++);
      c.group_cpu_time_s[g] += r.f64(col++);
    }
  };
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::string sql = std::string("SELECT language, ranks, cpu_class, ") + totals_columns;
    for (int g = 0; g < routine_group_count; ++g) {
      const std::string bit =
          "((routine_groups / " + std::to_string(std::int64_t{1} << g) + ") % 2)";
      sql += ", COALESCE(SUM(" + bit + "), 0), COALESCE(SUM(" + bit + " * cpu_time_s), 0)";
    }
    sql += " FROM jobs WHERE end_time >= $1 AND end_time < $2 GROUP BY language, ranks, cpu_class";
    query(sql, {p.from, p.to}, read);
  }
  if (split.days) {
    std::string sql =
        std::string("SELECT language, size_class, cpu_class, ") + rollup_totals_columns;
    for (int g = 0; g < routine_group_count; ++g)
      sql += ", SUM(g" + std::to_string(g) + "_jobs), SUM(g" + std::to_string(g) + "_cpu)";
    sql += " FROM day_shapes WHERE day >= $1 AND day < $2 GROUP BY language, size_class, cpu_class";
    query(sql, {split.days->from, split.days->to}, read);
  }
  std::vector<job_class_row> out;
  out.reserve(acc.size());
  for (auto& [k, c] : acc)
    out.push_back(std::move(c));
  return out;
}

std::map<std::string, job_totals> store::owner_totals(const period& when) {
  std::map<std::string, job_totals> out;
  auto read = [&](const row& r) { add_totals(out[r.text(0)], read_totals(r, 1)); };
  const day_split split = split_days(when);
  for (const period& p : split.raw)
    query(std::string("SELECT owner, ") + totals_columns +
              " FROM jobs WHERE end_time >= $1 AND end_time < $2 GROUP BY owner",
          {p.from, p.to}, read);
  if (split.days)
    query(std::string("SELECT owner, ") + rollup_totals_columns +
              " FROM day_owners WHERE day >= $1 AND day < $2 GROUP BY owner",
          {split.days->from, split.days->to}, read);
  return out;
}

std::vector<owner_routine_row>
store::routine_sums(const period& when, const std::optional<std::string>& owner, bool by_owner) {
  std::map<std::pair<std::string, std::string>, owner_routine_row> acc;
  auto read = [&](const row& r) {
    owner_routine_row& o = acc[{r.text(0), r.text(1)}];
    o.owner = r.text(0);
    o.routine = r.text(1);
    o.jobs += r.i64(2);
    o.calls += r.i64(3);
    o.bytes += r.i64(4);
    o.count_sum += r.i64(5);
    o.time_s += r.f64(6);
  };
  const std::string who = by_owner ? "owner" : "''";
  const std::string group = by_owner ? " GROUP BY owner, routine" : " GROUP BY routine";
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::vector<param> params{p.from, p.to};
    const std::string sql =
        "SELECT " + who +
        ", routine, COUNT(*), SUM(CAST(calls AS DOUBLE PRECISION)), "
        "SUM(CAST(bytes AS DOUBLE PRECISION)), SUM(CAST(count_sum AS DOUBLE PRECISION)), "
        "SUM(time_s) FROM job_routines WHERE job_id IN (SELECT job_id FROM jobs WHERE "
        "end_time >= $1 AND end_time < $2" +
        owner_condition(owner, params) + ")" + group;
    query(sql, params, read);
  }
  if (split.days) {
    std::vector<param> params{split.days->from, split.days->to};
    const std::string sql = "SELECT " + who +
                            ", routine, SUM(jobs), SUM(calls), SUM(bytes), SUM(count_sum), "
                            "SUM(time_s) FROM day_routines WHERE day >= $1 AND day < $2" +
                            owner_condition(owner, params) + group;
    query(sql, params, read);
  }
  std::vector<owner_routine_row> out;
  out.reserve(acc.size());
  for (auto& [k, o] : acc)
    out.push_back(std::move(o));
  return out;
}

std::vector<owner_week_row> store::owner_weeks(const period& when,
                                               const std::optional<std::string>& owner) {
  std::map<std::pair<std::string, std::int64_t>, owner_week_row> acc;
  auto read = [&](const row& r) {
    owner_week_row& w = acc[{r.text(0), r.i64(1)}];
    w.owner = r.text(0);
    w.week_start = r.i64(1);
    add_totals(w.totals, read_totals(r, 2));
  };
  // Integer division of a non-negative offset: the same on both backends.
  auto week = [](const std::string& t) {
    return "((" + t + " - 345600) / 604800) * 604800 + 345600";
  };
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::vector<param> params{p.from, p.to};
    const std::string sql = "SELECT owner, " + week("end_time") + " AS week, " + totals_columns +
                            " FROM jobs WHERE end_time >= $1 AND end_time < $2 AND "
                            "end_time >= 345600" +
                            owner_condition(owner, params) + " GROUP BY owner, week";
    query(sql, params, read);
  }
  if (split.days) {
    std::vector<param> params{split.days->from, split.days->to};
    const std::string sql = "SELECT owner, " + week("day") + " AS week, " + rollup_totals_columns +
                            " FROM day_owners WHERE day >= $1 AND day < $2 AND day >= 345600" +
                            owner_condition(owner, params) + " GROUP BY owner, week";
    query(sql, params, read);
  }
  std::vector<owner_week_row> out;
  out.reserve(acc.size());
  for (auto& [k, w] : acc)
    out.push_back(std::move(w));
  return out;
}

} // namespace strata::site
