#include "site/rollups.hpp"

#include "site/groups.hpp"
#include "site/store.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace strata::site {

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

int mpi_bucket(double mpi_percent) {
  if (!(mpi_percent > 0)) // NaN too: above no threshold
    return 0;
  if (mpi_percent > 100)
    return 101;
  return static_cast<int>(std::ceil(mpi_percent));
}

std::int64_t size_class_of(std::int64_t ranks) {
  if (ranks <= 1)
    return ranks;
  std::int64_t bucket = 1;
  while (bucket < ranks && bucket < (std::int64_t{1} << 62))
    bucket *= 2;
  return bucket == ranks ? ranks : bucket / 2 + 1;
}

job_totals read_totals(const store::row& r, int first) {
  int c = first;
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

const std::vector<std::string>& totals_sum_columns() {
  static const std::vector<std::string> columns = {"jobs",
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
  return columns;
}

namespace {

// The sums of job_totals, then each routine group's jobs and CPU time (g<N>_jobs, g<N>_cpu).
std::vector<std::string> totals_and_group_columns() {
  std::vector<std::string> columns = totals_sum_columns();
  for (int g = 0; g < routine_group_count; ++g) {
    columns.push_back("g" + std::to_string(g) + "_jobs");
    columns.push_back("g" + std::to_string(g) + "_cpu");
  }
  return columns;
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

// day_routines and day_classes (migration 1).
void add_owner_days(store& db, const std::vector<stored_job>& jobs,
                    const std::vector<bool>& was_new) {
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
    const std::int64_t day = day_of(j.end_time);
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
  std::vector<std::vector<store::param>> rows;
  rows.reserve(routines.size());
  for (const auto& [k, v] : routines)
    rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), v.jobs, v.calls, v.bytes,
                    v.count_sum, v.time_s});
  db.upsert("day_routines", {"day", "owner", "routine"},
            {"jobs", "calls", "bytes", "count_sum", "time_s"}, rows);
  rows.clear();
  const std::vector<std::string> sums = totals_and_group_columns();
  for (const auto& [k, v] : classes) {
    std::vector<store::param> r = {std::get<0>(k),
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
  db.upsert("day_classes", {"day", "owner", "language", "ranks", "cpu_class"}, sums, rows);
}

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

void write_site_days(store& db, const site_day_sums& sums) {
  std::vector<std::vector<store::param>> rows;
  rows.reserve(sums.mpi.size());
  for (const auto& [k, n] : sums.mpi)
    rows.push_back({k.first, k.second, n});
  db.upsert("day_mpi", {"day", "mpi_bucket"}, {"jobs"}, rows);
  rows.clear();
  for (const auto& [k, t] : sums.owners) {
    std::vector<store::param> r = {k.first, k.second};
    append_totals(r, t);
    rows.push_back(std::move(r));
  }
  db.upsert("day_owners", {"day", "owner"}, totals_sum_columns(), rows);
  rows.clear();
  const std::vector<std::string> columns = totals_and_group_columns();
  for (const auto& [k, v] : sums.shapes) {
    std::vector<store::param> r = {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)};
    append_totals(r, v.t);
    for (size_t g = 0; g < static_cast<size_t>(routine_group_count); ++g) {
      r.emplace_back(v.group_jobs[g]);
      r.emplace_back(v.group_cpu[g]);
    }
    rows.push_back(std::move(r));
  }
  db.upsert("day_shapes", {"day", "language", "size_class", "cpu_class"}, columns, rows);
}

// day_mpi, day_owners and day_shapes (migration 4).
void add_site_days(store& db, const std::vector<stored_job>& jobs,
                   const std::vector<bool>& was_new) {
  site_day_sums sums;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!was_new[i])
      continue;
    const job_row& j = jobs[i].job;
    const std::int64_t day = day_of(j.end_time);
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
  write_site_days(db, sums);
}

} // namespace

void fill_site_days(store& db) {
  site_day_sums sums;
  db.query("SELECT end_time, mpi_percent FROM jobs", {}, [&](const store::row& r) {
    ++sums.mpi[{day_of(r.i64(0)), mpi_bucket(r.f64(1))}];
  });
  // The owners' and shapes' sums are day_classes' rows summed differently.
  std::string sql = std::string("SELECT day, owner, language, ranks, cpu_class, ") +
                    "jobs, pes, cpu_time_s, mpi_time_s, overhead_s, wall_time_s, pe_weighted, "
                    "mpi_calls, mpi_bytes, instructions, instructions_cpu_time_s";
  for (int g = 0; g < routine_group_count; ++g)
    sql += ", g" + std::to_string(g) + "_jobs, g" + std::to_string(g) + "_cpu";
  db.query(sql + " FROM day_classes", {}, [&](const store::row& r) {
    const std::int64_t day = r.i64(0);
    const job_totals t = read_totals(r, 5);
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
  write_site_days(db, sums);
}

void add_day_rollups(store& db, const std::vector<stored_job>& jobs,
                     const std::vector<bool>& was_new) {
  add_owner_days(db, jobs, was_new);
  add_site_days(db, jobs, was_new);
}

} // namespace strata::site
