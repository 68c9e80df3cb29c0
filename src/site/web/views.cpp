#include "site/web/views.hpp"
#include "common/markup.hpp"
#include "common/message_kinds.hpp"

#include "profiler/record/record.hpp"
#include "profiler/record/record_fast.hpp"
#include "profiler/record/render.hpp"
#include "profiler/routine_classes.hpp"
#include "site/job_collectives.hpp"
#include "site/job_pairs.hpp"
#include "site/programs.hpp"
#include "site/web/why.hpp"

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
    if constexpr (site::nullable_job_column<std::decay_t<decltype(member)>>)
      o[c.json_key] = member ? json(*member) : json(nullptr);
    else
      o[c.json_key] = member;
  });
  return o;
}

json site_json(const site::report& r, int days) {
  json o = r.site ? site::site_report_json(*r.site) : json::object();
  o["days"] = days;
  o["from"] = r.options.when.from;
  o["to"] = r.options.when.to;
  // The critical jobs again as the jobs list's rows, for the page's table of them.
  if (r.site) {
    json rows = json::array();
    for (const site::job_row& j : r.site->critical_jobs)
      rows.push_back(job_json(j));
    o["critical_job_rows"] = std::move(rows);
  }
  return o;
}

json slurm_groups_json(const std::map<std::string, site::job_totals>& groups) {
  double cpu_s = 0;
  for (const auto& [label, t] : groups)
    cpu_s += t.cpu_time_s;
  std::vector<std::pair<std::string, site::job_totals>> order(groups.begin(), groups.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.cpu_time_s > b.second.cpu_time_s;
  });
  json out = json::array();
  for (const auto& [label, t] : order) {
    json x = site::totals_json(t);
    x["label"] = label;
    x["cpu_percent"] = cpu_s > 0 ? 100 * t.cpu_time_s / cpu_s : 0.0;
    out.push_back(std::move(x));
  }
  return out;
}

std::string job_report_html(const std::string& record_json, record::heat_map map) {
  const record::parse_result parsed = record::parse_record(record_json);
  if (!parsed.ok())
    return "<p class=\"error\">The stored record does not parse: " + escape_markup(parsed.error) +
           "</p>";
  return record::render_html_fragment(*parsed.record, nullptr, map);
}

namespace {

// The heaviest pairs the job page lists (it draws the heat map of every pair itself).
constexpr size_t listed_partners = 20;

json partners_json(const site::job_partners& p) {
  json top = json::array();
  for (size_t i = 0; i < p.pairs.size() && i < listed_partners; ++i) {
    const site::partner_pair& x = p.pairs[i];
    top.push_back({{"from", x.from},
                   {"to", x.to},
                   {"messages", x.messages},
                   {"bytes", x.bytes},
                   {"bytes_by_kind", x.bytes_by_kind},
                   {"messages_by_kind", x.messages_by_kind}});
  }
  json o = {{"pairs", top}, {"pair_count", p.pairs.size()}, {"whole", p.whole()}};
  // Every pair the store holds, each kind apart, as columns (a job's record lists at most 4096
  // pairs): the job page's heat map bins them to the ranks it shows.
  std::map<std::string, std::size_t> kind_index;
  for (const site::partner_pair& x : p.pairs)
    for (const auto& [kind, bytes] : x.bytes_by_kind)
      kind_index.emplace(kind, 0);
  // Each kind's name, and whether it is one-sided (the record's `pairs` and its report's heat map
  // sum the other, two-sided, kinds).
  json kinds = json::array(), one_sided = json::array();
  for (auto& [kind, index] : kind_index) {
    index = kinds.size();
    kinds.push_back(kind);
    one_sided.push_back(common::is_one_sided(kind));
  }
  json from = json::array(), to = json::array(), kind = json::array(), messages = json::array(),
       bytes = json::array();
  for (const site::partner_pair& x : p.pairs)
    for (const auto& [k, b] : x.bytes_by_kind) {
      from.push_back(x.from);
      to.push_back(x.to);
      kind.push_back(kind_index[k]);
      const auto m = x.messages_by_kind.find(k);
      messages.push_back(m == x.messages_by_kind.end() ? 0 : m->second);
      bytes.push_back(b);
    }
  o["matrix"] = {{"kinds", kinds}, {"one_sided", one_sided}, {"from", from},  {"to", to},
                 {"kind", kind},   {"messages", messages},   {"bytes", bytes}};
  if (!p.whole())
    o["unlisted"] = {{"pairs", p.unlisted_pairs},
                     {"messages", p.unlisted_messages},
                     {"bytes", p.unlisted_bytes}};
  return o;
}

// The job's collectives by communicator, heaviest first, as the store keeps them.
json collectives_json(const site::job_collective_rows& c) {
  json communicators = json::array();
  for (const site::communicator_row& x : c.communicators) {
    json members = json::array();
    for (const site::collective_member_row& m : x.per_member)
      members.push_back({{"rank", m.rank}, {"calls", m.calls}, {"bytes", m.bytes}});
    communicators.push_back({{"members", x.members},
                             {"size", x.size},
                             {"members_reported", x.members_reported},
                             {"calls", x.calls},
                             {"bytes", x.bytes},
                             {"calls_min", x.calls_min},
                             {"calls_max", x.calls_max},
                             {"bytes_per_member",
                              {{"min", x.bytes_min},
                               {"min_rank", x.bytes_min_rank},
                               {"mean", x.bytes_mean},
                               {"max", x.bytes_max},
                               {"max_rank", x.bytes_max_rank}}},
                             {"imbalance", x.imbalance ? json(*x.imbalance) : json(nullptr)},
                             {"per_member", members}});
  }
  json o = {{"communicators", communicators}};
  if (c.unlisted_calls != 0 || c.unlisted_bytes != 0)
    o["unlisted"] = {{"calls", c.unlisted_calls}, {"bytes", c.unlisted_bytes}};
  if (c.unattributed_calls != 0 || c.unattributed_bytes != 0)
    o["unattributed"] = {{"calls", c.unattributed_calls}, {"bytes", c.unattributed_bytes}};
  return o;
}

} // namespace

json job_detail_json(site::store& db, const site::stored_job& sj) {
  json o = {{"job", job_json(sj.job)}};
  const record::parse_result parsed = record::parse_record_fast(sj.record_json);
  if (!parsed.ok())
    return o;
  const record::job_record& rec = *parsed.record;
  o["argv"] = rec.job.argv;
  // How the job ended; the exit code after MPI_Finalize where the profile could add it (rank 0's
  // process, at its exit, while the record was still in the spool).
  const auto or_null = [](const auto& value) { return value ? json(*value) : json(nullptr); };
  o["ended"] = {{"status", record::status_name(rec.job.status)},
                {"abort_code", or_null(rec.job.abort_code)},
                {"signal", or_null(rec.job.signal)},
                {"exit_code", or_null(rec.job.exit_code)}};
  o["mpi_percent_by_rank"] = record::part_json(rec.job.mpi_percent_by_rank);
  // Why the job hung (a record strata recover made of a hung job): its diagnosis for people.
  if (rec.hang)
    o["hang"] = {{"verdict", rec.hang->verdict}, {"text", rec.hang->text}};
  json routines = json::array();
  for (const record::routine& r : rec.routines)
    routines.push_back({{"name", r.name},
                        {"calls", r.calls},
                        {"time_s", r.time_s},
                        {"size_histogram", record::part_json(r.size_histogram)},
                        {"per_rank_time_s", record::part_json(r.per_rank.time_s)},
                        // MPI_Init's and MPI_Finalize's time lies outside the wall time the
                        // job's figures use.
                        {"outside_wall_time", profiler::excluded_from_mpi_time(r.name)}});
  o["routines"] = routines;
  json why = json::array();
  for (const finding& f : findings_of(rec))
    why.push_back(
        {{"kind", f.kind}, {"text", f.text}, {"next", f.next}, {"tool", f.tool}, {"how", f.how}});
  o["why"] = why;
  if (const std::optional<site::regression_row> g = site::regression_of(db, sj.job.job_id))
    o["regression"] = flag_json(g->flag);
  if (const std::optional<site::program> prog = site::program_of(db, sj))
    o["program_id"] = prog->id;
  o["previous"] = previous_run_json(db, sj);
  if (const std::optional<site::job_partners> p = site::partners_of(db, sj.job.job_id))
    o["partners"] = partners_json(*p);
  if (const std::optional<site::job_collective_rows> c = site::collectives_of(db, sj.job.job_id))
    o["collectives"] = collectives_json(*c);
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
  json out = site::models_json(site::build_models(db, o));
  // Each program's flagged runs, so that the page draws those programs first.
  std::map<std::int64_t, std::int64_t> flagged;
  for (const site::regression_row& g : site::regressions_in(db, {0, INT64_MAX}, user, 100000))
    ++flagged[g.prog.id];
  for (json& p : out["programs"])
    p["flagged"] = flagged[p.value("program_id", std::int64_t{0})];
  return out;
}

namespace {

// The job ids of a program's flagged runs (the regressions table is small: one row a flag).
std::set<std::int64_t> flagged_runs(site::store& db, std::int64_t program_id) {
  std::set<std::int64_t> out;
  db.query("SELECT job_id FROM regressions WHERE program_id = $1", {program_id},
           [&](const site::store::row& r) { out.insert(r.i64(0)); });
  return out;
}

// One program's history (see history_json), given the program: the newest runs of each size
// read through the key, not every run of a program of tens of thousands. `for_chart`: only what
// a chart draws, as columns (a tenth of the bytes): each size's complete runs' "end" and
// "wall_s", and its flagged runs' points.
json program_history(site::store& db, const site::program& prog, std::size_t newest,
                     bool for_chart) {
  const std::set<std::int64_t> flagged = flagged_runs(db, prog.id);
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes; // ranks, runs
  db.query("SELECT ranks, COUNT(*) FROM program_runs WHERE program_id = $1 GROUP BY ranks "
           "ORDER BY ranks",
           {prog.id}, [&](const site::store::row& r) { sizes.emplace_back(r.i64(0), r.i64(1)); });
  const auto limit = static_cast<std::int64_t>(std::min<std::size_t>(newest, INT64_MAX));
  json out = json::array();
  for (const auto& [ranks, all_runs] : sizes) {
    json runs = json::array(), ends = json::array(), walls = json::array(), marked = json::array();
    std::size_t shown = 0;
    db.query("SELECT job_id, end_time, wall_s, mpi_s, complete FROM program_runs WHERE "
             "program_id = $1 AND ranks = $2 ORDER BY end_time DESC, job_id DESC LIMIT $3",
             {prog.id, ranks, limit}, [&](const site::store::row& r) {
               ++shown;
               const bool is_flagged = flagged.count(r.i64(0)) != 0;
               if (!for_chart) {
                 runs.push_back({{"job_id", r.i64(0)},
                                 {"end", r.i64(1)},
                                 {"wall_s", r.f64(2)},
                                 {"mpi_s", r.f64(3)},
                                 {"complete", r.i64(4) != 0},
                                 {"flagged", is_flagged}});
                 return;
               }
               if (r.i64(4) != 0) {
                 ends.push_back(r.i64(1));
                 walls.push_back(r.f64(2));
               }
               if (is_flagged)
                 marked.push_back({{"end", r.i64(1)}, {"wall_s", r.f64(2)}});
             });
    // Oldest first, as a time axis reads.
    for (json* a : {&runs, &ends, &walls, &marked})
      std::reverse(a->begin(), a->end());
    if (for_chart)
      out.push_back({{"ranks", ranks},
                     {"all_runs", all_runs},
                     {"shown", shown},
                     {"end", ends},
                     {"wall_s", walls},
                     {"flagged", marked}});
    else
      out.push_back({{"ranks", ranks}, {"runs", runs}, {"all_runs", all_runs}});
  }
  return json{{"program_id", prog.id},
              {"executable", prog.executable},
              {"arguments", prog.arguments},
              {"sizes", out}};
}

} // namespace

std::optional<json> history_json(site::store& db, std::int64_t program_id, const std::string& user,
                                 std::size_t newest) {
  std::optional<site::program> prog;
  db.query("SELECT program_id, owner, executable, arguments FROM programs WHERE program_id = $1 "
           "AND owner = $2",
           {program_id, user}, [&](const site::store::row& r) {
             prog = site::program{r.i64(0), r.text(1), r.text(2), r.text(3)};
           });
  if (!prog)
    return std::nullopt;
  return program_history(db, *prog, newest, false);
}

json trends_json(site::store& db, const std::string& user, std::optional<std::int64_t> chosen,
                 std::size_t charts, std::size_t newest) {
  json out = models_json(db, user);
  // The order of the page's table: flagged regressions first, then most runs.
  std::vector<const json*> order;
  for (const json& p : out["programs"])
    if (p.value("modelled", false) &&
        (!chosen || p.value("program_id", std::int64_t{0}) == *chosen))
      order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const json* a, const json* b) {
    const auto flagged = [](const json* p) { return p->value("flagged", std::int64_t{0}); };
    const auto runs = [](const json* p) { return p->value("runs", std::int64_t{0}); };
    return flagged(a) != flagged(b) ? flagged(a) > flagged(b) : runs(a) > runs(b);
  });
  if (order.size() > charts)
    order.resize(charts);
  json histories = json::array();
  for (const json* p : order)
    histories.push_back(program_history(
        db,
        site::program{p->value("program_id", std::int64_t{0}), p->value("owner", ""),
                      p->value("executable", ""), p->value("arguments", "")},
        newest, true));
  out["histories"] = std::move(histories);
  return out;
}

} // namespace strata::web
