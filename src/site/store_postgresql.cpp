// The PostgreSQL store (libpq). Queries travel as text with server-side parameters; a batch of
// jobs goes in with multi-row INSERTs and its routines with COPY, one round trip each.
#include "site/store_backends.hpp"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <map>

namespace strata::site {
namespace {

struct result_deleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

class pg_row final : public store::row {
public:
  pg_row(PGresult* r, int index) : r_(r), row_(index) {}
  bool is_null(int c) const override { return PQgetisnull(r_, row_, c) != 0; }
  std::int64_t i64(int c) const override {
    // Whole numbers arrive as "123"; sums done in double precision as "1.5e+20".
    const char* v = PQgetvalue(r_, row_, c);
    char* end = nullptr;
    const long long whole = std::strtoll(v, &end, 10);
    if (*end == '\0')
      return whole;
    const double d = std::strtod(v, nullptr);
    return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<std::int64_t>(d);
  }
  double f64(int c) const override { return std::strtod(PQgetvalue(r_, row_, c), nullptr); }
  std::string blob(int c) const override {
    size_t n = 0;
    unsigned char* bytes =
        PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row_, c)), &n);
    if (bytes == nullptr)
      return {};
    std::string out(reinterpret_cast<const char*>(bytes), n);
    PQfreemem(bytes);
    return out;
  }
  std::string text(int c) const override {
    return std::string(PQgetvalue(r_, row_, c), static_cast<size_t>(PQgetlength(r_, row_, c)));
  }

private:
  PGresult* r_;
  int row_;
};

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  for (char& c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

// COPY's text format: backslash, tab, newline and carriage return escaped.
void copy_text(std::string& out, const std::string& v) {
  for (const char c : v) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      out += c;
    }
  }
}

std::string exact(double v) {
  return fmt::format("{}", v);
} // shortest round-trip form

class pg_store final : public store {
public:
  explicit pg_store(const std::string& conninfo) : shown_(shown_url(conninfo)) {
    conn_ = PQconnectdb(conninfo.c_str());
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw store_error(shown_ + ": " + one_line(why));
    }
    execute("SET client_min_messages = warning");
  }
  ~pg_store() override { PQfinish(conn_); }
  pg_store(const pg_store&) = delete;
  pg_store& operator=(const pg_store&) = delete;

  backend kind() const override { return backend::postgresql; }

  void execute(const std::string& sql) override { check(result_ptr(PQexec(conn_, sql.c_str()))); }

protected:
  void begin_write() override { execute("BEGIN"); }
  insert_result insert_rows(const std::vector<stored_job>& jobs) override {
    insert_result result;
    result.was_new.assign(jobs.size(), false);
    try {
      constexpr size_t chunk = 500; // 28 parameters a row, under the protocol's 65535
      std::map<std::string, size_t> first_of_key;
      std::vector<std::int64_t> ids(jobs.size(), 0);
      const std::string now = std::to_string(static_cast<std::int64_t>(std::time(nullptr)));
      for (size_t begin = 0; begin < jobs.size(); begin += chunk) {
        const size_t end = std::min(jobs.size(), begin + chunk);
        std::string sql =
            "INSERT INTO jobs (job_key, record_id, owner, owner_uid, claimed_user, claimed_uid, "
            "owner_mismatch, start_time, end_time, ranks, ranks_reported, hosts, executable, "
            "language, mpi_flavor, status, partial, wall_time_s, cpu_time_s, mpi_time_s, "
            "mpi_percent, overhead_s, mpi_calls, mpi_bytes, routine_groups, cpu_class, "
            "instructions, ingested_at) VALUES ";
        std::vector<std::string> values;
        std::vector<bool> null_values;
        values.reserve((end - begin) * 28);
        for (size_t i = begin; i < end; ++i) {
          const job_row& j = jobs[i].job;
          first_of_key.try_emplace(j.job_key, i);
          sql += i == begin ? "(" : ",(";
          const size_t base = values.size();
          for (int c = 1; c <= 28; ++c)
            sql += fmt::format("{}${}", c == 1 ? "" : ",", base + static_cast<size_t>(c));
          sql += ")";
          values.push_back(j.job_key);
          values.push_back(j.record_id);
          values.push_back(j.owner);
          values.push_back(std::to_string(j.owner_uid));
          values.push_back(j.claimed_user);
          values.push_back(std::to_string(j.claimed_uid));
          values.push_back(j.owner_mismatch ? "1" : "0");
          values.push_back(std::to_string(j.start_time));
          values.push_back(std::to_string(j.end_time));
          values.push_back(std::to_string(j.ranks));
          values.push_back(std::to_string(j.ranks_reported));
          values.push_back(std::to_string(j.hosts));
          values.push_back(j.executable);
          values.push_back(j.language);
          values.push_back(j.mpi_flavor);
          values.push_back(j.status);
          values.push_back(j.partial ? "1" : "0");
          values.push_back(exact(j.wall_time_s));
          values.push_back(exact(j.cpu_time_s));
          values.push_back(exact(j.mpi_time_s));
          values.push_back(exact(j.mpi_percent));
          values.push_back(exact(j.overhead_s));
          values.push_back(std::to_string(j.mpi_calls));
          values.push_back(std::to_string(j.mpi_bytes));
          values.push_back(std::to_string(j.routine_groups));
          values.push_back(std::to_string(j.cpu_class));
          null_values.resize(values.size() + 1, false);
          null_values[values.size()] = !j.instructions;
          values.push_back(j.instructions ? exact(*j.instructions) : std::string());
          values.push_back(now);
        }
        sql += " ON CONFLICT (job_key) DO NOTHING RETURNING job_id, job_key";
        std::vector<const char*> pointers;
        pointers.reserve(values.size());
        null_values.resize(values.size(), false);
        for (size_t v = 0; v < values.size(); ++v)
          pointers.push_back(null_values[v] ? nullptr : values[v].c_str());
        result_ptr r(PQexecParams(conn_, sql.c_str(), static_cast<int>(pointers.size()), nullptr,
                                  pointers.data(), nullptr, nullptr, 0));
        check(r, PGRES_TUPLES_OK);
        for (int i = 0; i < PQntuples(r.get()); ++i) {
          const pg_row pr(r.get(), i);
          const auto it = first_of_key.find(pr.text(1));
          if (it != first_of_key.end())
            ids[it->second] = pr.i64(0);
        }
      }
      // The records of the new jobs, as binary BYTEA, many rows a statement.
      for (size_t begin = 0; begin < jobs.size(); begin += chunk) {
        const size_t end = std::min(jobs.size(), begin + chunk);
        std::string sql = "INSERT INTO job_records (job_id, record) VALUES ";
        std::vector<std::string> values;
        std::vector<int> lengths, formats;
        for (size_t i = begin; i < end; ++i) {
          if (ids[i] == 0)
            continue;
          sql += fmt::format("{}(${}, ${})", values.empty() ? "" : ",", values.size() + 1,
                             values.size() + 2);
          values.push_back(std::to_string(ids[i]));
          formats.push_back(0);
          values.push_back(jobs[i].record_packed.empty() ? pack_record(jobs[i].record_json)
                                                         : jobs[i].record_packed);
          formats.push_back(1);
        }
        if (values.empty())
          continue;
        std::vector<const char*> pointers;
        for (const std::string& v : values) {
          pointers.push_back(v.data());
          lengths.push_back(static_cast<int>(v.size()));
        }
        check(
            result_ptr(PQexecParams(conn_, sql.c_str(), static_cast<int>(pointers.size()), nullptr,
                                    pointers.data(), lengths.data(), formats.data(), 0)));
      }
      // The routines of the new jobs in one COPY.
      check(result_ptr(PQexec(conn_, "COPY job_routines (job_id, routine, owner, end_time, "
                                     "calls, time_s, bytes, count_sum) FROM STDIN")),
            PGRES_COPY_IN);
      std::string buffer;
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (ids[i] == 0) {
          ++result.duplicates;
          continue;
        }
        ++result.inserted;
        result.was_new[i] = true;
        const job_row& j = jobs[i].job;
        for (const routine_row& r : jobs[i].routines) {
          buffer += std::to_string(ids[i]);
          buffer += '\t';
          copy_text(buffer, r.routine);
          buffer += '\t';
          copy_text(buffer, j.owner);
          buffer += fmt::format("\t{}\t{}\t{}\t{}\t{}\n", j.end_time, r.calls, exact(r.time_s),
                                r.bytes, r.count_sum);
        }
        if (buffer.size() > (1 << 20))
          flush_copy(buffer);
      }
      flush_copy(buffer);
      if (PQputCopyEnd(conn_, nullptr) != 1)
        throw store_error(shown_ + ": " + one_line(PQerrorMessage(conn_)));
      check(result_ptr(PQgetResult(conn_)));
      while (PGresult* extra = PQgetResult(conn_))
        PQclear(extra);
    } catch (...) {
      while (PGresult* extra = PQgetResult(conn_)) // a COPY cut short: drain it for ROLLBACK
        PQclear(extra);
      throw;
    }
    return result;
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
    result_ptr r(PQexecParams(conn_, sql.c_str(), static_cast<int>(pointers.size()), nullptr,
                              pointers.data(), nullptr, nullptr, 0));
    check(r); // rows, or none for an INSERT
    for (int i = 0; i < PQntuples(r.get()); ++i)
      each(pg_row(r.get(), i));
  }
  std::string id_column_type() const override { return "BIGSERIAL PRIMARY KEY"; }
  std::string blob_column_type() const override { return "BYTEA"; }
  void begin_migration() override {
    execute("BEGIN");
    execute("LOCK TABLE schema_version IN ACCESS EXCLUSIVE MODE");
  }

private:
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
  void flush_copy(std::string& buffer) {
    if (!buffer.empty() &&
        PQputCopyData(conn_, buffer.data(), static_cast<int>(buffer.size())) != 1)
      throw store_error(shown_ + ": " + one_line(PQerrorMessage(conn_)));
    buffer.clear();
  }
  void check(const result_ptr& r, ExecStatusType wanted = PGRES_COMMAND_OK) {
    const ExecStatusType got = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (got == wanted || (wanted == PGRES_COMMAND_OK && got == PGRES_TUPLES_OK))
      return;
    throw store_error(shown_ + ": " +
                      one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_)));
  }

  std::string shown_;
  PGconn* conn_ = nullptr;
};

} // namespace

std::unique_ptr<store> open_postgresql(const std::string& conninfo) {
  return std::make_unique<pg_store>(conninfo);
}

} // namespace strata::site
