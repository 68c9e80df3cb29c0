#include "site/store.hpp"

#include "site/job_collectives.hpp"
#include "site/job_pairs.hpp"
#include "site/mpi_t_index.hpp"
#include "site/programs.hpp"
#include "site/store_backends.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace strata::site {

namespace {

// "a, b, c": the names of the columns visit_job_columns gives, but those the store numbers.
std::string job_column_names(bool with_store_numbered) {
  std::string names;
  const job_row none;
  visit_job_columns(none, [&](const job_column& c, const auto&) {
    if (with_store_numbered || c.fill != column_fill::by_store)
      names += (names.empty() ? "" : ", ") + std::string(c.name);
  });
  return names;
}

void read_column(const store::row& r, int c, std::int64_t& v) {
  v = r.i64(c);
}
void read_column(const store::row& r, int c, int& v) {
  v = static_cast<int>(r.i64(c));
}
void read_column(const store::row& r, int c, bool& v) {
  v = r.i64(c) != 0;
}
void read_column(const store::row& r, int c, double& v) {
  v = r.f64(c);
}
void read_column(const store::row& r, int c, std::string& v) {
  v = r.text(c);
}
template <typename T> void read_column(const store::row& r, int c, std::optional<T>& v) {
  if (r.is_null(c)) {
    v.reset();
    return;
  }
  T value{};
  read_column(r, c, value);
  v = value;
}

} // namespace

const std::string& job_columns() {
  static const std::string names = job_column_names(true);
  return names;
}

const std::string& job_inserted_columns() {
  static const std::string names = job_column_names(false);
  return names;
}

int job_inserted_column_count() {
  static const int count = [] {
    int n = 0;
    const job_row none;
    visit_job_columns(none, [&](const job_column& c, const auto&) {
      n += c.fill != column_fill::by_store ? 1 : 0;
    });
    return n;
  }();
  return count;
}

job_row read_job(const store::row& r) {
  job_row j;
  int c = 0;
  visit_job_columns(j, [&](const job_column&, auto& member) { read_column(r, c++, member); });
  return j;
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

std::optional<stored_job> store::job(std::int64_t job_id) {
  std::optional<stored_job> out;
  query("SELECT " + job_columns() + " FROM jobs WHERE job_id = $1", {job_id}, [&](const row& r) {
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

insert_result store::insert(const std::vector<stored_job>& jobs) {
  begin_write();
  try {
    insert_result r = insert_rows(jobs);
    add_executables(jobs, r.was_new);
    add_program_runs(*this, jobs, r);
    add_mpi_t(*this, jobs, r);
    add_job_pairs(*this, jobs, r);
    add_job_collectives(*this, jobs, r);
    add_day_rollups(*this, jobs, r.was_new);
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
  const auto [columns, keys, update] = upsert_sql(table, key_columns, sum_columns);
  insert_many(table, columns, key_columns.size() + sum_columns.size(), rows,
              " ON CONFLICT (" + keys + ") DO UPDATE SET " + update);
}

std::string store::column_list(const std::vector<std::string>& columns) {
  std::string names;
  for (const std::string& c : columns)
    names += (names.empty() ? "" : ", ") + c;
  return names;
}

void store::append(const std::string& table, const std::vector<std::string>& columns,
                   const std::vector<std::vector<param>>& rows) {
  insert_many(table, column_list(columns), columns.size(), rows, "");
}

void store::insert_many(const std::string& table, const std::string& columns, size_t width,
                        const std::vector<std::vector<param>>& rows, const std::string& tail) {
  const size_t chunk =
      std::max<size_t>(1, 8000 / std::max<size_t>(1, width)); // under both backends' limits
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
    query(sql + tail, params, [](const row&) {});
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

} // namespace strata::site
