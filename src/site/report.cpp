#include "site/report.hpp"

#include "site/groups.hpp"
#include "site/regressions.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace strata::site {

namespace {

double percent(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

bool is_c(const std::string& language) {
  return language == "C/C++" || language == "C";
}
bool is_fortran(const std::string& language) {
  return language == "Fortran";
}

std::vector<routine_line> routine_lines(const std::vector<owner_routine_row>& rows,
                                        const job_totals& totals, const report_options& o,
                                        bool mark) {
  std::vector<routine_line> out;
  double mpi = 0;
  for (const owner_routine_row& r : rows)
    mpi += r.time_s;
  for (const owner_routine_row& r : rows) {
    routine_line l;
    l.name = r.routine;
    l.jobs = r.jobs;
    l.calls = r.calls;
    l.bytes = r.bytes;
    l.count_sum = r.count_sum;
    l.time_s = r.time_s;
    l.calls_per_pe =
        totals.pes > 0 ? static_cast<double>(r.calls) / static_cast<double>(totals.pes) : 0.0;
    l.time_per_call_us = r.calls > 0 ? 1e6 * r.time_s / static_cast<double>(r.calls) : 0.0;
    l.bytes_per_call =
        r.calls > 0 ? static_cast<double>(r.bytes) / static_cast<double>(r.calls) : 0.0;
    l.share_of_mpi = percent(r.time_s, mpi);
    if (o.model) {
      if (auto it = o.model->routines.find(r.routine); it != o.model->routines.end()) {
        record::routine measured;
        measured.calls = static_cast<std::uint64_t>(r.calls);
        measured.time_s = r.time_s;
        measured.bytes_sent = static_cast<std::uint64_t>(r.bytes);
        l.split = record::split_time(measured, it->second);
        l.sync_critical = l.split->sync_s > 0.5 * r.time_s && l.share_of_mpi >= 1;
      }
    }
    l.critical = mark && l.share_of_mpi >= o.critical_routine_share;
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const routine_line& a, const routine_line& b) {
    return a.time_s != b.time_s ? a.time_s > b.time_s : a.name < b.name;
  });
  return out;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The figures users are compared on (the counter profiling paper's survey asked for
// reference values).
struct user_figures {
  double mpi_percent, mb_per_s, calls_per_cpu_s, us_per_call;
  std::optional<double> instructions_per_s;
};

user_figures figures_of(const job_totals& t) {
  user_figures f{};
  f.mpi_percent = percent(t.mpi_time_s, t.cpu_time_s);
  f.mb_per_s = t.mpi_time_s > 0 ? static_cast<double>(t.mpi_bytes) / t.mpi_time_s / 1e6 : 0.0;
  f.calls_per_cpu_s = t.cpu_time_s > 0 ? static_cast<double>(t.mpi_calls) / t.cpu_time_s : 0.0;
  f.us_per_call = t.mpi_calls > 0 ? 1e6 * t.mpi_time_s / static_cast<double>(t.mpi_calls) : 0.0;
  if (t.instructions_cpu_time_s > 0)
    f.instructions_per_s = t.instructions / t.instructions_cpu_time_s;
  return f;
}

reference_value compare(std::string name, std::string unit, double mine,
                        const std::vector<double>& site, bool higher_is_worse) {
  reference_value r;
  r.name = std::move(name);
  r.unit = std::move(unit);
  r.value = mine;
  r.higher_is_worse = higher_is_worse;
  if (!site.empty()) {
    r.site_min = *std::min_element(site.begin(), site.end());
    r.site_max = *std::max_element(site.begin(), site.end());
    r.site_median = median(site);
    r.of = static_cast<int>(site.size());
    r.rank = 1 + static_cast<int>(
                     std::count_if(site.begin(), site.end(), [&](double v) { return v > mine; }));
  }
  return r;
}

} // namespace

std::int64_t size_class_order(std::int64_t ranks) {
  return std::max<std::int64_t>(ranks, 1);
}

std::string size_class_label(std::int64_t ranks) {
  if (ranks <= 1)
    return "1";
  if ((ranks & (ranks - 1)) == 0)
    return std::to_string(ranks);
  std::int64_t below = 1;
  while (below * 2 < ranks)
    below *= 2;
  if (below + 1 == below * 2 - 1)
    return std::to_string(below + 1); // 3: the only size between 2 and 4
  return std::to_string(below + 1) + "-" + std::to_string(below * 2 - 1);
}

report build_report(store& db, const report_options& o) {
  report out;
  out.options = o;
  const bool only_one = o.user.has_value();
  const bool site_only = !o.user_parts && !only_one && o.site_part;
  std::map<std::string, job_totals> by_owner;
  std::map<std::string, std::array<std::int64_t, 3>> languages_of_owner; // C, Fortran, other
  std::map<std::string, std::int64_t> critical_of_owner;
  job_totals all;
  // Per owner, language, size and CPU-time class; for the site part alone, per language, size
  // class and CPU-time class (owner left empty), with the owners' sums apart: over whole days
  // both come from small day tables (day_shapes, day_owners) instead of day_classes.
  std::vector<job_class_row> classes;
  if (site_only) {
    by_owner = owner_totals(db, o.when);
    for (const auto& [owner, t] : by_owner)
      add_totals(all, t);
    classes = job_shapes(db, o.when);
  } else {
    classes = job_classes(db, o.when, o.critical_mpi_percent, std::nullopt);
    for (const job_class_row& c : classes) {
      add_totals(by_owner[c.owner], c.totals);
      add_totals(all, c.totals);
      auto& l = languages_of_owner[c.owner];
      l[is_c(c.language) ? 0 : is_fortran(c.language) ? 1 : 2] += c.totals.jobs;
      critical_of_owner[c.owner] += c.critical_jobs;
    }
  }
  const double available =
      o.machine_cores ? *o.machine_cores * static_cast<double>(o.when.to - o.when.from) : 0.0;

  // Every user's figures, for the reference values.
  std::vector<double> site_mpi, site_mb, site_calls, site_us, site_ips;
  for (const auto& [owner, t] : by_owner) {
    const user_figures f = figures_of(t);
    site_mpi.push_back(f.mpi_percent);
    site_mb.push_back(f.mb_per_s);
    site_calls.push_back(f.calls_per_cpu_s);
    site_us.push_back(f.us_per_call);
    if (f.instructions_per_s)
      site_ips.push_back(*f.instructions_per_s);
  }

  std::vector<owner_routine_row> owner_routines = routine_sums(db, o.when, o.user, !site_only);
  std::map<std::string, std::vector<owner_routine_row>> routines_of_owner;
  std::map<std::string, owner_routine_row> site_routines;
  for (owner_routine_row& r : owner_routines) {
    owner_routine_row& s = site_routines[r.routine];
    s.routine = r.routine;
    s.jobs += r.jobs;
    s.calls += r.calls;
    s.bytes += r.bytes;
    s.count_sum += r.count_sum;
    s.time_s += r.time_s;
    routines_of_owner[r.owner].push_back(std::move(r));
  }

  for (const auto& [owner, t] : by_owner) {
    if ((only_one && owner != *o.user) || site_only)
      continue;
    user_report u;
    u.owner = owner;
    u.totals = t;
    const auto& l = languages_of_owner[owner];
    u.c_jobs = l[0];
    u.fortran_jobs = l[1];
    u.other_language_jobs = l[2];
    u.critical_jobs = critical_of_owner[owner];
    if (available > 0)
      u.machine_share_percent = percent(t.cpu_time_s, available);
    u.analysed_share_percent = percent(t.cpu_time_s, all.cpu_time_s);
    u.mpi_percent = percent(t.mpi_time_s, t.cpu_time_s);
    u.mpi_critical = u.mpi_percent > o.critical_mpi_percent;
    const auto& rows = routines_of_owner[owner];
    u.routines = routine_lines(rows, t, o, u.mpi_critical);
    u.routines_used = static_cast<int>(
        std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.calls > 0; }));
    const user_figures f = figures_of(t);
    u.references.push_back(compare("MPI time / CPU time", "%", f.mpi_percent, site_mpi, true));
    u.references.back().critical = u.mpi_critical;
    u.references.push_back(
        compare("MPI transfer rate (bytes / MPI time)", "MB/s", f.mb_per_s, site_mb, false));
    u.references.push_back(
        compare("MPI calls per CPU second", "1/s", f.calls_per_cpu_s, site_calls, false));
    u.references.push_back(compare("time per MPI call", "us", f.us_per_call, site_us, true));
    if (f.instructions_per_s)
      u.references.push_back(compare("instructions per second outside MPI", "1/s",
                                     *f.instructions_per_s, site_ips, false));
    job_filter critical;
    critical.when = o.when;
    critical.owner = owner;
    critical.min_mpi_percent = o.critical_mpi_percent;
    critical.order = job_order::latest; // no sort: read backwards through (owner, end_time)
    critical.limit = o.critical_job_limit;
    if (u.critical_jobs > 0)
      u.critical_job_list = jobs(db, critical);
    u.regression_count = count_regressions(db, o.when, owner);
    if (u.regression_count > 0) {
      u.regressions = regressions_in(db, o.when, owner, o.critical_job_limit);
      for (regression_row& g : u.regressions)
        g.sites = moved_call_sites(db, g);
    }
    out.users.push_back(std::move(u));
  }

  if (only_one || !o.site_part)
    return out;

  site_report s;
  s.totals = all;
  s.users = static_cast<int>(by_owner.size());
  if (available > 0)
    s.machine_share_percent = percent(all.cpu_time_s, available);
  std::vector<owner_routine_row> routine_rows;
  routine_rows.reserve(site_routines.size());
  for (auto& [name, r] : site_routines)
    routine_rows.push_back(r);
  s.routines = routine_lines(routine_rows, all, o, false);
  s.routines_used = static_cast<int>(std::count_if(routine_rows.begin(), routine_rows.end(),
                                                   [](const auto& r) { return r.calls > 0; }));
  for (const routine_line& l : s.routines) {
    const auto g = group_of(l.name);
    const bool p2p = g && is_point_to_point(*g);
    const bool coll = g && *g == routine_group::collective;
    if (p2p)
      s.p2p_time_s += l.time_s;
    if (coll)
      s.collective_time_s += l.time_s;
    if (l.split) {
      for (auto* target :
           {&s.split, p2p ? &s.p2p_split : nullptr, coll ? &s.collective_split : nullptr}) {
        if (target == nullptr)
          continue;
        if (!*target)
          target->emplace();
        (*target)->latency_s += l.split->latency_s;
        (*target)->transfer_s += l.split->transfer_s;
        (*target)->sync_s += l.split->sync_s;
      }
    }
  }

  // Top users: which share of the CPU time the top N consumed.
  std::vector<std::pair<std::string, job_totals>> users(by_owner.begin(), by_owner.end());
  std::sort(users.begin(), users.end(), [](const auto& a, const auto& b) {
    return a.second.cpu_time_s != b.second.cpu_time_s ? a.second.cpu_time_s > b.second.cpu_time_s
                                                      : a.first < b.first;
  });
  double running = 0;
  bool said95 = false;
  for (size_t i = 0; i < users.size(); ++i) {
    running += users[i].second.cpu_time_s;
    const double share = percent(running, all.cpu_time_s);
    if (!said95 && share >= 95) {
      s.top_users.emplace_back(static_cast<int>(i + 1), share);
      said95 = true;
    }
    if (share >= 99) {
      if (!s.top_users.empty() && s.top_users.back().first == static_cast<int>(i + 1))
        s.top_users.back().second = share;
      else
        s.top_users.emplace_back(static_cast<int>(i + 1), share);
      break;
    }
  }
  for (const auto& [owner, t] : users) {
    breakdown_line b;
    b.label = owner;
    b.jobs = t.jobs;
    b.cpu_time_s = t.cpu_time_s;
    b.mpi_time_s = t.mpi_time_s;
    b.cpu_percent =
        available > 0 ? percent(t.cpu_time_s, available) : percent(t.cpu_time_s, all.cpu_time_s);
    b.jobs_percent = percent(static_cast<double>(t.jobs), static_cast<double>(all.jobs));
    b.mpi_percent = percent(t.mpi_time_s, t.cpu_time_s);
    s.by_user.push_back(b);
  }

  // Languages, sizes, CPU-time classes and routine groups from the same grouped rows.
  std::map<std::string, job_totals> lang;
  std::map<std::int64_t, std::pair<std::string, job_totals>> sizes;
  std::map<int, std::array<job_totals, 3>> cpu_classes; // all, C, Fortran
  std::vector<double> group_jobs(routine_group_count, 0), group_cpu(routine_group_count, 0);
  for (const job_class_row& c : classes) {
    const std::string language = is_c(c.language)         ? "C/C++"
                                 : is_fortran(c.language) ? "Fortran"
                                                          : c.language;
    add_totals(lang[language], c.totals);
    std::int64_t bucket = 1;
    while (bucket < c.ranks)
      bucket *= 2;
    const std::int64_t key = bucket == c.ranks ? 2 * bucket : 2 * bucket - 1; // p2 after range
    auto& size = sizes[key];
    size.first = size_class_label(c.ranks);
    add_totals(size.second, c.totals);
    auto& cls = cpu_classes[c.cpu_class];
    add_totals(cls[0], c.totals);
    if (is_c(c.language))
      add_totals(cls[1], c.totals);
    else if (is_fortran(c.language))
      add_totals(cls[2], c.totals);
    for (int g = 0; g < routine_group_count; ++g) {
      group_jobs[static_cast<size_t>(g)] +=
          static_cast<double>(c.group_jobs[static_cast<size_t>(g)]);
      group_cpu[static_cast<size_t>(g)] += c.group_cpu_time_s[static_cast<size_t>(g)];
    }
  }
  const auto line = [&](std::string label, const job_totals& t) {
    breakdown_line b;
    b.label = std::move(label);
    b.jobs = t.jobs;
    b.cpu_time_s = t.cpu_time_s;
    b.mpi_time_s = t.mpi_time_s;
    b.cpu_percent = percent(t.cpu_time_s, all.cpu_time_s);
    b.jobs_percent = percent(static_cast<double>(t.jobs), static_cast<double>(all.jobs));
    b.mpi_percent = percent(t.mpi_time_s, t.cpu_time_s);
    return b;
  };
  for (const auto& [name, t] : lang) {
    language_summary l;
    l.language = name;
    l.totals = t;
    l.cpu_percent = percent(t.cpu_time_s, all.cpu_time_s);
    l.jobs_percent = percent(static_cast<double>(t.jobs), static_cast<double>(all.jobs));
    s.languages.push_back(l);
  }
  for (const auto& [key, size] : sizes)
    s.by_size.push_back(line(size.first, size.second));
  for (const auto& [cls, t] : cpu_classes) {
    const std::string label =
        cls == 0 ? "< 10 s" : "1e" + std::to_string(cls) + " - 1e" + std::to_string(cls + 1) + " s";
    s.by_cpu_class.push_back(line(label, t[0]));
    s.by_cpu_class_c.push_back(line(label, t[1]));
    s.by_cpu_class_fortran.push_back(line(label, t[2]));
  }
  for (int g = 0; g < routine_group_count; ++g) {
    group_line gl;
    gl.name = std::string(routines::name_of(static_cast<routine_group>(g)));
    gl.jobs_percent = percent(group_jobs[static_cast<size_t>(g)], static_cast<double>(all.jobs));
    gl.cpu_weighted_percent = percent(group_cpu[static_cast<size_t>(g)], all.cpu_time_s);
    s.groups.push_back(gl);
  }
  job_filter critical;
  critical.when = o.when;
  critical.min_mpi_percent = o.critical_mpi_percent;
  // The site's critical jobs by what they lost (MPI core-hours), not newest first: a period's
  // newest are mostly short test runs of a few seconds.
  critical.order = job_order::mpi_time_desc;
  critical.limit = o.critical_job_limit;
  if (site_only) {
    s.critical_job_count = count_critical(db, o.when, o.critical_mpi_percent);
  } else {
    for (const auto& [owner, n] : critical_of_owner)
      s.critical_job_count += n;
  }
  s.critical_jobs = jobs(db, critical);
  s.regression_count = count_regressions(db, o.when, std::nullopt);
  if (s.regression_count > 0)
    s.regressions = regressions_in(db, o.when, std::nullopt, o.critical_job_limit);
  out.site = std::move(s);
  return out;
}

} // namespace strata::site
