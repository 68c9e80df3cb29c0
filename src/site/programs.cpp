#include "site/programs.hpp"

#include "site/store.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace strata::site {
namespace {

using program_key = std::tuple<std::string, std::string, std::string>;

const std::vector<std::string> run_columns = {"program_id", "ranks",  "end_time", "job_id",
                                              "complete",   "wall_s", "mpi_s"};
const std::vector<std::string> regression_columns = {
    "job_id",  "program_id", "owner",   "end_time",     "ranks", "metric",
    "value_s", "baseline_s", "noise_s", "history_runs", "moved"};

// The `moved` column: the routines that moved most, as JSON (written and read only here).
std::string moved_json(const std::vector<moved_routine>& moved) {
  nlohmann::json a = nlohmann::json::array();
  for (const moved_routine& m : moved)
    a.push_back({{"routine", m.routine}, {"value_s", m.value_s}, {"baseline_s", m.baseline_s}});
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<moved_routine> moved_of(const std::string& text) {
  std::vector<moved_routine> out;
  const nlohmann::json a = nlohmann::json::parse(text, nullptr, false);
  if (!a.is_array())
    return out;
  for (const nlohmann::json& m : a)
    if (m.is_object() && m.value("routine", nlohmann::json()).is_string())
      out.push_back(
          {m["routine"].get<std::string>(), m.value("value_s", 0.0), m.value("baseline_s", 0.0)});
  return out;
}

// The VALUES rows of `keys` from `begin` to `end` as parameters ($1, $2, $3), ($4, ...).
std::string key_values(const std::vector<program_key>& keys, size_t begin, size_t end,
                       std::vector<store::param>& params) {
  std::string values;
  for (size_t k = begin; k < end; ++k) {
    params.emplace_back(std::get<0>(keys[k]));
    params.emplace_back(std::get<1>(keys[k]));
    params.emplace_back(std::get<2>(keys[k]));
    const size_t n = params.size();
    values += (k == begin ? "($" : ", ($") + std::to_string(n - 2) + ", $" + std::to_string(n - 1) +
              ", $" + std::to_string(n) + ")";
  }
  return values;
}

} // namespace

std::map<program_key, std::int64_t> program_ids_of(store& db,
                                                   const std::vector<program_key>& keys) {
  std::map<program_key, std::int64_t> ids;
  constexpr size_t chunk = 500;
  for (size_t begin = 0; begin < keys.size(); begin += chunk) {
    std::vector<store::param> params;
    const std::string values =
        key_values(keys, begin, std::min(keys.size(), begin + chunk), params);
    // A join, not "IN (VALUES ...)": SQLite scans the table for the latter.
    db.query("WITH wanted (owner, executable, arguments) AS (VALUES " + values +
                 ") SELECT p.program_id, p.owner, p.executable, p.arguments FROM wanted w JOIN "
                 "programs p ON p.owner = w.owner AND p.executable = w.executable AND "
                 "p.arguments = w.arguments",
             params, [&](const store::row& r) {
               ids[{r.text(1), r.text(2), r.text(3)}] = r.i64(0);
             });
  }
  return ids;
}

namespace {

// Program ids of the keys, adding the programs not stored yet (in key order).
std::map<program_key, std::int64_t> program_ids(store& db, const std::set<program_key>& keys) {
  const std::vector<program_key> all(keys.begin(), keys.end());
  constexpr size_t chunk = 500;
  for (size_t begin = 0; begin < all.size(); begin += chunk) {
    std::vector<store::param> params;
    const std::string values = key_values(all, begin, std::min(all.size(), begin + chunk), params);
    db.query("INSERT INTO programs (owner, executable, arguments) VALUES " + values +
                 " ON CONFLICT (owner, executable, arguments) DO NOTHING",
             params, [](const store::row&) {});
  }
  return program_ids_of(db, all);
}

program read_program(const store::row& r, int c) {
  return {r.i64(c), r.text(c + 1), r.text(c + 2), r.text(c + 3)};
}

program_run read_run(const store::row& r) {
  return {r.i64(0), r.i64(1), r.i64(2), r.i64(3) != 0, r.f64(4), r.f64(5)};
}

constexpr const char* regression_select =
    "SELECT g.job_id, g.program_id, p.owner, p.executable, p.arguments, j.record_id, g.end_time, "
    "g.ranks, g.metric, g.value_s, g.baseline_s, g.noise_s, g.history_runs, g.moved FROM "
    "regressions g JOIN programs p ON p.program_id = g.program_id JOIN jobs j ON j.job_id = "
    "g.job_id";

regression_row read_regression(const store::row& r) {
  regression_row g;
  g.job_id = r.i64(0);
  g.prog = read_program(r, 1);
  g.record_id = r.text(5);
  g.end_time = r.i64(6);
  g.ranks = r.i64(7);
  g.flag.metric = r.text(8);
  g.flag.value_s = r.f64(9);
  g.flag.baseline_s = r.f64(10);
  g.flag.noise_s = r.f64(11);
  g.flag.history_runs = static_cast<int>(r.i64(12));
  g.flag.moved = moved_of(r.text(13));
  return g;
}

} // namespace

void add_program_runs(store& db, const std::vector<stored_job>& jobs, const insert_result& r) {
  std::set<program_key> keys;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (r.was_new[i])
      keys.insert({jobs[i].job.owner, jobs[i].job.executable, jobs[i].arguments});
  if (keys.empty())
    return;
  const std::map<program_key, std::int64_t> ids = program_ids(db, keys);
  std::vector<std::vector<store::param>> runs, flagged;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!r.was_new[i])
      continue;
    const job_row& j = jobs[i].job;
    const std::int64_t program_id = ids.at({j.owner, j.executable, jobs[i].arguments});
    const double ranks = static_cast<double>(std::max<std::int64_t>(j.ranks, 1));
    runs.push_back({program_id, j.ranks, j.end_time, r.job_ids[i], complete_run(j) ? 1 : 0,
                    j.wall_time_s, j.mpi_time_s / ranks});
    if (const auto& g = jobs[i].regression)
      flagged.push_back({r.job_ids[i], program_id, j.owner, j.end_time, j.ranks, g->metric,
                         g->value_s, g->baseline_s, g->noise_s, g->history_runs,
                         moved_json(g->moved)});
  }
  db.append("program_runs", run_columns, runs);
  db.append("regressions", regression_columns, flagged);
}

void fill_programs(store& db) {
  constexpr std::int64_t chunk = 20000; // jobs at a time: bounded memory at any store size
  for (std::int64_t after = 0;;) {
    std::vector<stored_job> jobs;
    db.query("SELECT j.job_id, j.owner, j.executable, j.ranks, j.ranks_reported, j.end_time, "
             "j.status, j.partial, j.wall_time_s, j.mpi_time_s, r.record FROM jobs j LEFT JOIN "
             "job_records r ON r.job_id = j.job_id WHERE j.job_id > $1 ORDER BY j.job_id "
             "LIMIT $2",
             {after, chunk}, [&](const store::row& row) {
               stored_job s;
               job_row& j = s.job;
               j.job_id = row.i64(0);
               j.owner = row.text(1);
               j.executable = row.text(2);
               j.ranks = row.i64(3);
               j.ranks_reported = row.i64(4);
               j.end_time = row.i64(5);
               j.status = row.text(6);
               j.partial = row.i64(7) != 0;
               j.wall_time_s = row.f64(8);
               j.mpi_time_s = row.f64(9);
               if (!row.is_null(10))
                 s.arguments = arguments_of_record(unpack_record(row.blob(10)));
               jobs.push_back(std::move(s));
             });
    if (jobs.empty())
      return;
    insert_result all;
    all.was_new.assign(jobs.size(), true);
    for (const stored_job& s : jobs)
      all.job_ids.push_back(s.job.job_id);
    add_program_runs(db, jobs, all);
    after = jobs.back().job.job_id;
  }
}

std::vector<program> find_programs(store& db, const std::optional<std::string>& owner,
                                   const std::optional<std::string>& executable) {
  std::string sql = "SELECT program_id, owner, executable, arguments FROM programs WHERE 1=1";
  std::vector<store::param> params;
  if (owner) {
    params.emplace_back(*owner);
    sql += " AND owner = $" + std::to_string(params.size());
  }
  if (executable) {
    params.emplace_back(*executable);
    sql += " AND executable = $" + std::to_string(params.size());
  }
  std::vector<program> out;
  db.query(sql + " ORDER BY owner, executable, arguments", params,
           [&](const store::row& r) { out.push_back(read_program(r, 0)); });
  return out;
}

std::optional<program> find_program(store& db, const std::string& owner,
                                    const std::string& executable, const std::string& arguments) {
  std::optional<program> out;
  db.query("SELECT program_id, owner, executable, arguments FROM programs WHERE owner = $1 AND "
           "executable = $2 AND arguments = $3",
           {owner, executable, arguments}, [&](const store::row& r) { out = read_program(r, 0); });
  return out;
}

std::optional<program> program_of(store& db, const stored_job& job) {
  const std::string arguments =
      job.arguments.empty() ? arguments_of_record(job.record_json) : job.arguments;
  return find_program(db, job.job.owner, job.job.executable, arguments);
}

std::map<std::pair<std::int64_t, std::int64_t>, std::vector<program_run>>
newest_runs(store& db, const std::vector<std::pair<std::int64_t, std::int64_t>>& sizes, int limit) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<program_run>> out;
  // One range of the key, newest first, per size, in one statement for many sizes (SQLite
  // allows 500 terms in a compound SELECT).
  constexpr size_t chunk = 200;
  for (size_t begin = 0; begin < sizes.size(); begin += chunk) {
    const size_t end = std::min(sizes.size(), begin + chunk);
    std::vector<store::param> params{limit};
    std::string sql;
    for (size_t k = begin; k < end; ++k) {
      params.emplace_back(sizes[k].first);
      params.emplace_back(sizes[k].second);
      sql += std::string(k == begin ? "" : " UNION ALL ") +
             "SELECT * FROM (SELECT job_id, ranks, end_time, complete, wall_s, mpi_s, program_id "
             "FROM program_runs WHERE program_id = $" +
             std::to_string(params.size() - 1) + " AND ranks = $" + std::to_string(params.size()) +
             " AND complete = 1 ORDER BY end_time DESC, job_id DESC LIMIT $1) AS s" +
             std::to_string(k - begin);
    }
    db.query(sql, params, [&](const store::row& r) {
      out[{r.i64(6), r.i64(1)}].push_back(read_run(r));
    });
  }
  return out;
}

std::vector<program_run> runs_of(store& db, std::int64_t program_id, std::int64_t since) {
  std::vector<program_run> out;
  db.query("SELECT job_id, ranks, end_time, complete, wall_s, mpi_s FROM program_runs WHERE "
           "program_id = $1 AND end_time >= $2 ORDER BY ranks, end_time DESC, job_id DESC",
           {program_id, since}, [&](const store::row& r) { out.push_back(read_run(r)); });
  return out;
}

std::vector<program_run> history_of(store& db, std::int64_t program_id, std::int64_t ranks,
                                    std::int64_t before, int limit) {
  std::vector<program_run> out;
  db.query("SELECT job_id, ranks, end_time, complete, wall_s, mpi_s FROM program_runs WHERE "
           "program_id = $1 AND ranks = $2 AND end_time < $3 AND complete = 1 ORDER BY "
           "end_time DESC, job_id DESC LIMIT $4",
           {program_id, ranks, before, limit},
           [&](const store::row& r) { out.push_back(read_run(r)); });
  return out;
}

std::map<std::int64_t, std::map<std::string, double>>
routine_times(store& db, const std::vector<std::int64_t>& job_ids) {
  std::map<std::int64_t, std::map<std::string, double>> out;
  constexpr size_t chunk = 500;
  for (size_t begin = 0; begin < job_ids.size(); begin += chunk) {
    const size_t end = std::min(job_ids.size(), begin + chunk);
    std::string in;
    std::vector<store::param> params;
    for (size_t k = begin; k < end; ++k) {
      params.emplace_back(job_ids[k]);
      in += (k == begin ? "$" : ", $") + std::to_string(params.size());
    }
    db.query("SELECT job_id, routine, time_s FROM job_routines WHERE job_id IN (" + in + ")",
             params, [&](const store::row& r) { out[r.i64(0)][r.text(1)] = r.f64(2); });
  }
  return out;
}

std::vector<regression_row> regressions_in(store& db, const period& when,
                                           const std::optional<std::string>& owner,
                                           std::int64_t limit) {
  std::vector<store::param> params{when.from, when.to};
  std::string sql = std::string(regression_select) + " WHERE g.end_time >= $1 AND g.end_time < $2";
  if (owner) {
    params.emplace_back(*owner);
    sql += " AND g.owner = $3";
  }
  params.emplace_back(limit);
  sql += " ORDER BY g.end_time DESC, g.job_id DESC LIMIT $" + std::to_string(params.size());
  std::vector<regression_row> out;
  db.query(sql, params, [&](const store::row& r) { out.push_back(read_regression(r)); });
  return out;
}

std::int64_t count_regressions(store& db, const period& when,
                               const std::optional<std::string>& owner) {
  std::vector<store::param> params{when.from, when.to};
  std::string sql = "SELECT COUNT(*) FROM regressions WHERE end_time >= $1 AND end_time < $2";
  if (owner) {
    params.emplace_back(*owner);
    sql += " AND owner = $3";
  }
  std::int64_t n = 0;
  db.query(sql, params, [&](const store::row& r) { n = r.i64(0); });
  return n;
}

std::optional<regression_row> regression_of(store& db, std::int64_t job_id) {
  std::optional<regression_row> out;
  db.query(std::string(regression_select) + " WHERE g.job_id = $1", {job_id},
           [&](const store::row& r) { out = read_regression(r); });
  return out;
}

} // namespace strata::site
