// The PostgreSQL store (libpq). Queries travel as text with server-side parameters; a batch of
// jobs goes in with binary COPY (see insert_rows).
#include "site/store_backends.hpp"

#include "common/on_demand_library.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace strata::site {
namespace {

// libpq, loaded at the first PostgreSQL store rather than linked: with the libraries it needs
// (TLS, Kerberos, LDAP: some twenty), linked it cost every strata command's start, `strata run`
// among them, about 8 M instructions.
struct libpq_functions {
  decltype(&PQclear) clear = nullptr;
  decltype(&PQconnectdb) connectdb = nullptr;
  decltype(&PQerrorMessage) errorMessage = nullptr;
  decltype(&PQexec) exec = nullptr;
  decltype(&PQexecParams) execParams = nullptr;
  decltype(&PQfinish) finish = nullptr;
  decltype(&PQfreemem) freemem = nullptr;
  decltype(&PQftype) ftype = nullptr;
  decltype(&PQgetResult) getResult = nullptr;
  decltype(&PQgetisnull) getisnull = nullptr;
  decltype(&PQgetlength) getlength = nullptr;
  decltype(&PQgetvalue) getvalue = nullptr;
  decltype(&PQnfields) nfields = nullptr;
  decltype(&PQntuples) ntuples = nullptr;
  decltype(&PQputCopyData) putCopyData = nullptr;
  decltype(&PQputCopyEnd) putCopyEnd = nullptr;
  decltype(&PQresultErrorMessage) resultErrorMessage = nullptr;
  decltype(&PQresultStatus) resultStatus = nullptr;
  decltype(&PQstatus) status = nullptr;
  decltype(&PQunescapeBytea) unescapeBytea = nullptr;
};

// Loaded once; functions is nullptr when libpq cannot be loaded, and problem says why.
struct loaded_libpq {
  const libpq_functions* functions = nullptr;
  std::string problem;
};
const loaded_libpq& libpq() {
  static const loaded_libpq loaded = [] {
    common::on_demand_library library(STRATA_LIBPQ_SONAME);
    static libpq_functions f;
    library.bind("PQclear", f.clear);
    library.bind("PQconnectdb", f.connectdb);
    library.bind("PQerrorMessage", f.errorMessage);
    library.bind("PQexec", f.exec);
    library.bind("PQexecParams", f.execParams);
    library.bind("PQfinish", f.finish);
    library.bind("PQfreemem", f.freemem);
    library.bind("PQftype", f.ftype);
    library.bind("PQgetResult", f.getResult);
    library.bind("PQgetisnull", f.getisnull);
    library.bind("PQgetlength", f.getlength);
    library.bind("PQgetvalue", f.getvalue);
    library.bind("PQnfields", f.nfields);
    library.bind("PQntuples", f.ntuples);
    library.bind("PQputCopyData", f.putCopyData);
    library.bind("PQputCopyEnd", f.putCopyEnd);
    library.bind("PQresultErrorMessage", f.resultErrorMessage);
    library.bind("PQresultStatus", f.resultStatus);
    library.bind("PQstatus", f.status);
    library.bind("PQunescapeBytea", f.unescapeBytea);
    return library.ok() ? loaded_libpq{&f, ""} : loaded_libpq{nullptr, library.problem()};
  }();
  return loaded;
}

// libpq's functions, where a connection exists (so libpq was loaded).
const libpq_functions& pq() {
  return *libpq().functions;
}

struct result_deleter {
  void operator()(PGresult* r) const { pq().clear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

class pg_row final : public store::row {
public:
  pg_row(PGresult* r, int index) : r_(r), row_(index) {}
  bool is_null(int c) const override { return pq().getisnull(r_, row_, c) != 0; }
  std::int64_t i64(int c) const override {
    // Whole numbers arrive as "123"; sums done in double precision as "1.5e+20".
    const char* v = pq().getvalue(r_, row_, c);
    char* end = nullptr;
    const long long whole = std::strtoll(v, &end, 10);
    if (*end == '\0')
      return whole;
    const double d = std::strtod(v, nullptr);
    return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(d);
  }
  double f64(int c) const override { return std::strtod(pq().getvalue(r_, row_, c), nullptr); }
  std::string blob(int c) const override {
    size_t n = 0;
    unsigned char* bytes =
        pq().unescapeBytea(reinterpret_cast<const unsigned char*>(pq().getvalue(r_, row_, c)), &n);
    if (bytes == nullptr)
      return {};
    std::string out(reinterpret_cast<const char*>(bytes), n);
    pq().freemem(bytes);
    return out;
  }
  std::string text(int c) const override {
    return std::string(pq().getvalue(r_, row_, c),
                       static_cast<size_t>(pq().getlength(r_, row_, c)));
  }

private:
  PGresult* r_;
  int row_;
};

// libpq's messages span lines with tabs: one line, single spaces.
std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = c == '\n' || c == '\t' || c == '\r' || c == ' ';
    if (space && (out.empty() || out.back() == ' '))
      continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

// COPY's binary format: a header, then per row the field count and each field as a length
// and big-endian bytes, then -1. The field types must match the columns' (BIGINT: i64,
// INTEGER: i32, DOUBLE PRECISION: f64, TEXT: text, BYTEA: bytes).
class copy_binary {
public:
  copy_binary() {
    data_.append("PGCOPY\n\377\r\n\0", 11);
    put(std::uint32_t{0}); // flags
    put(std::uint32_t{0}); // header extension length
  }
  void tuple(std::uint16_t fields) { put(fields); }
  void i64(std::int64_t v) {
    put(std::uint32_t{8});
    put(static_cast<std::uint64_t>(v));
  }
  void i32(std::int32_t v) {
    put(std::uint32_t{4});
    put(static_cast<std::uint32_t>(v));
  }
  void f64(double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    put(std::uint32_t{8});
    put(bits);
  }
  // PostgreSQL's text holds no NUL byte: cut there, as a C string parameter would be.
  void text(std::string_view v) { bytes(v.substr(0, v.find('\0'))); }
  void bytes(std::string_view v) {
    put(static_cast<std::uint32_t>(v.size()));
    data_.append(v);
  }
  void null() { put(std::uint32_t{0xFFFFFFFF}); }
  // A job_row member in its column's type (job_column_type).
  void value(const std::string& v) { text(v); }
  void value(std::int64_t v) { i64(v); }
  void value(int v) { i32(v); }
  void value(bool v) { i32(v ? 1 : 0); }
  void value(double v) { f64(v); }
  template <typename T> void value(const std::optional<T>& v) {
    if (v)
      value(*v);
    else
      null();
  }
  // The whole stream, trailer included.
  const std::string& finish() {
    put(std::uint16_t{0xFFFF});
    return data_;
  }

private:
  template <typename U> void put(U v) {
    char b[sizeof(U)];
    for (size_t i = 0; i < sizeof(U); ++i)
      b[i] = static_cast<char>((v >> (8 * (sizeof(U) - 1 - i))) & 0xFF);
    data_.append(b, sizeof(U));
  }
  std::string data_;
};

std::string exact(double v) {
  return fmt::format("{}", v);
} // shortest round-trip form

class pg_store final : public store {
public:
  explicit pg_store(const std::string& conninfo)
      : conninfo_(conninfo), shown_(shown_url(conninfo)) {
    if (libpq().functions == nullptr)
      throw store_error(shown_ + ": a PostgreSQL store needs libpq: " + libpq().problem);
    conn_ = pq().connectdb(conninfo.c_str());
    if (conn_ == nullptr || pq().status(conn_) != CONNECTION_OK) {
      const std::string why = conn_ != nullptr ? pq().errorMessage(conn_) : "out of memory";
      pq().finish(conn_);
      conn_ = nullptr;
      throw store_error(shown_ + ": " + one_line(why));
    }
    execute("SET client_min_messages = warning");
  }
  ~pg_store() override { pq().finish(conn_); }
  pg_store(const pg_store&) = delete;
  pg_store& operator=(const pg_store&) = delete;

  backend kind() const override { return backend::postgresql; }
  // The server runs each connection's statements in one backend process: one connection's
  // inserts used one core of the server (docs/PERFORMANCE.md, "Site store").
  std::unique_ptr<store> another_writer() override { return std::make_unique<pg_store>(conninfo_); }

  void execute(const std::string& sql) override {
    check(result_ptr(pq().exec(conn_, sql.c_str())));
  }

protected:
  void begin_write() override {
    if (!records_inline_) {
      keep_records_inline();
      records_inline_ = true;
    }
    execute("BEGIN");
  }
  // Binary COPY throughout, no SQL text per row: the jobs into a temporary table, then one
  // INSERT ... SELECT ... ON CONFLICT DO NOTHING RETURNING that assigns the ids and skips
  // the jobs already stored; the records and routines of the new jobs straight into their
  // tables. Five round trips a batch, whatever its size.
  insert_result insert_rows(const std::vector<stored_job>& jobs) override {
    insert_result result;
    result.was_new.assign(jobs.size(), false);
    try {
      execute(
          "CREATE TEMP TABLE IF NOT EXISTS ingest_jobs ON COMMIT DELETE ROWS AS SELECT 0 AS n, " +
          job_inserted_columns() + " FROM jobs WITH NO DATA");
      const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
      copy_binary staged;
      std::unordered_map<std::string_view, size_t> first_of_key;
      first_of_key.reserve(jobs.size());
      for (size_t i = 0; i < jobs.size(); ++i) {
        const job_row& j = jobs[i].job;
        // As the server will return it (text() cuts at a NUL byte).
        first_of_key.try_emplace(std::string_view(j.job_key).substr(0, j.job_key.find('\0')), i);
        staged.tuple(static_cast<std::uint16_t>(1 + job_inserted_column_count()));
        staged.i32(static_cast<std::int32_t>(i));
        visit_job_columns(j, [&](const job_column& c, const auto& member) {
          if (c.fill == column_fill::insert_time)
            staged.value(now);
          else if (c.fill == column_fill::member)
            staged.value(member);
        });
      }
      copy_in("COPY ingest_jobs (n, " + job_inserted_columns() + ") FROM STDIN (FORMAT binary)",
              staged);
      std::vector<std::int64_t> ids(jobs.size(), 0);
      // In key order, not the batch's: two writers inserting the same keys (a record spooled
      // twice) then wait for each other in one order and cannot deadlock.
      {
        result_ptr r(pq().exec(conn_, ("INSERT INTO jobs (" + job_inserted_columns() + ") SELECT " +
                                       job_inserted_columns() +
                                       " FROM ingest_jobs ORDER BY job_key, n ON CONFLICT "
                                       "(job_key) DO "
                                       "NOTHING RETURNING job_id, job_key")
                                          .c_str()));
        check(r, PGRES_TUPLES_OK);
        for (int i = 0; i < pq().ntuples(r.get()); ++i) {
          const pg_row pr(r.get(), i);
          const std::string key = pr.text(1);
          if (const auto it = first_of_key.find(key); it != first_of_key.end())
            ids[it->second] = pr.i64(0);
        }
      }
      result.job_ids = ids;
      copy_binary records, routines;
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (ids[i] == 0) {
          ++result.duplicates;
          continue;
        }
        ++result.inserted;
        result.was_new[i] = true;
        records.tuple(2);
        records.i64(ids[i]);
        records.bytes(jobs[i].record_packed.empty() ? pack_record(jobs[i].record_json)
                                                    : jobs[i].record_packed);
        const job_row& j = jobs[i].job;
        for (const routine_row& r : jobs[i].routines) {
          routines.tuple(8);
          routines.i64(ids[i]);
          routines.text(r.routine);
          routines.text(j.owner);
          routines.i64(j.end_time);
          routines.i64(r.calls);
          routines.f64(r.time_s);
          routines.i64(r.bytes);
          routines.i64(r.count_sum);
        }
      }
      if (result.inserted > 0) {
        copy_in("COPY job_records (job_id, record) FROM STDIN (FORMAT binary)", records);
        copy_in("COPY job_routines (job_id, routine, owner, end_time, calls, time_s, bytes, "
                "count_sum) FROM STDIN (FORMAT binary)",
                routines);
      }
    } catch (...) {
      while (PGresult* extra = pq().getResult(conn_)) { // drain what is left for ROLLBACK
        const bool copying = pq().resultStatus(extra) == PGRES_COPY_IN;
        pq().clear(extra);
        if (copying && pq().putCopyEnd(conn_, "strata ingest cut short") != 1)
          break;
      }
      throw;
    }
    return result;
  }

  // The day tables' rows by binary COPY into a temporary copy of the table, then one
  // INSERT ... SELECT ... ON CONFLICT DO UPDATE. As multi-row INSERTs with text parameters
  // (store::upsert) the server spent more time parsing, planning and converting them than
  // upserting: 3.5 of the 6.6 s the day tables took per 100,000 records (statement log).
  // The SELECT reads the rows in key order, so that two writers (ingest's second
  // connection) take the row locks they share in the same order and cannot deadlock.
  void upsert(const std::string& table, const std::vector<std::string>& key_columns,
              const std::vector<std::string>& sum_columns,
              const std::vector<std::vector<param>>& rows) override {
    if (rows.empty())
      return;
    const auto [columns, keys, update] = upsert_sql(table, key_columns, sum_columns);
    const std::string staging = "ingest_" + table;
    // Created once per connection; its rows go at commit, and a second upsert into the
    // same table within one transaction must not see the first one's.
    execute("CREATE TEMP TABLE IF NOT EXISTS " + staging + " ON COMMIT DELETE ROWS AS SELECT " +
            columns + " FROM " + table + " WITH NO DATA; DELETE FROM " + staging);
    const std::vector<Oid>& types = column_types(staging, columns);
    copy_binary data;
    for (const std::vector<param>& values : rows) {
      if (values.size() != types.size())
        throw store_error(shown_ + ": " + table + ": a row of " + std::to_string(values.size()) +
                          " values for " + std::to_string(types.size()) + " columns");
      data.tuple(static_cast<std::uint16_t>(values.size()));
      for (size_t c = 0; c < values.size(); ++c)
        put_param(data, values[c], types[c], table);
    }
    copy_in("COPY " + staging + " (" + columns + ") FROM STDIN (FORMAT binary)", data);
    execute("INSERT INTO " + table + " (" + columns + ") SELECT " + columns + " FROM " + staging +
            " ORDER BY " + keys + " ON CONFLICT (" + keys + ") DO UPDATE SET " + update);
  }

  void query_rows(const std::string& sql, const std::vector<param>& params,
                  const std::function<void(const row&)>& each) override {
    std::vector<std::string> values;
    std::vector<const char*> pointers;
    values.reserve(params.size());
    for (const param& p : params) {
      switch (p.t) {
      case param::type::null:
        values.emplace_back();
        break;
      case param::type::i64:
        values.push_back(std::to_string(p.i));
        break;
      case param::type::f64:
        values.push_back(exact(p.d));
        break;
      case param::type::text:
        values.push_back(p.s);
        break;
      }
    }
    for (size_t i = 0; i < params.size(); ++i)
      pointers.push_back(params[i].t == param::type::null ? nullptr : values[i].c_str());
    result_ptr r(pq().execParams(conn_, sql.c_str(), static_cast<int>(pointers.size()), nullptr,
                                 pointers.data(), nullptr, nullptr, 0));
    check(r); // rows, or none for an INSERT
    for (int i = 0; i < pq().ntuples(r.get()); ++i)
      each(pg_row(r.get(), i));
  }
  std::string id_column_type() const override { return "BIGSERIAL PRIMARY KEY"; }
  std::string blob_column_type() const override { return "BYTEA"; }
  std::string drop_foreign_keys_sql() const override {
    return "ALTER TABLE job_routines DROP CONSTRAINT IF EXISTS job_routines_job_id_fkey; "
           "ALTER TABLE job_records DROP CONSTRAINT IF EXISTS job_records_job_id_fkey;";
  }
  std::string byte_order_collation() const override { return "COLLATE \"C\""; }
  std::string row_id_column() const override { return ", job_id"; }
  std::string clustered_table() const override { return ""; }
  std::unique_ptr<store> another_connection() override {
    return std::make_unique<pg_store>(conninfo_);
  }

  // Binary COPY straight into the table: no statement with thousands of parameters to parse.
  void append(const std::string& table, const std::vector<std::string>& columns,
              const std::vector<std::vector<param>>& rows) override {
    if (rows.empty())
      return;
    const std::string names = column_list(columns);
    const std::vector<Oid>& types = column_types(table, names);
    copy_binary data;
    for (const std::vector<param>& values : rows) {
      data.tuple(static_cast<std::uint16_t>(values.size()));
      for (size_t c = 0; c < values.size(); ++c)
        put_param(data, values[c], types[c], table);
    }
    copy_in("COPY " + table + " (" + names + ") FROM STDIN (FORMAT binary)", data);
  }
  void begin_migration() override {
    execute("BEGIN");
    execute("LOCK TABLE schema_version IN ACCESS EXCLUSIVE MODE");
  }

private:
  // The server's type of each column of a table, for its binary COPY (looked up once).
  const std::vector<Oid>& column_types(const std::string& table, const std::string& columns) {
    const std::string key = table + "(" + columns + ")";
    if (const auto it = types_.find(key); it != types_.end())
      return it->second;
    result_ptr r(pq().exec(conn_, ("SELECT " + columns + " FROM " + table + " LIMIT 0").c_str()));
    check(r, PGRES_TUPLES_OK);
    std::vector<Oid> types(static_cast<size_t>(pq().nfields(r.get())));
    for (size_t c = 0; c < types.size(); ++c)
      types[c] = pq().ftype(r.get(), static_cast<int>(c));
    return types_.emplace(key, std::move(types)).first->second;
  }
  // One value in the binary form of its column's type (int8, int4, float8, text; pg_type.h).
  void put_param(copy_binary& out, const param& p, Oid type, const std::string& table) const {
    constexpr Oid int8 = 20, int4 = 23, text = 25, float8 = 701;
    if (p.t == param::type::null)
      out.null();
    else if (p.t == param::type::i64 && type == int8)
      out.i64(p.i);
    else if (p.t == param::type::i64 && type == int4 && p.i >= INT32_MIN && p.i <= INT32_MAX)
      out.i32(static_cast<std::int32_t>(p.i));
    else if (p.t == param::type::i64 && type == float8)
      out.f64(static_cast<double>(p.i));
    else if (p.t == param::type::f64 && type == float8)
      out.f64(p.d);
    else if (p.t == param::type::text && type == text)
      out.text(p.s);
    else
      throw store_error(shown_ + ": " + table + ": a value that does not fit its column's type " +
                        std::to_string(type));
  }

  // A deflated record is some kilobytes (4 KB with an MPI_T section): over the 2 KB from which
  // the server by default tries to compress a value again (deflated data does not shrink) and
  // then moves it into the table's TOAST table, a row and an index entry per 2 KB. Kept in its
  // row instead (up to a page), 20,000 MPI_T records went in in 155-181 ms against 288-303 ms
  // of the server's time. Storage settings only, for the rows written from
  // now on: any strata reads both. Set at a connection's first write, outside its transactions
  // (two writers then only wait for each other's ALTER); a user who may not alter the table,
  // or a reader holding it longer than a second (the ALTER waits for its lock), leaves the
  // default until a later write.
  void keep_records_inline() {
    bool tuned = false;
    query("SELECT a.attstorage = 'e' AND COALESCE(c.reloptions::text, '') LIKE "
          "'%toast_tuple_target=8160%' FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
          "WHERE a.attrelid = 'job_records'::regclass AND a.attname = 'record'",
          {}, [&](const row& r) { tuned = r.text(0) == "t"; });
    if (tuned)
      return;
    execute("SET lock_timeout = '1s'");
    try {
      execute("ALTER TABLE job_records ALTER COLUMN record SET STORAGE EXTERNAL, "
              "SET (toast_tuple_target = 8160)");
    } catch (const store_error&) { // only slower: the store is as readable either way
    }
    execute("RESET lock_timeout");
  }

  // The URL without its password, for messages.
  static std::string shown_url(const std::string& url) {
    const size_t scheme = url.find("://");
    const size_t at = url.find('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme)
      return url;
    const size_t colon = url.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at)
      return url;
    return url.substr(0, colon) + ":***" + url.substr(at);
  }
  void copy_in(const std::string& sql, copy_binary& rows) {
    check(result_ptr(pq().exec(conn_, sql.c_str())), PGRES_COPY_IN);
    const std::string& data = rows.finish();
    constexpr size_t piece = 1 << 20;
    bool sent = true;
    for (size_t at = 0; at < data.size() && sent; at += piece)
      sent = pq().putCopyData(conn_, data.data() + at,
                              static_cast<int>(std::min(piece, data.size() - at))) == 1;
    const std::string why = sent ? std::string() : one_line(pq().errorMessage(conn_));
    // Ending the COPY (with an error message when cut short) leaves the connection usable.
    if (pq().putCopyEnd(conn_, sent ? nullptr : "strata ingest cut short") != 1 && sent)
      throw store_error(shown_ + ": " + one_line(pq().errorMessage(conn_)));
    result_ptr r(pq().getResult(conn_));
    while (PGresult* extra = pq().getResult(conn_))
      pq().clear(extra);
    if (!sent)
      throw store_error(shown_ + ": " + why);
    check(r);
  }
  void check(const result_ptr& r, ExecStatusType wanted = PGRES_COMMAND_OK) {
    const ExecStatusType got = r ? pq().resultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (got == wanted || (wanted == PGRES_COMMAND_OK && got == PGRES_TUPLES_OK))
      return;
    throw store_error(shown_ + ": " +
                      one_line(r ? pq().resultErrorMessage(r.get()) : pq().errorMessage(conn_)));
  }

  std::string conninfo_;
  std::string shown_;
  PGconn* conn_ = nullptr;
  std::map<std::string, std::vector<Oid>> types_;
  bool records_inline_ = false; // keep_records_inline done on this connection
};

} // namespace

std::unique_ptr<store> open_postgresql(const std::string& conninfo) {
  return std::make_unique<pg_store>(conninfo);
}

} // namespace strata::site
