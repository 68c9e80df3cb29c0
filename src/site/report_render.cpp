// Text, HTML and JSON renderings of a site report. Strings from jobs (owners, executables,
// record ids) are escaped for the format: control characters in text, markup in HTML.
#include "common/markup.hpp"
#include "site/report.hpp"

#include "profiler/record/render.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::site {

namespace {

std::string safe_text(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

// The counter profiling paper's compact number style for wide tables: 3 significant digits.
std::string num(double v) {
  if (v == 0)
    return "0";
  const double a = std::abs(v);
  if (a >= 1e6 || a < 1e-2)
    return fmt::format("{:.3g}", v);
  if (a >= 100)
    return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

std::string hours(double s) {
  return fmt::format("{:.3g} s = {:.2f} h", s, s / 3600);
}

std::string date_range(const report_options& o) {
  return format_utc_time(o.when.from) + " .. " + format_utc_time(o.when.to);
}

struct table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> marked;
};

std::string text_table(const table& t) {
  std::vector<size_t> width(t.head.size(), 0);
  for (size_t i = 0; i < t.head.size(); ++i)
    width[i] = t.head[i].size();
  for (const auto& r : t.rows)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool mark) {
    out += mark ? "* " : "  ";
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i == 0)
        out += fmt::format("{:<{}}", cells[i], width[i]);
      else
        out += fmt::format(" {:>{}}", cells[i], width[i]);
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    out += '\n';
  };
  line(t.head, false);
  for (size_t r = 0; r < t.rows.size(); ++r)
    line(t.rows[r], r < t.marked.size() && t.marked[r]);
  return out;
}

std::string html_table(const table& t) {
  std::string out = "<table>\n<tr>";
  for (const auto& h : t.head)
    out += "<th>" + escape_markup(h) + "</th>";
  out += "</tr>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const bool mark = r < t.marked.size() && t.marked[r];
    out += mark ? "<tr class=\"critical\">" : "<tr>";
    for (size_t i = 0; i < t.rows[r].size(); ++i) {
      const std::string cell = escape_markup(t.rows[r][i]);
      out +=
          (i == 0 ? "<td class=\"l\">" : "<td>") + (mark ? "<b>" + cell + "</b>" : cell) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

table routine_table(const std::vector<routine_line>& routines, bool with_model) {
  table t;
  t.head = {"MPI routine",    "calls",     "calls/PE", "time [s]",
            "time/call [us]", "COUNT sum", "bytes",    "bytes/call"};
  if (with_model) {
    t.head.push_back("latency [s]");
    t.head.push_back("transfer [s]");
    t.head.push_back("sync [s]");
  }
  for (const routine_line& r : routines) {
    std::vector<std::string> row = {safe_text(r.name),
                                    num(static_cast<double>(r.calls)),
                                    num(r.calls_per_pe),
                                    num(r.time_s),
                                    num(r.time_per_call_us),
                                    num(static_cast<double>(r.count_sum)),
                                    num(static_cast<double>(r.bytes)),
                                    num(r.bytes_per_call)};
    if (with_model) {
      if (r.split) {
        row.push_back(num(r.split->latency_s));
        row.push_back(num(r.split->transfer_s));
        row.push_back(num(r.split->sync_s) + (r.sync_critical ? " !" : ""));
      } else {
        row.insert(row.end(), {"-", "-", "-"});
      }
    }
    t.rows.push_back(std::move(row));
    t.marked.push_back(r.critical);
  }
  return t;
}

table reference_table(const std::vector<reference_value>& refs) {
  table t;
  t.head = {"reference value", "yours", "site min", "median", "max", "rank"};
  for (const reference_value& r : refs) {
    t.rows.push_back({r.name + " [" + r.unit + "]", num(r.value), num(r.site_min),
                      num(r.site_median), num(r.site_max), fmt::format("{} of {}", r.rank, r.of)});
    t.marked.push_back(r.critical);
  }
  return t;
}

table jobs_table(const std::vector<job_row>& jobs, bool with_owner) {
  table t;
  t.head = {"job", "end (UTC)", "PEs", "CPU time [s]", "MPI %", "executable"};
  if (with_owner)
    t.head.insert(t.head.begin() + 1, "user");
  for (const job_row& j : jobs) {
    std::vector<std::string> row = {
        safe_text(j.record_id), format_utc_time(j.end_time),          std::to_string(j.ranks),
        num(j.cpu_time_s),      fmt::format("{:.1f}", j.mpi_percent), safe_text(j.executable)};
    if (with_owner)
      row.insert(row.begin() + 1, safe_text(j.owner));
    t.rows.push_back(std::move(row));
    t.marked.push_back(true);
  }
  return t;
}

// "MPI_Allreduce +2.01 s, MPI_Wait +0.3 s": the largest moves per rank first.
std::string moved_text(const regression_row& g) {
  std::string out;
  for (const moved_routine& m : g.flag.moved)
    out += (out.empty() ? "" : ", ") + m.routine + " +" + num(m.value_s - m.baseline_s) + " s";
  for (const moved_site& c : g.sites)
    out += (out.empty() ? "" : ", ") + c.function + " at " + c.file + ":" + std::to_string(c.line) +
           " +" + num(c.value_s - c.baseline_s) + " s";
  return out;
}

table regressions_table(const std::vector<regression_row>& rows, bool with_owner) {
  table t;
  t.head = {"job",       "end (UTC)", "PEs",
            "program",   "slower",    "time/rank [s]",
            "usual [s]", "runs",      "moved most (per rank)"};
  if (with_owner)
    t.head.insert(t.head.begin() + 1, "user");
  for (const regression_row& g : rows) {
    const double more =
        g.flag.baseline_s > 0 ? 100 * (g.flag.value_s / g.flag.baseline_s - 1) : 0.0;
    std::string program = g.prog.executable;
    if (!g.prog.arguments.empty())
      program += " " + g.prog.arguments;
    std::vector<std::string> row = {safe_text(g.record_id),
                                    format_utc_time(g.end_time),
                                    std::to_string(g.ranks),
                                    safe_text(program),
                                    fmt::format("{} +{:.0f} %", safe_text(g.flag.metric), more),
                                    num(g.flag.value_s),
                                    num(g.flag.baseline_s),
                                    std::to_string(g.flag.history_runs),
                                    safe_text(moved_text(g))};
    if (with_owner)
      row.insert(row.begin() + 1, safe_text(g.prog.owner));
    t.rows.push_back(std::move(row));
    t.marked.push_back(true);
  }
  return t;
}

const char* const regressions_intro =
    "slower than the same program's earlier runs at the same size, beyond their noise";

table breakdown_table(const std::string& what, const std::vector<breakdown_line>& lines,
                      const std::string& cpu_head = "CPU time %") {
  table t;
  t.head = {what, "jobs", "jobs %", "CPU time [h]", cpu_head, "MPI time [h]", "MPI %"};
  for (const breakdown_line& b : lines)
    t.rows.push_back(
        {safe_text(b.label), std::to_string(b.jobs), fmt::format("{:.1f}", b.jobs_percent),
         fmt::format("{:.2f}", b.cpu_time_s / 3600), fmt::format("{:.2f}", b.cpu_percent),
         fmt::format("{:.2f}", b.mpi_time_s / 3600), fmt::format("{:.1f}", b.mpi_percent)});
  return t;
}

// The key figures of Fig. 4 as label/value lines; `mark` flags the critical ones.
std::vector<std::tuple<std::string, std::string, bool>> user_lines(const user_report& u,
                                                                   const report_options& o) {
  const job_totals& t = u.totals;
  std::vector<std::tuple<std::string, std::string, bool>> out;
  out.emplace_back("analysed jobs", std::to_string(t.jobs), false);
  out.emplace_back("sum of used PEs", std::to_string(t.pes), false);
  out.emplace_back(
      "average PEs per job",
      fmt::format("{:.1f}",
                  t.jobs > 0 ? static_cast<double>(t.pes) / static_cast<double>(t.jobs) : 0.0),
      false);
  out.emplace_back("average PEs (weighted by CPU time)",
                   fmt::format("{:.1f}", t.cpu_time_s > 0 ? t.pe_weighted / t.cpu_time_s : 0.0),
                   false);
  out.emplace_back("MPI routines used", std::to_string(u.routines_used), false);
  out.emplace_back("application CPU time", hours(t.cpu_time_s), false);
  if (u.machine_share_percent)
    out.emplace_back("share of the machine", fmt::format("{:.3f} %", *u.machine_share_percent),
                     false);
  out.emplace_back("share of all analysed CPU time",
                   fmt::format("{:.3f} %", u.analysed_share_percent), false);
  out.emplace_back("MPI time", hours(t.mpi_time_s), false);
  out.emplace_back(
      "MPI time / CPU time",
      fmt::format("{:.1f} %{}", u.mpi_percent,
                  u.mpi_critical ? fmt::format("  (above {:g} %: critical)", o.critical_mpi_percent)
                                 : ""),
      u.mpi_critical);
  out.emplace_back("profiler overhead",
                   fmt::format("{:.3g} s = {:.3g} of CPU time", t.overhead_s,
                               t.cpu_time_s > 0 ? t.overhead_s / t.cpu_time_s : 0.0),
                   false);
  std::string langs = fmt::format("C/C++: {} jobs, Fortran: {} jobs", u.c_jobs, u.fortran_jobs);
  if (u.other_language_jobs > 0)
    langs += fmt::format(", other: {} jobs", u.other_language_jobs);
  out.emplace_back("MPI language binding", langs, false);
  out.emplace_back("critical jobs (MPI % above threshold)", std::to_string(u.critical_jobs),
                   u.critical_jobs > 0);
  return out;
}

std::vector<std::tuple<std::string, std::string, bool>> site_lines(const site_report& s,
                                                                   const report_options& o) {
  const job_totals& t = s.totals;
  std::vector<std::tuple<std::string, std::string, bool>> out;
  out.emplace_back("interval",
                   fmt::format("{:.1f} days", static_cast<double>(o.when.to - o.when.from) / 86400),
                   false);
  if (s.machine_share_percent)
    out.emplace_back(
        "analysed CPU time",
        fmt::format("{:.3g} s = {:.1f} % of the machine", t.cpu_time_s, *s.machine_share_percent),
        false);
  else
    out.emplace_back("analysed CPU time", hours(t.cpu_time_s), false);
  const auto of = [&](double v) {
    return fmt::format("{:.3g} s = {:.1f} % of analysed", v,
                       t.cpu_time_s > 0 ? 100 * v / t.cpu_time_s : 0.0);
  };
  out.emplace_back("MPI time", of(t.mpi_time_s), false);
  if (s.split) {
    out.emplace_back("- latency portion", of(s.split->latency_s), false);
    out.emplace_back("- transfer time", of(s.split->transfer_s), false);
    out.emplace_back("- waiting / sync / idle", of(s.split->sync_s), false);
  }
  out.emplace_back("- point to point", of(s.p2p_time_s), false);
  out.emplace_back("- collective", of(s.collective_time_s), false);
  out.emplace_back("analysed jobs", std::to_string(t.jobs), false);
  out.emplace_back(
      "PEs per job",
      fmt::format("{:.1f}",
                  t.jobs > 0 ? static_cast<double>(t.pes) / static_cast<double>(t.jobs) : 0.0),
      false);
  out.emplace_back("PEs average (weighted by analysed time)",
                   fmt::format("{:.1f}", t.cpu_time_s > 0 ? t.pe_weighted / t.cpu_time_s : 0.0),
                   false);
  out.emplace_back("used MPI routines", std::to_string(s.routines_used), false);
  out.emplace_back("number of users", std::to_string(s.users), false);
  for (const auto& [n, share] : s.top_users)
    out.emplace_back(fmt::format("CPU time of the top {} users", n), fmt::format("{:.1f} %", share),
                     false);
  for (const language_summary& l : s.languages)
    out.emplace_back(safe_text(l.language) + " jobs",
                     fmt::format("{} = {:.1f} % of jobs, {:.1f} % of time, {:.1f} PEs per job",
                                 l.totals.jobs, l.jobs_percent, l.cpu_percent,
                                 l.totals.jobs > 0 ? static_cast<double>(l.totals.pes) /
                                                         static_cast<double>(l.totals.jobs)
                                                   : 0.0),
                     false);
  out.emplace_back(
      "critical jobs",
      fmt::format("{} (MPI above {:g} %)", s.critical_job_count, o.critical_mpi_percent),
      s.critical_job_count > 0);
  return out;
}

std::string text_lines(const std::vector<std::tuple<std::string, std::string, bool>>& lines) {
  size_t width = 0;
  for (const auto& [label, value, mark] : lines)
    width = std::max(width, label.size());
  std::string out;
  for (const auto& [label, value, mark] : lines)
    out += fmt::format("{}{:<{}}  {}\n", mark ? "* " : "  ", label + ":", width + 1, value);
  return out;
}

std::string html_lines(const std::vector<std::tuple<std::string, std::string, bool>>& lines) {
  std::string out = "<table class=\"summary\">\n";
  for (const auto& [label, value, mark] : lines)
    out += fmt::format("<tr{}><td class=\"l\">{}</td><td>{}</td></tr>\n",
                       mark ? " class=\"critical\"" : "", escape_markup(label),
                       mark ? "<b>" + escape_markup(value) + "</b>" : escape_markup(value));
  return out + "</table>\n";
}

bool any_split(const std::vector<routine_line>& r) {
  return std::any_of(r.begin(), r.end(), [](const routine_line& l) { return l.split.has_value(); });
}

table group_table(const std::vector<group_line>& groups) {
  table t;
  t.head = {"MPI routines' group", "% of all jobs", "% weighted by CPU time"};
  for (const group_line& g : groups)
    t.rows.push_back({g.name, fmt::format("{:.3f} %", g.jobs_percent),
                      fmt::format("{:.3f} %", g.cpu_weighted_percent)});
  return t;
}

} // namespace

std::string user_text(const user_report& u, const report_options& o) {
  std::string out = fmt::format("MPI usage of {} ({}: {})\n\n", safe_text(u.owner), o.period_label,
                                date_range(o));
  out += text_lines(user_lines(u, o));
  out += "\n" + text_table(routine_table(u.routines, o.model.has_value()));
  out +=
      "\nWhere you stand among this period's users:\n" + text_table(reference_table(u.references));
  if (!u.critical_job_list.empty())
    out += fmt::format("\nCritical jobs (latest {} of {}):\n", u.critical_job_list.size(),
                       u.critical_jobs) +
           text_table(jobs_table(u.critical_job_list, false));
  if (!u.regressions.empty())
    out += fmt::format("\nRegressions ({}; latest {} of {}):\n", regressions_intro,
                       u.regressions.size(), u.regression_count) +
           text_table(regressions_table(u.regressions, false));
  out += "\nLines marked * are critical: MPI time above the threshold, and the routines that take "
         "most of it.\n";
  return out;
}

std::string user_html(const user_report& u, const report_options& o) {
  std::string out = fmt::format("<h2>MPI usage of {}</h2>\n<p>{}: {}</p>\n", escape_markup(u.owner),
                                escape_markup(o.period_label), escape_markup(date_range(o)));
  out += html_lines(user_lines(u, o));
  out += "<h3>MPI routines</h3>\n" + html_table(routine_table(u.routines, o.model.has_value()));
  out += "<h3>Where you stand among this period's users</h3>\n" +
         html_table(reference_table(u.references));
  if (!u.critical_job_list.empty())
    out += fmt::format("<h3>Critical jobs (latest {} of {})</h3>\n", u.critical_job_list.size(),
                       u.critical_jobs) +
           html_table(jobs_table(u.critical_job_list, false));
  if (!u.regressions.empty())
    out += fmt::format("<h3>Regressions (latest {} of {})</h3>\n<p>{}</p>\n", u.regressions.size(),
                       u.regression_count, escape_markup(regressions_intro)) +
           html_table(regressions_table(u.regressions, false));
  out += "<p>Rows in bold are critical: MPI time above the threshold, and the routines that take "
         "most of it.</p>\n";
  return out;
}

std::string html_page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape_markup(title) +
         "</title>\n<style>body{font-family:sans-serif}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l{text-align:left}"
         "tr.critical{background:#fde2e2}</style></head><body>\n" +
         body + "</body></html>\n";
}

std::string render_text(const report& r) {
  const report_options& o = r.options;
  std::string out;
  if (r.site) {
    const site_report& s = *r.site;
    out += fmt::format("Strata site report ({}: {})\n\n", o.period_label, date_range(o));
    out += text_lines(site_lines(s, o));
    out += "\nMPI application time by CPU time per job (Figs. 6, 7):\n" +
           text_table(breakdown_table("CPU time per job", s.by_cpu_class));
    out +=
        "\n  of which C/C++:\n" + text_table(breakdown_table("CPU time per job", s.by_cpu_class_c));
    out += "\n  of which Fortran:\n" +
           text_table(breakdown_table("CPU time per job", s.by_cpu_class_fortran));
    out += "\nUsage of partition sizes (Fig. 8):\n" + text_table(breakdown_table("PEs", s.by_size));
    out += "\nUsers' profiles (Fig. 9):\n" +
           text_table(breakdown_table("user", s.by_user,
                                      s.machine_share_percent ? "% of machine" : "CPU time %"));
    out += "\nMPI routines' profiles (Fig. 10):\n" +
           text_table(routine_table(s.routines, any_split(s.routines)));
    out += "\nUsage of the MPI routines' groups (Fig. 11):\n" + text_table(group_table(s.groups));
    out +=
        fmt::format("\nCritical jobs (MPI above {:g} %, the {} of {} with most MPI core-hours):\n",
                    o.critical_mpi_percent, s.critical_jobs.size(), s.critical_job_count);
    out += text_table(jobs_table(s.critical_jobs, true));
    out += fmt::format("\nRegressions ({}; latest {} of {}):\n", regressions_intro,
                       s.regressions.size(), s.regression_count);
    out += text_table(regressions_table(s.regressions, true));
  }
  for (const user_report& u : r.users)
    out += (out.empty() ? "" : "\n\n") + user_text(u, o);
  if (out.empty())
    out = fmt::format("No jobs in {} ({}).\n", o.period_label, date_range(o));
  return out;
}

std::string render_html(const report& r) {
  const report_options& o = r.options;
  std::string body;
  if (r.site) {
    const site_report& s = *r.site;
    body += fmt::format("<h1>Strata site report</h1>\n<p>{}: {}</p>\n",
                        escape_markup(o.period_label), escape_markup(date_range(o)));
    body += html_lines(site_lines(s, o));
    body += "<h2>MPI application time by CPU time per job (Figs. 6, 7)</h2>\n" +
            html_table(breakdown_table("CPU time per job", s.by_cpu_class));
    body += "<h3>C/C++</h3>\n" + html_table(breakdown_table("CPU time per job", s.by_cpu_class_c));
    body += "<h3>Fortran</h3>\n" +
            html_table(breakdown_table("CPU time per job", s.by_cpu_class_fortran));
    body += "<h2>Usage of partition sizes (Fig. 8)</h2>\n" +
            html_table(breakdown_table("PEs", s.by_size));
    body += "<h2>Users' profiles (Fig. 9)</h2>\n" +
            html_table(breakdown_table("user", s.by_user,
                                       s.machine_share_percent ? "% of machine" : "CPU time %"));
    body += "<h2>MPI routines' profiles (Fig. 10)</h2>\n" +
            html_table(routine_table(s.routines, any_split(s.routines)));
    body += "<h2>Usage of the MPI routines' groups (Fig. 11)</h2>\n" +
            html_table(group_table(s.groups));
    body += fmt::format(
        "<h2>Critical jobs (MPI above {:g} %, the {} of {} with most MPI core-hours)</h2>\n",
        o.critical_mpi_percent, s.critical_jobs.size(), s.critical_job_count);
    body += html_table(jobs_table(s.critical_jobs, true));
    body += fmt::format("<h2>Regressions (latest {} of {})</h2>\n<p>{}</p>\n", s.regressions.size(),
                        s.regression_count, escape_markup(regressions_intro));
    body += html_table(regressions_table(s.regressions, true));
  }
  for (const user_report& u : r.users)
    body += user_html(u, o);
  if (body.empty())
    body = "<p>" +
           escape_markup(fmt::format("No jobs in {} ({}).", o.period_label, date_range(o))) +
           "</p>\n";
  return html_page("Strata report: " + o.period_label, body);
}

nlohmann::json totals_json(const job_totals& t) {
  return {{"jobs", t.jobs},
          {"pes", t.pes},
          {"cpu_time_s", t.cpu_time_s},
          {"mpi_time_s", t.mpi_time_s},
          {"mpi_percent", t.cpu_time_s > 0 ? 100 * t.mpi_time_s / t.cpu_time_s : 0.0},
          {"overhead_s", t.overhead_s},
          {"pe_average_weighted", t.cpu_time_s > 0 ? t.pe_weighted / t.cpu_time_s : 0.0},
          {"mpi_calls", t.mpi_calls},
          {"mpi_bytes", t.mpi_bytes}};
}

namespace {
nlohmann::json routines_json(const std::vector<routine_line>& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (const routine_line& l : lines) {
    nlohmann::json j = {{"routine", l.name},
                        {"jobs", l.jobs},
                        {"calls", l.calls},
                        {"calls_per_pe", l.calls_per_pe},
                        {"time_s", l.time_s},
                        {"time_per_call_us", l.time_per_call_us},
                        {"count_sum", l.count_sum},
                        {"bytes", l.bytes},
                        {"bytes_per_call", l.bytes_per_call},
                        {"share_of_mpi_percent", l.share_of_mpi},
                        {"critical", l.critical}};
    if (l.split)
      j["estimate"] = {{"latency_s", l.split->latency_s},
                       {"transfer_s", l.split->transfer_s},
                       {"sync_s", l.split->sync_s}};
    out.push_back(std::move(j));
  }
  return out;
}
} // namespace

nlohmann::json regressions_json(const std::vector<regression_row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const regression_row& g : rows) {
    nlohmann::json moved = nlohmann::json::array(), sites = nlohmann::json::array();
    for (const moved_routine& m : g.flag.moved)
      moved.push_back(
          {{"routine", m.routine}, {"value_s", m.value_s}, {"baseline_s", m.baseline_s}});
    for (const moved_site& c : g.sites)
      sites.push_back({{"function", c.function},
                       {"file", c.file},
                       {"line", c.line},
                       {"value_s", c.value_s},
                       {"baseline_s", c.baseline_s}});
    out.push_back({{"job_id", g.job_id},
                   {"record_id", g.record_id},
                   {"owner", g.prog.owner},
                   {"executable", g.prog.executable},
                   {"arguments", g.prog.arguments},
                   {"end", format_utc_time(g.end_time)},
                   {"ranks", g.ranks},
                   {"metric", g.flag.metric},
                   {"value_s", g.flag.value_s},
                   {"baseline_s", g.flag.baseline_s},
                   {"noise_s", g.flag.noise_s},
                   {"history_runs", g.flag.history_runs},
                   {"moved", moved},
                   {"call_sites", sites}});
  }
  return out;
}
namespace {
nlohmann::json jobs_json(const std::vector<job_row>& jobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const job_row& j : jobs)
    out.push_back({{"job_id", j.job_id},
                   {"record_id", j.record_id},
                   {"owner", j.owner},
                   {"end", format_utc_time(j.end_time)},
                   {"ranks", j.ranks},
                   {"cpu_time_s", j.cpu_time_s},
                   {"mpi_percent", j.mpi_percent},
                   {"executable", j.executable}});
  return out;
}
} // namespace

nlohmann::json breakdown_json(const std::vector<breakdown_line>& lines) {
  nlohmann::json out = nlohmann::json::array();
  for (const breakdown_line& b : lines)
    out.push_back({{"label", b.label},
                   {"jobs", b.jobs},
                   {"cpu_time_s", b.cpu_time_s},
                   {"mpi_time_s", b.mpi_time_s},
                   {"cpu_percent", b.cpu_percent},
                   {"jobs_percent", b.jobs_percent},
                   {"mpi_percent", b.mpi_percent}});
  return out;
}

nlohmann::json site_report_json(const site_report& s) {
  nlohmann::json j = {{"totals", totals_json(s.totals)},
                      {"users", s.users},
                      {"routines_used", s.routines_used},
                      {"p2p_time_s", s.p2p_time_s},
                      {"collective_time_s", s.collective_time_s},
                      {"by_size", breakdown_json(s.by_size)},
                      {"by_cpu_class", breakdown_json(s.by_cpu_class)},
                      {"by_cpu_class_c", breakdown_json(s.by_cpu_class_c)},
                      {"by_cpu_class_fortran", breakdown_json(s.by_cpu_class_fortran)},
                      {"by_user", breakdown_json(s.by_user)},
                      {"routines", routines_json(s.routines)},
                      {"critical_job_count", s.critical_job_count},
                      {"critical_jobs", jobs_json(s.critical_jobs)},
                      {"regression_count", s.regression_count},
                      {"regressions", regressions_json(s.regressions)}};
  if (s.machine_share_percent)
    j["machine_share_percent"] = *s.machine_share_percent;
  if (s.split)
    j["estimate"] = {{"latency_s", s.split->latency_s},
                     {"transfer_s", s.split->transfer_s},
                     {"sync_s", s.split->sync_s}};
  j["languages"] = nlohmann::json::array();
  for (const language_summary& l : s.languages)
    j["languages"].push_back({{"language", l.language},
                              {"totals", totals_json(l.totals)},
                              {"cpu_percent", l.cpu_percent},
                              {"jobs_percent", l.jobs_percent}});
  j["groups"] = nlohmann::json::array();
  for (const group_line& g : s.groups)
    j["groups"].push_back({{"group", g.name},
                           {"jobs_percent", g.jobs_percent},
                           {"cpu_weighted_percent", g.cpu_weighted_percent}});
  j["top_users"] = nlohmann::json::array();
  for (const auto& [n, share] : s.top_users)
    j["top_users"].push_back({{"users", n}, {"cpu_percent", share}});
  return j;
}

std::string render_json(const report& r) {
  const report_options& o = r.options;
  nlohmann::json out = {{"schema", "strata.site-report/1"},
                        {"period",
                         {{"label", o.period_label},
                          {"from", format_utc_time(o.when.from)},
                          {"to", format_utc_time(o.when.to)}}},
                        {"critical_mpi_percent", o.critical_mpi_percent}};
  if (r.site)
    out["site"] = site_report_json(*r.site);
  out["users"] = nlohmann::json::array();
  for (const user_report& u : r.users) {
    nlohmann::json j = {{"user", u.owner},
                        {"totals", totals_json(u.totals)},
                        {"mpi_percent", u.mpi_percent},
                        {"mpi_critical", u.mpi_critical},
                        {"analysed_share_percent", u.analysed_share_percent},
                        {"c_jobs", u.c_jobs},
                        {"fortran_jobs", u.fortran_jobs},
                        {"critical_jobs", u.critical_jobs},
                        {"routines_used", u.routines_used},
                        {"routines", routines_json(u.routines)},
                        {"critical_job_list", jobs_json(u.critical_job_list)},
                        {"regression_count", u.regression_count},
                        {"regressions", regressions_json(u.regressions)}};
    if (u.machine_share_percent)
      j["machine_share_percent"] = *u.machine_share_percent;
    j["references"] = nlohmann::json::array();
    for (const reference_value& v : u.references)
      j["references"].push_back({{"name", v.name},
                                 {"unit", v.unit},
                                 {"value", v.value},
                                 {"site_min", v.site_min},
                                 {"site_median", v.site_median},
                                 {"site_max", v.site_max},
                                 {"rank", v.rank},
                                 {"of", v.of}});
    out["users"].push_back(std::move(j));
  }
  // Strings from jobs may hold any bytes; replace what is not UTF-8 rather than throw.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace strata::site
