// The site store: every job record of a site in one database, SQLite (one file, the default) or
// PostgreSQL (a real site), with the same schema, migrations and queries on both. One `store`
// object is one connection; it is not shared between threads.
//
// Schema (version 1, see migrations in store.cpp and docs/site-setup.md):
//   schema_version(version)                  one row per applied migration
//   jobs(job_id, job_key UNIQUE, ...)        one row per job: identity, owner, figures, the record
//   job_routines(job_id, routine, ...)       one row per job and MPI routine (calls, time, bytes);
//                                            owner and end_time copied in so that period and user
//                                            sums over routines need no join
//   web_tokens(token_hash, uid, ...)         (version 2) login tokens of the web interface
//   (version 3: PostgreSQL drops the foreign keys of job_routines and job_records, see store.cpp)
//   day_mpi(day, mpi_bucket, jobs)           (version 4) jobs per day and MPI % bucket: counts
//                                            of critical jobs over whole days without job rows
//   day_owners(day, owner, sums)             (version 4) per day and owner, and per day,
//   day_shapes(day, language, size_class, cpu_class, sums, group sums)    language, size class
//                                            and CPU-time class: the site page over whole days
//   (version 5: per-owner indexes of jobs in each list order, see store.cpp)
// A job belongs to the owner of its spool file (`owner`, `owner_uid`); what the record claims is
// kept beside it (`claimed_user`, `claimed_uid`) and `owner_mismatch` flags a difference.
// Periods are half-open [from, to) over the job's end time, in seconds since the epoch (UTC).
#pragma once

#include "site/parse.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::record {
struct job_record;
}

namespace strata::site {

inline constexpr int store_schema_version = 7;

// Any failure of the database (connection, SQL, constraint) as one line.
class store_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The per-job figures the store keeps in columns (everything else is in `record`).
struct job_row {
  std::int64_t job_id = 0; // assigned by the store
  std::string job_key;     // identity: record id and start time; unique in the store
  std::string record_id;   // job.id of the record ("slurm:81234", "local:...")
  std::string owner;       // user name of the spool file's owner
  std::int64_t owner_uid = 0;
  std::string claimed_user; // job.user of the record
  std::int64_t claimed_uid = 0;
  bool owner_mismatch = false;
  std::int64_t start_time = 0, end_time = 0; // seconds since the epoch
  std::int64_t ranks = 0, ranks_reported = 0, hosts = 0;
  std::string executable, language, mpi_flavor, status;
  bool partial = false;
  double wall_time_s = 0;
  double cpu_time_s = 0; // wall time * ranks reported: the job's "application CPU time"
  double mpi_time_s = 0, mpi_percent = 0, overhead_s = 0;
  std::int64_t mpi_calls = 0, mpi_bytes = 0;
  std::int64_t routine_groups = 0;    // bit set of routine_group (site/groups.hpp)
  int cpu_class = 0;                  // floor(log10(cpu_time_s)), at least 0
  std::optional<double> instructions; // outside MPI, when the job counted them
  std::int64_t ingested_at = 0;
};

struct routine_row {
  std::string routine;
  std::int64_t calls = 0;
  double time_s = 0;
  std::int64_t bytes = 0; // sent + received
  std::int64_t count_sum = 0;
};

// One job as stored: the row, its routines and the record's JSON text as it was spooled
// (kept deflated in the store, see pack_record).
struct stored_job {
  job_row job;
  std::vector<routine_row> routines;
  std::string record_json;
  std::string record_packed; // pack_record(record_json) when done ahead (ingest's workers)
};

// Builds what the store keeps from a parsed record, its text and the spool file's owner.
// `owner_name` empty: looked up from the uid (the record's user when it claims the same uid,
// else "uid<N>").
stored_job make_stored_job(const record::job_record& record, std::string record_json,
                           std::int64_t owner_uid, std::string owner_name = {});

struct period {
  std::int64_t from = 0, to = 0; // [from, to) over end_time
};

// end_desc and end_asc break ties by job id (stable pages); latest orders by end time alone,
// which the period indexes deliver without sorting (reports' "latest critical jobs").
// By MPI %, CPU time or size: ties newest first.
enum class job_order { end_desc, end_asc, mpi_percent_desc, cpu_time_desc, ranks_desc, latest };

struct job_filter {
  std::optional<period> when;
  std::optional<std::string> owner;      // exact owner name
  std::optional<std::string> text;       // substring of executable, or prefix of record id
  std::optional<std::string> language;   // "C/C++", "Fortran"
  std::optional<double> min_mpi_percent; // critical jobs
  std::optional<std::int64_t> min_ranks, max_ranks;
  job_order order = job_order::end_desc;
  std::int64_t limit = 100, offset = 0;
};

// Up to this many matches a jobs list is read through a filter's index and sorted; from
// this many, by walking the sort order's index (store::jobs_and_count).
// (At a million jobs, sorting 200,000 entries of a covering index takes 20-50 ms on SQLite, while
// a walk of the sort order's index for an owner whose jobs sort late reads far more than the
// owner has.)
inline constexpr std::int64_t list_plan_threshold = 100000;

// Sums over a set of jobs. Counts of calls and bytes are summed in double precision (exact up
// to 2^53) so that no record can make a sum overflow. cpu_time_s is wall * ranks summed; pe_time_s
// weights ranks by it.
struct job_totals;
void add_totals(job_totals& into, const job_totals& t);

struct job_totals {
  std::int64_t jobs = 0, pes = 0;
  double cpu_time_s = 0, mpi_time_s = 0, overhead_s = 0, wall_time_s = 0;
  double pe_weighted = 0; // sum of ranks * cpu_time_s (divide by cpu_time_s: PEs weighted by time)
  std::int64_t mpi_calls = 0, mpi_bytes = 0;
  double instructions = 0, instructions_cpu_time_s = 0; // over jobs that counted instructions
};

// One group of jobs of one owner, language, size and CPU-time class, with the usage count of
// each routine group (bit g of job_row::routine_groups) as jobs and as CPU time. Every site
// breakdown (Figs. 5-9, 11 of the seed) is a sum over these rows.
struct job_class_row {
  std::string owner, language;
  std::int64_t ranks = 0;
  int cpu_class = 0;
  job_totals totals;
  std::int64_t critical_jobs = 0; // mpi_percent above the threshold asked for
  std::vector<std::int64_t> group_jobs;
  std::vector<double> group_cpu_time_s;
};

// Routine sums of one owner (or of all, when owner is empty) over a period.
struct owner_routine_row {
  std::string owner, routine;
  std::int64_t jobs = 0, calls = 0, bytes = 0, count_sum = 0;
  double time_s = 0;
};

// One owner's figures in one week (weeks start Monday 00:00 UTC; week_start in epoch seconds).
struct owner_week_row {
  std::string owner;
  std::int64_t week_start = 0;
  job_totals totals;
};

struct site_day_sums; // store.cpp: one batch's rows of day_mpi, day_owners and day_shapes

struct insert_result {
  std::int64_t inserted = 0, duplicates = 0;
  std::vector<bool> was_new; // per input job
};

struct search_terms;

struct job_page {
  std::vector<job_row> rows;
  std::int64_t matches = 0; // up to the cap asked for
};

class store {
public:
  // Connects (creating the SQLite file and its directory if needed) and applies the
  // migrations this build knows. Throws store_error.
  static std::unique_ptr<store> open(const db_url& url);
  static std::unique_ptr<store> open(std::string_view url); // parse_db_url, then open

  virtual ~store() = default;
  virtual backend kind() const = 0;
  // A second connection to the same store for a writer of its own (ingest's second writer),
  // or null where concurrent writers would only wait for each other (SQLite: one writer at a
  // time). Throws store_error.
  virtual std::unique_ptr<store> another_writer() { return nullptr; }
  int schema_version();

  // All jobs in one transaction; a job whose key is already stored is left as it is and
  // counted as a duplicate. The day tables are updated in the same transaction. On failure
  // nothing is stored and store_error is thrown.
  insert_result insert(const std::vector<stored_job>& jobs);

  std::vector<job_row> jobs(const job_filter& filter);
  // A page of jobs and min(count_jobs(filter), cap). The count, bounded, comes first and
  // decides how the page is read (store.cpp, list_plan).
  job_page jobs_and_count(const job_filter& filter, std::int64_t cap);
  // For tests: the number of matches from which a list walks the sort order's index
  // (list_plan_threshold; 0: always, a huge number: never).
  void set_list_plan_threshold(std::int64_t n) { list_threshold_ = n; }
  std::int64_t count_jobs(const job_filter& filter); // ignores order, limit and offset
  std::optional<stored_job> job(std::int64_t job_id);
  std::optional<stored_job> job_by_key(const std::string& job_key);

  std::vector<std::string> owners(const period& when); // with jobs in the period, sorted
  job_totals totals(const period& when, const std::optional<std::string>& owner);
  // `with_critical` false leaves critical_jobs 0 and reads no job rows for whole days.
  std::vector<job_class_row> job_classes(const period& when, double critical_mpi_percent,
                                         const std::optional<std::string>& owner,
                                         bool with_critical = true);
  // The site's sums per language, size class (size_class_of, in `ranks`) and CPU-time class,
  // owner left empty and critical_jobs 0; and per owner. Whole days from day_shapes and
  // day_owners, a few hundred rows a day.
  std::vector<job_class_row> job_shapes(const period& when);
  std::map<std::string, job_totals> owner_totals(const period& when);
  // Jobs with mpi_percent above `threshold` in the period: from day_mpi for whole days when the
  // threshold is a whole number from 0 to 100, from the job rows otherwise.
  std::int64_t count_critical(const period& when, double threshold);
  // Per owner and routine; `by_owner` false sums over all owners (owner left empty).
  std::vector<owner_routine_row>
  routine_sums(const period& when, const std::optional<std::string>& owner, bool by_owner);
  std::vector<owner_week_row> owner_weeks(const period& when,
                                          const std::optional<std::string>& owner);

  // Low-level access for the queries above, shared by both backends. Parameters are $1, $2...
  struct row {
    virtual ~row() = default;
    virtual bool is_null(int column) const = 0;
    virtual std::int64_t i64(int column) const = 0;
    virtual double f64(int column) const = 0;
    virtual std::string text(int column) const = 0;
    virtual std::string blob(int column) const = 0; // BLOB / BYTEA as bytes
  };
  struct param {
    enum class type { null, i64, f64, text } t = type::null;
    std::int64_t i = 0;
    double d = 0;
    std::string s;
    param() = default;
    param(std::int64_t v) : t(type::i64), i(v) {}
    param(int v) : t(type::i64), i(v) {}
    param(double v) : t(type::f64), d(v) {}
    param(std::string v) : t(type::text), s(std::move(v)) {}
    param(const char* v) : t(type::text), s(v) {}
  };
  template <typename F>
  void query(const std::string& sql, const std::vector<param>& params, F each) {
    query_rows(sql, params, [&](const row& r) { each(r); });
  }
  virtual void execute(const std::string& sql) = 0; // several statements, no parameters

protected:
  // Inside the transaction insert() opened: the jobs, their routines and their records.
  virtual insert_result insert_rows(const std::vector<stored_job>& jobs) = 0;
  virtual void begin_write() = 0; // a transaction that takes the write lock at once
  virtual void query_rows(const std::string& sql, const std::vector<param>& params,
                          const std::function<void(const row&)>& each) = 0;
  void migrate();
  // A filter's search text looked up in `executables` (store.cpp).
  search_terms search(const job_filter& filter);
  // min(count_jobs(filter), cap), without counting further: a page's "more than N jobs".
  std::int64_t count_up_to(const job_filter& filter, std::int64_t cap, const search_terms& terms);
  // The executables of new jobs into `executables` (migration 6: what a search looks up).
  void add_executables(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new);
  void add_rollups(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new);
  // day_mpi, day_owners and day_shapes (migration 3) for new jobs; fill_site_days fills them
  // from the jobs and day_classes already stored when the migration runs.
  void add_site_rollups(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new);
  void fill_site_days();
  void write_site_days(const site_day_sums& sums);
  // INSERT ... ON CONFLICT (keys) DO UPDATE SET sum = sum + excluded.sum, many rows at a time
  // (PostgreSQL: through a binary COPY, store_postgresql.cpp). Rows in key order, so that
  // two writers lock the rows they share in the same order.
  virtual void upsert(const std::string& table, const std::vector<std::string>& key_columns,
                      const std::vector<std::string>& sum_columns,
                      const std::vector<std::vector<param>>& rows);
  // The parts of an upsert's SQL both backends write: the column list (keys, then sums), the
  // key list, and "sum = table.sum + excluded.sum, ...".
  struct upsert_clauses {
    std::string columns, keys, update;
  };
  static upsert_clauses upsert_sql(const std::string& table,
                                   const std::vector<std::string>& key_columns,
                                   const std::vector<std::string>& sum_columns);
  virtual std::string id_column_type() const = 0; // the auto-numbered primary key
  virtual std::string blob_column_type() const = 0;
  virtual std::string drop_foreign_keys_sql() const = 0; // migration 3 (store.cpp)
  // "COLLATE ..." that compares text byte by byte (empty where that is the default), so that
  // a prefix is a range of an index (migration 6, the record id search).
  virtual std::string byte_order_collation() const = 0;
  // ", job_id" where an index does not hold the row's id by itself (PostgreSQL), else empty.
  virtual std::string row_id_column() const = 0;
  virtual void begin_migration() = 0; // a transaction holding the store's write lock

private:
  std::int64_t list_threshold_ = list_plan_threshold;
};

// The record column's encoding (deflated JSON) and back. unpack throws store_error.
std::string pack_record(const std::string& json);
std::string unpack_record(const std::string& stored);

// The seed's size class of a job as its smallest member: a power of two itself, any other
// size the smallest size above the power of two below it (5 for 5-7); 0 and 1 as they are.
std::int64_t size_class_of(std::int64_t ranks);

// day_mpi's bucket of an MPI %: b holds (b - 1, b], 0 holds everything up to 0 and 101
// everything above 100, so that "above T" for a whole T from 0 to 100 is "bucket above T".
int mpi_bucket(double mpi_percent);

// Monday 00:00 UTC of the week holding `t`.
std::int64_t week_start(std::int64_t t);

} // namespace strata::site
