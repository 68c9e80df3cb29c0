#include "site/store.hpp"

#include "site/mpi_t_index.hpp"
#include "site/programs.hpp"
#include "site/store_backends.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

namespace strata::site {

const char* const job_columns =
    "job_id, job_key, record_id, owner, owner_uid, claimed_user, claimed_uid, owner_mismatch, "
    "start_time, end_time, ranks, ranks_reported, hosts, executable, language, mpi_flavor, "
    "status, partial, wall_time_s, cpu_time_s, mpi_time_s, mpi_percent, overhead_s, mpi_calls, "
    "mpi_bytes, routine_groups, cpu_class, instructions, ingested_at, slurm_account, "
    "slurm_partition";

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
  j.slurm_account = r.text(c++);
  j.slurm_partition = r.text(c++);
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

insert_result store::insert(const std::vector<stored_job>& jobs) {
  begin_write();
  try {
    insert_result r = insert_rows(jobs);
    add_executables(jobs, r.was_new);
    add_program_runs(*this, jobs, r);
    add_mpi_t(*this, jobs, r);
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
