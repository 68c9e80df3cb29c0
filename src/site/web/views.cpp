#include "site/web/views.hpp"
#include "common/markup.hpp"

#include "profiler/record/record.hpp"
#include "profiler/record/render.hpp"
#include "profiler/routine_classes.hpp"
#include "site/programs.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

namespace strata::web {

using nlohmann::json;

namespace {

constexpr int earlier_runs = 20; // of the program at the job's size, for routines new to it

json flag_json(const site::regression_flag& f) {
  json moved = json::array();
  for (const site::moved_routine& m : f.moved)
    moved.push_back({{"routine", m.routine}, {"value_s", m.value_s}, {"baseline_s", m.baseline_s}});
  return {{"metric", f.metric},   {"value_s", f.value_s},           {"baseline_s", f.baseline_s},
          {"noise_s", f.noise_s}, {"history_runs", f.history_runs}, {"moved", moved}};
}

// The program's previous complete run at the job's size, routine by routine (time per rank),
// or null when there is none.
json previous_run_json(site::store& db, const site::stored_job& sj) {
  const std::optional<site::program> prog = site::program_of(db, sj);
  if (!prog)
    return nullptr;
  // The earlier runs tell a routine new to the program from one the previous run skipped.
  const std::vector<site::program_run> before =
      site::history_of(db, prog->id, sj.job.ranks, sj.job.end_time, earlier_runs);
  if (before.empty())
    return nullptr;
  std::vector<std::int64_t> earlier_ids;
  earlier_ids.reserve(before.size());
  for (const site::program_run& r : before)
    earlier_ids.push_back(r.job_id);
  std::set<std::string> ran_earlier;
  for (const auto& [job, times] : site::routine_times(db, earlier_ids))
    for (const auto& [routine, t] : times)
      ran_earlier.insert(routine);
  const std::optional<site::stored_job> prev = db.job(before.front().job_id);
  if (!prev)
    return nullptr;
  const double ranks = static_cast<double>(std::max<std::int64_t>(sj.job.ranks, 1));
  std::map<std::string, std::pair<double, double>> by_routine; // this, previous
  std::set<std::string> in_previous;
  for (const site::routine_row& r : sj.routines)
    by_routine[r.routine].first = r.time_s / ranks;
  for (const site::routine_row& r : prev->routines) {
    by_routine[r.routine].second = r.time_s / ranks;
    in_previous.insert(r.routine);
  }
  json routines = json::array();
  for (const auto& [name, t] : by_routine)
    routines.push_back({{"name", name},
                        {"time_s", t.first},
                        {"previous_time_s", t.second},
                        {"in_previous", in_previous.count(name) != 0},
                        {"in_earlier_runs", ran_earlier.count(name) != 0}});
  std::sort(routines.begin(), routines.end(), [](const json& a, const json& b) {
    return a["time_s"].get<double>() + a["previous_time_s"].get<double>() >
           b["time_s"].get<double>() + b["previous_time_s"].get<double>();
  });
  return {{"job", job_json(prev->job)},
          {"wall_s", prev->job.wall_time_s},
          {"mpi_s", prev->job.mpi_time_s / ranks},
          {"this_wall_s", sj.job.wall_time_s},
          {"this_mpi_s", sj.job.mpi_time_s / ranks},
          {"routines", routines}};
}

} // namespace

json job_json(const site::job_row& j) {
  json o = json::object();
  site::visit_job_columns(j, [&](const site::job_column& c, const auto& member) {
    if (c.json_key == nullptr)
      return;
    if constexpr (std::is_same_v<std::decay_t<decltype(member)>, std::optional<double>>)
      o[c.json_key] = member ? json(*member) : json(nullptr);
    else
      o[c.json_key] = member;
  });
  return o;
}

json totals_json(const site::job_totals& t) {
  return {{"jobs", t.jobs},
          {"cpu_time_s", t.cpu_time_s},
          {"mpi_time_s", t.mpi_time_s},
          {"mpi_percent", t.cpu_time_s > 0 ? 100 * t.mpi_time_s / t.cpu_time_s : 0.0},
          {"mpi_calls", t.mpi_calls},
          {"mpi_bytes", t.mpi_bytes}};
}

json site_json(const site::report& r, int days) {
  json o = {{"days", days}, {"from", r.options.when.from}, {"to", r.options.when.to}};
  if (!r.site)
    return o;
  const site::site_report& s = *r.site;
  o["totals"] = totals_json(s.totals);
  o["users"] = s.users;
  o["routines_used"] = s.routines_used;
  o["by_size"] = site::breakdown_json(s.by_size);
  o["by_cpu_class"] = site::breakdown_json(s.by_cpu_class);
  o["by_cpu_class_c"] = site::breakdown_json(s.by_cpu_class_c);
  o["by_cpu_class_fortran"] = site::breakdown_json(s.by_cpu_class_fortran);
  o["by_user"] = site::breakdown_json(s.by_user);
  json langs = json::array();
  for (const auto& l : s.languages)
    langs.push_back({{"language", l.language},
                     {"totals", totals_json(l.totals)},
                     {"cpu_percent", l.cpu_percent},
                     {"jobs_percent", l.jobs_percent}});
  o["languages"] = langs;
  json routines = json::array();
  for (const auto& rl : s.routines) {
    json x = {{"name", rl.name},
              {"calls", rl.calls},
              {"time_s", rl.time_s},
              {"bytes", rl.bytes},
              {"share_of_mpi", rl.share_of_mpi}};
    if (rl.split)
      x["split"] = {{"latency_s", rl.split->latency_s},
                    {"transfer_s", rl.split->transfer_s},
                    {"sync_s", rl.split->sync_s}};
    routines.push_back(x);
  }
  o["routines"] = routines;
  json groups = json::array();
  for (const auto& g : s.groups)
    groups.push_back({{"name", g.name},
                      {"jobs_percent", g.jobs_percent},
                      {"cpu_weighted_percent", g.cpu_weighted_percent}});
  o["groups"] = groups;
  json critical = json::array();
  for (const auto& j : s.critical_jobs)
    critical.push_back(job_json(j));
  o["critical_jobs"] = critical;
  o["critical_job_count"] = s.critical_job_count;
  return o;
}

std::string job_report_html(const std::string& record_json) {
  const record::parse_result parsed = record::parse_record(record_json);
  if (!parsed.ok())
    return "<p class=\"error\">The stored record does not parse: " + escape_markup(parsed.error) +
           "</p>";
  std::string doc = record::render(*parsed.record, record::report_format::html);
  const std::size_t body = doc.find("<body>");
  const std::size_t end = doc.rfind("</body>");
  if (body == std::string::npos || end == std::string::npos || end < body)
    return doc;
  const std::size_t head_style = doc.find("<style>");
  const std::size_t head_style_end = doc.find("</style>");
  std::string style;
  if (head_style != std::string::npos && head_style_end != std::string::npos && head_style < body)
    style = doc.substr(head_style, head_style_end + 8 - head_style);
  // The report's style is for a document of its own: keep it off our page's body.
  for (std::size_t at = style.find("body{"); at != std::string::npos; at = style.find("body{", at))
    style.replace(at, 4, ".report");
  return style + doc.substr(body + 6, end - body - 6);
}

json job_detail_json(site::store& db, const site::stored_job& sj) {
  json o = {{"job", job_json(sj.job)}};
  json rec = json::parse(sj.record_json, nullptr, false);
  if (rec.is_discarded() || !rec.is_object())
    return o;
  const json& job = rec.value("job", json::object());
  o["argv"] = job.value("argv", json::array());
  // How the job ended. A process's exit code after MPI_Finalize is not in the record: the
  // record is written inside MPI_Finalize, before the program returns its code.
  o["ended"] = {{"status", job.value("status", json(sj.job.status))},
                {"abort_code", job.value("abort_code", json(nullptr))},
                {"signal", job.value("signal", json(nullptr))}};
  o["mpi_percent_by_rank"] = job.value("mpi_percent_by_rank", json::object());
  // Why the job hung (a record strata recover made of a hung job): its diagnosis for people.
  if (const auto hang = rec.find("hang"); hang != rec.end() && hang->is_object() &&
                                          hang->contains("text") && (*hang)["text"].is_string())
    o["hang"] = {{"verdict", hang->value("verdict", json(""))}, {"text", (*hang)["text"]}};
  json routines = json::array();
  if (rec.contains("routines") && rec["routines"].is_object())
    for (const auto& [name, r] : rec["routines"].items()) {
      if (!r.is_object())
        continue;
      json x = {{"name", name},
                {"calls", r.value("calls", json(0))},
                {"time_s", r.value("time_s", json(0))},
                {"size_histogram", r.value("size_histogram", json::array())}};
      if (r.contains("per_rank") && r["per_rank"].is_object())
        x["per_rank_time_s"] = r["per_rank"].value("time_s", json::object());
      // MPI_Init's and MPI_Finalize's time lies outside the wall time the job's figures use.
      x["outside_wall_time"] = profiler::excluded_from_mpi_time(name);
      routines.push_back(x);
    }
  o["routines"] = routines;
  if (const std::optional<site::regression_row> g = site::regression_of(db, sj.job.job_id))
    o["regression"] = flag_json(g->flag);
  if (const std::optional<site::program> prog = site::program_of(db, sj))
    o["program_id"] = prog->id;
  o["previous"] = previous_run_json(db, sj);
  return o;
}

void mark_flagged(site::store& db, json& jobs) {
  if (jobs.empty())
    return;
  std::vector<site::store::param> ids;
  std::string in;
  for (const json& j : jobs) {
    ids.emplace_back(j.value("id", std::int64_t{0}));
    in += (in.empty() ? "$" : ", $") + std::to_string(ids.size());
  }
  std::set<std::int64_t> flagged;
  db.query("SELECT job_id FROM regressions WHERE job_id IN (" + in + ")", ids,
           [&](const site::store::row& r) { flagged.insert(r.i64(0)); });
  for (json& j : jobs)
    j["flagged"] = flagged.count(j.value("id", std::int64_t{0})) != 0;
}

json models_json(site::store& db, const std::string& user) {
  site::model_options o;
  o.owner = user;
  json out = json::parse(site::render_models_json(site::build_models(db, o)));
  // Each program's flagged runs, so that the page draws those programs first.
  std::map<std::int64_t, std::int64_t> flagged;
  for (const site::regression_row& g : site::regressions_in(db, {0, INT64_MAX}, user, 100000))
    ++flagged[g.prog.id];
  for (json& p : out["programs"])
    p["flagged"] = flagged[p.value("program_id", std::int64_t{0})];
  return out;
}

std::optional<json> history_json(site::store& db, std::int64_t program_id, const std::string& user,
                                 std::size_t newest) {
  std::optional<site::program> prog;
  for (const site::program& p : site::find_programs(db, user, std::nullopt))
    if (p.id == program_id)
      prog = p;
  if (!prog)
    return std::nullopt;
  std::map<std::int64_t, bool> flagged;
  for (const site::regression_row& g : site::regressions_in(db, {0, INT64_MAX}, user, 100000))
    if (g.prog.id == program_id)
      flagged[g.job_id] = true;
  std::map<std::int64_t, json> sizes;
  std::map<std::int64_t, std::int64_t> all_runs;
  for (const site::program_run& r : site::runs_of(db, program_id)) {
    json& runs = sizes[r.ranks];
    if (runs.is_null())
      runs = json::array();
    if (static_cast<std::size_t>(++all_runs[r.ranks]) > newest)
      continue;
    runs.push_back({{"job_id", r.job_id},
                    {"end", r.end_time},
                    {"wall_s", r.wall_s},
                    {"mpi_s", r.mpi_s},
                    {"complete", r.complete},
                    {"flagged", flagged.count(r.job_id) != 0}});
  }
  json out = json::array();
  for (auto& [ranks, runs] : sizes) {
    std::reverse(runs.begin(), runs.end()); // oldest first, as a time axis reads
    out.push_back({{"ranks", ranks}, {"runs", runs}, {"all_runs", all_runs[ranks]}});
  }
  return json{{"program_id", prog->id},
              {"executable", prog->executable},
              {"arguments", prog->arguments},
              {"sizes", out}};
}

} // namespace strata::web
