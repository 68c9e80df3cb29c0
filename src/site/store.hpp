// The site store: every job record of a site in one database, SQLite (one file, the default) or
// PostgreSQL (a real site), with the same schema (site/schema.hpp), migrations and queries on
// both. One `store` object is one connection; it is not shared between threads.
//
// This class is the connection: opening (with migrations), the insert transaction, a job by id,
// and the low-level query interface the store's other files build on: lists (site/lists.hpp),
// the reports' period queries (site/queries.hpp), the day tables (site/rollups.hpp) and the
// web's login tokens (site/web_tokens.hpp). The two backends are store_sqlite.cpp and
// store_postgresql.cpp; all SQL is written once in a dialect both accept (parameters $1,
// ON CONFLICT, RETURNING; SQLite gets a strpos function).
#pragma once

#include "site/lists.hpp"
#include "site/parse.hpp"
#include "site/period.hpp"
#include "site/queries.hpp"
#include "site/rollups.hpp"
#include "site/schema.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::site {

// Any failure of the database (connection, SQL, constraint) as one line.
class store_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct insert_result {
  std::int64_t inserted = 0, duplicates = 0;
  std::vector<bool> was_new;         // per input job
  std::vector<std::int64_t> job_ids; // per input job: its new id, 0 for a duplicate
};

class store {
public:
  // Connects (creating the SQLite file and its directory if needed) and applies the
  // migrations this build knows. Throws store_error.
  static std::unique_ptr<store> open(const db_url& url);
  static std::unique_ptr<store> open(std::string_view url); // parse_db_url, then open

  store() = default;
  store(const store&) = delete;
  store& operator=(const store&) = delete;
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

  std::optional<stored_job> job(std::int64_t job_id);
  std::optional<stored_job> job_by_key(const std::string& job_key);

  // The number of matches from which a jobs list walks the sort order's index
  // (list_plan_threshold; for tests: 0 always, a huge number never).
  void set_list_plan_threshold(std::int64_t n) { list_threshold_ = n; }
  std::int64_t list_threshold() const { return list_threshold_; }

  // Low-level access, shared by both backends. Parameters are $1, $2...
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

  // INSERT ... ON CONFLICT (keys) DO UPDATE SET sum = sum + excluded.sum, many rows at a time
  // (PostgreSQL: through a binary COPY, store_postgresql.cpp). Rows in key order, so that
  // two writers lock the rows they share in the same order.
  virtual void upsert(const std::string& table, const std::vector<std::string>& key_columns,
                      const std::vector<std::string>& sum_columns,
                      const std::vector<std::vector<param>>& rows);
  // INSERT of many new rows (PostgreSQL: a binary COPY straight into the table).
  virtual void append(const std::string& table, const std::vector<std::string>& columns,
                      const std::vector<std::vector<param>>& rows);

  // The SQL dialect's differences, for the schema's migrations (schema.cpp).
  virtual std::string id_column_type() const = 0; // the auto-numbered primary key
  virtual std::string blob_column_type() const = 0;
  virtual std::string drop_foreign_keys_sql() const = 0; // migration 3
  // "COLLATE ..." that compares text byte by byte (empty where that is the default), so that
  // a prefix is a range of an index (migration 6, the record id search).
  virtual std::string byte_order_collation() const = 0;
  // ", job_id" where an index does not hold the row's id by itself (PostgreSQL), else empty.
  virtual std::string row_id_column() const = 0;
  // What makes a table with a primary key one B-tree ordered by it (SQLite's WITHOUT ROWID;
  // nothing on PostgreSQL, whose tables are heaps beside their key's index).
  virtual std::string clustered_table() const = 0;
  // A second connection to the same store for reading beside a writer (ingest's regression
  // scorer reads histories while the writers insert). Throws store_error.
  virtual std::unique_ptr<store> another_connection() = 0;
  // The SQL of the migration that takes a store to `version` (1 to store_schema_version) in
  // this backend's dialect, as migrate() runs it (schema.cpp).
  std::string migration_sql(int version) const;

protected:
  // Inside the transaction insert() opened: the jobs, their routines and their records.
  virtual insert_result insert_rows(const std::vector<stored_job>& jobs) = 0;
  virtual void begin_write() = 0;     // a transaction that takes the write lock at once
  virtual void begin_migration() = 0; // a transaction holding the store's write lock
  virtual void query_rows(const std::string& sql, const std::vector<param>& params,
                          const std::function<void(const row&)>& each) = 0;
  // The parts of an upsert's SQL both backends write: the column list (keys, then sums), the
  // key list, and "sum = table.sum + excluded.sum, ...".
  struct upsert_clauses {
    std::string columns, keys, update;
  };
  // "a, b, c"
  static std::string column_list(const std::vector<std::string>& columns);
  static upsert_clauses upsert_sql(const std::string& table,
                                   const std::vector<std::string>& key_columns,
                                   const std::vector<std::string>& sum_columns);
  // INSERT of `rows` (each `width` values of `columns`, a comma-separated list), each
  // statement ending with `tail`; upsert() and append() by default. Here: many rows a
  // statement, in statements small enough for both backends' parameter limits.
  virtual void insert_many(const std::string& table, const std::string& columns, size_t width,
                           const std::vector<std::vector<param>>& rows, const std::string& tail);

private:
  void migrate(); // schema.cpp
  // The executables of new jobs into `executables` (what a search looks up, lists.cpp).
  void add_executables(const std::vector<stored_job>& jobs, const std::vector<bool>& was_new);

  std::int64_t list_threshold_ = list_plan_threshold;
};

// The columns of `jobs` in visit_job_columns' order ("job_id, job_key, ..."), and a row of
// them read back.
const std::string& job_columns();
job_row read_job(const store::row& r);
// The columns an insert fills (all but job_id), in the same order, and their number.
const std::string& job_inserted_columns();
int job_inserted_column_count();
// job_totals from the row's columns `first` on, in totals_sum_columns' order (rollups.cpp).
job_totals read_totals(const store::row& r, int first);

} // namespace strata::site
