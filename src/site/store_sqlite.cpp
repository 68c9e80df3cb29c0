// The SQLite store: one file, WAL journal, one prepared statement per distinct SQL text.
#include "site/store_backends.hpp"

#include "common/atomic_file.hpp"

#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <sqlite3.h>
#include <string>

namespace strata::site {
namespace {

class sqlite_row final : public store::row {
public:
  explicit sqlite_row(sqlite3_stmt* s) : stmt_(s) {}
  bool is_null(int c) const override { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::int64_t i64(int c) const override { return sqlite3_column_int64(stmt_, c); }
  double f64(int c) const override { return sqlite3_column_double(stmt_, c); }
  std::string blob(int c) const override {
    const void* p = sqlite3_column_blob(stmt_, c);
    return p == nullptr ? std::string()
                        : std::string(static_cast<const char*>(p),
                                      static_cast<size_t>(sqlite3_column_bytes(stmt_, c)));
  }
  std::string text(int c) const override {
    const auto* p = sqlite3_column_text(stmt_, c);
    return p == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(p),
                                      static_cast<size_t>(sqlite3_column_bytes(stmt_, c)));
  }

private:
  sqlite3_stmt* stmt_;
};

// strpos(haystack, needle): PostgreSQL's name for SQLite's instr, so that queries are shared.
void strpos_function(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const auto* hay = sqlite3_value_text(argv[0]);
  const auto* needle = sqlite3_value_text(argv[1]);
  if (hay == nullptr || needle == nullptr) {
    sqlite3_result_null(ctx);
    return;
  }
  const char* h = reinterpret_cast<const char*>(hay);
  const char* found = std::strstr(h, reinterpret_cast<const char*>(needle));
  sqlite3_result_int64(ctx, found == nullptr ? 0 : found - h + 1);
}

// $1, $2 ... (PostgreSQL's style, used by the shared queries) to SQLite's: plain "?" when each
// number comes once and in order (SQLite resolves "?NNN" names one by one, which costs much in
// statements with thousands of parameters), else "?N".
std::string sqlite_params(const std::string& sql) {
  std::string plain, numbered = sql;
  int expected = 1;
  bool in_order = true;
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '$' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      numbered[i] = '?';
      size_t j = i + 1;
      int n = 0;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9')
        n = n * 10 + (sql[j++] - '0');
      in_order = in_order && n == expected++;
      plain += '?';
      i = j - 1;
    } else {
      plain += sql[i];
    }
  }
  return in_order ? plain : numbered;
}

class sqlite_store final : public store {
public:
  explicit sqlite_store(const std::string& path) : path_(path) {
    if (const size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0)
      common::make_writable_dir(path.substr(0, slash));
    // NOMUTEX: a store is one connection used by one thread at a time (store.hpp), so
    // SQLite need not lock it around every call (a few percent of an ingest).
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw store_error("sqlite:" + path + ": " + why);
    }
    sqlite3_busy_timeout(db_, 30000); // another ingest or a report holding the file: wait
    sqlite3_create_function(db_, "strpos", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                            strpos_function, nullptr, nullptr);
    // WAL lets reports read while an ingest writes; FULL sync makes a commit durable before
    // ingest removes the spooled files it holds.
    execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
            "PRAGMA cache_size=-65536;");
  }
  ~sqlite_store() override {
    for (auto& [sql, stmt] : statements_)
      sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }
  sqlite_store(const sqlite_store&) = delete;
  sqlite_store& operator=(const sqlite_store&) = delete;

  backend kind() const override { return backend::sqlite; }

  void execute(const std::string& sql) override {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error != nullptr ? error : sqlite3_errmsg(db_);
      sqlite3_free(error);
      throw store_error("sqlite:" + path_ + ": " + why);
    }
  }

protected:
  insert_result insert_rows(const std::vector<stored_job>& jobs) override {
    insert_result result;
    result.was_new.assign(jobs.size(), false);
    result.job_ids.assign(jobs.size(), 0);
    {
      // No RETURNING here: SQLite runs a statement with RETURNING as a multi-write statement
      // and keeps a statement journal for it (every page it touches copied out before the
      // change, spilled to a temporary file past 64 KiB): 25 of the 29 pwrite64 calls a
      // record at ingest. The new row's id is the connection's last rowid instead.
      sqlite3_stmt* job = prepare(job_insert_sql());
      sqlite3_stmt* record = prepare("INSERT INTO job_records (job_id, record) VALUES (?1, ?2)");
      sqlite3_stmt* routine = prepare(
          "INSERT INTO job_routines (job_id, routine, owner, end_time, calls, time_s, bytes, "
          "count_sum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
      const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
      for (size_t i = 0; i < jobs.size(); ++i) {
        const job_row& j = jobs[i].job;
        int at = 1;
        visit_job_columns(j, [&](const job_column& c, const auto& member) {
          if (c.fill == column_fill::insert_time)
            bind_value(job, at++, now);
          else if (c.fill == column_fill::member)
            bind_value(job, at++, member);
        });
        const int rc = sqlite3_step(job);
        sqlite3_reset(job);
        check(rc, SQLITE_DONE);
        // One row changed: new, and its id is the connection's last rowid; none: a duplicate.
        const std::int64_t id = sqlite3_changes64(db_) == 1 ? sqlite3_last_insert_rowid(db_) : 0;
        if (id == 0) {
          ++result.duplicates;
          continue;
        }
        ++result.inserted;
        result.was_new[i] = true;
        result.job_ids[i] = id;
        const std::string packed_here =
            jobs[i].record_packed.empty() ? pack_record(jobs[i].record_json) : std::string();
        const std::string& packed =
            jobs[i].record_packed.empty() ? packed_here : jobs[i].record_packed;
        sqlite3_bind_int64(record, 1, id);
        sqlite3_bind_blob(record, 2, packed.data(), static_cast<int>(packed.size()), SQLITE_STATIC);
        const int prc = sqlite3_step(record);
        sqlite3_reset(record);
        check(prc, SQLITE_DONE);
        for (const routine_row& r : jobs[i].routines) {
          sqlite3_bind_int64(routine, 1, id);
          bind_text(routine, 2, r.routine);
          bind_text(routine, 3, j.owner);
          sqlite3_bind_int64(routine, 4, j.end_time);
          sqlite3_bind_int64(routine, 5, r.calls);
          sqlite3_bind_double(routine, 6, r.time_s);
          sqlite3_bind_int64(routine, 7, r.bytes);
          sqlite3_bind_int64(routine, 8, r.count_sum);
          const int rrc = sqlite3_step(routine);
          sqlite3_reset(routine);
          check(rrc, SQLITE_DONE);
        }
      }
    }
    return result;
  }
  void begin_write() override { execute("BEGIN IMMEDIATE"); }
  void query_rows(const std::string& sql, const std::vector<param>& params,
                  const std::function<void(const row&)>& each) override {
    sqlite3_stmt* stmt = prepare(sqlite_params(sql));
    bind(stmt, params);
    struct resetter {
      sqlite3_stmt* s;
      ~resetter() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{stmt};
    sqlite_row r(stmt);
    int rc = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
      each(r);
    check(rc, SQLITE_DONE);
  }
  std::string id_column_type() const override { return "INTEGER PRIMARY KEY"; }
  std::string blob_column_type() const override { return "BLOB"; }
  std::string drop_foreign_keys_sql() const override { return "SELECT 1"; } // kept on SQLite
  std::string byte_order_collation() const override { return ""; }          // BINARY is the default
  std::string row_id_column() const override { return ""; } // every index ends with the rowid
  std::string clustered_table() const override { return "WITHOUT ROWID"; }
  std::unique_ptr<store> another_connection() override {
    return std::make_unique<sqlite_store>(path_);
  }
  void begin_migration() override { execute("BEGIN IMMEDIATE"); }

private:
  sqlite3_stmt* prepare(const std::string& sql) {
    if (auto it = statements_.find(sql); it != statements_.end())
      return it->second;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK)
      throw store_error("sqlite:" + path_ + ": " + sqlite3_errmsg(db_));
    statements_.emplace(sql, stmt);
    return stmt;
  }
  // Row by row through one prepared statement of one row (ending with `tail`): a statement of
  // a thousand rows was parsed and planned again for each size of a batch's last chunk (and
  // kept), a third of an ingest's work on its indexes of MPI_T.
  void insert_many(const std::string& table, const std::string& columns, size_t width,
                   const std::vector<std::vector<param>>& rows, const std::string& tail) override {
    if (rows.empty())
      return;
    std::string sql = "INSERT INTO " + table + " (" + columns + ") VALUES (";
    for (size_t c = 0; c < width; ++c)
      sql += c == 0 ? "?" : ", ?";
    sqlite3_stmt* stmt = prepare(sql + ")" + tail);
    for (const std::vector<param>& values : rows) {
      bind(stmt, values);
      const int rc = sqlite3_step(stmt);
      sqlite3_reset(stmt);
      check(rc, SQLITE_DONE);
    }
    sqlite3_clear_bindings(stmt);
  }
  static void bind(sqlite3_stmt* stmt, const std::vector<param>& params) {
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i + 1);
      switch (params[i].t) {
      case param::type::null:
        sqlite3_bind_null(stmt, at);
        break;
      case param::type::i64:
        sqlite3_bind_int64(stmt, at, params[i].i);
        break;
      case param::type::f64:
        sqlite3_bind_double(stmt, at, params[i].d);
        break;
      case param::type::text:
        bind_text(stmt, at, params[i].s);
        break;
      }
    }
  }
  static void bind_text(sqlite3_stmt* s, int at, const std::string& v) {
    sqlite3_bind_text(s, at, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  static void bind_value(sqlite3_stmt* s, int at, const std::string& v) { bind_text(s, at, v); }
  static void bind_value(sqlite3_stmt* s, int at, std::int64_t v) { sqlite3_bind_int64(s, at, v); }
  static void bind_value(sqlite3_stmt* s, int at, int v) { sqlite3_bind_int64(s, at, v); }
  static void bind_value(sqlite3_stmt* s, int at, bool v) { sqlite3_bind_int64(s, at, v ? 1 : 0); }
  static void bind_value(sqlite3_stmt* s, int at, double v) { sqlite3_bind_double(s, at, v); }
  template <typename T> static void bind_value(sqlite3_stmt* s, int at, const std::optional<T>& v) {
    if (v)
      bind_value(s, at, *v);
    else
      sqlite3_bind_null(s, at);
  }
  // The job's insert, numbered parameters in job_inserted_columns' order.
  static const std::string& job_insert_sql() {
    static const std::string sql = [] {
      std::string values;
      for (int n = 1; n <= job_inserted_column_count(); ++n)
        values += (n == 1 ? "?" : ", ?") + std::to_string(n);
      return "INSERT INTO jobs (" + job_inserted_columns() + ") VALUES (" + values +
             ") ON CONFLICT (job_key) DO NOTHING";
    }();
    return sql;
  }
  void check(int rc, int wanted) {
    if (rc != wanted)
      throw store_error("sqlite:" + path_ + ": " + sqlite3_errmsg(db_));
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*> statements_;
};

} // namespace

std::unique_ptr<store> open_sqlite(const std::string& path) {
  return std::make_unique<sqlite_store>(path);
}

} // namespace strata::site
