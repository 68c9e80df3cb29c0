#include "site/queries.hpp"

#include "site/groups.hpp"
#include "site/store.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace strata::site {
namespace {

// Sums over `jobs` rows as job_totals columns, in the order read_totals reads them.
constexpr const char* totals_columns =
    "COUNT(*), COALESCE(SUM(ranks), 0), COALESCE(SUM(cpu_time_s), 0), "
    "COALESCE(SUM(mpi_time_s), 0), COALESCE(SUM(overhead_s), 0), COALESCE(SUM(wall_time_s), 0), "
    "COALESCE(SUM(ranks * cpu_time_s), 0), COALESCE(SUM(CAST(mpi_calls AS DOUBLE PRECISION)), 0), "
    "COALESCE(SUM(CAST(mpi_bytes AS DOUBLE PRECISION)), 0), COALESCE(SUM(instructions), 0), "
    "COALESCE(SUM(CASE WHEN instructions IS NULL THEN 0 ELSE cpu_time_s END), 0)";
constexpr int totals_column_count = 11; // read_totals reads this many

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

} // namespace

std::int64_t count_critical(store& db, const period& when, double threshold) {
  const day_split split = split_days(when);
  std::vector<period> raw = split.raw;
  std::int64_t n = 0;
  if (split.days) {
    if (threshold >= 0 && threshold <= 100 && threshold == std::floor(threshold))
      db.query("SELECT COALESCE(SUM(jobs), 0) FROM day_mpi WHERE day >= $1 AND day < $2 AND "
               "mpi_bucket > $3",
               {split.days->from, split.days->to, static_cast<std::int64_t>(threshold)},
               [&](const store::row& r) { n += r.i64(0); });
    else
      raw.push_back(*split.days);
  }
  for (const period& p : raw)
    db.query(
        "SELECT COUNT(*) FROM jobs WHERE end_time >= $1 AND end_time < $2 AND mpi_percent > $3",
        {p.from, p.to, threshold}, [&](const store::row& r) { n += r.i64(0); });
  return n;
}

std::vector<std::string> owners(store& db, const period& when) {
  std::set<std::string> found;
  const day_split split = split_days(when);
  for (const period& p : split.raw)
    db.query("SELECT DISTINCT owner FROM jobs WHERE end_time >= $1 AND end_time < $2",
             {p.from, p.to}, [&](const store::row& r) { found.insert(r.text(0)); });
  if (split.days)
    db.query("SELECT DISTINCT owner FROM day_owners WHERE day >= $1 AND day < $2",
             {split.days->from, split.days->to},
             [&](const store::row& r) { found.insert(r.text(0)); });
  return {found.begin(), found.end()};
}

job_totals totals(store& db, const period& when, const std::optional<std::string>& owner) {
  job_totals t;
  const day_split split = split_days(when);
  for (const period& p : split.raw) {
    std::vector<store::param> params{p.from, p.to};
    const std::string sql = std::string("SELECT ") + totals_columns +
                            " FROM jobs WHERE end_time >= $1 AND end_time < $2" +
                            owner_condition(owner, params);
    db.query(sql, params, [&](const store::row& r) { add_totals(t, read_totals(r, 0)); });
  }
  if (split.days) {
    std::vector<store::param> params{split.days->from, split.days->to};
    const std::string sql = std::string("SELECT ") + rollup_totals_columns +
                            " FROM day_owners WHERE day >= $1 AND day < $2" +
                            owner_condition(owner, params);
    db.query(sql, params, [&](const store::row& r) {
      if (!r.is_null(0))
        add_totals(t, read_totals(r, 0));
    });
  }
  return t;
}

std::map<std::string, job_totals> slurm_totals(store& db, const period& when, bool by_partition) {
  std::map<std::string, job_totals> out;
  const std::string column = by_partition ? "slurm_partition" : "slurm_account";
  db.query("SELECT " + column + ", " + totals_columns +
               " FROM jobs WHERE end_time >= $1 AND end_time < $2 GROUP BY " + column,
           {when.from, when.to},
           [&](const store::row& r) { add_totals(out[r.text(0)], read_totals(r, 1)); });
  return out;
}

std::vector<job_class_row> job_classes(store& db, const period& when, double critical_mpi_percent,
                                       const std::optional<std::string>& owner,
                                       bool with_critical) {
  using key = std::tuple<std::string, std::string, std::int64_t, int>;
  std::map<key, job_class_row> acc;
  auto at = [&](const store::row& r) -> job_class_row& {
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
  auto read = [&](const store::row& r) {
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
    std::vector<store::param> params{p.from, p.to};
    sql += " FROM jobs WHERE end_time >= $1 AND end_time < $2" + owner_condition(owner, params) +
           " GROUP BY owner, language, ranks, cpu_class";
    db.query(sql, params, read);
  }
  if (split.days) {
    std::string sql =
        std::string("SELECT owner, language, ranks, cpu_class, ") + rollup_totals_columns;
    for (int g = 0; g < routine_group_count; ++g)
      sql += ", SUM(g" + std::to_string(g) + "_jobs), SUM(g" + std::to_string(g) + "_cpu)";
    std::vector<store::param> params{split.days->from, split.days->to};
    sql += " FROM day_classes WHERE day >= $1 AND day < $2" + owner_condition(owner, params) +
           " GROUP BY owner, language, ranks, cpu_class";
    db.query(sql, params, read);
  }
  // Critical jobs depend on the threshold asked for: counted from the job rows, through the
  // covering index on (end_time, mpi_percent, owner, language, ranks, cpu_class).
  if (with_critical) {
    std::vector<store::param> params{when.from, when.to, critical_mpi_percent};
    const std::string sql =
        "SELECT owner, language, ranks, cpu_class, COUNT(*) FROM jobs WHERE end_time >= $1 AND "
        "end_time < $2 AND mpi_percent > $3" +
        owner_condition(owner, params) + " GROUP BY owner, language, ranks, cpu_class";
    db.query(sql, params, [&](const store::row& r) { at(r).critical_jobs += r.i64(4); });
  }
  std::vector<job_class_row> out;
  out.reserve(acc.size());
  for (auto& [k, c] : acc)
    out.push_back(std::move(c));
  return out;
}

std::vector<job_class_row> job_shapes(store& db, const period& when) {
  std::map<std::tuple<std::string, std::int64_t, int>, job_class_row> acc;
  auto read = [&](const store::row& r) {
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
    db.query(sql, {p.from, p.to}, read);
  }
  if (split.days) {
    std::string sql =
        std::string("SELECT language, size_class, cpu_class, ") + rollup_totals_columns;
    for (int g = 0; g < routine_group_count; ++g)
      sql += ", SUM(g" + std::to_string(g) + "_jobs), SUM(g" + std::to_string(g) + "_cpu)";
    sql += " FROM day_shapes WHERE day >= $1 AND day < $2 GROUP BY language, size_class, cpu_class";
    db.query(sql, {split.days->from, split.days->to}, read);
  }
  std::vector<job_class_row> out;
  out.reserve(acc.size());
  for (auto& [k, c] : acc)
    out.push_back(std::move(c));
  return out;
}

std::map<std::string, job_totals> owner_totals(store& db, const period& when) {
  std::map<std::string, job_totals> out;
  auto read = [&](const store::row& r) { add_totals(out[r.text(0)], read_totals(r, 1)); };
  const day_split split = split_days(when);
  for (const period& p : split.raw)
    db.query(std::string("SELECT owner, ") + totals_columns +
                 " FROM jobs WHERE end_time >= $1 AND end_time < $2 GROUP BY owner",
             {p.from, p.to}, read);
  if (split.days)
    db.query(std::string("SELECT owner, ") + rollup_totals_columns +
                 " FROM day_owners WHERE day >= $1 AND day < $2 GROUP BY owner",
             {split.days->from, split.days->to}, read);
  return out;
}

std::vector<owner_routine_row> routine_sums(store& db, const period& when,
                                            const std::optional<std::string>& owner,
                                            bool by_owner) {
  std::map<std::pair<std::string, std::string>, owner_routine_row> acc;
  auto read = [&](const store::row& r) {
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
    std::vector<store::param> params{p.from, p.to};
    const std::string sql =
        "SELECT " + who +
        ", routine, COUNT(*), SUM(CAST(calls AS DOUBLE PRECISION)), "
        "SUM(CAST(bytes AS DOUBLE PRECISION)), SUM(CAST(count_sum AS DOUBLE PRECISION)), "
        "SUM(time_s) FROM job_routines WHERE job_id IN (SELECT job_id FROM jobs WHERE "
        "end_time >= $1 AND end_time < $2" +
        owner_condition(owner, params) + ")" + group;
    db.query(sql, params, read);
  }
  if (split.days) {
    std::vector<store::param> params{split.days->from, split.days->to};
    const std::string sql = "SELECT " + who +
                            ", routine, SUM(jobs), SUM(calls), SUM(bytes), SUM(count_sum), "
                            "SUM(time_s) FROM day_routines WHERE day >= $1 AND day < $2" +
                            owner_condition(owner, params) + group;
    db.query(sql, params, read);
  }
  std::vector<owner_routine_row> out;
  out.reserve(acc.size());
  for (auto& [k, o] : acc)
    out.push_back(std::move(o));
  return out;
}

std::vector<owner_week_row> owner_weeks(store& db, const period& when,
                                        const std::optional<std::string>& owner) {
  std::map<std::pair<std::string, std::int64_t>, owner_week_row> acc;
  auto read = [&](const store::row& r) {
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
    std::vector<store::param> params{p.from, p.to};
    const std::string sql = "SELECT owner, " + week("end_time") + " AS week, " + totals_columns +
                            " FROM jobs WHERE end_time >= $1 AND end_time < $2 AND "
                            "end_time >= 345600" +
                            owner_condition(owner, params) + " GROUP BY owner, week";
    db.query(sql, params, read);
  }
  if (split.days) {
    std::vector<store::param> params{split.days->from, split.days->to};
    const std::string sql = "SELECT owner, " + week("day") + " AS week, " + rollup_totals_columns +
                            " FROM day_owners WHERE day >= $1 AND day < $2 AND day >= 345600" +
                            owner_condition(owner, params) + " GROUP BY owner, week";
    db.query(sql, params, read);
  }
  std::vector<owner_week_row> out;
  out.reserve(acc.size());
  for (auto& [k, w] : acc)
    out.push_back(std::move(w));
  return out;
}

} // namespace strata::site
