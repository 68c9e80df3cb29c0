#include "site/mpi_t_query.hpp"

#include "site/mpi_t_settings.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace strata::site {
namespace {

struct chosen_job {
  std::int64_t job_id = 0, settings_id = 0, end_time = 0;
  std::string record_id;
  double mpi_s_per_rank = 0;
};

bool name_matches(const std::optional<std::string>& wanted, const std::string& name) {
  if (!wanted)
    return true;
  if (!wanted->empty() && wanted->back() == '*')
    return name.starts_with(std::string_view(*wanted).substr(0, wanted->size() - 1));
  return name == *wanted;
}

// " AND ..." over job_mpi_t m and jobs j for the query's owner, executable and period.
std::string job_filter(const mpi_t_query& q, std::vector<store::param>& params) {
  std::string sql;
  if (q.owner) {
    params.emplace_back(*q.owner);
    sql += " AND m.owner = $" + std::to_string(params.size());
  }
  if (q.since) {
    params.emplace_back(*q.since);
    sql += " AND m.end_time >= $" + std::to_string(params.size());
  }
  if (q.executable) {
    params.emplace_back(*q.executable);
    sql += " AND j.executable = $" + std::to_string(params.size());
  }
  return sql;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1)
    return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

std::vector<chosen_job> chosen_jobs(store& db, const mpi_t_query& q) {
  std::vector<store::param> params;
  const std::string filter = job_filter(q, params);
  std::vector<chosen_job> jobs;
  db.query("SELECT m.job_id, m.settings_id, m.end_time, j.record_id, j.mpi_time_s, j.ranks FROM "
           "job_mpi_t m JOIN jobs j ON j.job_id = m.job_id WHERE 1=1" +
               filter + " ORDER BY m.end_time DESC, m.job_id DESC",
           params, [&](const store::row& r) {
             const double ranks = static_cast<double>(std::max<std::int64_t>(r.i64(5), 1));
             jobs.push_back({r.i64(0), r.i64(1), r.i64(2), r.text(3), r.f64(4) / ranks});
           });
  return jobs;
}

struct value_of_set {
  std::string value;
  bool from_environment = false;
};

// name -> settings id -> its value there, for the sets the jobs ran with.
std::map<std::string, std::map<std::int64_t, value_of_set>>
values_by_name(store& db, const std::set<std::int64_t>& settings, const mpi_t_query& q) {
  std::map<std::string, std::map<std::int64_t, value_of_set>> out;
  for (const std::int64_t id : settings)
    db.query("SELECT settings FROM mpi_t_settings WHERE settings_id = $1", {id},
             [&](const store::row& r) {
               for (setting& s : settings_of_text(r.text(0)))
                 if (name_matches(q.name, s.name))
                   out[std::move(s.name)][id] = {std::move(s.value), s.from_environment};
             });
  return out;
}

cvar_summary summarise(const std::string& name, const std::map<std::int64_t, value_of_set>& sets,
                       const std::vector<chosen_job>& jobs, const mpi_t_query& q) {
  std::map<std::string, value_jobs> values;
  std::map<std::string, std::vector<double>> times;
  for (const chosen_job& j : jobs) { // newest first
    const auto set = sets.find(j.settings_id);
    if (set == sets.end())
      continue; // this job's library did not report the variable
    value_jobs& v = values[set->second.value];
    v.value = set->second.value;
    ++v.jobs;
    v.from_environment += set->second.from_environment ? 1 : 0;
    if (v.record_ids.size() < q.listed_jobs)
      v.record_ids.push_back(j.record_id);
    times[v.value].push_back(j.mpi_s_per_rank);
  }
  cvar_summary out{name, {}};
  for (auto& [value, v] : values) {
    v.median_mpi_s_per_rank = median(std::move(times[value]));
    out.values.push_back(std::move(v));
  }
  std::stable_sort(out.values.begin(), out.values.end(),
                   [](const value_jobs& a, const value_jobs& b) { return a.jobs > b.jobs; });
  return out;
}

std::vector<pvar_summary> pvars_of(store& db, const mpi_t_query& q) {
  std::vector<store::param> params;
  std::string sql = "SELECT p.name, p.var_class, p.sum_value, p.max_value, j.record_id FROM "
                    "job_pvars p JOIN job_mpi_t m ON m.job_id = p.job_id JOIN jobs j ON "
                    "j.job_id = p.job_id WHERE 1=1" +
                    job_filter(q, params);
  if (q.name && !q.name->ends_with('*')) {
    params.emplace_back(*q.name);
    sql += " AND p.name = $" + std::to_string(params.size());
  }
  std::map<std::string, pvar_summary> by_name;
  std::map<std::string, std::vector<double>> sums;
  db.query(sql + " ORDER BY p.name, m.end_time DESC, m.job_id DESC", params,
           [&](const store::row& r) {
             const std::string name = r.text(0);
             if (!name_matches(q.name, name))
               return;
             pvar_summary& p = by_name[name];
             const double sum = r.f64(2), max = r.f64(3);
             if (p.jobs == 0 || max > p.max) {
               p.max = max;
               p.max_record_id = r.text(4);
             }
             p.name = name;
             p.var_class = r.text(1);
             ++p.jobs;
             p.total_sum += sum;
             sums[name].push_back(sum);
           });
  std::vector<pvar_summary> out;
  for (auto& [name, p] : by_name) {
    p.median_sum = median(std::move(sums[name]));
    out.push_back(std::move(p));
  }
  return out;
}

std::string figure(double v) {
  return fmt::format("{:.6g}", v);
}

} // namespace

mpi_t_summary query_mpi_t(store& db, const mpi_t_query& q) {
  mpi_t_summary s;
  const std::vector<chosen_job> jobs = chosen_jobs(db, q);
  s.jobs = static_cast<std::int64_t>(jobs.size());
  std::set<std::int64_t> settings;
  for (const chosen_job& j : jobs)
    settings.insert(j.settings_id);
  s.settings = static_cast<std::int64_t>(settings.size());
  for (const auto& [name, sets] : values_by_name(db, settings, q)) {
    ++s.cvar_names;
    std::set<std::string> distinct;
    for (const auto& [id, v] : sets)
      distinct.insert(v.value);
    // A set that lacks the variable counts as one more value (the library did not report it).
    const bool differs = distinct.size() > 1 || sets.size() < settings.size();
    s.differing_names += differs ? 1 : 0;
    if (differs || q.all || q.name)
      s.cvars.push_back(summarise(name, sets, jobs, q));
  }
  s.pvars = pvars_of(db, q);
  return s;
}

std::string render_mpi_t_text(const mpi_t_summary& s, const mpi_t_query& q) {
  std::string out = fmt::format(
      "MPI_T over {} job{} ({} distinct set{} of control variables): {} control variable{}, {} "
      "with more than one value{}\n",
      s.jobs, s.jobs == 1 ? "" : "s", s.settings, s.settings == 1 ? "" : "s", s.cvar_names,
      s.cvar_names == 1 ? "" : "s", s.differing_names,
      q.all || q.name ? "" : " (listed below; --all lists every one)");
  for (const cvar_summary& c : s.cvars) {
    out += fmt::format("\n{}\n  {:<24} {:>6} {:>18} {:>8}  {}\n", c.name, "value", "jobs",
                       "median MPI s/rank", "from env", "jobs (newest first)");
    for (const value_jobs& v : c.values) {
      std::string ids;
      for (const std::string& id : v.record_ids)
        ids += (ids.empty() ? "" : ", ") + id;
      if (static_cast<std::int64_t>(v.record_ids.size()) < v.jobs)
        ids += fmt::format(" and {} more", v.jobs - static_cast<std::int64_t>(v.record_ids.size()));
      out += fmt::format("  {:<24} {:>6} {:>18} {:>8}  {}\n", v.value.empty() ? "\"\"" : v.value,
                         v.jobs, figure(v.median_mpi_s_per_rank), v.from_environment, ids);
    }
  }
  if (s.pvars.empty()) {
    out += "\nNo performance variables were read by these jobs' MPI libraries.\n";
    return out;
  }
  out += fmt::format("\nperformance variables (each job's sum over its ranks)\n  {:<36} {:<14} "
                     "{:>6} {:>14} {:>14} {:>14}  {}\n",
                     "name", "class", "jobs", "median per job", "total", "largest rank", "in job");
  for (const pvar_summary& p : s.pvars)
    out +=
        fmt::format("  {:<36} {:<14} {:>6} {:>14} {:>14} {:>14}  {}\n", p.name, p.var_class, p.jobs,
                    figure(p.median_sum), figure(p.total_sum), figure(p.max), p.max_record_id);
  return out;
}

std::string render_mpi_t_json(const mpi_t_summary& s) {
  nlohmann::json cvars = nlohmann::json::array(), pvars = nlohmann::json::array();
  for (const cvar_summary& c : s.cvars) {
    nlohmann::json values = nlohmann::json::array();
    for (const value_jobs& v : c.values)
      values.push_back({{"value", v.value},
                        {"jobs", v.jobs},
                        {"from_environment", v.from_environment},
                        {"median_mpi_s_per_rank", v.median_mpi_s_per_rank},
                        {"record_ids", v.record_ids}});
    cvars.push_back({{"name", c.name}, {"values", values}});
  }
  for (const pvar_summary& p : s.pvars)
    pvars.push_back({{"name", p.name},
                     {"class", p.var_class},
                     {"jobs", p.jobs},
                     {"median_sum", p.median_sum},
                     {"total_sum", p.total_sum},
                     {"max", p.max},
                     {"max_record_id", p.max_record_id}});
  const nlohmann::json doc = {{"jobs", s.jobs},
                              {"settings", s.settings},
                              {"cvar_names", s.cvar_names},
                              {"differing_names", s.differing_names},
                              {"cvars", cvars},
                              {"pvars", pvars}};
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace strata::site
